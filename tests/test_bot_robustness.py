"""The bot under faults: GitHub, the AI endpoint and the database failing while work is under way.

What must hold through every fault: a job ends ``done`` or, after bounded retries with backoff,
``dead`` with its error; it is never lost; a pull request never gets two taskeval comments; a
delivery is never acknowledged without being stored. Workers run in-process against the fake
GitHub served over real HTTP, with one client-side retry so that a fault costs a second, not
PyGithub's production budget, and a 1 s client timeout only where a test makes GitHub slow (a
generous one elsewhere: a loaded machine must not turn a slow answer into a fault). The load
smoke test (end of file) runs the real ``taskeval serve`` and kills a worker mid-job; the full
load run needs ``TASKEVAL_SLOW=1``.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event, func, select

from bot.app import create_app
from bot.jobs import events
from bot.jobs.handlers import Evaluated, GitHubContext, PipelineCore
from bot.jobs.worker import Clients, Worker
from bot.settings import BotSettings
from taskeval.github import make_client
from taskeval.store.db import evaluations, init_schema, jobs, make_engine
from tests.bot.helpers import SECRET, delivery_headers, payload, settings_for
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault
from tests.fakeopenai import Fail, FakeOpenAI
from tests.test_bot_serve import free_port
from tests.waiting import wait_for

pytest_plugins = ["tests.bot.fixtures"]
REPO = "octo-org/widgets"
AI_KEY = "sk-robustness-test-key-000000000000"
BACKOFF = 5.0  # seconds; with the jitter pinned to 1 the n-th retry waits 5 * 2^(n-1)




def own_comments(fake: FakeGitHub, number: int) -> list[dict[str, Any]]:
    return [c for c in fake.comments(REPO, number)
            if c["body"].startswith("<!-- taskeval:evaluation") and c["user"]["login"]
            == "taskeval-user"]


def stored(engine: Engine, number: int) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(evaluations)
                                .where(evaluations.c.number == number)).scalar_one())


def job_count(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(jobs)).scalar_one())


class Clock:
    """The queue's clock: backoff is read from it and skipped over, never slept through."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def short_timeouts(settings: BotSettings, timeout: float = 10) -> Clients:
    """GitHub clients with one retry (production: 15 s timeout, five retries)."""
    return Clients(settings, make_client=functools.partial(
        make_client, timeout=timeout, retries=1, backoff_factor=0.01, max_wait=2))



def make_worker(url: str, fake: FakeGitHub, *,
                core: Callable[[BotSettings, Engine], Any] | None = None,
                busy_timeout: float | None = None, timeout: float = 10,
                **overrides: Any) -> Worker:
    settings = settings_for(url, **{
        "github_token": FAKE_TOKEN, "ai": "off", "api_url": fake.url, "lease_seconds": 30,
        "backoff_seconds": BACKOFF, "max_attempts": 3, "poll_seconds": 0.05, **overrides})
    engine = make_engine(url)
    if busy_timeout is not None:
        short_busy_timeout(engine, busy_timeout)
    init_schema(engine)
    worker = Worker(settings, engine, core=core(settings, engine) if core else None,
                    clients=short_timeouts(settings, timeout))
    worker.queue.clock = Clock()
    worker.queue.jitter = lambda: 1.0
    return worker


def run_next(worker: Worker) -> str | None:
    """Claim and run the next ready job; None when nothing is ready (backing off)."""
    job = worker.queue.claim(worker.id)
    return None if job is None else worker.run_one(job)


def merged(worker: Worker, fake: FakeGitHub, number: int, delivery: str = "d1") -> int:
    pr = fake.add_pr(REPO, number)
    ack = worker.queue.accept(delivery, "pull_request", "closed",
                              events.Evaluate(REPO, number, pr.head_sha, None))
    assert ack.job_id is not None
    return ack.job_id


# ------------------------------------------------------------------------------- GitHub faults


@dataclass(frozen=True)
class GitHubFault:
    path: str  # under /repos/octo-org/widgets, {n} is the PR number; /graphql is the API's
    fault: Callable[[], Fault]  # built when injected: rate-limit resets are absolute times
    says: str  # in the error recorded on the job
    waits_until_reset: float | None = None  # rate limits: the retry waits at least this long
    # The transport the job collects over: a fault on a REST route GraphQL does not read (the
    # PR object, its files, commits, reviews) is a REST case; GraphQL's own are on /graphql.
    api: str = "rest"
    timeout: float = 10  # the client's; 1 s where the fault is GitHub being slower (3 s)

    def where(self, number: int) -> str:
        return self.path if self.path == "/graphql" else f"/repos/{REPO}{self.path.format(n=number)}"


