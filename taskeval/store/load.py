"""Result files into a store: ``taskeval load RESULT... [--store URL]``.

Results written by ``taskeval evaluate --output``, ``taskeval score --output-dir``, the Action or
a corpus run are stored as ``taskeval backfill`` and the bot store theirs
(:func:`taskeval.store.results.store_evaluation`: the dashboard's columns, ``is_latest``, the
signals rows and the rollups), so ``taskeval dashboard`` and ``taskeval export`` show them. A
result already stored at the same repository, PR, head SHA and scorer version is skipped, so
loading a folder again adds nothing. A PR's latest evaluation (the one the dashboard and the
export count) is its most recently evaluated (``evaluatedAt``), whatever order the files load in:
an older result joins its history. A file that is not a taskeval result (a bundle, another
program's JSON, a result of a newer taskeval) is named and left out; it never stops the others.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, insert, select

from taskeval.models import SCHEMA_VERSION
from taskeval.store.db import evaluations, signals, write
from taskeval.store.export import epoch_of
from taskeval.store.results import record_from_result, signal_rows, store_evaluation

BATCH = 200  # results per transaction


@dataclass
class Loaded:
    stored: int = 0
    skipped: int = 0  # already stored at the same head SHA and scorer version
    not_results: list[str] = field(default_factory=list)  # "path: why", one line each


def result_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Each path that is a file, and the ``*.json`` files under each directory (sorted)."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.json") if p.is_file())
        else:
            yield path


def _version(value: Any) -> tuple[int, ...] | None:
    parts = str(value).split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def row_of_file(path: Path) -> dict[str, Any]:
    """The ``evaluations`` row of one result file; ValueError (one line) when it is none."""
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise ValueError(f"cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError("not valid JSON") from None
    if not isinstance(data, dict) or "scorerVersion" not in data or "categoryScores" not in data:
        what = "an evidence bundle" if isinstance(data, dict) and "groups" in data else "no result"
        raise ValueError(f"{what} (a result has scorerVersion and categoryScores)")
    stored, known = _version(data.get("schemaVersion", SCHEMA_VERSION)), _version(SCHEMA_VERSION)
    if stored is None or (known is not None and stored > known):
        raise ValueError(f"schemaVersion {data.get('schemaVersion')!r}: written by a newer taskeval "
                         f"(this one reads {SCHEMA_VERSION} and older)")
    try:
        return {**record_from_result(data), "stored_at": time.time()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"not a complete result ({type(exc).__name__}: {exc})"[:200]) from None


def load(engine: Engine, files: Iterable[Path], *, batch: int = BATCH) -> Loaded:
    """Store every result of ``files`` in the store of ``engine`` (migrated already), ``batch``
    a transaction; returns what was stored, skipped and left out."""
    e = evaluations.c
    with engine.connect() as conn:
        known = {tuple(r) for r in conn.execute(select(e.repo, e.number, e.head_sha, e.scorer_version))}
        latest = {(r.repo, r.number): _when(r.evaluated_at) for r in conn.execute(
            select(e.repo, e.number, e.evaluated_at).where(e.is_latest.is_(True)))}
    done = Loaded()
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        with write(engine) as conn:
            for row in pending:
                pr, when = (row["repo"], row["number"]), _when(row["evaluated_at"])
                if pr in latest and when < latest[pr]:
                    _store_older(conn, row)
                else:
                    store_evaluation(conn, row)
                    latest[pr] = when
        done.stored += len(pending)
        pending.clear()

    for path in files:
        try:
            row = row_of_file(path)
        except ValueError as exc:
            done.not_results.append(f"{path}: {exc}")
            continue
        key = (row["repo"], row["number"], row["head_sha"], row["scorer_version"])
        if key in known:
            done.skipped += 1
            continue
        known.add(key)
        pending.append(row)
        if len(pending) >= batch:
            flush()
    if pending:
        flush()
    return done


def _when(evaluated_at: Any) -> float:
    return epoch_of(evaluated_at) or 0.0


def _store_older(conn: Connection, row: dict[str, Any]) -> None:
    """An evaluation older than its PR's latest: into the history (with its signals rows, as
    every stored evaluation has), the latest and the rollups left as they are."""
    key = conn.execute(insert(evaluations).values(**row, is_latest=False)).inserted_primary_key
    if key is None:
        raise RuntimeError("the database returned no id for the new evaluation")
    rows = signal_rows(int(key[0]), row["result_json"])
    if rows:
        conn.execute(insert(signals), rows)
