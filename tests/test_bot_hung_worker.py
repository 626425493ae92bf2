"""A queue worker that hangs, or a job that never ends, cannot hold the queue.

Real processes: ``taskeval worker`` (a supervisor and its queue worker) against the fake GitHub
served over HTTP and a SQLite store. A worker that stops heartbeating while it runs a job (here it
is stopped with SIGSTOP, as a worker stuck in a call that holds the interpreter lock would be) is
killed and replaced by its supervisor, and its job is requeued; a job that runs past its deadline
(``TASKEVAL_JOB_TIMEOUT_SECONDS``) is given up by its worker, requeued with backoff, and the
worker is replaced. Either way the job and the one queued behind it end ``done``, each with one
comment.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from bot.jobs import events
from bot.jobs.queue import Queue
from taskeval.store.db import init_schema, jobs, make_engine, workers
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault
from tests.processes import child_env, stop
from tests.waiting import wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGSTOP and /proc are Linux")
REPO = "octo-org/widgets"
ROOT = Path(__file__).resolve().parents[1]




def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Service:
    def __init__(self, tmp_path: Path, fake: FakeGitHub, **env: str) -> None:
        self.url = f"sqlite:///{tmp_path / 'bot.sqlite3'}"
        self.engine = make_engine(self.url)
        init_schema(self.engine)
        self.log = tmp_path / "worker.log"
        self.env = child_env(
            PYTHONPATH=str(ROOT), DATABASE_URL=self.url, GITHUB_TOKEN=FAKE_TOKEN, GITHUB_API_URL=fake.url,
            TASKEVAL_AI="off", TASKEVAL_API="rest", TASKEVAL_QUEUE_WORKERS="1", TASKEVAL_POLL_SECONDS="0.1",
            TASKEVAL_WORKER_STALE_SECONDS="2", TASKEVAL_BACKOFF_SECONDS="0.5", **env)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "taskeval", "worker"], env=self.env,
                                     cwd=self.log.parent, stdout=subprocess.DEVNULL,
                                     stderr=self.log.open("wb"))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop(self.proc)
        self.engine.dispose()

    def enqueue(self, fake: FakeGitHub, number: int) -> int:
        pr = fake.add_pr(REPO, number)
        ack = Queue(self.engine).accept(f"d-{number}", "pull_request", "closed",
                                        events.Evaluate(REPO, number, pr.head_sha, None))
        assert ack.job_id is not None
        return ack.job_id

    def job(self, job_id: int) -> Any:
        with self.engine.connect() as conn:
            return conn.execute(select(jobs).where(jobs.c.id == job_id)).one()

    def worker_pid(self, job_id: int) -> int | None:
        """The pid of the queue worker process that holds ``job_id``."""
        with self.engine.connect() as conn:
            row = conn.execute(select(workers.c.pid).join(jobs, jobs.c.leased_by == workers.c.id)
                               .where(jobs.c.id == job_id, jobs.c.status == "running")).first()
        return None if row is None else int(row.pid)

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    with fake.serve():
        yield fake


def own_comments(fake: FakeGitHub, number: int) -> int:
    return sum(1 for c in fake.comments(REPO, number) if c["body"].startswith("<!-- taskeval:evaluation"))


def settled(service: Service, *job_ids: int) -> bool:
    return all(service.job(j).status == "done" for j in job_ids)


def test_a_worker_that_hangs_mid_job_is_replaced_and_its_job_requeued(tmp_path: Path, fake: FakeGitHub) -> None:
    service = Service(tmp_path, fake)
    stuck = service.enqueue(fake, 42)
    behind = service.enqueue(fake, 43)
    # The first attempt's pull request read answers late, so the job is mid-run when it hangs.
    fake.inject(f"/repos/{REPO}/pulls/42", Fault(status=None, delay=3.0))
    service.start()
    try:
        hung = wait_for(lambda: service.worker_pid(stuck), "the worker to start the job")
        os.kill(hung, signal.SIGSTOP)  # hung: alive, holding the job, no thread runs
        wait_for(lambda: not alive(hung), "the supervisor to kill the hung worker", 30)
        wait_for(lambda: settled(service, stuck, behind), "both jobs to be done", 60)
    finally:
        service.stop()
    log = service.text()
    assert f"(pid {hung}) stopped heartbeating" in log and "replacing it" in log, log[-3000:]
    assert service.job(stuck).attempts == 2  # the hung attempt counted, the new worker's won
    assert (own_comments(fake, 42), own_comments(fake, 43)) == (1, 1)


def test_a_job_past_its_deadline_is_given_up_and_its_worker_replaced(tmp_path: Path, fake: FakeGitHub) -> None:
    service = Service(tmp_path, fake, TASKEVAL_JOB_TIMEOUT_SECONDS="5")
    slow = service.enqueue(fake, 42)
    behind = service.enqueue(fake, 43)
    # GitHub holds the first read of the PR far longer than the job may run (and than the
    # client's own timeout would notice): the worker's heartbeats go on, the job does not.
    fake.inject(f"/repos/{REPO}/pulls/42", Fault(status=None, delay=40.0))
    service.start()
    try:
        first = wait_for(lambda: service.worker_pid(slow), "the worker to start the job")
        wait_for(lambda: not alive(first), "the worker to give the job up and end", 30)
        wait_for(lambda: settled(service, slow, behind), "both jobs to be done", 60)
    finally:
        service.stop()
    log = service.text()
    assert "ran past its deadline of 5 s" in log, log[-3000:]
    assert service.job(slow).attempts == 2
    assert (own_comments(fake, 42), own_comments(fake, 43)) == (1, 1)


def test_a_lease_is_never_renewed_past_the_jobs_deadline(tmp_path: Path) -> None:
    """The queue's own bound: whatever the worker does, the lease of a job ends at its deadline,
    and the next claim takes the job back."""
    engine: Engine = make_engine(f"sqlite:///{tmp_path / 'q.sqlite3'}")
    init_schema(engine)
    now = [1000.0]
    queue = Queue(engine, lease_seconds=60, job_timeout_seconds=100, clock=lambda: now[0])
    queue.accept("d-1", "pull_request", "closed", events.Evaluate(REPO, 1, "a" * 40, None))
    job = queue.claim("w1")
    assert job is not None and job.deadline == 1100.0
    for step in range(1, 6):
        now[0] = 1000.0 + 25 * step
        queue.heartbeat(job.id, "w1", job.deadline)
        assert queue.job(job.id)["lease_until"] <= 1100.0  # type: ignore[index]
    now[0] = 1100.5
    again = queue.claim("w2")
    assert again is not None and again.id == job.id and again.attempts == 2
    assert "deadline" in (queue.job(job.id) or {}).get("last_error", "")
    engine.dispose()
