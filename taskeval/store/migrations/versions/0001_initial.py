"""The bot schema as it stood before migrations: deliveries, jobs, evaluations, installation
events and the judge cache.

A database created by the pre-migration code (``metadata.create_all``) has exactly these tables and
is stamped at this revision instead of running it (``taskeval.store.migrations.upgrade``). The tables are a
frozen copy of that code, never imported from ``taskeval.store.db``, so this revision keeps creating the same
schema whatever later revisions change.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

PENDING = ("queued", "running")


def schema() -> sa.MetaData:
    """The revision-0001 tables, as ``taskeval/store/db.py`` declared them before migrations existed."""
    m = sa.MetaData()
    sa.Table(
        "deliveries", m,
        sa.Column("id", sa.String(100), primary_key=True),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("action", sa.String(64)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(500), nullable=False),
        sa.Column("job_id", sa.Integer),
        sa.Column("repo", sa.String(200)),
        sa.Column("pr", sa.Integer),
        sa.Column("received_at", sa.Float, nullable=False),
    )
    jobs = sa.Table(
        "jobs", m,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(40)),
        sa.Column("installation_id", sa.BigInteger),
        sa.Column("trigger", sa.String(32), nullable=False),
        sa.Column("comment_id", sa.BigInteger),
        sa.Column("commenter", sa.String(100)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, default=0),
        sa.Column("max_attempts", sa.Integer, nullable=False),
        sa.Column("triggers", sa.Integer, nullable=False, default=1),
        sa.Column("run_after", sa.Float, nullable=False),
        sa.Column("lease_until", sa.Float),
        sa.Column("leased_by", sa.String(200)),
        sa.Column("last_error", sa.Text),
        sa.Column("note", sa.Text),
        sa.Column("delivery_id", sa.String(100)),
        sa.Column("parent_id", sa.Integer),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float),
    )
    sa.Index("ix_jobs_ready", jobs.c.status, jobs.c.run_after)
    sa.Index("ix_jobs_pr", jobs.c.repo, jobs.c.number)
    pending_eval = sa.and_(jobs.c.kind == "evaluate", jobs.c.status.in_(PENDING))
    sa.Index("uq_jobs_pending_eval", jobs.c.repo, jobs.c.number, jobs.c.head_sha, unique=True,
             sqlite_where=pending_eval, postgresql_where=pending_eval)
    running = jobs.c.status == "running"
    sa.Index("uq_jobs_running_pr", jobs.c.repo, jobs.c.number, unique=True,
             sqlite_where=running, postgresql_where=running)
    command = jobs.c.kind == "command"
    sa.Index("uq_jobs_command_comment", jobs.c.repo, jobs.c.number, jobs.c.comment_id,
             unique=True, sqlite_where=command, postgresql_where=command)
    evaluations = sa.Table(
        "evaluations", m,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("head_sha", sa.String(40), nullable=False),
        sa.Column("scorer_version", sa.String(40), nullable=False),
        sa.Column("author", sa.String(100), nullable=False),
        sa.Column("trigger", sa.String(32)),
        sa.Column("evaluated_at", sa.String(40), nullable=False),
        sa.Column("overall_score", sa.Integer, nullable=False),
        sa.Column("overall_band", sa.String(16), nullable=False),
        sa.Column("agent_performance", sa.Integer, nullable=False),
        sa.Column("task_outcome_quality", sa.Integer, nullable=False),
        sa.Column("process_compliance", sa.Integer, nullable=False),
        sa.Column("judge_status", sa.String(16)),
        sa.Column("job_id", sa.Integer),
        sa.Column("comment_url", sa.String(500)),
        sa.Column("comment_signature", sa.String(64)),
        sa.Column("result_json", sa.Text, nullable=False),
        sa.Column("stored_at", sa.Float, nullable=False),
    )
    sa.Index("ix_evaluations_key", evaluations.c.repo, evaluations.c.number,
             evaluations.c.head_sha, evaluations.c.scorer_version)
    sa.Index("ix_evaluations_author", evaluations.c.repo, evaluations.c.author)
    sa.Table(
        "installation_events", m,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("delivery_id", sa.String(100), nullable=False),
        sa.Column("installation_id", sa.BigInteger, nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("account", sa.String(100)),
        sa.Column("repositories_added", sa.Text, nullable=False),
        sa.Column("repositories_removed", sa.Text, nullable=False),
        sa.Column("received_at", sa.Float, nullable=False),
    )
    sa.Table(
        "judge_cache", m,
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("stored_at", sa.Float, nullable=False),
    )
    return m


TABLES = tuple(schema().tables)


def upgrade() -> None:
    schema().create_all(op.get_bind(), checkfirst=True)


def downgrade() -> None:
    schema().drop_all(op.get_bind(), checkfirst=True)
