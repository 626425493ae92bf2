"""Alembic environment for the bot database.

The bot runs migrations itself (``taskeval.store.migrations.upgrade`` from ``taskeval.store.db.init_schema``), handing
Alembic the connection it already holds inside its schema lock, so this file only configures the
context on that connection. Used from the ``alembic`` command line instead, it connects to
``sqlalchemy.url`` or ``$DATABASE_URL`` with the bot's own engine settings.
"""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection

from taskeval.store.db import metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things: batch mode copies the table when it must.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    if context.is_offline_mode():
        raise SystemExit("the bot's migrations backfill data in Python; offline (--sql) mode is "
                         "not supported")
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    from taskeval.store.db import make_engine

    url = context.config.get_main_option("sqlalchemy.url") or os.environ.get("DATABASE_URL")
    if not url:
        raise SystemExit("set DATABASE_URL (or sqlalchemy.url) to the bot's database")
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


_main()
