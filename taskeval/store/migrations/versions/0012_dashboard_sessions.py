"""The dashboard's sessions, kept on the server: signing out ends a session everywhere.

Until this revision a session was only Flask's signed cookie, so "Sign out" cleared the browser's
copy while a copied cookie kept working until it expired (8 hours by default). From here each
signed-in session (GitHub or the API token) is one row of ``dashboard_sessions``, keyed by the
SHA-256 of the random id its cookie carries; every request checks the row, sign-out deletes it,
and so does every gunicorn process and node reading the same database. Sessions from before the
upgrade carry no id and must sign in again.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dashboard_sessions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("login", sa.String(100)),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.create_index("ix_dashboard_sessions_expires", "dashboard_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_dashboard_sessions_expires", table_name="dashboard_sessions")
    op.drop_table("dashboard_sessions")
