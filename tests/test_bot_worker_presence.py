"""Whether any queue worker is alive: workers heartbeat a row idle or busy, /healthz reports it
(last heartbeat, how long the oldest ready job has waited), /healthz/workers answers 503 when none
is, and the web node keeps accepting and storing deliveries meanwhile."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine, select

from bot.app import create_app
from bot.jobs.presence import alive_window
from bot.jobs.queue import Queue
from bot.jobs.worker import Worker
from taskeval.store.db import deliveries, workers
from tests.bot.helpers import deliver, payload, settings_for

pytest_plugins = ["tests.bot.fixtures"]
LEASE = 0.6  # heartbeats every 0.2 s, alive within 1.6 s: the test's clock, not production's


class IdleCore:
    def evaluate(self, *args: Any) -> Any:  # never called: no job is claimable in these tests
        raise AssertionError("unexpected job")


@pytest.fixture
def client(engine: Engine, db_url: str) -> Iterator[FlaskClient]:
    app = create_app(settings_for(db_url, lease_seconds=LEASE), engine=engine)
    yield app.test_client()


def _worker(engine: Engine, db_url: str, name: str) -> Worker:
    settings = settings_for(db_url, lease_seconds=LEASE, poll_seconds=0.05)
    return Worker(settings, engine, core=IdleCore(), worker_id=name,  # type: ignore[arg-type]
                  queue=Queue(engine, lease_seconds=LEASE, max_attempts=3))


def _wait(condition: Any, what: str, limit: float = 20.0) -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def test_no_worker_alive_is_503_on_the_monitoring_endpoint_and_deliveries_still_stored(
    client: FlaskClient, engine: Engine
) -> None:
    health = client.get("/healthz")
    assert health.status_code == 200  # the web node is fine: it stores what arrives
    assert health.json["workers"]["alive"] == 0
    assert health.json["workers"]["lastHeartbeatAgeSeconds"] is None
    down = client.get("/healthz/workers")
    assert down.status_code == 503 and down.json["reason"] == "no queue worker is alive"

    answer = deliver(client, "pull_request", payload("pull_request.closed.merged"), "d-no-workers")
    assert answer.status_code == 202
    with engine.connect() as conn:
        assert conn.execute(select(deliveries.c.id)).scalars().all() == ["d-no-workers"]
    waited = _wait(lambda: (w := client.get("/healthz").json["workers"])["oldestQueuedAgeSeconds"]
                   and w, "the queued job to age")
    assert waited["oldestQueuedAgeSeconds"] > 0


def test_a_running_worker_is_alive_and_leaves_on_a_clean_stop(
    client: FlaskClient, engine: Engine, db_url: str
) -> None:
    worker = _worker(engine, db_url, "host-a:1:1")
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:
        up = _wait(lambda: (r := client.get("/healthz/workers")).status_code == 200 and r,
                   "the worker's first heartbeat")
        assert up.json["alive"] == 1 and up.json["lastHeartbeatAgeSeconds"] < alive_window(LEASE)
        first = _row(engine)["heartbeat_at"]
        _wait(lambda: _row(engine)["heartbeat_at"] > first, "a second heartbeat while idle")
    finally:
        stop.set()
        thread.join(10)
    assert _row(engine) is None  # gone on a clean stop
    assert client.get("/healthz/workers").status_code == 503


def test_a_killed_worker_goes_stale_and_stops_counting(
    client: FlaskClient, engine: Engine
) -> None:
    queue = Queue(engine, lease_seconds=LEASE)
    queue.beat("host-b:2:2", host="host-b", pid=2, started_at=time.time())
    assert client.get("/healthz/workers").status_code == 200
    # No more beats (SIGKILL): once the window passes, it no longer counts.
    time.sleep(alive_window(LEASE) + 0.2)
    stale = client.get("/healthz/workers")
    assert stale.status_code == 503 and stale.json["lastHeartbeatAgeSeconds"] > alive_window(LEASE)
    assert queue.prune_workers(older_than_seconds=0.0) == 1


def _row(engine: Engine) -> dict[str, Any] | None:
    with engine.connect() as conn:
        row = conn.execute(select(workers)).first()
    return dict(row._mapping) if row is not None else None
