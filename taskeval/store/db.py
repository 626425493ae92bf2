"""Database schema and engine: one database holds deliveries, the job queue, results and the cache.

SQLAlchemy Core tables, so the same statements run on SQLite (one node, the default) and
PostgreSQL (many nodes). The exactly-once guarantees are constraints, not Python locks, so they hold
across processes and machines:

* ``deliveries.id`` is the primary key: a redelivered ``X-GitHub-Delivery`` cannot be stored twice.
* ``uq_jobs_pending_eval``: at most one queued-or-running evaluation per (repo, PR, head SHA), so
  concurrent triggers for the same commit coalesce into one job.
* ``uq_jobs_running_pr``: at most one running job per (repo, PR), so two workers never evaluate
  or comment on the same pull request at once.
* ``uq_jobs_command_comment``: one command job per ``/evaluate`` comment, whatever delivery id
  carries it (created with the table; a database from before it relies on the receiver's check).

Times are epoch seconds (floats) from the workers' clocks; nodes need NTP-synchronised clocks, and
the lease (minutes) dwarfs ordinary skew.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    and_,
    create_engine,
    event,
    false,
    text,
)
from sqlalchemy.exc import DBAPIError

metadata = MetaData()

PENDING = ("queued", "running")
# The largest value an Integer column (PR numbers, job and evaluation ids) holds on every
# dialect: PostgreSQL's integer is 32 bits. A request naming a larger one asks for nothing stored.
MAX_INTEGER = 2**31 - 1


def integer_out_of_range(values: dict[str, Any] | None) -> str | None:
    """Why one of ``values`` (a route's parsed path parameters) cannot name a stored row, or
    None: an integer beyond the Integer columns' range (:data:`MAX_INTEGER`) is bad input, not a
    query that overflows in the database."""
    for name, value in (values or {}).items():
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= MAX_INTEGER:
            return f"{name} must be a whole number from 0 to {MAX_INTEGER}"
    return None

deliveries = Table(
    "deliveries",
    metadata,
    Column("id", String(100), primary_key=True),  # X-GitHub-Delivery
    Column("event", String(64), nullable=False),
    Column("action", String(64)),
    Column("status", String(16), nullable=False),  # queued | coalesced | ignored | recorded | pong
    Column("outcome", String(500), nullable=False),
    Column("job_id", Integer),
    Column("repo", String(200)),
    Column("pr", Integer),
    Column("received_at", Float, nullable=False),
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(16), nullable=False),  # evaluate | command
    Column("repo", String(200), nullable=False),
    Column("number", Integer, nullable=False),
    Column("head_sha", String(40)),  # evaluate jobs; commands learn it from GitHub
    Column("installation_id", BigInteger),
    Column("trigger", String(32), nullable=False),
    Column("comment_id", BigInteger),
    Column("commenter", String(100)),
    Column("status", String(16), nullable=False),  # queued | running | done | dead
    Column("attempts", Integer, nullable=False, default=0),
    Column("max_attempts", Integer, nullable=False),
    Column("triggers", Integer, nullable=False, default=1),  # deliveries coalesced into this job
    Column("run_after", Float, nullable=False),
    Column("lease_until", Float),
    Column("leased_by", String(200)),
    Column("last_error", Text),
    Column("note", Text),
    Column("delivery_id", String(100)),
    Column("parent_id", Integer),  # the /evaluate command that spawned this evaluation
    # What the enqueuer read for the job already (JSON; ``taskeval backfill --enqueue``: the PR's
    # issue object, workflow runs and linked issues' labels), so its worker need not read it.
    Column("payload", Text),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("finished_at", Float),
)
Index("ix_jobs_ready", jobs.c.status, jobs.c.run_after)
Index("ix_jobs_pr", jobs.c.repo, jobs.c.number)
_pending_eval = and_(jobs.c.kind == "evaluate", jobs.c.status.in_(PENDING))
Index(
    "uq_jobs_pending_eval", jobs.c.repo, jobs.c.number, jobs.c.head_sha, unique=True,
    sqlite_where=_pending_eval, postgresql_where=_pending_eval,
)
_running = jobs.c.status == "running"
Index(
    "uq_jobs_running_pr", jobs.c.repo, jobs.c.number, unique=True,
    sqlite_where=_running, postgresql_where=_running,
)
# One command job per /evaluate comment: the signature covers the body, not the delivery id, so
# a captured delivery replayed under a new id must not run the command again.
_command = jobs.c.kind == "command"
Index(
    "uq_jobs_command_comment", jobs.c.repo, jobs.c.number, jobs.c.comment_id, unique=True,
    sqlite_where=_command, postgresql_where=_command,
)

evaluations = Table(
    "evaluations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("repo", String(200), nullable=False),
    Column("number", Integer, nullable=False),
    Column("head_sha", String(40), nullable=False),
    Column("scorer_version", String(40), nullable=False),
    Column("author", String(100), nullable=False),
    Column("trigger", String(32)),
    Column("evaluated_at", String(40), nullable=False),
    Column("overall_score", Integer, nullable=False),
    Column("overall_band", String(16), nullable=False),
    Column("agent_performance", Integer, nullable=False),
    Column("task_outcome_quality", Integer, nullable=False),
    Column("process_compliance", Integer, nullable=False),
    Column("judge_status", String(16)),
    Column("job_id", Integer),
    Column("comment_url", String(500)),
    Column("comment_signature", String(64)),  # sha256 of the comment markdown as posted
    Column("result_json", Text, nullable=False),
    Column("stored_at", Float, nullable=False),
    # Revision 0002: what the leaderboard and the dashboard group and filter on, in SQL.
    Column("owner", String(100)),
    Column("agent_id", String(64)),  # result.agent.id; NULL only for results from before agents
    Column("agent_name", String(100)),
    Column("operator", String(100)),  # the person who ran the agent, when the evidence shows one
    Column("agent_confidence", String(16)),  # certain | likely
    Column("pr_state", String(16)),  # merged | closed | open
    Column("pr_created_at", Float),
    Column("merged_at", Float),
    Column("closed_at", Float),
    Column("activity_at", Float),  # when the PR's work ended: merged, closed, opened, evaluated
    Column("week", String(10)),  # Monday (UTC) of activity_at's week, YYYY-MM-DD
    Column("is_latest", Boolean, nullable=False, server_default=false()),  # newest of its PR
    # Revision 0008: the turns, closure, rescue and task type the agent page and the comparison
    # aggregate, as taskeval.store.export writes them (taskeval.store.export.STORED); NULL where the result has none.
    Column("task_type", String(16)),
    Column("draft_at_end", Boolean),  # still a draft when it ended: never marked ready
    Column("first_response_hours", Float),
    Column("agent_hours", Float),
    Column("people_hours", Float),
    Column("draft_hours", Float),
    Column("merge_hours", Float),  # opened to merged
    Column("rounds", Integer),
    Column("closure_class", String(16)),
    Column("closure_against", Boolean),
    Column("rescue_class", String(16)),
    Column("people_commits", Integer),
    # Revision 0010: how sure each grade is (the share of its weight that was conclusive; the
    # overall's is the categories' weighted by their contract weights), what the dashboard's
    # provisional counts read, and the comments people wrote on the PR. NULL where the result has none.
    Column("overall_coverage", Float),
    Column("agent_performance_coverage", Float),
    Column("task_outcome_quality_coverage", Float),
    Column("process_compliance_coverage", Float),
    Column("people_comments", Integer),
)
Index("ix_evaluations_key", evaluations.c.repo, evaluations.c.number, evaluations.c.head_sha,
      evaluations.c.scorer_version)
Index("ix_evaluations_author", evaluations.c.repo, evaluations.c.author)
Index("ix_evaluations_agent_time", evaluations.c.is_latest, evaluations.c.agent_id,
      evaluations.c.activity_at)
Index("ix_evaluations_author_time", evaluations.c.is_latest, evaluations.c.author,
      evaluations.c.activity_at)
Index("ix_evaluations_repo_time", evaluations.c.repo, evaluations.c.is_latest,
      evaluations.c.activity_at)
Index("ix_evaluations_week", evaluations.c.is_latest, evaluations.c.week, evaluations.c.agent_id)
# Exactly one newest evaluation per PR, even when two writers store the same PR at once.
_latest = text("is_latest")
Index("uq_evaluations_latest", evaluations.c.repo, evaluations.c.number, unique=True,
      sqlite_where=_latest, postgresql_where=_latest)

# Covering indexes for the dashboard's group-bys (revision 0006): the overview reads only the
# index, never the table rows, whose result_json (tens of kB, SQLite overflow pages) sits before
# these columns.
_DASH_FACETS = ("week", "overall_score", "overall_band", "agent_performance", "task_outcome_quality",
                "process_compliance", "pr_state", "activity_at", "repo", "agent_name")
# Revision 0010 rebuilt ix_evaluations_dash_agent with the task type and the coverages, so the scans
# behind a task-type filter or left-out provisional grades stay index-only too.
COVERAGE_COLUMNS = ("overall_coverage", "agent_performance_coverage", "task_outcome_quality_coverage",
                    "process_compliance_coverage")
Index("ix_evaluations_dash_agent", evaluations.c.is_latest, evaluations.c.agent_id,
      *(evaluations.c[name] for name in (*_DASH_FACETS, "task_type", *COVERAGE_COLUMNS)))
Index("ix_evaluations_dash_author", evaluations.c.is_latest, evaluations.c.author,
      *(evaluations.c[name] for name in (*_DASH_FACETS, "agent_id", *COVERAGE_COLUMNS)))

# Covering index of the agent page's cycle times and costs and of the comparison (revision 0008):
# like the overview's, they read the index, never the rows behind result_json.
TURN_FACETS = ("repo", "task_type", "pr_state", "draft_at_end", "rescue_class", "closure_class",
               "closure_against", "people_commits", "rounds", "agent_performance",
               "agent_performance_coverage", "people_comments",
               "first_response_hours", "agent_hours", "people_hours", "draft_hours", "merge_hours",
               "week", "activity_at", "author", "overall_band")
Index("ix_evaluations_turns", evaluations.c.is_latest, evaluations.c.agent_id,
      *(evaluations.c[name] for name in TURN_FACETS))

# One row per signal of each stored evaluation (revision 0006), written with the evaluation by
# taskeval.store.results.store_evaluation: what "the signals that pull this agent down" counts in SQL.
signals = Table(
    "signals",
    metadata,
    Column("evaluation_id", Integer, nullable=False),
    Column("signal_id", String(64), nullable=False),  # e.g. "outcome.ci_head"
    Column("category", String(32), nullable=False),
    Column("score", Integer),  # 0..100; NULL when inconclusive
    Column("conclusive", Boolean, nullable=False),
    Column("weight", Float, nullable=False),
    PrimaryKeyConstraint("evaluation_id", "signal_id", name="pk_signals"),
)
# "Pulled the score down" (the comment's rule): conclusive, weighted, under 60. A partial covering
# index of just those rows; queries must repeat PULLS_DOWN verbatim for SQLite to use it.
PULLS_DOWN = "conclusive AND weight > 0 AND score < 60"
Index("ix_signals_down", signals.c.evaluation_id, signals.c.signal_id, signals.c.score,
      signals.c.category, signals.c.conclusive, signals.c.weight,
      sqlite_where=text(PULLS_DOWN), postgresql_where=text(PULLS_DOWN))

# The dashboard's rollups (revision 0007): the latest evaluations of all PRs summed per
# repository, agent (or author), week and band, with PR-state counts, kept by
# taskeval.store.results.store_evaluation in the same transaction (a replaced latest evaluation is subtracted,
# the new one added). NULL facets are stored as "" so the key can be the primary key. The overview
# reads them instead of scanning ``evaluations`` when its filters are these columns and whole weeks.
# Two tables, not one with both agent and author: the two together multiply into nearly as many
# rows as PRs (each author works with several agents), which saves nothing.
ROLLUP_SUMS = ("overall", "agent_performance", "task_outcome_quality", "process_compliance")
# Revision 0010: per sum, the PRs whose grade was provisional (coverage under
# taskeval.contract.PROVISIONAL_BELOW) — their count (v_), sum (vs_) and sum of squares (vq_) — so
# the overview says how many a mean rests on and can leave them out without scanning.
PROVISIONAL_PARTS = ("v", "vs", "vq")


def _rollup_table(name: str, *keys: Column[Any]) -> Table:
    return Table(
        name,
        metadata,
        *keys,
        Column("week", String(10), nullable=False),
        Column("overall_band", String(16), nullable=False),
        Column("n", BigInteger, nullable=False),
        *(Column(f"p_{state}", BigInteger, nullable=False) for state in ("merged", "closed", "open")),
        *(Column(f"{kind}_{sum_name}", BigInteger, nullable=False)
          for sum_name in ROLLUP_SUMS for kind in ("s", "q")),
        *(Column(f"{kind}_{sum_name}", BigInteger, nullable=False, server_default=text("0"))
          for sum_name in ROLLUP_SUMS for kind in PROVISIONAL_PARTS),
        PrimaryKeyConstraint(*(k.name for k in keys), "week", "overall_band", name=f"pk_{name}"),
    )


rollup_agent = _rollup_table(
    "dashboard_rollup_agent",
    Column("repo", String(200), nullable=False),
    Column("agent_id", String(64), nullable=False),  # "" = NULL (before attribution)
    Column("agent_name", String(100), nullable=False),
)
rollup_author = _rollup_table(
    "dashboard_rollup_author",
    Column("repo", String(200), nullable=False),
    Column("author", String(100), nullable=False),
)

# The signals that pulled each latest evaluation down (taskeval.store.db.PULLS_DOWN), counted per repository,
# agent, week, band and signal (revision 0010), kept like the rollups above: the agent page's
# "signals that pull the score down" reads it instead of joining every PR's signals.
rollup_signals = Table(
    "dashboard_rollup_signals",
    metadata,
    Column("repo", String(200), nullable=False),
    Column("agent_id", String(64), nullable=False),  # "" = NULL (before attribution)
    Column("week", String(10), nullable=False),
    Column("overall_band", String(16), nullable=False),
    Column("signal_id", String(64), nullable=False),
    Column("category", String(32), nullable=False),
    Column("n", BigInteger, nullable=False),
    Column("s_score", BigInteger, nullable=False),
    PrimaryKeyConstraint("agent_id", "repo", "week", "overall_band", "signal_id",
                         name="pk_dashboard_rollup_signals"),
)

installation_events = Table(
    "installation_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("delivery_id", String(100), nullable=False),
    Column("installation_id", BigInteger, nullable=False),
    Column("action", String(64), nullable=False),
    Column("account", String(100)),
    Column("repositories_added", Text, nullable=False),  # JSON list of full names
    Column("repositories_removed", Text, nullable=False),
    Column("received_at", Float, nullable=False),
)

# Queue workers announce themselves here every few seconds, idle or busy, so a web node can tell
# whether anyone will run the deliveries it keeps accepting (/healthz, /healthz/workers).
workers = Table(
    "workers",
    metadata,
    Column("id", String(200), primary_key=True),  # host:pid:thread, as in jobs.leased_by
    Column("host", String(200), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=False),
    Column("job_id", Integer),  # the job it is running, if any
)
Index("ix_workers_heartbeat", workers.c.heartbeat_at)

# What happened to evaluated PRs afterwards (taskeval.outcomes): one row per (repo, PR, outcome).
outcomes = Table(
    "outcomes",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("repo", String(200), nullable=False),
    Column("number", Integer, nullable=False),
    Column("outcome", String(32), nullable=False),
    Column("value", Boolean, nullable=False),
    Column("evidence", Text, nullable=False),  # JSON list of evidence IDs / URLs
    Column("detail", String(500), nullable=False),
    Column("source", String(16), nullable=False),  # results | scan | bot | corpus | derived
    Column("observed_at", String(40)),
    Column("recorded_at", Float, nullable=False),
)
Index("uq_outcomes_pr_outcome", outcomes.c.repo, outcomes.c.number, outcomes.c.outcome,
      unique=True)

judge_cache = Table(
    "judge_cache",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("value", Text, nullable=False),
    Column("stored_at", Float, nullable=False),
)

# Revision 0005: one GitHub request budget per credential (token or App installation), shared by
# every backfill process and worker that uses it (taskeval/store/budget.py). Revision 0009: one per credential
# and rate-limit resource (X-RateLimit-Resource: ``core`` for REST requests, ``graphql`` for
# GraphQL points), as GitHub counts them apart.
rate_budgets = Table(
    "rate_budgets",
    metadata,
    Column("key", String(200), primary_key=True),  # "<api host>|token:<sha256 prefix>" etc.
    Column("resource", String(32), primary_key=True, server_default="core"),
    Column("limit", Integer, nullable=False),  # X-RateLimit-Limit
    Column("remaining", Integer, nullable=False),  # requests not yet granted in this window
    Column("reset_at", Float, nullable=False),  # X-RateLimit-Reset (epoch seconds)
    Column("window", Integer, nullable=False),  # bumped at each new window; grants carry it
    Column("updated_at", Float, nullable=False),
)

# Revision 0012: the dashboard's signed-in sessions, one row each, so signing out ends a session
# on the server for every process and node (a copied cookie no longer opens anything). The key is
# the SHA-256 of the session id the cookie carries; rows past ``expires_at`` are deleted at sign-in.
dashboard_sessions = Table(
    "dashboard_sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),  # github | token
    Column("login", String(100)),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=False),
)
Index("ix_dashboard_sessions_expires", dashboard_sessions.c.expires_at)

# Serialises concurrent migrations from many processes on PostgreSQL.
_SCHEMA_LOCK = 0x7461736B  # "task"


def sqlite_synchronous() -> str:
    """``FULL`` (default): a commit survives power loss. ``NORMAL`` (``TASKEVAL_SQLITE_SYNCHRONOUS=
    normal``) survives a crashed or killed process but may lose the last commits on power loss,
    for more acknowledgements per second under load (BENCHMARKS.md, "Webhook bot")."""
    value = os.environ.get("TASKEVAL_SQLITE_SYNCHRONOUS", "full").strip().upper() or "FULL"
    return value if value in ("FULL", "NORMAL") else "FULL"


# SQLite's wait for its write lock on every connection (``PRAGMA busy_timeout``), in ms.
BUSY_TIMEOUT_MS = 5000


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine tuned per dialect.

    SQLite: WAL (readers never block the writer), ``synchronous=FULL`` (a delivery acknowledged is
    on disk, even across power loss; see :func:`sqlite_synchronous`), a busy timeout below
    gunicorn's request timeout, and
    ``BEGIN IMMEDIATE`` so every transaction takes the write lock up front instead of failing
    on upgrade (pysqlite's own transaction handling is switched off, as SQLAlchemy documents).
    PostgreSQL: pre-ping so a restarted server does not fail the first request.
    """
    if url.startswith("sqlite"):
        connect_args = {"check_same_thread": False, "timeout": 5.0}
        connect_args.update(kwargs.pop("connect_args", {}))
        engine = create_engine(url, connect_args=connect_args, **kwargs)

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            if ":memory:" not in url and url not in ("sqlite://", "sqlite:///"):
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={sqlite_synchronous()}")
            cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    kwargs.setdefault("pool_pre_ping", True)
    if url.startswith("postgresql"):
        # A server that accepts but never answers must not hold a webhook past GitHub's 10 s.
        kwargs.setdefault("connect_args", {"connect_timeout": 5})
    return create_engine(url, **kwargs)


class Prepared:
    """A Core statement compiled once per dialect and run on the transaction's DBAPI cursor.

    For the few statements on the webhook's path: SQLAlchemy's execution machinery (execution
    context, events, result wrapping) cost about 0.12 ms a statement, three times the statement
    itself on SQLite (profiled, BENCHMARKS.md), while every delivery runs five. Same SQL, same
    transaction, the types' bind processors applied; driver errors are re-raised as SQLAlchemy's
    (``IntegrityError`` etc.). A statement with an expanding ``IN`` falls back to
    ``Connection.execute``.
    """

    def __init__(self, statement: Any, keys: Sequence[str] | None = None) -> None:
        self.statement = statement
        self.keys = list(keys) if keys is not None else None
        self._compiled: dict[str, tuple[str, Any, dict[str, Any], dict[str, Any]] | None] = {}

    def _compile(self, dialect: Any) -> tuple[str, Any, dict[str, Any], dict[str, Any]] | None:
        compiled = self.statement.compile(dialect=dialect, column_keys=self.keys)
        if "POSTCOMPILE" in str(compiled):
            return None  # expanding IN lists are rendered per call: leave those to SQLAlchemy
        processors = {k: v for k, v in compiled._bind_processors.items() if v}  # e.g. to_float
        defaults = {name: bind.effective_value for name, bind in compiled.binds.items()
                    if not bind.required}  # literals such as kind = 'evaluate'
        return str(compiled), compiled.positiontup, defaults, processors

    def __call__(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Run it; returns the DBAPI cursor (rows are plain tuples in select order)."""
        name = conn.dialect.name
        if name not in self._compiled:
            self._compiled[name] = self._compile(conn.dialect)
        found = self._compiled[name]
        if found is None:
            return _Rows(conn.execute(self.statement, params))
        sql, order, defaults, processors = found
        values = {**defaults, **params}
        for key, process in processors.items():
            if values.get(key) is not None:
                values[key] = process(values[key])
        args = tuple(values.get(k) for k in order) if order is not None else values
        dbapi = conn.dialect.dbapi
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(sql, args)
        except dbapi.Error as exc:  # type: ignore[union-attr]
            raise DBAPIError.instance(sql, args, exc, dbapi.Error) from exc  # type: ignore[union-attr]
        return cursor


class _Rows:
    """A SQLAlchemy result answering like a DBAPI cursor (the fallback of :class:`Prepared`)."""

    def __init__(self, result: Any) -> None:
        self.result = result

    def fetchone(self) -> Any:
        row = self.result.first()
        return None if row is None else tuple(row)

    @property
    def rowcount(self) -> int:
        return int(self.result.rowcount)


class StoreBusy(TimeoutError):
    """A write could not start within its bounded wait: another writer holds the lock."""


@contextlib.contextmanager
def write(engine: Engine, *, deadline: float | None = None) -> Iterator[Connection]:
    """A write transaction. On SQLite, writers first queue on an ``flock`` beside the database.

    SQLite admits one writer at a time; the others poll with sleeps of up to 100 ms (its busy
    handler), which under load turned a 4 ms commit into a 650 ms p99 for the receiver. The
    kernel wakes an ``flock`` waiter the moment the lock is released, so writers from every
    gunicorn process and thread queue instead of polling. PostgreSQL has row locks and needs none.

    The lock is held for the transaction only: the connection is checked out of the pool before
    it is taken and returned after, and each thread keeps its lock file open, so the critical
    section has as few Python steps and system calls as it can. Each is a point where a thread
    in the same process can take the GIL while every writer on the machine waits (profiled:
    BENCHMARKS.md, "Webhook bot").

    ``deadline`` (``time.monotonic()``): wait for the locks until then and no longer, raising
    :class:`StoreBusy` (the ``flock``) or SQLite's "database is locked" (its write lock, held by
    another program). The webhook receiver answers GitHub within its 10 seconds this way; without
    a deadline a writer waits for the ``flock`` as long as it takes, and SQLite's busy timeout.
    """
    path = _lock_path(engine)
    if path is None:
        with engine.begin() as conn:
            yield conn
        return
    with engine.connect() as conn:
        fd = _lock_fd(path)
        _flock(fd, deadline)
        try:
            if deadline is None:
                with conn.begin():
                    yield conn
            else:
                with _busy_timeout(conn, deadline), conn.begin():
                    yield conn
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _flock(fd: int, deadline: float | None) -> None:
    """Take the write ``flock``: blocking without a deadline; with one, polled every few ms
    until the deadline (the kernel has no timed ``flock``)."""
    if deadline is None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    delay = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreBusy("another writer holds the store's write lock") from None
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.005)


@contextlib.contextmanager
def _busy_timeout(conn: Connection, deadline: float) -> Iterator[None]:
    """SQLite's busy timeout cut to what is left before ``deadline`` for one transaction (its
    ``BEGIN IMMEDIATE`` waits for the write lock that long), then set back."""
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None
    usual = int(dbapi.execute("PRAGMA busy_timeout").fetchone()[0])
    left = max(1, int((deadline - time.monotonic()) * 1000))
    dbapi.execute(f"PRAGMA busy_timeout={min(left, usual)}")
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # a closed connection is discarded by the pool anyway
            dbapi.execute(f"PRAGMA busy_timeout={usual}")


class _LockFiles(dict[tuple[int, str], int]):
    """One thread's open lock files, closed when the thread ends (its locals are dropped)."""

    def __del__(self) -> None:
        for fd in self.values():
            with contextlib.suppress(OSError):
                os.close(fd)


