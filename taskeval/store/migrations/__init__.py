"""Schema migrations of the bot database (Alembic), run by the bot itself at start-up.

``upgrade(conn)`` brings the database on ``conn`` to the newest revision inside the caller's
transaction; :func:`taskeval.store.db.init_schema` calls it under its lock (a PostgreSQL advisory lock, an
``flock`` beside a SQLite file), so many processes starting at once migrate it exactly once.

A database made before migrations existed has the tables but no ``alembic_version``: it is first
completed the way the old start-up did (missing tables created), then stamped at revision ``0001``
(the pre-migration schema) and upgraded from there.

New revisions go in ``versions/``, parented on the current head (one head only; a test checks).
From a shell: ``alembic -c taskeval/store/migrations/alembic.ini upgrade head`` with ``DATABASE_URL`` set, or
``alembic ... revision -m "..."`` to start a new one.
"""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, inspect, text

HERE = Path(__file__).resolve().parent
BASELINE = "0001"
VERSION_TABLE = "alembic_version"


def config(connection: Connection | None = None) -> Any:
    """An Alembic ``Config`` for the packaged scripts, bound to ``connection`` when given."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@functools.cache
def _script() -> Any:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(config())


def heads() -> tuple[str, ...]:
    return tuple(_script().get_heads())


def head() -> str:
    found = heads()
    if len(found) != 1:
        raise RuntimeError(f"the bot's migrations have {len(found)} heads {found}; merge them")
    return found[0]


def current(connection: Connection) -> str | None:
    """The revision the database is at; None when it has no version table (new or pre-migration)."""
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(connection).get_current_revision()


def baseline_schema() -> Any:
    """The pre-migration tables (revision 0001's frozen ``MetaData``)."""
    return _script().get_revision(BASELINE).module.schema()


_REVISION_RE = re.compile(r"^(down_revision|revision)\s*=\s*(None|[\"'](\w+)[\"'])", re.M)


@functools.cache
def quick_head() -> str | None:
    """The head revision read straight from the version files (no Alembic import, ~1 ms), so a
    start-up on an up-to-date database stays cheap; None when it is not one plain head."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (HERE / "versions").glob("*.py"):
        for key, _, value in _REVISION_RE.findall(path.read_text(encoding="utf-8")):
            if value:
                (revisions if key == "revision" else parents).add(value)
    found = revisions - parents
    return found.pop() if len(found) == 1 else None


def _stored_version(connection: Connection) -> str | None:
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    return str(rows[0]) if len(rows) == 1 else None


def upgrade(connection: Connection, revision: str = "head") -> list[str]:
    """Migrate the database on ``connection`` (inside its open transaction) to ``revision``.

    Returns the revisions applied, oldest first (empty when it was up to date)."""
    if revision == "head" and (fast := quick_head()) is not None \
            and _stored_version(connection) == fast:
        return []
    from alembic import command

    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    target = head() if revision == "head" else revision
    before = current(connection)
    if before == target:
        return []
    if before is None:
        names = set(inspect(connection).get_table_names())
        baseline = baseline_schema()
        if names & set(baseline.tables):
            # Made by the pre-migration start-up: finish it as that code would, then adopt it.
            baseline.create_all(connection, checkfirst=True)
            command.stamp(config(connection), BASELINE)
            before = BASELINE
    command.upgrade(config(connection), target)
    script = _script()
    applied = [r.revision for r in script.iterate_revisions(target, before or "base")]
    return list(reversed(applied))
