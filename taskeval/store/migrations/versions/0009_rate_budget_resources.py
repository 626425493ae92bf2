"""One rate budget per credential *and* rate-limit resource: GitHub counts REST requests
(``core``) and GraphQL points (``graphql``) in separate budgets of the same credential, so the
shared ``rate_budgets`` row gains a ``resource`` column in its primary key. Existing rows are the
REST budget they always were (``core``).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _table(name: str, *, resource: bool) -> None:
    columns = [sa.Column("key", sa.String(200), primary_key=True)]
    if resource:
        columns.append(sa.Column("resource", sa.String(32), primary_key=True,
                                 server_default="core"))
    op.create_table(
        name, *columns,
        sa.Column("limit", sa.Integer, nullable=False),
        sa.Column("remaining", sa.Integer, nullable=False),
        sa.Column("reset_at", sa.Float, nullable=False),
        sa.Column("window", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


_COLUMNS = 'key, "limit", remaining, reset_at, "window", updated_at'


def _swap(*, resource: bool, where: str = "") -> None:
    """Copy the rows into a table of the new shape and put it in the old one's place: SQLite
    cannot change a primary key in place, and one way for both dialects keeps it simple."""
    _table("rate_budgets_new", resource=resource)
    op.execute(f"INSERT INTO rate_budgets_new ({_COLUMNS}) SELECT {_COLUMNS} FROM rate_budgets"
               f"{where}")
    op.drop_table("rate_budgets")
    op.rename_table("rate_budgets_new", "rate_budgets")
    if op.get_bind().dialect.name == "postgresql":  # keep the constraint's conventional name
        op.execute("ALTER TABLE rate_budgets RENAME CONSTRAINT rate_budgets_new_pkey "
                   "TO rate_budgets_pkey")


def upgrade() -> None:
    _swap(resource=True)  # every existing row is a REST budget: resource defaults to 'core'


def downgrade() -> None:
    _swap(resource=False, where=" WHERE resource = 'core'")