_LOCKS = threading.local()


def _lock_fd(path: str) -> int:
    """This thread's descriptor of the lock file (``flock`` locks belong to an open file, so
    threads must not share one; a forked child opens its own)."""
    opened: _LockFiles | None = getattr(_LOCKS, "files", None)
    if opened is None:
        opened = _LOCKS.files = _LockFiles()
    key = (os.getpid(), path)
    fd = opened.get(key)
    if fd is None:
        fd = opened[key] = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    return fd


def _lock_path(engine: Engine) -> str | None:
    if engine.dialect.name != "sqlite":
        return None
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file::memory:"):
        return None
    return f"{database}-writelock"


def init_schema(engine: Engine) -> list[str]:
    """Migrate the database to the newest schema (Alembic, ``taskeval/store/migrations``); safe to run from
    every process at start-up: one transaction under a lock (PostgreSQL advisory lock, SQLite
    ``flock``), so concurrent starts migrate once and the others find it done. A database from
    before migrations is adopted (stamped at the baseline) and upgraded. Returns the revisions
    applied."""
    from taskeval.store import migrations

    with write(engine) as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK})
        return migrations.upgrade(conn)


def drop_schema(engine: Engine) -> None:
    """Drop every table of the database, the migration version included (tests, benchmarks)."""
    with write(engine) as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK})
        found = MetaData()
        found.reflect(conn)
        found.drop_all(conn)


