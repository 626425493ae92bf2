"""Workers against the fake GitHub: comments, reactions, retries, App tokens, shutdown, kills."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from github import GithubException
from sqlalchemy import Engine, func, select

from bot.jobs import events
from bot.jobs.handlers import Evaluated, GitHubContext
from bot.jobs.queue import Job, Queue
from bot.jobs.worker import Worker, classify
from taskeval.github import AuthError, GitHubError, NotFoundError, RateLimitError
from taskeval.store.db import evaluations, init_schema, jobs, make_engine
from tests.bot.helpers import SECRET, settings_for
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault, app_key_pair
from tests.processes import child_env
from tests.waiting import wait_for

pytest_plugins = ["tests.bot.fixtures"]
REPO = "octo-org/widgets"
ROOT = Path(__file__).resolve().parents[1]




def own_comments(fake: FakeGitHub, number: int, login: str) -> list[dict[str, Any]]:
    return [c for c in fake.comments(REPO, number)
            if c["user"]["login"] == login and c["body"].startswith("<!-- taskeval:evaluation")]


def stored(engine: Engine, number: int) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(evaluations)
                                .where(evaluations.c.number == number)).scalar_one())


@pytest.mark.parametrize(
    ("exc", "transient", "has_retry_at"),
    [
        (RateLimitError("limit", status=403, reset_at=datetime(2030, 1, 1, tzinfo=UTC)), True,
         True),
        (NotFoundError("no such PR", status=404), False, False),
        (AuthError("needs pull-requests: write", status=403), False, False),
        (GitHubError("GitHub answered 502", status=502), True, False),
        (GitHubError("GitHub answered 429", status=429), True, False),
        (GitHubError("GitHub answered 422", status=422), False, False),
        (GitHubError("connection reset"), True, False),
        (GithubException(503, {"message": "unavailable"}), True, False),
        (GithubException(410, {"message": "gone"}), False, False),
        (requests.ConnectionError("refused"), True, False),
        (ValueError("unexpected"), True, False),
    ],
)
def test_failures_are_classified(exc: Exception, transient: bool, has_retry_at: bool) -> None:
    is_transient, retry_at = classify(exc)
    assert is_transient is transient
    assert (retry_at is not None) is has_retry_at
    if has_retry_at:
        assert retry_at == datetime(2030, 1, 1, tzinfo=UTC).timestamp()


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.add_pr(REPO, 42)
    with fake.mock():
        yield fake


@pytest.fixture
def worker(db_url: str, fake: FakeGitHub) -> Iterator[Worker]:
    settings = settings_for(db_url, github_token=FAKE_TOKEN, ai="off", api_url=fake.url,
                            lease_seconds=30, backoff_seconds=5)
    engine = make_engine(db_url)
    init_schema(engine)
    yield Worker(settings, engine)
    engine.dispose()


def drain(worker: Worker) -> list[str]:
    statuses = []
    while (job := worker.queue.claim(worker.id)) is not None:
        statuses.append(worker.run_one(job))
    return statuses


def test_merged_pr_gets_one_comment_and_one_stored_result(worker: Worker,
                                                          fake: FakeGitHub) -> None:
    sha = fake.repos[REPO].pulls[42].data["head"]["sha"]
    worker.queue.accept("d1", "pull_request", "closed", events.Evaluate(REPO, 42, sha, None))
    assert drain(worker) == ["done"]
    assert len(own_comments(fake, 42, "taskeval-user")) == 1
    assert stored(worker.engine, 42) == 1
    # Another delivery of the same merge (new id, after the first job ended) joins the job that
    # evaluated it; nothing runs again. An explicit /evaluate updates the comment in place.
    worker.queue.accept("d2", "pull_request", "closed", events.Evaluate(REPO, 42, sha, None))
    assert drain(worker) == []
    assert fake.comment_writes == {"create": 1}
    worker.queue.accept("d3", "issue_comment", "created",
                        events.Evaluate(REPO, 42, sha, None, trigger="issue_comment"))
    assert drain(worker) == ["done"]
    assert len(own_comments(fake, 42, "taskeval-user")) == 1
    assert fake.comment_writes == {"create": 1, "update": 1}
    assert stored(worker.engine, 42) == 2


@pytest.mark.parametrize(("permission", "reaction", "comments"),
                         [("write", "eyes", 1), ("maintain", "eyes", 1), ("read", "confused", 0),
                          ("triage", "confused", 0)])
def test_evaluate_command_checks_permission_and_reacts(
    worker: Worker, fake: FakeGitHub, permission: str, reaction: str, comments: int
) -> None:
    fake.set_permission(REPO, "mona", permission)
    comment = fake.add_issue_comment(REPO, 42, "/evaluate", user="mona")
    cmd = events.Command(REPO, 42, comment["id"], "mona", None)
    worker.queue.accept("d1", "issue_comment", "created", cmd)
    drain(worker)
    assert [r["content"] for r in fake.reactions[comment["id"]]] == [reaction]
    assert len(own_comments(fake, 42, "taskeval-user")) == comments
    assert stored(worker.engine, 42) == comments


def test_github_outage_is_retried_with_backoff(worker: Worker, fake: FakeGitHub) -> None:
    clock = [time.time()]
    worker.queue.clock = lambda: clock[0]
    sha = fake.repos[REPO].pulls[42].data["head"]["sha"]
    job_id = worker.queue.accept("d1", "pull_request", "closed",
                                 events.Evaluate(REPO, 42, sha, None)).job_id
    # The PR's issue object: read over REST by either transport.
    fake.inject(f"/repos/{REPO}/issues/42", Fault.server_error(502), times=30, exact=True)
    assert drain(worker) == ["queued"]
    row = worker.queue.job(job_id)
    assert row is not None and "502" in row["last_error"] and row["run_after"] > clock[0]
    assert drain(worker) == []  # backing off
    while fake.pending_faults():
        fake._take_fault("GET", f"/repos/{REPO}/issues/42")
    clock[0] = row["run_after"] + 1
    assert drain(worker) == ["done"]
    assert worker.queue.job(job_id)["attempts"] == 2  # type: ignore[index]


def test_missing_pull_request_is_dead_at_once(worker: Worker) -> None:
    job_id = worker.queue.accept("d1", "pull_request", "closed",
                                 events.Evaluate(REPO, 4040, "f" * 40, None)).job_id
    assert drain(worker) == ["dead"]
    row = worker.queue.job(job_id)
    assert row is not None and row["attempts"] == 1 and "4040" in row["last_error"]
    assert FAKE_TOKEN not in row["last_error"]


# ------------------------------------------------------------------------------- App mode


@pytest.fixture(scope="module")
def app_key() -> tuple[str, str]:
    return app_key_pair("TraditionalOpenSSL")


def test_app_mode_mints_one_installation_token_and_comments_as_the_app(
    sqlite_url: str, app_key: tuple[str, str]
) -> None:
    private, public = app_key
    fake = FakeGitHub(token=None)
    fake.add_app(123456, public, slug="taskeval",
                 installations={5234567: [REPO, "octo-org/gadgets"]})
    fake.add_pr(REPO, 42)
    fake.add_pr("octo-org/gadgets", 7)
    with fake.mock():
        settings = settings_for(sqlite_url, github_token=None, app_id="123456",
                                private_key=private, ai="off", api_url=fake.url)
        engine = make_engine(sqlite_url)
        init_schema(engine)
        worker = Worker(settings, engine)
        for i, (repo, n) in enumerate([(REPO, 42), ("octo-org/gadgets", 7)]):
            sha = fake.repos[repo].pulls[n].data["head"]["sha"]
            # The second delivery lacks an installation id (a repository webhook): looked up.
            inst = 5234567 if i == 0 else None
            worker.queue.accept(f"d{i}", "pull_request", "closed",
                                events.Evaluate(repo, n, sha, inst))
        assert drain(worker) == ["done", "done"]
    assert fake.count(route="app.token") == 1  # cached for the next job
    assert fake.count(route="user") == 0  # installation tokens cannot read /user
    assert len(own_comments(fake, 42, "taskeval[bot]")) == 1
    assert [c["user"]["login"] for c in fake.comments("octo-org/gadgets", 7)
            if c["body"].startswith("<!-- taskeval")] == ["taskeval[bot]"]
    engine.dispose()


# ------------------------------------------------------------------------ shutdown and kills


class BlockingCore:
    """A core whose evaluation waits for the test to let it go."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def evaluate(self, ctx: GitHubContext, repo: str, number: int, trigger: str) -> Evaluated:
        self.started.set()
        self.release.wait(30)
        names = ("agentPerformance", "taskOutcomeQuality", "processCompliance")
        return Evaluated({"scorerVersion": "1", "repository": repo, "headSha": "a" * 40,
                          "pullRequest": {"number": number, "author": "a"}, "evaluatedAt": "x",
                          "overallScore": 50, "overallBand": "weak",
                          "categoryScores": [{"category": n, "finalScore": 50} for n in names]},
                         "md")

    def publish(self, ctx: GitHubContext, repo: str, number: int, evaluated: Evaluated) -> str:
        return "https://example.invalid/c"

    def previous_comment(self, repo: str, number: int, head_sha: str) -> None:
        return None


