"""Read-only stores for tests, as a user meets them.

SQLite: the store's file and its folder made unwritable for this process: mode bits for an
ordinary user; for root, who writes through mode bits, the immutable attribute (``chattr +i``,
which binds root too). Skipped where neither can be set.

PostgreSQL: a connection whose transactions are read-only (what a hot standby gives every
session), or a role that may read the store's tables but not write them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.engine import make_url

from taskeval.store.db import make_engine, metadata


def _chattr(flag: str, paths: list[Path]) -> bool:
    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, check=False)
    return done.returncode == 0


@contextlib.contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """``paths`` (files and folders) cannot be written by this process (or its children) inside
    the block; restored after."""
    targets = [p for p in paths if p.exists()]
    if os.geteuid() == 0:
        if not _chattr("+i", targets):
            pytest.skip("running as root without chattr +i here: no way to make a file read-only")
        try:
            yield
        finally:
            _chattr("-i", targets)
        return
    modes = {p: p.stat().st_mode for p in targets}
    for p in targets:
        p.chmod(stat.S_IMODE(modes[p]) & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(stat.S_IMODE(mode))


def read_only_transactions(url: str) -> str:
    """``url`` with every session's transactions read-only (``default_transaction_read_only``),
    as on a hot standby."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote('-c default_transaction_read_only=on')}"


@contextlib.contextmanager
def select_only_role(url: str, role: str) -> Iterator[str]:
    """``url`` as ``role``, a role that may read every table of the store but write none."""
    admin = make_engine(url)
    names = ", ".join(f'"{t}"' for t in sorted(metadata.tables))
    with admin.begin() as conn:
        _drop_role(conn, role)
        conn.execute(text(f'CREATE ROLE "{role}" LOGIN'))
        conn.execute(text(f'GRANT SELECT ON {names}, alembic_version TO "{role}"'))
    try:
        yield make_url(url).set(username=role, password=None).render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            _drop_role(conn, role)
        admin.dispose()


def _drop_role(conn: Connection, role: str) -> None:
    if conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}).first():
        conn.execute(text(f'DROP OWNED BY "{role}"'))
        conn.execute(text(f'DROP ROLE "{role}"'))
