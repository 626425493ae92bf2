"""``taskeval backfill --enqueue`` hands workers batches: the enqueuing run makes the
repository-wide reads a backfill shares among its PRs once and gives each job its part, workers
claim the jobs a batch at a time and read them with one GraphQL query, so a backfill spread over
workers spends per PR what one process does, and stores the same results."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import Engine, select

from benchmarks.cost_model import PAT, REPO, typical_prs
from benchmarks.enqueue_bench import enqueued, single
from bot.jobs import backfill, events
from bot.jobs.queue import Queue
from bot.jobs.worker import Worker
from bot.settings import BotSettings
from taskeval.github import make_client
from taskeval.github.batch import Handed
from taskeval.store.db import evaluations, jobs
from tests.fakegithub import FakeGitHub

pytest_plugins = ["tests.bot.fixtures"]


@pytest.mark.one_transport  # batches are GraphQL's
def test_four_workers_spend_no_more_per_pr_than_one_process_and_store_the_same_results() -> None:
    prs, workers = 60, 4
    one = single(prs, 0.3)
    spread = enqueued(prs, 0.3, workers)
    assert one.evaluated == spread.evaluated == prs
    assert spread.bundles == one.bundles, "every PR's evidence is the bundle one process makes"
    assert spread.rest <= one.rest, (spread.rest, one.rest)
    # Points: each worker's last batch may be a partial one, which GitHub's rounding can make
    # a point dearer than one process's single partial batch.
    assert spread.points <= one.points + workers - 1, (spread.points, one.points)


def _settings(url: str, fake: FakeGitHub) -> BotSettings:
    base = BotSettings.from_env({"GITHUB_WEBHOOK_SECRET": "s" * 32, "DATABASE_URL": url,
                                 "GITHUB_TOKEN": PAT, "GITHUB_API_URL": fake.url,
                                 "TASKEVAL_API": "graphql"}, receives_webhooks=False)
    return replace(base, ai="off", poll_seconds=0.05)


def _enqueue(fake: FakeGitHub, url: str, engine: Engine) -> backfill.Summary:
    opts = backfill.Options(repository=REPO, store_url=url, ai="off", api="graphql", enqueue=True)
    return backfill.Backfill(opts, make_client(PAT, base_url=fake.url), engine, token=PAT,
                             api_url=fake.url, stream=io.StringIO(), tty=False).run()


def _drain(settings: BotSettings, engine: Engine, workers: int) -> None:
    queue = Queue.for_settings(engine, settings)
    stop = threading.Event()
    threads = [threading.Thread(target=Worker(settings, engine, worker_id=f"t{i}").run,
                                args=(stop,), daemon=True) for i in range(workers)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        depth = queue.depth()
        if depth["queued"] == depth["running"] == 0:
            break
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)


@pytest.mark.one_transport
def test_each_job_carries_what_the_enqueue_read_and_workers_read_none_of_it(
        db_url: str, engine: Engine) -> None:
    fake = FakeGitHub(token=None)
    fake.add_token(PAT, "mona")
    typical_prs(fake, 24, 0.25)
    with fake.serve():
        summary = _enqueue(fake, db_url, engine)
        assert (summary.enqueued, summary.stopped) == (24, None)
        with engine.connect() as conn:
            payloads = {r.number: json.loads(r.payload) for r in conn.execute(select(jobs))}
        assert set(payloads) == set(range(1, 25))
        for number, payload in payloads.items():  # the issue object, the runs, #12's labels
            assert payload["issue"]["number"] == number and payload["runs"]
            twelve = {"12": {"number": 12, "labels": ["bug"], "is_pull": True}}  # PR #12
            assert payload["linked"] == ({} if number == 12 else twelve)
        enqueue_log = len(fake.log)
        _drain(_settings(db_url, fake), engine, 2)
    workers = fake.log[enqueue_log:]
    assert not [r for r in workers if r.route == "issues.get"], "issue objects were handed"
    assert not [r for r in workers if r.route == "actions.runs"], "workflow runs were handed"
    assert {r.route for r in workers} <= {"graphql", "issues.timeline", "rate_limit"}
    batch = [q for q, _ in fake.graphql_queries if q.startswith("query TaskevalPullRequests")]
    assert batch and len(batch) < 24 / 2, "several PRs a query"
    assert not [q for q, _ in fake.graphql_queries if q.startswith("query TaskevalLinkedIssues")][1:]
    with engine.connect() as conn:
        stored = {r.number for r in conn.execute(select(evaluations.c.number))}
        states = {r.status for r in conn.execute(select(jobs.c.status))}
    assert stored == set(range(1, 25)) and states == {"done"}


@pytest.mark.one_transport
def test_a_pr_its_batch_cannot_read_fails_alone(db_url: str, engine: Engine) -> None:
    fake = FakeGitHub(token=None)
    fake.add_token(PAT, "mona")
    typical_prs(fake, 6)
    with fake.serve():
        _enqueue(fake, db_url, engine)
        del fake.repos[REPO].pulls[3]  # gone before a worker reads it
        _drain(_settings(db_url, fake), engine, 1)
    with engine.connect() as conn:
        states = {r.number: (r.status, r.last_error) for r in conn.execute(select(jobs))}
    assert {n for n, (s, _) in states.items() if s == "done"} == {1, 2, 4, 5, 6}
    assert states[3][0] == "dead" and "not found" in states[3][1]


def _job(queue: Queue, number: int, payload: Any, repo: str = REPO) -> int:
    job_id, _ = queue.enqueue(events.Evaluate(repo, number, f"{number:040x}", None, "backfill"),
                              payload=json.dumps(payload) if payload is not None else None)
    return job_id


@pytest.mark.one_transport
def test_a_batch_is_claimed_together_of_one_repository_with_payloads(engine: Engine) -> None:
    queue = Queue(engine)
    ids = [_job(queue, n, {"issue": None, "runs": None, "linked": {}}) for n in range(1, 7)]
    bare = _job(queue, 7, None)  # queued without a payload: read alone
    other = _job(queue, 8, {"issue": None}, repo="octo-org/other")
    first = queue.claim("w1")
    assert first is not None and first.id == ids[0] and first.payload is not None
    more = queue.claim_batch("w1", first, 3)
    assert [j.id for j in more] == ids[1:4] and all(j.attempts == 1 for j in more)
    rest = queue.claim_batch("w2", first, 10)
    assert [j.id for j in rest] == ids[4:]
    with engine.connect() as conn:
        running = {r.id: r.leased_by for r in conn.execute(select(jobs).where(jobs.c.status == "running"))}
    assert running == {**dict.fromkeys(ids[:4], "w1"), **dict.fromkeys(ids[4:], "w2")}
    assert bare not in running and other not in running


def test_handed_answers_are_what_the_repository_wide_reads_answered() -> None:
    handed = Handed({5: {"issue": {"number": 5, "pull_request": {}, "user": {"login": "alice",
                                                                          "type": "User"}},
                         "runs": [], "linked": {"12": {"number": 12, "labels": ["bug"]},
                                                 "13": {"failed": 404}}}})
    assert handed.issue(5) == {"number": 5, "pull_request": {}, "user": {"login": "alice", "type": "User"}}
    assert handed.issue(6) is None
    found, missing = handed.linked_issue(12), handed.linked_issue(13)
    assert getattr(found, "labels", None) == ["bug"] and getattr(missing, "status", None) == 404
    assert handed.linked_issue(14) is None


def _claimed_batch(queue: Queue, worker: Worker) -> list[Any]:
    first = queue.claim(worker.id)
    assert first is not None
    batch = worker._batch(first, None)
    assert len(batch) > 1
    return batch


@contextmanager
def _five_enqueued(url: str, **settings: Any) -> Iterator[tuple[FakeGitHub, Engine, Worker, list[Any]]]:
    """Five typical PRs enqueued in the store at ``url`` and the batch a worker claimed of them,
    with the fake GitHub serving while the caller runs it; the store is disposed after."""
    fake = FakeGitHub(token=None)
    fake.add_token(PAT, "mona")
    typical_prs(fake, 5)
    engine = backfill.open_store(url)
    try:
        with fake.serve():
            _enqueue(fake, url, engine)
            bot = replace(_settings(url, fake), **settings)
            worker = Worker(bot, engine, worker_id="w")
            yield fake, engine, worker, _claimed_batch(Queue.for_settings(engine, bot), worker)
    finally:
        engine.dispose()


@pytest.mark.one_transport
def test_a_spent_budget_puts_the_whole_batch_back_until_the_reset(sqlite_url: str) -> None:
    with _five_enqueued(sqlite_url, graphql_reserve=10_000) as (fake, engine, worker, batch):  # nothing to spend
        worker._run_batch(batch, threading.Event(), threading.Event())
        with engine.connect() as conn:
            rows = conn.execute(select(jobs.c.status, jobs.c.attempts, jobs.c.run_after,
                                       jobs.c.last_error)).all()
    assert {(r.status, r.attempts) for r in rows} == {("queued", 0)}, "no attempt spent"
    assert all("rate-limit reset" in r.last_error and r.run_after > time.time() for r in rows
               if r.last_error is not None)
    assert sum(1 for r in rows if r.last_error) == len(batch)
    assert not [q for q, _ in fake.graphql_queries if q.startswith("query TaskevalPullRequests")]


@pytest.mark.one_transport
def test_a_worker_told_to_stop_gives_back_the_jobs_of_its_batch_it_has_not_run(sqlite_url: str) -> None:
    with _five_enqueued(sqlite_url) as (_, engine, worker, batch):
        stop = threading.Event()
        stop.set()  # a SIGTERM while the batch was read
        worker._run_batch(batch, stop, threading.Event())
        with engine.connect() as conn:
            rows = conn.execute(select(jobs.c.status, jobs.c.attempts, jobs.c.leased_by)).all()
    assert {(r.status, r.attempts, r.leased_by) for r in rows} == {("queued", 0, None)}
    assert worker.core._prepared == {}  # type: ignore[attr-defined]


@pytest.mark.one_transport
def test_each_job_of_a_batch_has_its_own_deadline_and_an_overrun_gives_the_rest_back(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch's jobs run one after another: each gets the per-job deadline from its own start
    (not from the batch's claim), and once one runs past it, its worker gives the jobs it has not
    run back to the queue and stops to be replaced."""
    with _five_enqueued(sqlite_url) as (_, engine, worker, batch):
        ran: list[tuple[int, float | None, float]] = []

        def run_one(job: Any, stop: threading.Event, hurry: threading.Event) -> None:
            ran.append((job.id, job.deadline, worker.queue.clock()))
            worker.overran = job.id  # this job ran past its deadline

        monkeypatch.setattr(worker, "_run_until_stopped", run_one)
        worker._run_batch(batch, threading.Event(), threading.Event())
        with engine.connect() as conn:
            rows = conn.execute(select(jobs.c.id, jobs.c.status, jobs.c.leased_by)).all()
    assert len(ran) == 1, "the jobs after an overrun are not started"
    job_id, deadline, started = ran[0]
    assert deadline is not None
    assert deadline == pytest.approx(started + worker.queue.job_timeout_seconds, abs=1.0)
    given_back = {r.id for r in rows if r.status == "queued" and r.leased_by is None}
    assert {j.id for j in batch} - {job_id} <= given_back