def describe_url(url: str) -> str:
    """The database URL without credentials, for logs and /healthz."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL must not leak through the error
        return "(unparsable DATABASE_URL)"


DEFAULT_STORE_FILE = "taskeval.db"  # in the working directory: every command's default store
# The bot's own default before every command shared one: still used where it is the only store.
LEGACY_STORE_FILE = "taskeval-bot.sqlite3"


def default_store(env: Mapping[str, str] | None = None) -> str:
    """``$DATABASE_URL``, else the SQLite file :data:`DEFAULT_STORE_FILE` in the working directory
    (by its absolute path): the one default of every command (``serve``, ``worker``, ``backfill``,
    ``export``, ``load``, ``dashboard``), so ``serve`` then ``dashboard`` in one folder read one
    store. A folder holding only :data:`LEGACY_STORE_FILE` (written by the bot before) keeps it,
    rather than starting an empty store beside the history."""
    source = os.environ if env is None else env
    given = (source.get("DATABASE_URL") or "").strip()
    if given:
        return given
    path = Path.cwd() / DEFAULT_STORE_FILE
    legacy = Path.cwd() / LEGACY_STORE_FILE
    if not path.exists() and legacy.is_file():
        path = legacy
    return f"sqlite:///{path}"


def normalise_database_url(url: str) -> str:
    """Map ``postgres://`` / ``postgresql://`` to the psycopg 3 driver the bot extra installs.

    SQLAlchemy's default PostgreSQL driver is psycopg2, which is not a dependency; operators
    (and Heroku-style platforms) write the bare scheme.
    """
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url
