"""The turns, closure, rescue and task type of each evaluation as columns, filled from the stored
result JSON of existing rows, with the covering index the agent page and the comparison read.

The dashboard's cycle times (medians and 90th percentiles with bootstrap intervals), the cost of an
agent PR to people (rescue mix, people's commits, rounds, closure classes) and the comparison of two
agents need a dozen values per PR; parsing result_json (tens of kB) of 30,000 PRs per request costs
seconds. The values are the export's (``taskeval.store.export.STORED``); the derivation here is a frozen copy
of ``taskeval.store.export.row_of``'s for these columns, so re-running this revision never depends on later
code. A result stored before task types gets its type from ``taskeval.tasktypes.classify`` over its
stored evidence and config, as the export computes it.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_BATCH = 500


def _columns() -> tuple[sa.Column[Any], ...]:
    return (
        sa.Column("task_type", sa.String(16)),
        sa.Column("draft_at_end", sa.Boolean),
        sa.Column("first_response_hours", sa.Float),
        sa.Column("agent_hours", sa.Float),
        sa.Column("people_hours", sa.Float),
        sa.Column("draft_hours", sa.Float),
        sa.Column("merge_hours", sa.Float),
        sa.Column("rounds", sa.Integer),
        sa.Column("closure_class", sa.String(16)),
        sa.Column("closure_against", sa.Boolean),
        sa.Column("rescue_class", sa.String(16)),
        sa.Column("people_commits", sa.Integer),
    )


COLUMNS = _columns()
INDEX = ("ix_evaluations_turns", (
    "is_latest", "agent_id", "repo", "task_type", "pr_state", "draft_at_end", "rescue_class",
    "closure_class", "closure_against", "people_commits", "rounds", "agent_performance",
    "first_response_hours", "agent_hours", "people_hours", "draft_hours", "merge_hours", "week",
    "activity_at", "author", "overall_band"))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _epoch(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _task_type(result: dict[str, Any]) -> str | None:
    stored = _dict(result.get("taskType"))
    if stored.get("type"):
        return str(stored["type"])[:16]
    from pydantic import ValidationError

    from taskeval.config import Settings, stored_config
    from taskeval.models import PullFacts
    from taskeval.tasktypes import classify

    try:
        pull = PullFacts.model_validate(_dict(_dict(result.get("evidence")).get("facts")).get("pull"))
        config = result.get("config")
        settings = stored_config(config).settings if config is not None else Settings()
    except ValidationError:
        return None
    return classify(pull, settings).type


def _number(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def derive(result: dict[str, Any]) -> dict[str, Any]:
    """The new columns of one row, from its result JSON (defensive: old results lack parts)."""
    pull = _dict(result.get("pullRequest"))
    facts: dict[str, Any] = {}
    for group in _dict(result.get("evidence")).get("groups") or ():
        if isinstance(group, dict) and group.get("source") == "taskMetadata":
            for item in group.get("items") or ():
                if isinstance(item, dict) and item.get("kind") == "pull_request":
                    facts = _dict(item.get("facts"))
                    break
    merged = bool(pull.get("merged") or facts.get("merged"))
    created, merged_at = _epoch(facts.get("createdAt")), _epoch(pull.get("mergedAt") or facts.get("mergedAt"))
    turns, closure, rescue = _dict(result.get("turns")), _dict(result.get("closure")), _dict(result.get("rescue"))
    against = closure.get("countsAgainstAgent")
    return {
        "task_type": _task_type(result),
        "draft_at_end": bool(facts["draft"]) and not merged if "draft" in facts else None,
        "first_response_hours": _number(turns.get("firstHumanResponseHours")),
        "agent_hours": _number(turns.get("agentHours")),
        "people_hours": _number(turns.get("peopleHours")),
        "draft_hours": _number(turns.get("draftHours")),
        "merge_hours": (round((merged_at - created) / 3600, 2)
                        if merged and created is not None and merged_at is not None else None),
        "rounds": _number(turns.get("rounds")),
        "closure_class": str(closure["class"])[:16] if closure.get("class") else None,
        "closure_against": against if isinstance(against, bool) else None,
        "rescue_class": str(rescue["class"])[:16] if rescue.get("class") else None,
        "people_commits": _number(rescue.get("commitsByPeople")),
    }


def _backfill(conn: sa.Connection) -> None:
    table = sa.table("evaluations", sa.column("id", sa.Integer), sa.column("result_json", sa.Text),
                     *(sa.column(c.name, c.type) for c in COLUMNS))
    update = (sa.update(table).where(table.c.id == sa.bindparam("b_id"))
              .values({c.name: sa.bindparam(c.name) for c in COLUMNS}))
    last = 0
    while True:
        rows = conn.execute(sa.select(table.c.id, table.c.result_json).where(table.c.id > last)
                            .order_by(table.c.id).limit(_BATCH)).all()
        if not rows:
            break
        params = []
        for row in rows:
            try:
                result = json.loads(row.result_json)
            except (TypeError, ValueError):
                result = {}
            params.append({"b_id": row.id, **derive(_dict(result))})
        conn.execute(update, params)
        last = rows[-1].id


def upgrade() -> None:
    for column in _columns():
        op.add_column("evaluations", column)
    _backfill(op.get_bind())
    op.create_index(INDEX[0], "evaluations", list(INDEX[1]))


def downgrade() -> None:
    op.drop_index(INDEX[0], table_name="evaluations")
    for column in reversed(COLUMNS):
        op.drop_column("evaluations", column.name)