class NoClients:
    def for_job(self, job: Job) -> GitHubContext:
        return GitHubContext(gh=None)


@pytest.mark.parametrize(("grace", "finish", "status", "attempts"),
                         [(30.0, True, "done", 1), (0.2, False, "queued", 0)])
def test_sigterm_finishes_or_releases_the_current_job(
    sqlite_url: str, grace: float, finish: bool, status: str, attempts: int
) -> None:
    engine = make_engine(sqlite_url)
    init_schema(engine)
    settings = settings_for(sqlite_url, shutdown_grace_seconds=grace, poll_seconds=0.05)
    core = BlockingCore()
    worker = Worker(settings, engine, core=core, clients=NoClients())  # type: ignore[arg-type]
    job_id = worker.queue.accept("d1", "pull_request", "closed",
                                 events.Evaluate(REPO, 1, "a" * 40, None)).job_id
    stop = threading.Event()
    loop = threading.Thread(target=worker.run, args=(stop,))
    loop.start()
    assert core.started.wait(30)
    stop.set()  # what the SIGTERM handler does
    if finish:
        core.release.set()
    loop.join(30)
    assert not loop.is_alive()
    row = worker.queue.job(job_id)
    assert row is not None and (row["status"], row["attempts"]) == (status, attempts)
    core.release.set()
    engine.dispose()


