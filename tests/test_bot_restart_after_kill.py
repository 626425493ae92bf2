"""`taskeval serve` killed outright mid-job and started again: the job is evaluated as soon as the
killed worker's heartbeat is stale, not when its 120 s lease runs out. Real processes: the
supervisor, gunicorn and the queue workers are all SIGKILLed at once (a container or OOM kill,
where no handler and no PR_SET_PDEATHSIG grace runs), against a local fake GitHub."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import select

from taskeval.store.db import evaluations, jobs, make_engine, workers
from tests.bot.helpers import SECRET
from tests.fakegithub import FAKE_TOKEN, FakeGitHub
from tests.processes import stop
from tests.test_bot_serve import REPO, base_env, free_port, merged_delivery, post, wait_for
from tests.test_bot_supervisor_death import alive, children_of

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux")
LEASE = 120.0  # the production default: what a restart used to wait for
STALE = 3.0


def tree_of(pid: int) -> list[int]:
    """``pid`` and every descendant."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children_of(current))
    return found


def kill_all_at_once(pid: int) -> None:
    """Freeze the whole tree first, so no child sees its parent die and cleans up, then kill it."""
    everyone = tree_of(pid)
    for p in everyone:
        os.kill(p, signal.SIGSTOP)
    for p in everyone:
        os.kill(p, signal.SIGKILL)
    wait_for(lambda: not any(alive(p) for p in everyone), "the killed processes to go", limit=20)


def start(tmp_path: Path, fake: FakeGitHub, port: int, name: str) -> subprocess.Popen[bytes]:
    env = base_env(tmp_path, GITHUB_WEBHOOK_SECRET=SECRET, GITHUB_TOKEN=FAKE_TOKEN,
                   GITHUB_API_URL=fake.url, TASKEVAL_AI="off", WEB_CONCURRENCY="1",
                   TASKEVAL_QUEUE_WORKERS="1", TASKEVAL_POLL_SECONDS="0.2",
                   TASKEVAL_LEASE_SECONDS=str(LEASE), TASKEVAL_WORKER_STALE_SECONDS=str(STALE))
    proc = subprocess.Popen([sys.executable, "-m", "taskeval", "serve", "--bind",
                             f"127.0.0.1:{port}"], env=env, cwd=tmp_path,
                            stdout=(tmp_path / f"{name}.log").open("wb"), stderr=subprocess.STDOUT)
    wait_for(lambda: requests.get(f"http://127.0.0.1:{port}/healthz/workers", timeout=2).ok,
             "the service and its queue worker to start")
    return proc


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.add_pr(REPO, 42)
    with fake.serve():
        yield fake


def test_a_job_in_flight_at_a_kill_runs_again_long_before_its_lease_ends(
    tmp_path: Path, fake: FakeGitHub
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'bot.sqlite3'}")
    port = free_port()
    fake.latency = 2.0  # the first worker is mid-collection when it dies
    first = start(tmp_path, fake, port, "first")
    second: subprocess.Popen[bytes] | None = None
    try:
        answer = post(f"http://127.0.0.1:{port}", "pull_request", merged_delivery(fake), "d-kill")
        assert answer.status_code == 202
        job_id = answer.json()["job"]

        def job() -> Any:
            with engine.connect() as conn:
                return conn.execute(select(jobs).where(jobs.c.id == job_id)).first()

        wait_for(lambda: job().status == "running" and fake.count() > 0, "the job to start")
        kill_all_at_once(first.pid)
        first.wait(5)
        killed = job()
        assert killed.status == "running" and killed.attempts == 1  # nobody released it
        with engine.connect() as conn:
            holder = conn.execute(select(workers).where(workers.c.id == killed.leased_by)).first()
        assert holder is not None  # its presence row stays behind, going stale

        fake.latency = 0.0
        second = start(tmp_path, fake, port, "second")
        done = wait_for(lambda: (row := job()).status == "done" and row, "the job to be evaluated",
                        limit=LEASE / 2)
        assert done.attempts == 2
        assert done.finished_at < killed.lease_until  # before the old lease would have ended
        with engine.connect() as conn:
            stored = conn.execute(select(evaluations.c.job_id).where(
                evaluations.c.repo == REPO, evaluations.c.number == 42)).scalars().all()
        assert stored == [job_id]
        ours = [c for c in fake.comments(REPO, 42) if c["body"].startswith("<!-- taskeval")]
        assert len(ours) == 1
        log = (tmp_path / "second.log").read_text()
        assert "job done" in log
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                stop(proc)
        engine.dispose()
