"""The dashboard's rollup table: the latest evaluations summed per repository, agent, author,
week, band and PR state (count, sums and sums of squares of the overall and category scores), so
the overview answers from a few thousand rows instead of scanning every latest evaluation.

``bot.results.store_evaluation`` keeps it in the same transaction; this revision creates it and
fills it from the existing evaluations (a frozen copy of ``bot.results.rebuild_rollup``).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

KEYS = (("repo", 200), ("agent_id", 64), ("agent_name", 100), ("author", 100), ("week", 10),
        ("overall_band", 16), ("pr_state", 16))
SCORES = (("overall_score", "overall"), ("agent_performance", "agent_performance"),
          ("task_outcome_quality", "task_outcome_quality"), ("process_compliance", "process_compliance"))


def upgrade() -> None:
    sums = [sa.Column("n", sa.BigInteger, nullable=False)]
    for _column, name in SCORES:
        sums += [sa.Column(f"s_{name}", sa.BigInteger, nullable=False),
                 sa.Column(f"q_{name}", sa.BigInteger, nullable=False)]
    rollup = op.create_table(
        "dashboard_rollup",
        *(sa.Column(name, sa.String(size), nullable=False) for name, size in KEYS),
        *sums,
        sa.PrimaryKeyConstraint(*(name for name, _ in KEYS), name="pk_dashboard_rollup"),
    )
    assert rollup is not None
    evaluations = sa.table(
        "evaluations", sa.column("is_latest", sa.Boolean),
        *(sa.column(name, sa.String) for name, _ in KEYS),
        *(sa.column(column, sa.Integer) for column, _ in SCORES),
    )
    e = evaluations.c
    keys = [sa.func.coalesce(e[name], sa.literal("")).label(name) for name, _ in KEYS]
    aggregates: list[Any] = [sa.func.count().label("n")]
    names = ["n"]
    for column, name in SCORES:
        aggregates += [sa.func.sum(e[column]), sa.func.sum(e[column] * e[column])]
        names += [f"s_{name}", f"q_{name}"]
    query = sa.select(*keys, *aggregates).where(e.is_latest == sa.true()).group_by(*keys)
    op.get_bind().execute(sa.insert(rollup).from_select([name for name, _ in KEYS] + names, query))


def downgrade() -> None:
    op.drop_table("dashboard_rollup")
