"""The store every command reads: the engine and tables, the Alembic migrations, stored results and
their queries, export, the outcomes store and the shared rate budget.

It belongs to the product, not to the bot: the bot, the dashboard, backfill and the statistics
commands all open their databases through it, and nothing else opens an engine. It needs the
``store`` extra (SQLAlchemy, Alembic, psycopg), so the core imports it lazily, only in the commands
that take a ``--store``.
"""
