"""Columns and indexes the leaderboard and the dashboard aggregate on, filled from the stored
result JSON of existing rows.

``evaluations`` gains the agent (id, name, operator, confidence), the PR's state and times, the
time the PR's work ended (``activity_at``) with its ISO week (``week``, the Monday), the repository
owner, and ``is_latest`` marking the newest evaluation of each pull request, so aggregates count a
PR once without a ``max(id)`` subquery. The derivation is a frozen copy of what
``taskeval.store.results.record_from_result`` does today, so re-running this revision never depends on later
code.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_BATCH = 500

def _columns() -> tuple[sa.Column[Any], ...]:
    return (
        sa.Column("owner", sa.String(100)),
        sa.Column("agent_id", sa.String(64)),
        sa.Column("agent_name", sa.String(100)),
        sa.Column("operator", sa.String(100)),
        sa.Column("agent_confidence", sa.String(16)),
        sa.Column("pr_state", sa.String(16)),
        sa.Column("pr_created_at", sa.Float),
        sa.Column("merged_at", sa.Float),
        sa.Column("closed_at", sa.Float),
        sa.Column("activity_at", sa.Float),
        sa.Column("week", sa.String(10)),
    )


COLUMNS = _columns()

INDEXES = (
    ("ix_evaluations_agent_time", ("is_latest", "agent_id", "activity_at")),
    ("ix_evaluations_author_time", ("is_latest", "author", "activity_at")),
    ("ix_evaluations_repo_time", ("repo", "is_latest", "activity_at")),
    ("ix_evaluations_week", ("is_latest", "week", "agent_id")),
)


def _epoch(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _week(epoch: float) -> str:
    day = datetime.fromtimestamp(epoch, UTC).date()
    return (day - timedelta(days=day.weekday())).isoformat()


def _text(value: Any, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def derive(repo: str, evaluated_at: str, result: dict[str, Any]) -> dict[str, Any]:
    """The new columns of one row, from its result JSON (defensive: old results lack parts)."""
    agent: dict[str, Any] | None = result["agent"] if isinstance(result.get("agent"), dict) else None
    pull: dict[str, Any] = result["pullRequest"] if isinstance(result.get("pullRequest"), dict) else {}
    facts: dict[str, Any] = {}
    evidence: dict[str, Any] = result["evidence"] if isinstance(result.get("evidence"), dict) else {}
    for group in evidence.get("groups") or ():
        if isinstance(group, dict) and group.get("source") == "taskMetadata":
            for item in group.get("items") or ():
                if isinstance(item, dict) and item.get("kind") == "pull_request":
                    facts = item.get("facts") or {}
                    break
    merged = bool(pull.get("merged") or facts.get("merged"))
    state = facts.get("state")
    pr_state = "merged" if merged else (state if state in ("open", "closed") else None)
    created = _epoch(facts.get("createdAt"))
    merged_at = _epoch(pull.get("mergedAt") or facts.get("mergedAt"))
    closed_at = _epoch(facts.get("closedAt")) or merged_at
    activity = merged_at or closed_at or created or _epoch(evaluated_at) or 0.0
    return {
        "owner": repo.split("/", 1)[0][:100],
        "agent_id": _text(agent.get("id"), 64) if agent else None,
        "agent_name": _text(agent.get("name"), 100) if agent else None,
        "operator": _text(agent.get("operator"), 100) if agent else None,
        "agent_confidence": _text(agent.get("confidence"), 16) if agent else None,
        "pr_state": pr_state,
        "pr_created_at": created,
        "merged_at": merged_at,
        "closed_at": closed_at,
        "activity_at": activity,
        "week": _week(activity),
    }


def _backfill(conn: sa.Connection) -> None:
    table = sa.table("evaluations", sa.column("id", sa.Integer), sa.column("repo", sa.String),
                     sa.column("number", sa.Integer), sa.column("evaluated_at", sa.String),
                     sa.column("result_json", sa.Text),
                     *(sa.column(c.name, c.type) for c in COLUMNS),
                     sa.column("is_latest", sa.Boolean))
    update = (sa.update(table).where(table.c.id == sa.bindparam("b_id"))
              .values({c.name: sa.bindparam(c.name) for c in COLUMNS}))
    last = 0
    while True:
        rows = conn.execute(
            sa.select(table.c.id, table.c.repo, table.c.evaluated_at, table.c.result_json)
            .where(table.c.id > last).order_by(table.c.id).limit(_BATCH)
        ).all()
        if not rows:
            break
        params = []
        for row in rows:
            try:
                result = json.loads(row.result_json)
            except (TypeError, ValueError):
                result = {}
            params.append({"b_id": row.id, **derive(row.repo, row.evaluated_at,
                                                   result if isinstance(result, dict) else {})})
        conn.execute(update, params)
        last = rows[-1].id
    newest = sa.select(sa.func.max(table.c.id)).group_by(table.c.repo, table.c.number)
    conn.execute(sa.update(table).where(table.c.id.in_(newest)).values(is_latest=True))


def upgrade() -> None:
    with op.batch_alter_table("evaluations") as batch:
        for column in _columns():
            batch.add_column(column)
        batch.add_column(sa.Column("is_latest", sa.Boolean, nullable=False,
                                   server_default=sa.false()))
    _backfill(op.get_bind())
    for name, columns in INDEXES:
        op.create_index(name, "evaluations", list(columns))
    latest = sa.text("is_latest")
    op.create_index("uq_evaluations_latest", "evaluations", ["repo", "number"], unique=True,
                    sqlite_where=latest, postgresql_where=latest)


def downgrade() -> None:
    op.drop_index("uq_evaluations_latest", table_name="evaluations")
    for name, _ in INDEXES:
        op.drop_index(name, table_name="evaluations")
    with op.batch_alter_table("evaluations") as batch:
        batch.drop_column("is_latest")
        for column in reversed(COLUMNS):
            batch.drop_column(column.name)
