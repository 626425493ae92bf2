"""The bot's outcomes table: what happened to evaluated PRs after evaluation (taskeval.outcomes).

One row per (repository, PR, outcome); writing the same outcome again replaces the row, except
that a recorded ``true`` is never overwritten by a ``false`` (an outcome, once seen, happened).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from bot.db import init_schema, make_engine, outcomes
from taskeval.outcomes import OutcomeRecord


def _engine(url_or_engine: str | Engine) -> tuple[Engine, bool]:
    if isinstance(url_or_engine, Engine):
        return url_or_engine, False
    return make_engine(url_or_engine), True


def ensure_table(engine: Engine) -> None:
    """Migrate the store to the newest schema (as the bot does at start-up), outcomes included."""
    init_schema(engine)


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
    engine, own = _engine(url_or_engine)
    try:
        ensure_table(engine)
        with engine.begin() as conn:
            return upsert(conn, records)
    finally:
        if own:
            engine.dispose()


def read_outcomes(url_or_engine: str | Engine) -> list[OutcomeRecord]:
    engine, own = _engine(url_or_engine)
    try:
        ensure_table(engine)
        with engine.connect() as conn:
            rows = conn.execute(select(outcomes).order_by(outcomes.c.id)).all()
        return [OutcomeRecord(r.repo, r.number, r.outcome, bool(r.value), json.loads(r.evidence),
                              r.detail, r.source, r.observed_at) for r in rows]
    finally:
        if own:
            engine.dispose()