FAULTS = {
    "500-on-the-pull-request": GitHubFault(
        "/pulls/{n}", lambda: Fault.server_error(500), "GitHub answered 500"),
    "502-on-the-files": GitHubFault(
        "/pulls/{n}/files", lambda: Fault.server_error(502), "GitHub answered 502"),
    "secondary-rate-limit": GitHubFault(
        "/pulls/{n}/commits", lambda: Fault.secondary_rate_limit(120), "rate limit",
        waits_until_reset=120),
    "primary-rate-limit-exhausted": GitHubFault(
        "/pulls/{n}", lambda: Fault.primary_rate_limit(900), "rate limit",
        waits_until_reset=899),
    "read-timeout": GitHubFault(
        "/pulls/{n}/files", lambda: Fault.slow(3), "did not answer in time", timeout=1),
    "truncated-json": GitHubFault(
        "/pulls/{n}/reviews", Fault.truncated_json, "malformed JSON"),
    "500-on-graphql": GitHubFault(
        "/graphql", lambda: Fault.server_error(500), "GitHub answered 500", api="graphql"),
    "truncated-json-on-graphql": GitHubFault(
        "/graphql", Fault.truncated_json, "malformed JSON", api="graphql"),
    "primary-rate-limit-on-graphql": GitHubFault(
        "/graphql", lambda: Fault.primary_rate_limit(900), "rate limit", waits_until_reset=899,
        api="graphql"),
    "502-on-posting-the-comment": GitHubFault(
        "/issues/{n}/comments", lambda: Fault.server_error(502).on("POST"), "502"),
    "comment-created-but-502": GitHubFault(
        "/issues/{n}/comments", lambda: Fault.lost_answer(502).on("POST"), "502"),
    "comment-created-but-timed-out": GitHubFault(
        "/issues/{n}/comments", lambda: Fault.lost_answer(None, delay=3).on("POST"),
        "did not answer in time", timeout=1),
}


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_a_github_fault_mid_job_is_retried_with_backoff_then_done_once(
    sqlite_url: str, fake: FakeGitHub, case: str
) -> None:
    spec = FAULTS[case]
    worker = make_worker(sqlite_url, fake, api=spec.api, timeout=spec.timeout)
    clock = worker.queue.clock
    assert isinstance(clock, Clock)
    job_id = merged(worker, fake, 42)
    fake.inject(spec.where(42), spec.fault(), times=50)

    assert run_next(worker) == "queued"
    row = worker.queue.job(job_id)
    assert row is not None and spec.says in row["last_error"]
    if spec.waits_until_reset is not None:  # GitHub's reset, not the 5 s backoff
        assert row["run_after"] >= clock.now + spec.waits_until_reset
    else:
        assert row["run_after"] == pytest.approx(clock.now + BACKOFF)
    assert run_next(worker) is None  # backing off: nothing ready yet

    fake.clear_faults()  # the outage ends
    clock.now = row["run_after"] + 1
    assert run_next(worker) == "done"
    row = worker.queue.job(job_id)
    assert row is not None and (row["status"], row["attempts"]) == ("done", 2)
    assert len(own_comments(fake, 42)) == 1
    assert stored(worker.engine, 42) == 1
    assert job_count(worker.engine) == 1


def test_a_secondary_rate_limit_waits_for_retry_after_not_the_hourly_reset(
    sqlite_url: str, fake: FakeGitHub
) -> None:
    worker = make_worker(sqlite_url, fake, api="rest")  # the limit is on REST's commit listing
    job_id = merged(worker, fake, 42)
    fake.inject(f"/repos/{REPO}/pulls/42/commits", Fault.secondary_rate_limit(120), times=50)
    assert run_next(worker) == "queued"
    row = worker.queue.job(job_id)
    assert row is not None and row["run_after"] <= worker.queue.clock() + 120 + BACKOFF


@pytest.mark.parametrize("case", ["500-on-the-pull-request", "read-timeout", "truncated-json",
                                  "502-on-posting-the-comment", "500-on-graphql"])
