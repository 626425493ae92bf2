"""Outcomes: what happened to evaluated PRs after evaluation (rejected, reverted, follow-up fix,
reopened task, ...), one row per (repository, PR, outcome), written by ``taskeval outcomes
--write-store`` and by the bot from ``push`` and ``pull_request`` events on the default branch;
``taskeval validate`` and ``taskeval calibrate`` read them beside the stored results.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "outcomes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("outcome", sa.String(32), nullable=False),
        sa.Column("value", sa.Boolean, nullable=False),
        sa.Column("evidence", sa.Text, nullable=False),
        sa.Column("detail", sa.String(500), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("observed_at", sa.String(40)),
        sa.Column("recorded_at", sa.Float, nullable=False),
    )
    op.create_index("uq_outcomes_pr_outcome", "outcomes", ["repo", "number", "outcome"],
                    unique=True)


def downgrade() -> None:
    op.drop_index("uq_outcomes_pr_outcome", table_name="outcomes")
    op.drop_table("outcomes")
