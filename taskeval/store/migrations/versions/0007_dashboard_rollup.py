"""The dashboard's rollup tables: the latest evaluations summed per repository, agent (or author),
week and band — count, PR-state counts, sums and sums of squares of the overall and category
scores — so the overview answers from a few thousand rows instead of scanning every latest
evaluation.

``taskeval.store.results.store_evaluation`` keeps them in the same transaction; this revision creates them and
fills them from the existing evaluations (a frozen copy of ``taskeval.store.results.rebuild_rollup``).

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

SIZES = {"repo": 200, "agent_id": 64, "agent_name": 100, "author": 100}
TABLES = (("dashboard_rollup_agent", ("repo", "agent_id", "agent_name")),
          ("dashboard_rollup_author", ("repo", "author")))
SCORES = (("overall_score", "overall"), ("agent_performance", "agent_performance"),
          ("task_outcome_quality", "task_outcome_quality"), ("process_compliance", "process_compliance"))
STATES = ("merged", "closed", "open")


def upgrade() -> None:
    evaluations = sa.table(
        "evaluations", sa.column("is_latest", sa.Boolean), sa.column("pr_state", sa.String),
        sa.column("week", sa.String), sa.column("overall_band", sa.String),
        *(sa.column(name, sa.String) for name in SIZES),
        *(sa.column(column, sa.Integer) for column, _ in SCORES),
    )
    e = evaluations.c
    for name, key_names in TABLES:
        columns = [sa.Column("n", sa.BigInteger, nullable=False)]
        columns += [sa.Column(f"p_{state}", sa.BigInteger, nullable=False) for state in STATES]
        for _column, sum_name in SCORES:
            columns += [sa.Column(f"s_{sum_name}", sa.BigInteger, nullable=False),
                        sa.Column(f"q_{sum_name}", sa.BigInteger, nullable=False)]
        table = op.create_table(
            name,
            *(sa.Column(k, sa.String(SIZES[k]), nullable=False) for k in key_names),
            sa.Column("week", sa.String(10), nullable=False),
            sa.Column("overall_band", sa.String(16), nullable=False),
            *columns,
            sa.PrimaryKeyConstraint(*key_names, "week", "overall_band", name=f"pk_{name}"),
        )
        assert table is not None
        keys = [sa.func.coalesce(e[k], sa.literal("")).label(k) for k in (*key_names, "week", "overall_band")]
        aggregates: list[Any] = [sa.func.count()]
        aggregates += [sa.func.sum(sa.case((e.pr_state == state, 1), else_=0)) for state in STATES]
        for column, _sum_name in SCORES:
            aggregates += [sa.func.sum(e[column]), sa.func.sum(e[column] * e[column])]
        query = sa.select(*keys, *aggregates).where(e.is_latest == sa.true()).group_by(*keys)
        op.get_bind().execute(sa.insert(table).from_select(
            [*key_names, "week", "overall_band", *(c.name for c in columns)], query))


def downgrade() -> None:
    for name, _ in TABLES:
        op.drop_table(name)