def test_a_github_fault_that_persists_ends_dead_with_its_error(
    sqlite_url: str, fake: FakeGitHub, case: str
) -> None:
    spec = FAULTS[case]
    worker = make_worker(sqlite_url, fake, api=spec.api, timeout=spec.timeout)
    clock = worker.queue.clock
    assert isinstance(clock, Clock)
    job_id = merged(worker, fake, 42)
    path = spec.where(42)
    fake.inject(path, spec.fault(), times=50)
    statuses, delays = [], []
    while (status := run_next(worker)) is not None:
        statuses.append(status)
        row = worker.queue.job(job_id)
        assert row is not None
        if status == "queued":
            delays.append(row["run_after"] - clock.now)
            clock.now = row["run_after"]
    assert statuses == ["queued", "queued", "dead"]
    assert delays == pytest.approx([BACKOFF, 2 * BACKOFF])  # exponential
    row = worker.queue.job(job_id)
    assert row is not None and row["attempts"] == 3
    assert row["last_error"].startswith("gave up after 3 attempts: ") and spec.says in \
        row["last_error"]
    assert FAKE_TOKEN not in row["last_error"]
    # Bounded: at most two tries per attempt (the client's one retry; a POST is never resent).
    method = spec.fault().method
    sent = sum(1 for r in fake.log if r.path == path and method in (None, r.method))
    assert 3 <= sent <= (3 if method == "POST" else 6)
    assert own_comments(fake, 42) == []
    assert stored(worker.engine, 42) == 0


# ---------------------------------------------------------------------------------- AI faults


def ai_settings(url: str, fake: FakeGitHub, base_url: str) -> dict[str, Any]:
    env = {"GITHUB_WEBHOOK_SECRET": SECRET, "DATABASE_URL": url, "GITHUB_TOKEN": FAKE_TOKEN,
           "GITHUB_API_URL": fake.url, "OPENAI_API_KEY": AI_KEY, "OPENAI_BASE_URL": base_url}
    base = BotSettings.from_env(env)
    return {"ai": "on", "env": base.env}


@pytest.mark.parametrize(
    ("script", "reachable"),
    [
        ([Fail(500, "The server had an error")] * 5, True),
        ([Fail(401, f"Incorrect API key provided: {AI_KEY}", "invalid_request_error",
               "invalid_api_key")], True),
        ([], False),
    ],
    ids=["server-errors", "rejected-key-echoed", "unreachable"],
)
def test_a_failing_ai_endpoint_degrades_to_a_deterministic_result(
    sqlite_url: str, fake: FakeGitHub, script: list[Fail], reachable: bool
) -> None:
    with FakeOpenAI(api_key=AI_KEY) as ai:
        ai.script(*script)
        base_url = ai.base_url if reachable else f"http://127.0.0.1:{free_port()}/v1"
        worker = make_worker(sqlite_url, fake, **ai_settings(sqlite_url, fake, base_url))
        job_id = merged(worker, fake, 42)
        assert run_next(worker) == "done"
    row = worker.queue.job(job_id)
    assert row is not None and row["attempts"] == 1  # never retried: the judge degrades
    with worker.engine.connect() as conn:
        result_json, judge_status = conn.execute(
            select(evaluations.c.result_json, evaluations.c.judge_status)).one()
    assert judge_status == "error"
    result = json.loads(result_json)
    assert result["judge"]["error"]  # the result says why there is no AI score
    for category in result["categoryScores"]:
        assert category["aiScore"] is None
        assert category["finalScore"] == category["deterministicScore"]
    assert AI_KEY not in result_json
    assert len(own_comments(fake, 42)) == 1


# ------------------------------------------------------------------------ odd input and repeats


@pytest.mark.parametrize("login", ["bad login!", "-leading-dash", "x" * 40, "😀"],
                         ids=["space", "leading-dash", "too-long", "emoji"])
def test_evaluate_from_an_odd_login_is_refused_at_once_with_confused(
    sqlite_url: str, fake: FakeGitHub, login: str
) -> None:
    """The core refuses a login GitHub could not have issued before asking GitHub; that is not
    a fault to retry five times but a command to refuse."""
    worker = make_worker(sqlite_url, fake)
    fake.add_pr(REPO, 42)
    comment = fake.add_issue_comment(REPO, 42, "/evaluate", user="octocat")
    job_id = worker.queue.accept("d1", "issue_comment", "created", events.Command(
        REPO, 42, comment["id"], login, None)).job_id
    assert run_next(worker) == "done"
    row = worker.queue.job(job_id)
    assert row is not None and row["attempts"] == 1 and row["note"].startswith("refused: ")
    assert [r["content"] for r in fake.reactions[comment["id"]]] == ["confused"]
    assert fake.count(route="repos.permission") == 0
    assert own_comments(fake, 42) == [] and stored(worker.engine, 42) == 0
    assert job_count(worker.engine) == 1


