"""A job can carry what its enqueuer already read for it: ``jobs.payload``.

``taskeval backfill --enqueue`` over GraphQL reads the repository-wide answers a backfill shares
among its PRs (the issue listing, the workflow runs by day) once, as a single backfill process
does, and hands each PR's part to its job (JSON: its issue object, its workflow runs, its linked
issues' labels). Workers then read the PRs in batches with one GraphQL query and need none of
those reads again, so a backfill spread over workers spends what one process does per PR. Jobs
queued otherwise have none (NULL).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("payload", sa.Text))


def downgrade() -> None:
    op.drop_column("jobs", "payload")
