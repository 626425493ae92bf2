"""The durable job queue: accept deliveries, lease jobs to workers, retry, dead-letter.

Written by hand on SQLAlchemy rather than with a task library (Celery, RQ, Dramatiq): those need a
broker beside the database, and the guarantees here (delivery stored before the 202, coalescing by
PR and head SHA, one running job per PR) are transactional with the results, which only the same
database can give. PostgreSQL claims with ``FOR UPDATE SKIP LOCKED``; SQLite serialises writers
with ``BEGIN IMMEDIATE``, where the same statement needs no row locks.

Every state change checks ``leased_by`` so a worker that lost its lease (it stalled past expiry and
another worker took the job) can never complete, fail or release a job it no longer owns.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import (
    Connection,
    Engine,
    and_,
    bindparam,
    delete,
    func,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from bot import logs
from bot.jobs import events
from bot.jobs.presence import Presence, alive_window
from taskeval.store.db import (
    PENDING,
    Prepared,
    StoreBusy,
    deliveries,
    evaluations,
    installation_events,
    jobs,
    workers,
    write,
)
from taskeval.store.results import store_evaluation

if TYPE_CHECKING:
    from bot.settings import BotSettings

log = logging.getLogger("bot.queue")

AckStatus = Literal["queued", "coalesced", "duplicate", "ignored", "recorded", "pong"]
MAX_ERROR_CHARS = 2000
# How long a delivery waits to be stored before the receiver answers 503 (GitHub gives up at 10 s).
ACCEPT_WAIT_SECONDS = 3.0
# How long one job may run (TASKEVAL_JOB_TIMEOUT_SECONDS): an evaluation takes seconds to a few
# minutes (GitHub's answers, waits of up to 60 s it asks for, the judge's 3 tries of 60 s).
JOB_TIMEOUT_SECONDS = 900.0
_RETRIES = 5  # unique-constraint races are resolved by re-reading; a few rounds always suffice


@dataclass(frozen=True)
class Ack:
    """What the receiver answers: the delivery is stored, and this is what became of it."""

    status: AckStatus
    job_id: int | None
    message: str


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    repo: str
    number: int
    head_sha: str | None
    installation_id: int | None
    trigger: str
    comment_id: int | None
    commenter: str | None
    attempts: int
    max_attempts: int
    # When the job must be over (epoch seconds, the claim plus the queue's per-job timeout): its
    # lease is never renewed past it, and the worker gives the job up there (bot.jobs.worker).
    deadline: float | None = None
    payload: str | None = None  # what the enqueuer read for it already (JSON), if anything


# The receiver's statements, built and compiled once (taskeval.store.db.Prepared): building, cache-keying and
# executing a Core statement per request cost more CPU than running it (profiled), and a webhook
# acknowledgement is on GitHub's clock.
_SEEN = Prepared(select(deliveries.c.status, deliveries.c.outcome, deliveries.c.job_id).where(
    deliveries.c.id == bindparam("b_id")))
_DELIVERY_KEYS = ("id", "event", "action", "status", "outcome", "job_id", "repo", "pr",
                  "received_at")
_INSERT_DELIVERY = Prepared(insert(deliveries), _DELIVERY_KEYS)
_JOB_DEFAULTS: dict[str, Any] = {
    "status": "queued", "attempts": 0, "triggers": 1, "head_sha": None, "installation_id": None,
    "comment_id": None, "commenter": None, "delivery_id": None, "parent_id": None,
    "payload": None,
}
_JOB_KEYS = (*_JOB_DEFAULTS, "kind", "repo", "number", "trigger", "max_attempts", "run_after",
             "created_at", "updated_at")
_INSERT_JOB = Prepared(insert(jobs).returning(jobs.c.id), _JOB_KEYS)
_PENDING = select(jobs.c.id).where(
    jobs.c.kind == "evaluate", jobs.c.repo == bindparam("b_repo"),
    jobs.c.number == bindparam("b_number"), jobs.c.head_sha == bindparam("b_sha"),
    jobs.c.status.in_([literal_column(f"'{status}'") for status in PENDING]),  # fixed SQL
)
_PENDING_EVALUATION = Prepared(_PENDING)
_ADD_TRIGGER = Prepared(update(jobs).where(jobs.c.id == bindparam("b_id")).values(
    triggers=jobs.c.triggers + 1, updated_at=bindparam("b_now")))
_COMMAND_JOB = Prepared(select(jobs.c.id).where(
    jobs.c.repo == bindparam("b_repo"), jobs.c.number == bindparam("b_number"),
    jobs.c.kind == "command", jobs.c.comment_id == bindparam("b_comment"),
).limit(1))
# A merged PR closes once; another delivery of that event with a new id (a second hook, a
# repository webhook beside the App) after its evaluation is stored is the same trigger again.
_DONE = select(evaluations.c.job_id).where(
    evaluations.c.repo == bindparam("b_repo"), evaluations.c.number == bindparam("b_number"),
    evaluations.c.head_sha == bindparam("b_sha"), evaluations.c.trigger == "pull_request",
).order_by(evaluations.c.id).limit(1)
_EVALUATED = Prepared(_DONE)
# What an evaluation delivery needs to know, in one statement: was it seen (status, outcome, job),
# is an evaluation of this PR and head pending, has a merged-PR trigger evaluated it already.
_EVALUATION_LOOKUP = Prepared(select(
    *(select(column).where(deliveries.c.id == bindparam("b_id")).scalar_subquery()
      for column in (deliveries.c.status, deliveries.c.outcome, deliveries.c.job_id)),
    _PENDING.limit(1).scalar_subquery(),
    _DONE.scalar_subquery(),
))


@dataclass(eq=False)
class _Arrival:
    """A delivery waiting for the group commit (:meth:`Queue.accept`)."""

    args: tuple[Any, ...]
    deadline: float | None  # time.monotonic() by which it is stored or refused
    ack: Ack | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def late(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline


def _busy(what: str) -> StoreBusy:
    return StoreBusy(f"{what}: another writer holds the store's write lock")


@dataclass(frozen=True)
class Stalled:
    """A worker process that holds running jobs and stopped heartbeating (:meth:`Queue.stalled`)."""

    worker_id: str
    pid: int
    silent_seconds: float
    jobs: list[int]


class LeaseLost(RuntimeError):
    """The job is no longer this worker's (lease expired and taken over, or released)."""


