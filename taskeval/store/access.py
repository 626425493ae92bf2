"""Which database a command may use as its store, and whether it can write there.

Two rules, checked before any work (each problem is one line, the command exits 2):

* **Readers never create.** ``export``, ``dashboard`` (and ``validate``/``calibrate``/``outcomes``
  with ``--store``, taskeval.validity_cli) read a store some other command wrote: a database that
  holds no taskeval store (a missing SQLite file, an empty database, another application's) is
  refused, and nothing is written to it. Only the commands that store results (``serve``,
  ``worker``, ``backfill``, ``load``, ``outcomes --write-store``) create one, and only in a new
  SQLite file or an empty database: never beside another application's tables (a ``DATABASE_URL``
  left in the shell for another application is the usual way to get there).
* **Writers can write.** A store that can be read but not written (a read-only file, directory or
  mount, a ``mode=ro`` URL, a standby server, a role without INSERT) fails every write later, after
  the GitHub reads it cost; :func:`unwritable` says why before, and ``/healthz`` reports it.

A store is recognised by its ``evaluations`` table (every revision has it, the pre-migration
schema too). The database is inspected without writing anything: a SQLite file is opened
read-only and never created, and nothing sets its journal mode.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Final
from urllib.parse import quote

from sqlalchemy import Engine, inspect, text

from taskeval.store.db import describe_url, make_engine, metadata

STORE_TABLE: Final = "evaluations"
WRITE_HINT: Final = ("write one with 'taskeval backfill OWNER/REPO', 'taskeval load RESULT...' "
                     "or the bot")


class StoreError(ValueError):
    """The database is no store this command may use; the message is the one line users see."""


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL; None for another database or an in-memory one."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database.startswith("file:"):  # a URI filename (?uri=true): file:PATH?mode=...
        database = database[len("file:"):].split("?", 1)[0]
    if not database or database == ":memory:" or database.startswith(":memory:"):
        return None
    return Path(database)


def _tables(url: str) -> set[str] | None:
    """The tables of the database at ``url``, read without writing; None for a SQLite file that
    does not exist (it is not created)."""
    path = sqlite_path(url)
    if path is not None:
        if not path.exists():
            return None
        if not path.is_file():
            raise StoreError(f"{path} is not a SQLite file (a directory?); name the store's file, "
                             "e.g. sqlite:///taskeval.db")
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
        try:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    if url.startswith("sqlite"):
        return set()  # in memory: new every time
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def check_store(url: str, *, create: bool) -> None:
    """Raise :class:`StoreError` unless ``url`` holds a taskeval store, or (``create``: for the
    commands that store results) is a new SQLite file or an empty database to make one in.
    Errors of the database itself (unreachable, not a database) propagate for the caller to
    report in its own words."""
    shown = describe_url(url)
    tables = _tables(url)
    if tables is not None and STORE_TABLE in tables:
        return
    if tables:
        sample = ", ".join(sorted(tables)[:3]) + (", ..." if len(tables) > 3 else "")
        what = (f"{shown} holds another application's tables ({sample}) and no taskeval store, "
                "so it was left as it is")
        if create:
            raise StoreError(f"{what}: give taskeval a database of its own (a new SQLite file or "
                             "an empty database) with --store or DATABASE_URL")
        raise StoreError(f"{what}: point --store or DATABASE_URL at a taskeval store")
    if create:
        return
    if tables is None:
        raise StoreError(f"no store at {sqlite_path(url)}: {WRITE_HINT} first, or pass --store")
    raise StoreError(f"{shown} holds no taskeval store (an empty database): {WRITE_HINT} first, "
                     "or pass --store")


def unwritable(engine: Engine) -> str | None:
    """Why the store of ``engine`` cannot be written, or None when it can (as far as can be told
    without writing: a full disk still shows only when it happens). Cheap enough for every
    ``/healthz``: file permissions on SQLite (no lock is taken), one catalog query on PostgreSQL.
    """
    if engine.dialect.name == "sqlite":
        return _sqlite_unwritable(engine)
    if engine.dialect.name == "postgresql":
        return _postgres_unwritable(engine)
    return None


def _sqlite_unwritable(engine: Engine) -> str | None:
    query = {k: str(v).lower() for k, v in engine.url.query.items()}
    if query.get("mode") == "ro" or query.get("immutable") in ("1", "true"):
        return "the URL opens it read-only"
    path = sqlite_path(engine.url.render_as_string(hide_password=False))
    if path is None:
        return None
    if not path.exists():  # to be created: its directory (the nearest that exists) must take it
        parent = path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"cannot create {path}: {parent} is not writable"
        return None
    if not os.access(path, os.W_OK):
        return f"{path} is read-only"
    companions = [Path(f"{path}-wal"), Path(f"{path}-shm")]
    if all(c.exists() for c in companions):
        for c in companions:
            if not os.access(c, os.W_OK):
                return f"{c} is read-only"
        return None
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return f"{path.parent} is read-only (SQLite writes its journal beside the store)"
    return None


def _postgres_unwritable(engine: Engine) -> str | None:
    names = sorted(metadata.tables)
    with engine.connect() as conn:
        standby, read_only, role = conn.execute(text(
            "SELECT pg_is_in_recovery(), current_setting('transaction_read_only'), current_user"
        )).one()
        if standby:
            return "the server is a read-only standby (in recovery)"
        if read_only == "on":
            return "its transactions are read-only (default_transaction_read_only is on)"
        refused = conn.execute(text(
            "SELECT c.relname FROM pg_class c WHERE c.relkind IN ('r', 'p') "
            "AND c.relname = ANY(:names) AND pg_table_is_visible(c.oid) AND NOT ("
            "has_table_privilege(c.oid, 'INSERT') AND has_table_privilege(c.oid, 'UPDATE') "
            "AND has_table_privilege(c.oid, 'DELETE')) ORDER BY c.relname"),
            {"names": names}).scalars().all()
    if refused:
        return (f"role {role} may not write the table(s) "
                f"{', '.join(refused[:3])}{', ...' if len(refused) > 3 else ''}")
    return None


def store_problem(url: str, what: str = "store") -> str | None:
    """Why the run must not start on the store at ``url`` (one line, naming it ``what``), or None:
    another application's database, one it cannot open, or a store it could read but not write
    (every result would fail to be stored after GitHub was read for it). Nothing is created or
    written."""
    from taskeval.store.db import describe_url, make_engine, normalise_database_url

    url = normalise_database_url(url)
    try:
        check_store(url, create=True)
        engine = make_engine(url)
        try:
            problem = unwritable(engine)
        finally:
            engine.dispose()
    except StoreError as exc:
        return str(exc)
    except Exception as exc:  # unreachable, not a database: the store's own words, one line
        reason = str(exc).strip().splitlines()
        return f"cannot open the {what} {describe_url(url)}: {reason[0] if reason else type(exc).__name__}"
    return f"cannot write the {what} {describe_url(url)}: {problem}" if problem else None
