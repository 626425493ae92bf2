"""The bot's outcomes table: what happened to evaluated PRs after evaluation (taskeval.outcomes).

One row per (repository, PR, outcome); writing the same outcome again replaces the row, except
that a recorded ``true`` is never overwritten by a ``false`` (an outcome, once seen, happened).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import inspect, not_, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from taskeval.outcomes import OutcomeRecord
from taskeval.store.db import Prepared, init_schema, make_engine, outcomes, write


@contextmanager
def _store(url_or_engine: str | Engine) -> Iterator[Engine]:
    """The store at the newest schema (migrated as the bot does at start-up, outcomes included);
    an engine made here from a URL is disposed of afterwards."""
    own = isinstance(url_or_engine, str)
    engine = make_engine(url_or_engine) if isinstance(url_or_engine, str) else url_or_engine
    try:
        init_schema(engine)
        yield engine
    finally:
        if own:
            engine.dispose()


def upsert(conn: Connection, records: Iterable[OutcomeRecord]) -> int:
    """Write ``records`` with one atomic ``INSERT ... ON CONFLICT DO UPDATE`` on the unique
    (repo, number, outcome) index, compiled once per dialect and run once per row on the driver's
    cursor (:class:`taskeval.store.db.Prepared`): workers writing the same outcome at once never fail on it,
    and the update applies only when the new value is true or the stored one false (a recorded
    true is never overwritten by a false). Records are written in key order, so two transactions
    writing overlapping sets take their row locks in the same order and cannot deadlock.

    Not one multi-row ``VALUES``: PostgreSQL refuses a statement that updates the same row twice,
    and a batch may hold a key more than once (each applies in turn). SQLAlchemy's
    ``insertmanyvalues`` would fold the rows into one for a driver it does that for (psycopg2;
    not psycopg, the bot's), hence one statement per row."""
    stmt = _UPSERTS.get(conn.dialect.name)
    if stmt is None:
        raise ValueError(f"outcomes: no atomic upsert for the {conn.dialect.name} dialect")
    rows = [row for _, row in sorted((_row(r) for r in records), key=lambda keyed: keyed[0])]
    for row in rows:  # compiled once, run on the driver's cursor: the receiver's path
        stmt(conn, row)
    return len(rows)


_UPDATED = ("value", "evidence", "detail", "source", "observed_at", "recorded_at")


_ROW_KEYS = ("repo", "number", "outcome", "value", "evidence", "detail", "source", "observed_at",
             "recorded_at")


def _upsert_statement(insert: Callable[..., Any]) -> Any:
    """The upsert of one row, its values bound at execution: the excluded (proposed) row replaces
    the stored one's :data:`_UPDATED` columns when it is true or the stored one is false."""
    stmt = insert(outcomes)
    new = stmt.excluded
    return stmt.on_conflict_do_update(
        index_elements=[outcomes.c.repo, outcomes.c.number, outcomes.c.outcome],
        set_={name: new[name] for name in _UPDATED},
        where=or_(new.value, not_(outcomes.c.value)),
    )


# Built once per dialect: each upsert only binds its rows.
_UPSERTS: dict[str, Prepared] = {
    name: Prepared(_upsert_statement(insert), _ROW_KEYS)
    for name, insert in (("postgresql", postgresql.insert), ("sqlite", sqlite.insert))
}


def _row(r: OutcomeRecord) -> tuple[tuple[str, int, str], dict[str, Any]]:
    """(its key, the row) for one record; the stable sort keeps a batch's own order per key."""
    return ((r.repository, r.number, r.outcome),
            {"repo": r.repository, "number": r.number, "outcome": r.outcome, "value": r.value,
             "evidence": json.dumps(r.evidence), "detail": r.detail[:500], "source": r.source,
             "observed_at": r.observed_at, "recorded_at": time.time()})


def write_outcomes(url_or_engine: str | Engine, records: Iterable[OutcomeRecord]) -> int:
    with _store(url_or_engine) as engine, write(engine) as conn:
        return upsert(conn, records)


def read_outcomes(url_or_engine: str | Engine, *, migrate: bool = True) -> list[OutcomeRecord]:
    """Every stored outcome. ``migrate=False`` reads as the store is, writing nothing (``taskeval
    validate`` over a read-only store): a store without the outcomes table has none. A database
    that holds no taskeval store is refused either way (:class:`taskeval.store.access.StoreError`),
    never given the store's tables: a reader does not create one."""
    from taskeval.store.access import STORE_TABLE, StoreError, check_store

    if isinstance(url_or_engine, str):
        check_store(url_or_engine, create=False)
    elif not inspect(url_or_engine).has_table(STORE_TABLE):
        raise StoreError(f"{url_or_engine.url.render_as_string(hide_password=True)} holds no "
                         "taskeval store")
    if not migrate:
        engine = make_engine(url_or_engine) if isinstance(url_or_engine, str) else url_or_engine
        try:
            if not inspect(engine).has_table("outcomes"):
                return []
            with engine.connect() as conn:
                rows = conn.execute(select(outcomes).order_by(outcomes.c.id)).all()
        finally:
            if isinstance(url_or_engine, str):
                engine.dispose()
        return _records(rows)
    with _store(url_or_engine) as engine, engine.connect() as conn:
        rows = conn.execute(select(outcomes).order_by(outcomes.c.id)).all()
    return _records(rows)


def _records(rows: Iterable[Any]) -> list[OutcomeRecord]:
    return [OutcomeRecord(r.repo, r.number, r.outcome, bool(r.value), json.loads(r.evidence),
                          r.detail, r.source, r.observed_at) for r in rows]