def _job(row: Any) -> Job:
    return Job(
        id=row.id, kind=row.kind, repo=row.repo, number=row.number, head_sha=row.head_sha,
        installation_id=row.installation_id, trigger=row.trigger, comment_id=row.comment_id,
        commenter=row.commenter, attempts=row.attempts, max_attempts=row.max_attempts,
        payload=row.payload,
    )


def _text(value: str | None, limit: int) -> str | None:
    """Free text from a payload, made to fit its column: clipped, without NUL (PostgreSQL
    refuses it) and without lone surrogates (neither database can encode them)."""
    if value is None:
        return None
    return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")[:limit]


def clean_error(message: str) -> str:
    """Errors are stored and served by the API: redact secrets and bound the size."""
    message = logs.redact(message.strip())
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 14] + "… [truncated]"
    return message


class Queue(Presence):
    @classmethod
    def for_settings(cls, engine: Engine, settings: BotSettings) -> Queue:
        """The job queue on ``engine`` with the bot's settings (lease, attempts, backoff, stale
        window): the receiver, the workers and the API build it one way."""
        return cls(engine, lease_seconds=settings.lease_seconds, max_attempts=settings.max_attempts,
                   backoff_seconds=settings.backoff_seconds,
                   backoff_max_seconds=settings.backoff_max_seconds,
                   worker_stale_seconds=settings.worker_stale_seconds,
                   accept_wait_seconds=settings.store_wait_seconds,
                   job_timeout_seconds=settings.job_timeout_seconds)

    def __init__(
        self,
        engine: Engine,
        *,
        lease_seconds: float = 120.0,
        max_attempts: int = 5,
        backoff_seconds: float = 30.0,
        backoff_max_seconds: float = 3600.0,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
        worker_stale_seconds: float | None = None,
        accept_wait_seconds: float | None = ACCEPT_WAIT_SECONDS,
        job_timeout_seconds: float = JOB_TIMEOUT_SECONDS,
    ) -> None:
        self.engine = engine
        self.accept_wait_seconds = accept_wait_seconds  # None: wait as long as the locks take
        self.job_timeout_seconds = job_timeout_seconds
        self.lease_seconds = lease_seconds
        self.worker_stale_seconds = alive_window(lease_seconds, worker_stale_seconds)
        self.max_attempts = max_attempts
        self.backoff_seconds = backoff_seconds
        self.backoff_max_seconds = backoff_max_seconds
        self.clock = clock
        self.jitter = jitter
        self._arrivals: list[_Arrival] = []
        self._arrivals_lock = threading.Lock()
        self._committer = threading.Lock()

    # ------------------------------------------------------------------ receiving

    def accept(self, delivery_id: str, event: str, action: str | None,
               decision: events.Decision,
               also: Callable[[Connection], None] | None = None) -> Ack:
        """Store the delivery and whatever it asks for in one transaction, then say what happened.

        A delivery id seen before is a redelivery: it is acknowledged with the original outcome
        and nothing is queued again. ``also`` runs in the same transaction for a new delivery
        only (the outcomes it shows), so acknowledging costs one commit.

        Group commit: deliveries that arrive in this process while another thread is committing
        wait for it, then go in one transaction together, each answered only after that commit.
        One commit (an fsync, and the SQLite write lock that every writer on the machine queues
        on) then serves several deliveries, which is what bounds acknowledgements per second.

        Every wait is bounded by ``accept_wait_seconds`` from the call: for the thread that
        commits, or for one to take the delivery into its commit; the ``flock`` and SQLite's
        write lock. Past it comes :class:`StoreBusy` or the database's "locked" error, which the
        receiver answers with 503 and ``Retry-After`` well within GitHub's 10 seconds, instead of
        holding the delivery while another program writes.
        """
        wait = self.accept_wait_seconds
        item = _Arrival((delivery_id, event, action, decision, also),
                        None if wait is None else time.monotonic() + wait)
        with self._arrivals_lock:
            self._arrivals.append(item)
        left = -1.0 if item.deadline is None else max(0.0, item.deadline - time.monotonic())
        if self._committer.acquire(timeout=left):
            try:
                if not item.done.is_set():  # no committer took it while we waited: commit what has arrived
                    with self._arrivals_lock:
                        batch, self._arrivals = self._arrivals, []
                    self._commit_arrivals(batch)
            finally:
                self._committer.release()
        else:
            with self._arrivals_lock:
                waiting = any(other is item for other in self._arrivals)
                if waiting:
                    self._arrivals.remove(item)
            if waiting:
                raise _busy(f"delivery {delivery_id}: no commit within {wait:g} s")
            item.done.wait()  # in a committer's batch, whose waits are bounded by its deadlines
        if item.error is not None:
            raise item.error
        assert item.ack is not None
        return item.ack

    def _commit_arrivals(self, batch: list[_Arrival]) -> None:
        """All of ``batch`` in one transaction (waiting for the locks until its earliest
        deadline); should that fail (a unique-constraint race, a database fault, a lock held
        elsewhere), each delivery still in time in its own, so one delivery never costs another
        its 202."""
        try:
            if len(batch) > 1:
                deadline = min((i.deadline for i in batch if i.deadline is not None), default=None)
                try:
                    with write(self.engine, deadline=deadline) as conn:
                        acks = []
                        for item in batch:  # a line logged for one is logged under its id
                            with logs.context(delivery=item.args[0]):
                                acks.append(self._accept(conn, *item.args))
                except Exception as exc:  # retried one by one below
                    log.info("group commit of %d deliveries failed, storing them one by one: %s",
                             len(batch), type(exc).__name__)
                else:
                    for item, ack in zip(batch, acks, strict=True):
                        item.ack = ack
                    return
            for item in batch:
                if item.late():
                    item.error = _busy(f"delivery {item.args[0]}: its wait for the store ran out")
                    continue
                try:
                    with logs.context(delivery=item.args[0]):
                        delivery_id, event, action, decision, also = item.args
                        item.ack = self._accept_alone(delivery_id, event, action, decision, also,
                                                      deadline=item.deadline)
                except Exception as exc:  # the request answers 503: not stored, not acknowledged
                    item.error = exc
        finally:
            for item in batch:
                item.done.set()

    def _accept_alone(self, delivery_id: str, event: str, action: str | None,
                      decision: events.Decision,
                      also: Callable[[Connection], None] | None,
                      deadline: float | None = None) -> Ack:
        """One delivery in one transaction. Unique-constraint races with concurrent requests are
        settled by retrying, which then reads the winner's committed row."""
        for _ in range(_RETRIES):
            try:
                with write(self.engine, deadline=deadline) as conn:
                    return self._accept(conn, delivery_id, event, action, decision, also)
            except IntegrityError:
                continue
        raise RuntimeError(f"delivery {delivery_id}: could not settle a concurrent insert")

    def _accept(self, conn: Connection, delivery_id: str, event: str, action: str | None,
                decision: events.Decision, also: Callable[[Connection], None] | None) -> Ack:
        known: tuple[Any, Any] | None = None
        if isinstance(decision, events.Evaluate):
            row = _EVALUATION_LOOKUP(conn, {
                "b_id": delivery_id, "b_repo": decision.repo, "b_number": decision.number,
                "b_sha": decision.head_sha}).fetchone()
            seen = row[:3] if row[0] is not None else None
            known = (row[3], row[4])  # pending job, evaluated job
        else:
            seen = _SEEN(conn, {"b_id": delivery_id}).fetchone()
        if seen is not None:  # (status, outcome, job id)
            return Ack("duplicate", seen[2], f"duplicate delivery, already stored: {seen[1]}")
        now = self.clock()
        repo: str | None = None
        pr: int | None = None
        job_id: int | None = None
        status: AckStatus
        if isinstance(decision, events.Pong):
            status, message = "pong", "pong"
        elif isinstance(decision, events.Ignore):
            status, message = "ignored", f"ignored: {decision.reason}"
        elif isinstance(decision, events.InstallationChange):
            conn.execute(insert(installation_events).values(
                delivery_id=delivery_id, installation_id=decision.installation_id,
                action=decision.action, account=decision.account,
                repositories_added=json.dumps(list(decision.repositories_added)),
                repositories_removed=json.dumps(list(decision.repositories_removed)),
                received_at=now,
            ))
            status = "recorded"
            message = f"recorded: {decision.action} (installation {decision.installation_id})"
        elif isinstance(decision, events.Evaluate):
            repo, pr = decision.repo, decision.number
            job_id, created = self._enqueue_evaluation(conn, decision, delivery_id, now,
                                                       known=known)
            status = "queued" if created else "coalesced"
            message = (f"queued: evaluate {repo}#{pr} at {decision.head_sha[:7]}" if created else
                       f"coalesced with job {job_id} (same pull request and head SHA)")
        elif isinstance(decision, events.Command):
            repo, pr = decision.repo, decision.number
            asked = _COMMAND_JOB(conn, {"b_repo": repo, "b_number": pr,
                                        "b_comment": decision.comment_id}).fetchone()
            if asked is not None:  # the same comment under a new delivery id: a replay
                job_id, status = int(asked[0]), "duplicate"
                message = (f"duplicate: comment {decision.comment_id} already asked for "
                           f"{events.COMMAND} (job {job_id})")
            else:
                job_id = self._insert_job(
                    conn, now, kind="command", repo=repo, number=pr, head_sha=None,
                    installation_id=decision.installation_id, trigger="issue_comment",
                    comment_id=decision.comment_id, commenter=decision.commenter,
                    delivery_id=delivery_id)
                status = "queued"
                message = f"queued: {events.COMMAND} by {decision.commenter} on {repo}#{pr}"
        else:  # pragma: no cover - Decision is a closed union
            raise TypeError(f"unknown decision {decision!r}")
        if also is not None:
            also(conn)
        _INSERT_DELIVERY(conn, {
            "id": delivery_id, "event": event, "action": _text(action, 64), "status": status,
            "outcome": _text(message, 500), "job_id": job_id, "repo": repo, "pr": pr,
            "received_at": now,
        })
        return Ack(status, job_id, message)

    def enqueue(self, ev: events.Evaluate, payload: str | None = None) -> tuple[int, bool]:
        """Queue an evaluation that no delivery asked for (``taskeval backfill --enqueue``);
        (job id, created): an evaluation of the same PR and head already queued or running is
        joined instead. ``payload``: what the enqueuer read for it already (JSON)."""
        for _ in range(_RETRIES):
            try:
                with write(self.engine) as conn:
                    return self._enqueue_evaluation(conn, ev, None, self.clock(), payload=payload)
            except IntegrityError:
                continue
        raise RuntimeError(f"{ev.repo}#{ev.number}: could not settle a concurrent insert")

    def defer(self, job_id: int, worker_id: str, run_after: float | None, reason: str) -> bool:
        """Give a claimed job back to run at ``run_after`` (not before now; ``None``: now) without
        spending an attempt: the shared GitHub budget is spent until then, or the worker is
        shutting down."""
        now = self.clock()
        if run_after is None:
            run_after = now
        with write(self.engine) as conn:
            result = conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id, jobs.c.leased_by == worker_id,
                       jobs.c.status == "running")
                .values(status="queued", attempts=jobs.c.attempts - 1, lease_until=None,
                        leased_by=None, run_after=max(now, run_after), updated_at=now,
                        last_error=clean_error(reason))
            )
        return result.rowcount == 1

    def _insert_job(self, conn: Connection, now: float, **values: Any) -> int:
        row = {**_JOB_DEFAULTS, **values, "max_attempts": self.max_attempts, "run_after": now,
               "created_at": now, "updated_at": now}
        key = _INSERT_JOB(conn, row).fetchone()
        if key is None:
            raise RuntimeError("the database returned no id for the new job")
        return int(key[0])

    def _enqueue_evaluation(self, conn: Connection, ev: events.Evaluate, delivery_id: str | None,
                            now: float, parent_id: int | None = None,
                            known: tuple[Any, Any] | None = None,
                            payload: str | None = None) -> tuple[int, bool]:
        """(job id, created): join a queued or running evaluation of the same PR and head SHA,
        or, for a merged-PR event, the job that already evaluated it. ``known``: those two job
        ids (or None), already read in this transaction."""
        key = {"b_repo": ev.repo, "b_number": ev.number, "b_sha": ev.head_sha}
        if known is None:
            found = _PENDING_EVALUATION(conn, key).fetchone()
            pending = found[0] if found is not None else None
        else:
            pending = known[0]
        if pending is not None:
            _ADD_TRIGGER(conn, {"b_id": pending, "b_now": now})
            return int(pending), False
        if ev.trigger == "pull_request":
            if known is None:
                found = _EVALUATED(conn, key).fetchone()
                evaluated = found[0] if found is not None else None
            else:
                evaluated = known[1]
            if evaluated is not None:
                _ADD_TRIGGER(conn, {"b_id": evaluated, "b_now": now})
                return int(evaluated), False
        job_id = self._insert_job(
            conn, now, kind="evaluate", repo=ev.repo, number=ev.number, head_sha=ev.head_sha,
            installation_id=ev.installation_id, trigger=ev.trigger, delivery_id=delivery_id,
            parent_id=parent_id, payload=payload,
        )
        return job_id, True

    # ------------------------------------------------------------------ working

    def claim(self, worker_id: str) -> Job | None:
        """Lease the oldest ready job whose PR has no running job; None when there is none."""
        for _ in range(_RETRIES):
            try:
                with write(self.engine) as conn:
                    now = self.clock()
                    self._reap(conn, now)
                    other = jobs.alias("other")
                    busy = (
                        select(other.c.id)
                        .where(other.c.repo == jobs.c.repo, other.c.number == jobs.c.number,
                               other.c.status == "running")
                        .exists()
                    )
                    row = conn.execute(
                        select(jobs)
                        .where(jobs.c.status == "queued", jobs.c.run_after <= now, ~busy)
                        .order_by(jobs.c.run_after, jobs.c.id)
                        .limit(1)
                        .with_for_update(skip_locked=True)
                    ).first()
                    if row is None:
                        return None
                    taken = conn.execute(
                        update(jobs)
                        .where(jobs.c.id == row.id, jobs.c.status == "queued")
                        .values(status="running", attempts=jobs.c.attempts + 1,
                                lease_until=now + min(self.lease_seconds, self.job_timeout_seconds),
                                leased_by=worker_id, updated_at=now)
                    )
                    if taken.rowcount != 1:
                        continue
                    job = _job(row)
                    return Job(**{**job.__dict__, "attempts": job.attempts + 1,
                                  "deadline": now + self.job_timeout_seconds})
            except IntegrityError:
                # Another worker started a job for the same PR in the meantime: the unique index
                # on running jobs per PR refused ours. Look again.
                continue
        return None

    def claim_batch(self, worker_id: str, first: Job, most: int) -> list[Job]:
        """Lease up to ``most`` more ready jobs that ``first``'s worker can read with it in one
        batch: evaluations of the same repository, installation and trigger whose enqueuer
        handed them a payload (``taskeval backfill --enqueue``), oldest first (the order they
        were listed in), each PR with no running job. Each is leased on its own, as
        :meth:`claim` leases one."""
        if most <= 0 or first.payload is None:
            return []
        for _ in range(_RETRIES):
            try:
                with write(self.engine) as conn:
                    now = self.clock()
                    other = jobs.alias("other")
                    busy = (select(other.c.id)
                            .where(other.c.repo == jobs.c.repo, other.c.number == jobs.c.number,
                                   other.c.status == "running").exists())
                    same = (jobs.c.installation_id.is_(None) if first.installation_id is None
                            else jobs.c.installation_id == first.installation_id)
                    rows = conn.execute(
                        select(jobs)
                        .where(jobs.c.status == "queued", jobs.c.run_after <= now, ~busy,
                               jobs.c.kind == first.kind, jobs.c.repo == first.repo,
                               jobs.c.trigger == first.trigger, same,
                               jobs.c.payload.is_not(None), jobs.c.id != first.id)
                        .order_by(jobs.c.id).limit(most).with_for_update(skip_locked=True)
                    ).all()
                    taken = []
                    for row in rows:
                        done = conn.execute(
                            update(jobs).where(jobs.c.id == row.id, jobs.c.status == "queued")
                            .values(status="running", attempts=jobs.c.attempts + 1,
                                    lease_until=now + self.lease_seconds, leased_by=worker_id,
                                    updated_at=now))
                        if done.rowcount == 1:
                            job = _job(row)
                            taken.append(Job(**{**job.__dict__, "attempts": job.attempts + 1}))
                    return taken
            except IntegrityError:  # another worker started one of them meanwhile: look again
                continue
        return []

    def _reap(self, conn: Connection, now: float) -> None:
        """Requeue the running jobs whose worker is gone, or dead-letter them when they have used
        all their attempts (a job that kills its worker every time).

        A worker is gone when its presence row (:meth:`beat`) is older than the stale window,
        seconds after a kill, or when the job's lease ran out (a worker without a presence row,
        or one that stopped renewing). A job whose lease runs and whose worker beats is never
        taken, so one job never runs twice at once.
        """
        holder_stale = (
            select(workers.c.id)
            .where(workers.c.id == jobs.c.leased_by,
                   workers.c.heartbeat_at < now - self.worker_stale_seconds)
            .exists()
        )
        window = f"{self.worker_stale_seconds:g} s"
        for gone, why in (
            (holder_stale, f"its worker stopped heartbeating (silent for over {window}: killed, "
                           "crashed or cut off)"),
            (jobs.c.lease_until < now, "lease expired: the worker stopped mid-job (killed, "
                                       "crashed or stalled) or the job ran past its deadline"),
        ):
            self._requeue(conn, gone, why, now)

    @staticmethod
    def _requeue(conn: Connection, gone: Any, why: str, now: float) -> list[int]:
        """Running jobs matching ``gone`` back to the queue, or dead on their last attempt;
        returns their ids."""
        running = and_(jobs.c.status == "running", gone)
        found = [int(i) for i in conn.execute(select(jobs.c.id).where(running)).scalars()]
        if not found:
            return []
        conn.execute(
            update(jobs)
            .where(running, jobs.c.attempts >= jobs.c.max_attempts)
            .values(status="dead", lease_until=None, leased_by=None, finished_at=now,
                    updated_at=now, last_error=f"{why}, on the last attempt")
        )
        conn.execute(
            update(jobs)
            .where(running)
            .values(status="queued", lease_until=None, leased_by=None, run_after=now,
                    updated_at=now, last_error=f"{why}; requeued")
        )
        return found

    def stalled(self, host: str, pids: list[int], silent_seconds: float | None = None) -> list[Stalled]:
        """The workers on ``host`` among ``pids`` (a supervisor's children) that hold a running
        job and have not heartbeaten for ``silent_seconds`` (default: the stale window): hung,
        not dead, since their process is still there."""
        if not pids:
            return []
        now = self.clock()
        window = self.worker_stale_seconds if silent_seconds is None else silent_seconds
        query = (select(workers.c.id, workers.c.pid, workers.c.heartbeat_at, jobs.c.id.label("job"))
                 .join(jobs, and_(jobs.c.leased_by == workers.c.id, jobs.c.status == "running"))
                 .where(workers.c.host == host, workers.c.pid.in_(pids),
                        workers.c.heartbeat_at < now - window))
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        found: dict[str, Stalled] = {}
        for row in rows:
            entry = found.setdefault(row.id, Stalled(row.id, int(row.pid), now - float(row.heartbeat_at), []))
            entry.jobs.append(int(row.job))
        return list(found.values())

    def abandon(self, worker_id: str, why: str) -> list[int]:
        """Take back the running jobs of a worker that was replaced (requeued, or dead on their
        last attempt) and forget its presence row; returns the jobs' ids."""
        with write(self.engine) as conn:
            now = self.clock()
            taken = self._requeue(conn, jobs.c.leased_by == worker_id, why, now)
            conn.execute(delete(workers).where(workers.c.id == worker_id))
        return taken

    def heartbeat(self, job_id: int, worker_id: str, deadline: float | None = None) -> bool:
        """Extend the lease, never past the job's ``deadline`` (:attr:`Job.deadline`): a job
        still running then loses its lease, and the next claim takes it back (requeued, or dead
        on its last attempt) even when its worker cannot act. False when the job is no longer
        ours. A worker renewing a lease is alive, so its presence row is refreshed in the same
        transaction."""
        now = self.clock()
        until = now + self.lease_seconds if deadline is None else min(now + self.lease_seconds, deadline)
        with write(self.engine) as conn:
            result = conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id, jobs.c.leased_by == worker_id,
                       jobs.c.status == "running")
                .values(lease_until=until, updated_at=now)
            )
            if result.rowcount == 1:
                conn.execute(update(workers).where(workers.c.id == worker_id)
                             .values(heartbeat_at=now))
        return result.rowcount == 1

    def complete(
        self,
        job_id: int,
        worker_id: str,
        *,
        note: str | None = None,
        error: str | None = None,
        evaluation: dict[str, Any] | None = None,
        follow_up: events.Evaluate | None = None,
    ) -> int | None:
        """Mark the job done, storing its result and queueing its follow-up in the same
        transaction; returns the follow-up job id. Raises :class:`LeaseLost` (nothing is stored)."""
        for _ in range(_RETRIES):
            try:
                with write(self.engine) as conn:
                    now = self.clock()
                    done = conn.execute(
                        update(jobs)
                        .where(jobs.c.id == job_id, jobs.c.leased_by == worker_id,
                               jobs.c.status == "running")
                        .values(status="done", lease_until=None, finished_at=now, updated_at=now,
                                note=note, last_error=clean_error(error) if error else None)
                    )
                    if done.rowcount != 1:
                        raise LeaseLost(f"job {job_id} is no longer leased by this worker")
                    if evaluation is not None:
                        store_evaluation(conn, {**evaluation, "job_id": job_id, "stored_at": now})
                    if follow_up is None:
                        return None
                    follow_id, _ = self._enqueue_evaluation(conn, follow_up, None, now,
                                                            parent_id=job_id)
                    return follow_id
            except IntegrityError:
                continue
        raise RuntimeError(f"job {job_id}: could not settle a concurrent insert")

    def backoff(self, attempts: int) -> float:
        """Exponential backoff with jitter: base * 2^(attempt-1), capped, scaled by 0.5..1."""
        delay: float = min(self.backoff_max_seconds, self.backoff_seconds * 2 ** max(0, attempts - 1))
        return delay * (0.5 + self.jitter() / 2)

    def fail(self, job_id: int, worker_id: str, error: str, *, transient: bool,
             retry_at: float | None = None) -> str:
        """Record a failure: requeue with backoff when transient and attempts remain, else dead.
        Returns the new status (``queued``, ``dead``, or ``lost`` when the job is not ours)."""
        message = clean_error(error)
        with write(self.engine) as conn:
            row = conn.execute(
                select(jobs.c.attempts, jobs.c.max_attempts)
                .where(jobs.c.id == job_id, jobs.c.leased_by == worker_id,
                       jobs.c.status == "running")
            ).first()
            if row is None:
                return "lost"
            now = self.clock()
            if transient and row.attempts < row.max_attempts:
                run_after = now + self.backoff(row.attempts)
                if retry_at is not None:
                    run_after = max(run_after, retry_at)
                conn.execute(
                    update(jobs).where(jobs.c.id == job_id)
                    .values(status="queued", lease_until=None, leased_by=None,
                            run_after=run_after, last_error=message, updated_at=now)
                )
                return "queued"
            reason = message if not transient else (
                f"gave up after {row.attempts} attempts: {message}")
            conn.execute(
                update(jobs).where(jobs.c.id == job_id)
                .values(status="dead", lease_until=None, finished_at=now,
                        last_error=clean_error(reason), updated_at=now)
            )
            return "dead"

    def release(self, job_id: int, worker_id: str) -> bool:
        """Give a claimed job back untouched (graceful shutdown): the attempt does not count."""
        return self.defer(job_id, worker_id, None, "released by a worker shutting down; requeued")

    def prune(self, retention_seconds: float) -> int:
        """Forget delivery ids older than the retention; returns how many were removed.

        The ids only guard against redelivery, which github.com allows for 3 days and GitHub
        Enterprise Server for 7 (the redelivered GUID is the original's), so keeping them a month
        bounds the table without weakening the guarantee. Jobs and results stay.
        """
        cutoff = self.clock() - retention_seconds
        with write(self.engine) as conn:
            result = conn.execute(delete(deliveries).where(deliveries.c.received_at < cutoff))
        return int(result.rowcount or 0)

    # ------------------------------------------------------------------ observing

    def depth(self) -> dict[str, int]:
        """Jobs per status (queued, running, done, dead), zeros included."""
        counts = {"queued": 0, "running": 0, "done": 0, "dead": 0}
        with self.engine.connect() as conn:
            for status, count in conn.execute(
                select(jobs.c.status, func.count()).group_by(jobs.c.status)
            ):
                counts[status] = int(count)
        return counts

    def job(self, job_id: int) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(jobs).where(jobs.c.id == job_id)).first()
        return dict(row._mapping) if row is not None else None