def _worker_env(db: str, fake_url: str, **extra: str) -> dict[str, str]:
    env = child_env()
    env.update(GITHUB_WEBHOOK_SECRET=SECRET, DATABASE_URL=db, GITHUB_TOKEN=FAKE_TOKEN,
               GITHUB_API_URL=fake_url, TASKEVAL_AI="off", TASKEVAL_POLL_SECONDS="0.1",
               PYTHONPATH=str(ROOT), **extra)
    return env


@pytest.mark.one_transport  # the queue's lease after a kill, not collection
def test_a_worker_killed_mid_job_loses_nothing(db_url: str, tmp_path: Path) -> None:
    fake = FakeGitHub()
    pr = fake.add_pr(REPO, 42)
    engine = make_engine(db_url)
    init_schema(engine)
    queue = Queue(engine)
    job_id = queue.accept("d1", "pull_request", "closed",
                          events.Evaluate(REPO, 42, pr.head_sha, None)).job_id
    # The first worker hangs on GitHub long enough to be killed mid-job.
    fake.inject(f"/repos/{REPO}/issues/42/timeline", Fault.slow(60))  # read by either transport
    with fake.serve():
        env = _worker_env(db_url, fake.url, TASKEVAL_LEASE_SECONDS="2")
        log = (tmp_path / "w1.log").open("w")
        first = subprocess.Popen([sys.executable, "-m", "bot.jobs.worker"], env=env, cwd=tmp_path,
                                 stderr=log)
        try:
            # The fault is taken when the request arrives: the worker is now stuck mid-job.
            wait_for(lambda: fake.pending_faults() == 0, "the first worker to reach the slow call")
            assert queue.job(job_id)["status"] == "running"  # type: ignore[index]
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        finally:
            first.kill()
        second = subprocess.Popen([sys.executable, "-m", "bot.jobs.worker"], env=env, cwd=tmp_path,
                                  stderr=(tmp_path / "w2.log").open("w"))
        try:
            row = wait_for(lambda: (r := queue.job(job_id)) and r["status"] == "done" and r,
                           "the second worker to finish the job")
        finally:
            second.send_signal(signal.SIGTERM)
            assert second.wait(30) == 0
    assert row["attempts"] == 2 and "lease expired" not in (row["last_error"] or "")
    assert len(own_comments(fake, 42, "taskeval-user")) == 1
    assert stored(engine, 42) == 1
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(jobs)).scalar_one() == 1
    engine.dispose()


def test_the_worker_stores_the_same_evaluation_through_either_transport(
        tmp_path: Path, fake: FakeGitHub) -> None:
    """GraphQL (the default) and REST: the same stored result but for its time, GraphQL in
    fewer requests (each run on a store of its own, and the first's comment removed before the
    second: it would be evidence for it)."""
    import json

    sha = fake.repos[REPO].pulls[42].data["head"]["sha"]
    results = {}
    for api in ("graphql", "rest"):
        for comment in [c for c in fake.comments(REPO, 42) if c["body"].startswith("<!--")]:
            fake.repos[REPO].issue_comments[42].remove(comment)
        db_url = f"sqlite:///{tmp_path / api}.db"
        settings = settings_for(db_url, github_token=FAKE_TOKEN, ai="off", api_url=fake.url,
                                lease_seconds=30, backoff_seconds=5, api=api)
        engine = make_engine(db_url)
        init_schema(engine)
        worker = Worker(settings, engine)
        fake.reset_log()
        worker.queue.accept(f"d-{api}", "pull_request", "closed",
                            events.Evaluate(REPO, 42, sha, None))
        assert drain(worker) == ["done"]
        with engine.connect() as conn:
            row = conn.execute(select(evaluations.c.result_json).where(evaluations.c.number == 42)
                               .order_by(evaluations.c.id.desc()).limit(1)).scalar_one()
        engine.dispose()
        result = json.loads(row)
        result.pop("evaluatedAt")
        results[api] = (result, fake.count(route="graphql"), fake.count())
    (graphql, queries, graphql_requests), (rest, none, rest_requests) = results.values()
    assert graphql == rest
    # Over GraphQL: the PR's query, one for the labels of the issue it fixes (#12), then the
    # comment's ``addComment`` (no REST write); none over REST.
    assert (queries, none) == (3, 0) and graphql_requests < rest_requests
