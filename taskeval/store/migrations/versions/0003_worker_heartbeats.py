"""Queue-worker heartbeats: ``workers`` holds one row per running queue worker, refreshed every
few seconds whether it is idle or busy, so ``/healthz`` can say whether any worker is alive and
``/healthz/workers`` can answer 503 when none is.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("host", sa.String(200), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("heartbeat_at", sa.Float, nullable=False),
        sa.Column("job_id", sa.Integer),
    )
    op.create_index("ix_workers_heartbeat", "workers", ["heartbeat_at"])


def downgrade() -> None:
    op.drop_index("ix_workers_heartbeat", table_name="workers")
    op.drop_table("workers")
