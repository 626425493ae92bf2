"""A store that cannot take a delivery in time: the receiver answers GitHub within its 10 seconds.

Run for real: ``taskeval serve`` (gunicorn) on a SQLite file while another program holds SQLite's
write lock, or another taskeval writer holds the store's write ``flock``, and deliveries arrive
at once. Each is answered 503 with ``Retry-After`` after a bounded wait (``TASKEVAL_STORE_WAIT_
SECONDS``), not held for as long as the lock is; once the lock is gone GitHub's redelivery is
stored.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.bot.helpers import SECRET, delivery_headers, payload
from tests.processes import stop
from tests.test_bot_serve import base_env, free_port, wait_for

GITHUB_TIMEOUT = 10.0  # GitHub gives up on a delivery after 10 seconds
WAIT = 2.0  # TASKEVAL_STORE_WAIT_SECONDS in these runs
AT_ONCE = 4


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``taskeval serve --no-workers`` on a SQLite file: (its URL, the database file)."""
    port = free_port()
    database = tmp_path / "bot.sqlite3"
    env = base_env(tmp_path, GITHUB_WEBHOOK_SECRET=SECRET, WEB_CONCURRENCY="2",
                   TASKEVAL_STORE_WAIT_SECONDS=str(WAIT))
    env["DATABASE_URL"] = f"sqlite:///{database}"
    proc = subprocess.Popen([sys.executable, "-m", "taskeval", "serve", "--no-workers", "--bind",
                             f"127.0.0.1:{port}"], env=env, cwd=tmp_path,
                            stdout=(tmp_path / "serve.log").open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: requests.get(f"{url}/healthz", timeout=2).ok, "the receiver to start")
        yield url, database
    finally:
        stop(proc, 30)


def sqlite_lock(database: Path) -> Callable[[], None]:
    """Another program with an open write transaction (``sqlite3`` at its prompt)."""
    conn = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")

    def release() -> None:
        conn.execute("ROLLBACK")
        conn.close()
    return release


def writer_flock(database: Path) -> Callable[[], None]:
    """Another taskeval writer (a worker storing a result, a migration) mid-transaction."""
    fd = os.open(f"{database}-writelock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)

    def release() -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    return release


def deliver(url: str, delivery: str, number: int) -> requests.Response:
    """A delivery as GitHub sends it, which gives up after its 10 s timeout: an answer later than
    that raises here (requests' ReadTimeout), so "in time" is GitHub's own limit, not a stopwatch."""
    data = payload("pull_request.closed.merged")
    data["pull_request"]["number"] = number
    body = json.dumps(data).encode()
    return requests.post(f"{url}/webhook", data=body, timeout=GITHUB_TIMEOUT,
                         headers=delivery_headers("pull_request", body, delivery))


@pytest.mark.parametrize("hold", [sqlite_lock, writer_flock], ids=["sqlite-write-lock", "taskeval-flock"])
def test_a_locked_store_answers_deliveries_in_time_with_retry_after(
    receiver: tuple[str, Path], hold: Callable[[Path], Callable[[], None]],
) -> None:
    url, database = receiver
    release = hold(database)
    try:
        with ThreadPoolExecutor(AT_ONCE) as pool:
            answers = list(pool.map(lambda n: deliver(url, f"locked-{n}", 100 + n), range(AT_ONCE)))
    finally:
        release()
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.headers.get("Retry-After", "").isdigit()
        assert "database busy" in answer.json()["error"]
    again = deliver(url, "locked-0", 100)  # GitHub's redelivery, the lock gone
    assert again.status_code == 202 and again.json()["status"] == "queued", again.text
