"""The dashboard's tables and indexes: per-signal rows of every stored evaluation, and covering
indexes for the overview's group-bys.

``signals`` holds one row per signal of each evaluation (id, category, score, conclusive, weight),
so "the signals that pull this agent down" is a SQL ``GROUP BY``; existing evaluations get theirs
from their stored result JSON here (a frozen copy of ``taskeval.store.results.signal_rows``).
``ix_signals_down`` is a partial covering index of the rows that pulled a score down.
``ix_evaluations_dash_agent``/``_author`` cover every column the overview reads, so it never
touches table rows (whose large ``result_json`` sits in SQLite overflow pages before them).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_BATCH = 500
PULLS_DOWN = "conclusive AND weight > 0 AND score < 60"
_FACETS = ["week", "overall_score", "overall_band", "agent_performance", "task_outcome_quality",
           "process_compliance", "pr_state", "activity_at", "repo", "agent_name"]
INDEXES = (
    ("ix_evaluations_dash_agent", ["is_latest", "agent_id", *_FACETS]),
    ("ix_evaluations_dash_author", ["is_latest", "author", *_FACETS, "agent_id"]),
)


def rows_for(evaluation_id: int, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``signals`` rows of one stored result (defensive: old or odd results lack parts)."""
    out: dict[str, dict[str, Any]] = {}
    for s in result.get("signals") or ():
        if not isinstance(s, dict) or not isinstance(s.get("id"), str) or s["id"] in out:
            continue
        score = s.get("score")
        score = int(score) if isinstance(score, int | float) and not isinstance(score, bool) else None
        try:
            weight = float(s.get("weight") or 0.0)
        except (TypeError, ValueError):
            weight = 0.0
        out[s["id"]] = {
            "evaluation_id": evaluation_id,
            "signal_id": s["id"][:64],
            "category": str(s.get("category") or "")[:32],
            "score": score,
            "conclusive": s.get("status") == "ok" and score is not None,
            "weight": weight,
        }
    return list(out.values())


def _backfill(conn: sa.Connection, signals: sa.Table) -> None:
    evaluations = sa.table("evaluations", sa.column("id", sa.Integer), sa.column("result_json", sa.Text))
    last = 0
    while True:
        rows = conn.execute(
            sa.select(evaluations.c.id, evaluations.c.result_json)
            .where(evaluations.c.id > last).order_by(evaluations.c.id).limit(_BATCH)
        ).all()
        if not rows:
            break
        params: list[dict[str, Any]] = []
        for row in rows:
            try:
                result = json.loads(row.result_json)
            except (TypeError, ValueError):
                continue
            if isinstance(result, dict):
                params.extend(rows_for(row.id, result))
        if params:
            conn.execute(sa.insert(signals), params)
        last = rows[-1].id


def upgrade() -> None:
    signals = op.create_table(
        "signals",
        sa.Column("evaluation_id", sa.Integer, nullable=False),
        sa.Column("signal_id", sa.String(64), nullable=False),
        sa.Column("category", sa.String(32), nullable=False),
        sa.Column("score", sa.Integer),
        sa.Column("conclusive", sa.Boolean, nullable=False),
        sa.Column("weight", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("evaluation_id", "signal_id", name="pk_signals"),
    )
    assert signals is not None
    _backfill(op.get_bind(), signals)
    op.create_index("ix_signals_down", "signals",
                    ["evaluation_id", "signal_id", "score", "category", "conclusive", "weight"],
                    sqlite_where=sa.text(PULLS_DOWN), postgresql_where=sa.text(PULLS_DOWN))
    for name, columns in INDEXES:
        op.create_index(name, "evaluations", columns)


def downgrade() -> None:
    for name, _ in INDEXES:
        op.drop_index(name, table_name="evaluations")
    op.drop_index("ix_signals_down", table_name="signals")
    op.drop_table("signals")
