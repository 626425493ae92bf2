"""A shared GitHub request budget per credential: backfill processes and workers that use the same
token or App installation take requests from one row, so together they stay within its limit.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_budgets",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("limit", sa.Integer, nullable=False),
        sa.Column("remaining", sa.Integer, nullable=False),
        sa.Column("reset_at", sa.Float, nullable=False),
        sa.Column("window", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("rate_budgets")
