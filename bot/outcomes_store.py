"""The bot's outcomes table: what happened to evaluated PRs after evaluation (taskeval.outcomes).

One row per (repository, PR, outcome); writing the same outcome again replaces the row, except
that a recorded ``true`` is never overwritten by a ``false`` (an outcome, once seen, happened).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from bot.db import init_schema, make_engine, outcomes, write
from taskeval.outcomes import OutcomeRecord


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
    count = 0
    for r in records:
        row = {"repo": r.repository, "number": r.number, "outcome": r.outcome, "value": r.value,
               "evidence": json.dumps(r.evidence), "detail": r.detail[:500], "source": r.source,
               "observed_at": r.observed_at, "recorded_at": time.time()}
        found = conn.execute(select(outcomes.c.id, outcomes.c.value).where(
            outcomes.c.repo == r.repository, outcomes.c.number == r.number,
            outcomes.c.outcome == r.outcome)).first()
        if found is None:
            conn.execute(outcomes.insert().values(**row))
        elif r.value or not found.value:
            conn.execute(outcomes.update().where(outcomes.c.id == found.id).values(**row))
        count += 1
    return count


def write_outcomes(url_or_engine: str | Engine, records: Iterable[OutcomeRecord]) -> int:
    with _store(url_or_engine) as engine, write(engine) as conn:
        return upsert(conn, records)


def read_outcomes(url_or_engine: str | Engine) -> list[OutcomeRecord]:
    with _store(url_or_engine) as engine, engine.connect() as conn:
        rows = conn.execute(select(outcomes).order_by(outcomes.c.id)).all()
    return [OutcomeRecord(r.repo, r.number, r.outcome, bool(r.value), json.loads(r.evidence),
                          r.detail, r.source, r.observed_at) for r in rows]
