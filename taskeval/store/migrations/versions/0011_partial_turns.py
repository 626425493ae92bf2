"""The hours of a PR whose timeline was not read are unknown, not zero.

Without the timeline (``turns.partial``: GitHub refused it, or a replay's data lacks it) the turns
cannot see drafts, agent sessions or review requests, so the agent's and the people's hours read
as if the PR had been the people's move from opening to end: the agent page said "0.0 h on the
agent's turns" for every such PR. From this revision the export and the stored columns leave
``agent_hours``, ``people_hours`` and ``draft_hours`` empty for them (``taskeval.store.export.row_of``), and the
cycle-time figures rest only on the PRs whose timeline was read. Existing rows are cleared here
from their stored result JSON; the downgrade puts the hours back from the same JSON.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_BATCH = 500
_HOURS = (("agent_hours", "agentHours"), ("people_hours", "peopleHours"), ("draft_hours", "draftHours"))


def _partial_turns(text: str | None) -> dict[str, Any] | None:
    """The result's turns when they are partial, else None (an unreadable result too)."""
    try:
        result = json.loads(text or "")
    except ValueError:
        return None
    turns = result.get("turns") if isinstance(result, dict) else None
    return turns if isinstance(turns, dict) and turns.get("partial") is True else None


def _rewrite(restore: bool) -> None:
    conn = op.get_bind()
    e = sa.table("evaluations", sa.column("id", sa.Integer), sa.column("result_json", sa.Text),
                 *(sa.column(c, sa.Float) for c, _ in _HOURS))
    # Results are stored compact (no spaces), so the substring finds every candidate cheaply;
    # each is then read as JSON, so a "partial" elsewhere in a result never clears its hours.
    query = sa.select(e.c.id, e.c.result_json).where(e.c.result_json.like('%"partial":true%'))
    after = 0
    while True:
        rows = conn.execute(query.where(e.c.id > after).order_by(e.c.id).limit(_BATCH)).all()
        for row in rows:
            turns = _partial_turns(row.result_json)
            if turns is None:
                continue
            values = {c: (turns.get(k) if restore and isinstance(turns.get(k), int | float) else None)
                      for c, k in _HOURS}
            conn.execute(sa.update(e).where(e.c.id == row.id).values(**values))
        if len(rows) < _BATCH:
            break
        after = rows[-1].id


def upgrade() -> None:
    _rewrite(restore=False)


def downgrade() -> None:
    _rewrite(restore=True)