def test_the_same_merge_delivered_again_later_is_not_evaluated_twice(
    sqlite_url: str, fake: FakeGitHub
) -> None:
    """Two hooks (an App and a repository webhook) send the same merge with different delivery
    ids; the second may arrive after the first was evaluated. It joins that job."""
    worker = make_worker(sqlite_url, fake)
    first = merged(worker, fake, 42, "hook-a")
    assert run_next(worker) == "done"
    sha = fake.repos[REPO].pulls[42].data["head"]["sha"]
    again = worker.queue.accept("hook-b", "pull_request", "closed",
                                events.Evaluate(REPO, 42, sha, None))
    assert (again.status, again.job_id) == ("coalesced", first)
    assert run_next(worker) is None
    assert len(own_comments(fake, 42)) == 1 and stored(worker.engine, 42) == 1
    # A person asking with /evaluate still gets a fresh evaluation.
    worker.queue.accept("cmd", "issue_comment", "created",
                        events.Evaluate(REPO, 42, sha, None, trigger="issue_comment"))
    assert run_next(worker) == "done"
    assert len(own_comments(fake, 42)) == 1 and stored(worker.engine, 42) == 2


# ---------------------------------------------------------------------------- database faults


def short_busy_timeout(engine: Engine, seconds: float = 0.2) -> Engine:
    """Wait 0.2 s for SQLite's write lock instead of 5 s (runs after the bot's own setup)."""

    @event.listens_for(engine, "connect")
    def _busy(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.execute(f"PRAGMA busy_timeout={int(seconds * 1000)}")

    return engine


class ExternalLock:
    """Another program holding SQLite's write lock (``sqlite3`` with an open transaction)."""

    def __init__(self, url: str) -> None:
        self.conn = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=10,
                                    isolation_level=None, check_same_thread=False)
        self.held = False

    def take(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.held = True

    def release(self) -> None:
        if self.held:
            self.conn.execute("ROLLBACK")
            self.held = False

    def release_later(self, seconds: float) -> threading.Timer:
        timer = threading.Timer(seconds, self.release)
        timer.start()
        return timer


def deliver(client: Any, delivery: str, data: dict[str, Any]) -> Any:
    body = json.dumps(data).encode()
    return client.post("/webhook", data=body,
                       headers=delivery_headers("pull_request", body, delivery))


def test_a_locked_sqlite_database_answers_503_and_the_redelivery_is_stored(
    sqlite_url: str
) -> None:
    engine = short_busy_timeout(make_engine(sqlite_url))
    app = create_app(settings_for(sqlite_url), engine=engine)
    client = app.test_client()
    lock = ExternalLock(sqlite_url)
    lock.take()
    try:
        refused = deliver(client, "locked-1", payload("pull_request.closed.merged"))
        assert refused.status_code == 503
        assert refused.get_json()["error"] == (
            "could not store the delivery (database busy: another writer holds the lock); it was "
            "not accepted and can be redelivered")
    finally:
        lock.release()
    assert app.extensions["taskeval"].queue.depth()["queued"] == 0
    again = deliver(client, "locked-1", payload("pull_request.closed.merged"))  # GitHub redelivers
    assert again.status_code == 202 and again.get_json()["status"] == "queued"
    engine.dispose()


def run_in_background(worker: Worker) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    return stop, thread


def test_workers_back_off_while_sqlite_is_locked_and_resume(
    sqlite_url: str, fake: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    worker = make_worker(sqlite_url, fake, busy_timeout=0.2)
    worker.queue.clock = time.time
    job_id = merged(worker, fake, 42)
    lock = ExternalLock(sqlite_url)
    lock.take()
    stop, thread = run_in_background(worker)
    try:
        with caplog.at_level(logging.WARNING, logger="bot.worker"):
            wait_for(lambda: sum("could not claim a job" in r.getMessage()
                                 for r in caplog.records) >= 2, "two failed claims")
        assert lock.conn.execute("SELECT status, attempts FROM jobs WHERE id = ?",
                                 (job_id,)).fetchone() == ("queued", 0)
        lock.release()
        row = wait_for(lambda: (r := worker.queue.job(job_id)) and r["status"] == "done" and r,
                       "the job to finish once the lock is gone")
    finally:
        lock.release()
        stop.set()
        thread.join(10)
    assert row["attempts"] == 1  # failed claims spend no attempt
    assert len(own_comments(fake, 42)) == 1 and stored(worker.engine, 42) == 1


class AfterPublish(PipelineCore):
    """The real core, plus something that happens right after the comment is posted."""

    def __init__(self, settings: BotSettings, engine: Engine, then: Callable[[], None]) -> None:
        super().__init__(settings, engine)
        self.then = then

    def publish(self, ctx: GitHubContext, repo: str, number: int, evaluated: Evaluated) -> str:
        url = super().publish(ctx, repo, number, evaluated)
        self.then()
        return url


def test_a_finished_job_waits_for_a_locked_database_to_record_its_outcome(
    sqlite_url: str, fake: FakeGitHub, caplog: pytest.LogCaptureFixture
) -> None:
    """The comment is posted, then the database is locked for a second: the worker retries
    storing the result instead of leaving the job to a lease expiry and a second evaluation."""
    lock = ExternalLock(sqlite_url)
    holder: dict[str, Any] = {}

    def lock_for_a_second() -> None:
        lock.take()
        holder["timer"] = lock.release_later(1.0)

    worker = make_worker(sqlite_url, fake, busy_timeout=0.2, core=lambda settings, engine:
                         AfterPublish(settings, engine, lock_for_a_second))
    worker.queue.clock = time.time
    job_id = merged(worker, fake, 42)
    with caplog.at_level(logging.WARNING, logger="bot.worker"):
        assert run_next(worker) == "done"
    holder["timer"].join(5)
    row = worker.queue.job(job_id)
    assert row is not None and (row["status"], row["attempts"]) == ("done", 1)
    assert any("could not record the job's outcome, retrying" in r.getMessage()
               for r in caplog.records)
    assert len(own_comments(fake, 42)) == 1 and stored(worker.engine, 42) == 1


# PostgreSQL: a throwaway server of our own, so it can be stopped and restarted mid-test.


class OwnPostgres:
    """``initdb`` + ``pg_ctl`` in a temporary directory (as the ``postgres`` user under root)."""

    def __init__(self) -> None:
        bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        self.bin = bins[-1].parent if bins else None
        self.dir = Path(tempfile.mkdtemp(prefix="taskeval-robust-pg-"))
        self.port = 0
        self.url = ""

    def _run(self, *argv: str) -> None:
        assert self.bin is not None
        cmd = [str(self.bin / argv[0]), *argv[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)

    def init(self) -> str:
        self.port = free_port()
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self._run("initdb", "-D", str(self.dir / "data"), "-U", "postgres", "-A", "trust",
                  "--no-sync")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "bot")
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/bot"

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-w", "-t", "60", "-l",
                  str(self.dir / "log"), "-o",
                  f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off",
                  "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        if (self.dir / "data" / "postmaster.pid").exists():
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[OwnPostgres]:
    server = OwnPostgres()
    if server.bin is None:
        reason = ("no PostgreSQL binaries (/usr/lib/postgresql/*/bin): the PostgreSQL restart "
                  "tests did NOT run")
        warnings.warn(reason, stacklevel=1)
        pytest.skip(reason)
    try:
        server.url = server.init()
    except (subprocess.CalledProcessError, OSError) as exc:
        server.remove()
        pytest.fail(f"could not start a throwaway PostgreSQL server: {exc}")
    yield server
    server.remove()


def test_postgresql_stopped_and_restarted(own_postgres: OwnPostgres, fake: FakeGitHub,
                                          caplog: pytest.LogCaptureFixture) -> None:
    """Server down: deliveries get 503 with the reason, /healthz says so, workers keep polling.
    Server back: the redelivery is stored and the job runs once."""
    url = own_postgres.url
    worker = make_worker(url, fake)
    worker.queue.clock = time.time
    engine = make_engine(url)
    app = create_app(settings_for(url), engine=engine)
    client = app.test_client()
    data = payload("pull_request.closed.merged")
    data["pull_request"]["head"]["sha"] = fake.add_pr(REPO, 42).head_sha
    stop, thread = run_in_background(worker)
    try:
        own_postgres.stop()
        refused = deliver(client, "pg-1", data)
        assert refused.status_code == 503
        assert "(database unavailable)" in refused.get_json()["error"]
        health = client.get("/healthz")
        assert health.status_code == 503 and "unreachable" in health.get_json()["database"]
        with caplog.at_level(logging.WARNING, logger="bot.worker"):
            wait_for(lambda: any("could not claim a job" in r.getMessage()
                                 for r in caplog.records), "a failed claim")
        assert thread.is_alive()
        own_postgres.start()
        again = deliver(client, "pg-1", data)
        assert again.status_code == 202 and again.get_json()["status"] == "queued"
        job_id = again.get_json()["job"]
        wait_for(lambda: (r := worker.queue.job(job_id)) and r["status"] == "done",
                 "the job to run after the restart")
    finally:
        if not (own_postgres.dir / "data" / "postmaster.pid").exists():
            own_postgres.start()
        stop.set()
        thread.join(10)
        engine.dispose()
    assert len(own_comments(fake, 42)) == 1 and stored(worker.engine, 42) == 1


def test_postgresql_restarted_between_comment_and_result(own_postgres: OwnPostgres,
                                                         fake: FakeGitHub) -> None:
    url = own_postgres.url
    holder: dict[str, Any] = {}

    def restart() -> None:
        own_postgres.stop()
        holder["thread"] = threading.Thread(target=own_postgres.start)
        holder["thread"].start()

    worker = make_worker(url, fake, core=lambda settings, engine:
                         AfterPublish(settings, engine, restart))
    worker.queue.clock = time.time
    with worker.engine.begin() as conn:  # a clean slate on the shared server
        conn.execute(evaluations.delete())
        conn.execute(jobs.delete())
    job_id = merged(worker, fake, 43)
    try:
        assert run_next(worker) == "done"
    finally:
        holder["thread"].join(60)
    row = worker.queue.job(job_id)
    assert row is not None and (row["status"], row["attempts"]) == ("done", 1)
    assert len(own_comments(fake, 43)) == 1 and stored(worker.engine, 43) == 1



# ------------------------------------------------------------------------------- load, end to end


def _load_config(**overrides: Any) -> Any:
    from benchmarks.bot_load import Config

    return Config(**overrides)


def test_smoke_load_with_a_worker_killed_mid_job_loses_and_duplicates_nothing(
    tmp_path: Path
) -> None:
    """100 signed deliveries (20 PRs, the rest redeliveries and second-hook copies) from 10
    clients through ``taskeval serve``; one queue worker is SIGKILLed while it runs a job."""
    from benchmarks.bot_load import ok, run

    report = run(_load_config(deliveries=100, prs=20, concurrency=10, latency=0.005,
                              queue_workers=2, lease_seconds=3, kill=True, max_seconds=120,
                              log_dir=tmp_path))
    assert report.sent == report.acknowledged == 100, report.answers
    assert report.answers["queued"] == 20  # one job per PR; every other delivery joined it
    assert report.acked_not_stored == 0
    assert (report.lost, report.duplicated) == (0, 0), report.lost_prs + report.duplicated_prs
    assert report.killed is not None and report.killed["final_status"] == "done"
    assert report.killed["final_attempts"] == 2  # the killed attempt counted, the retry won
    assert (report.jobs, report.jobs_done, report.jobs_dead) == (20, 20, 0)
    assert ok(report)


slow = pytest.mark.skipif(os.environ.get("TASKEVAL_SLOW") != "1",
                          reason="full load run: set TASKEVAL_SLOW=1 (about 30 s per case)")


@pytest.mark.slow
@slow
@pytest.mark.parametrize("kill", [False, True], ids=["steady", "worker-killed"])
def test_full_load_loses_and_duplicates_nothing(db_url: str, tmp_path: Path, kill: bool) -> None:
    """BENCHMARKS.md's run: 1,000 deliveries over 200 PRs from 50 clients, fake GitHub +20 ms."""
    from benchmarks.bot_load import ok, run

    report = run(_load_config(kill=kill, log_dir=tmp_path, wipe=True,
                              database_url=None if db_url.startswith("sqlite") else db_url))
    assert (report.lost, report.duplicated) == (0, 0), report.lost_prs + report.duplicated_prs
    assert report.acked_not_stored == 0 and report.jobs_dead == 0
    assert ok(report), report
