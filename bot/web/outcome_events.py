"""Outcomes from webhook deliveries: a closed PR on the default branch records ``rejected`` (or not),
a merged revert PR (``Reverts o/r#N``) and a pushed ``This reverts commit <sha>`` record the
reverted PR's ``reverted``. The rules are :mod:`taskeval.outcomes`'; this module only looks up the
merged PR a SHA belongs to in the stored results and writes the rows. Never raises into the
delivery path: a failure is logged and the delivery is still acknowledged as usual.

The receiver writes them in the delivery's own transaction (:func:`writer`): a second commit per
delivery, each an fsync on SQLite, was a third of what acknowledging a merged PR cost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.engine import Engine

from taskeval.outcomes import OutcomeRecord, from_pull_request_event, from_push_event
from taskeval.store.db import evaluations, write
from taskeval.store.outcomes import upsert

log = logging.getLogger(__name__)


def merged_pr_of(engine: Engine, repo: str, sha: str) -> int | None:
    """The stored PR whose merge commit is ``sha`` (a 7+ character prefix), if any."""
    if len(sha) < 7 or not all(c in "0123456789abcdef" for c in sha):
        return None
    needle = f'%"mergeCommitSha":"{sha}%'
    with engine.connect() as conn:
        row = conn.execute(select(evaluations.c.number).where(
            evaluations.c.repo == repo, evaluations.c.result_json.like(needle)
        ).order_by(evaluations.c.id.desc()).limit(1)).first()
    return int(row[0]) if row else None


def outcomes_of(engine: Engine, event: str, payload: dict[str, Any]) -> list[OutcomeRecord]:
    if event == "pull_request":
        return from_pull_request_event(payload)
    if event == "push":
        repo = str((payload.get("repository") or {}).get("full_name") or "")
        return from_push_event(payload, lambda sha: merged_pr_of(engine, repo, sha))
    return []


def record(engine: Engine, event: str, payload: dict[str, Any]) -> list[OutcomeRecord]:
    """Store the outcomes a delivery shows; returns them (empty when none, or on a failure)."""
    try:
        found = outcomes_of(engine, event, payload)
        if found:
            with write(engine) as conn:
                upsert(conn, found)
        return found
    except Exception as exc:  # outcomes are a by-product: never fail the delivery for them
        log.warning("could not record outcomes from a %s delivery: %s", event, exc)
        return []


def writer(engine: Engine, event: str,
           payload: dict[str, Any]) -> Callable[[Connection], None] | None:
    """What a delivery shows, as a step to run inside the delivery's transaction (None when it
    shows nothing). The reads happen now, outside the write lock; a failure of the step loses the
    outcomes, never the delivery."""
    if event not in ("pull_request", "push"):
        return None
    try:
        found = outcomes_of(engine, event, payload)
    except Exception as exc:  # outcomes are a by-product: never fail the delivery for them
        log.warning("could not read outcomes from a %s delivery: %s", event, exc)
        return None
    if not found:
        return None

    def step(conn: Connection) -> None:
        try:
            if conn.dialect.name == "sqlite":  # a failed statement leaves the transaction usable
                upsert(conn, found)
                return
            with conn.begin_nested():  # PostgreSQL aborts the transaction: a savepoint guards it
                upsert(conn, found)
        except Exception as exc:
            log.warning("could not record outcomes from a %s delivery: %s", event, exc)

    return step
