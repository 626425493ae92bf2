"""Worker presence: each worker's heartbeat row, who is alive, and the beat and window those rules
follow. The queue carries it (``Queue`` is a ``Presence``), so the API's health, the supervisor and
the workers read one record of who is working."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, delete, func, insert, select, update

from taskeval.store.db import jobs, workers, write


def presence_interval(lease_seconds: float, stale_seconds: float | None = None) -> float:
    """Seconds between a worker's presence heartbeats: a third of the lease, at most 5 s, and at
    most a quarter of the stale window, so a live worker always beats several times within it."""
    interval = min(5.0, max(0.05, lease_seconds / 3))
    return interval if stale_seconds is None else max(0.05, min(interval, stale_seconds / 4))


def alive_window(lease_seconds: float, stale_seconds: float | None = None) -> float:
    """A worker whose last heartbeat is older than this is not alive: ``stale_seconds``
    (``TASKEVAL_WORKER_STALE_SECONDS``) when set, else three missed beats plus a second (16 s at
    the default 120 s lease). The running jobs of a worker that is not alive are requeued."""
    if stale_seconds is not None:
        return stale_seconds
    return round(3 * presence_interval(lease_seconds) + 1.0, 2)


class Presence:
    """The workers' presence rows, on the queue's engine and clock."""

    engine: Engine
    clock: Callable[[], float]

    def beat(self, worker_id: str, *, host: str, pid: int, started_at: float,
             job_id: int | None = None) -> None:
        """Record that ``worker_id`` is alive (and which job it runs): update its row, or add it."""
        now = self.clock()
        with write(self.engine) as conn:
            done = conn.execute(update(workers).where(workers.c.id == worker_id)
                                .values(heartbeat_at=now, job_id=job_id)).rowcount
            if not done:
                conn.execute(insert(workers).values(id=worker_id, host=host[:200], pid=pid,
                                                    started_at=started_at, heartbeat_at=now,
                                                    job_id=job_id))

    def leave(self, worker_id: str) -> None:
        """A worker that stops cleanly removes its row; a killed one's row goes stale."""
        with write(self.engine) as conn:
            conn.execute(delete(workers).where(workers.c.id == worker_id))

    def prune_workers(self, older_than_seconds: float = 86400.0) -> int:
        """Forget workers silent for a day (killed ones never say goodbye)."""
        with write(self.engine) as conn:
            result = conn.execute(delete(workers).where(
                workers.c.heartbeat_at < self.clock() - older_than_seconds))
        return int(result.rowcount or 0)

    def presence(self, alive_within: float) -> dict[str, Any]:
        """Whether any queue worker is alive (a heartbeat within ``alive_within`` seconds), when
        the last heartbeat came, and how long the longest-waiting ready job has waited."""
        now = self.clock()
        with self.engine.connect() as conn:
            alive = conn.execute(select(func.count()).select_from(workers).where(
                workers.c.heartbeat_at >= now - alive_within)).scalar_one()
            last = conn.execute(select(func.max(workers.c.heartbeat_at))).scalar_one()
            waiting = conn.execute(select(func.min(jobs.c.run_after)).where(
                jobs.c.status == "queued", jobs.c.run_after <= now)).scalar_one()
        return {
            "alive": int(alive),
            "aliveWithinSeconds": alive_within,
            "lastHeartbeatAgeSeconds": None if last is None else round(max(0.0, now - last), 1),
            "oldestQueuedAgeSeconds": None if waiting is None else round(max(0.0, now - waiting), 1),
        }
