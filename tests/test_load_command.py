"""``taskeval load RESULT...``: result files into the store as backfill and the bot store theirs,
through the real entry point, on SQLite and PostgreSQL (DATABASE_URL_POSTGRES); and the
commands' documentation names every option they take."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from taskeval import cli
from taskeval.store.db import evaluations, make_engine
from tests.test_cli import run_cli

pytest_plugins = ["tests.bot.fixtures"]
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "agent-pr-482.result.json"


def _result(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXAMPLE.read_text())
    data.update(changes)
    return data


def _export(url: str) -> list[dict[str, str]]:
    proc = run_cli("export", "--store", url)
    assert proc.returncode == 0, proc.stderr
    return list(csv.DictReader(io.StringIO(proc.stdout)))


def _count(url: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(evaluations)).scalar_one())
    finally:
        engine.dispose()


def test_load_stores_results_for_the_export_and_the_dashboard(db_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "results"
    (folder / "deeper").mkdir(parents=True)
    newer = _result(headSha="b" * 40, evaluatedAt="2026-05-01T00:00:00Z")
    other = _result(pullRequest={**_result()["pullRequest"], "number": 483})
    # Files load in path order: the newer evaluation of #482 first, then the older one.
    (folder / "a-newer.json").write_text(json.dumps(newer))
    (folder / "b-older.json").write_text(EXAMPLE.read_text())
    (folder / "deeper" / "c.json").write_text(json.dumps(other))

    first = run_cli("load", str(folder), "--store", db_url)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("load: stored 3, skipped 0")
    rows = _export(db_url)
    assert [(r["number"], r["head_sha"]) for r in rows] == [("482", "b" * 40), ("483", _result()["headSha"])]
    assert _count(db_url) == 3  # the older evaluation of #482 is in its history, not its latest

    again = run_cli("load", str(folder), str(EXAMPLE), "--store", db_url)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("load: stored 0, skipped 4") and _count(db_url) == 3


def test_files_that_are_not_results_are_named_and_left_out(sqlite_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "bundle.json").write_text(json.dumps(_result()["evidence"]))
    (folder / "broken.json").write_text("{not json")
    (folder / "newer.json").write_text(json.dumps(_result(schemaVersion="99")))
    (folder / "ok.json").write_text(EXAMPLE.read_text())
    proc = run_cli("load", str(folder), "--store", sqlite_url)
    assert proc.returncode == 1, proc.stderr
    left_out = [line for line in proc.stderr.splitlines() if "not a result, left out" in line]
    assert [line.split(f"{folder}/")[1].split(":")[0] for line in left_out] == [
        "broken.json", "bundle.json", "newer.json"]
    assert "written by a newer taskeval" in proc.stderr and "an evidence bundle" in proc.stderr
    assert [r["number"] for r in _export(sqlite_url)] == ["482"]


@pytest.mark.parametrize(("argv", "says"), [
    (["does-not-exist"], "taskeval load: does-not-exist: no such file or directory"),
    (["package.json"], "taskeval load: no taskeval result in package.json"),
])
def test_load_refuses_what_holds_no_result(argv: list[str], says: str, tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "left-pad"}')
    proc = run_cli("load", *argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[-1] == says and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ the docs name every option

def _options(command: str) -> set[str]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = sub.choices[command]
    return {s for a in found._actions for s in a.option_strings if s.startswith("--") and s != "--help"}


# Where each command's options are documented: docs/backfill.md's option table (an option's own
# row, its first cell), docs/bot.md's synopsis lines of export and load.
OPTION_DOCS = {
    "backfill": ("docs/backfill.md", r"^\|[^|\n]*(?<![\w-]){option}(?![\w-])"),
    "load": ("docs/bot.md", r"^`taskeval load [^`]*(?<![\w-]){option}(?![\w-])"),
    "export": ("docs/bot.md", r"^`taskeval export [^`]*(?<![\w-]){option}(?![\w-])"),
}


@pytest.mark.parametrize("command", sorted(OPTION_DOCS))
def test_every_option_of_a_store_command_is_documented(command: str) -> None:
    doc, pattern = OPTION_DOCS[command]
    text = (ROOT / doc).read_text(encoding="utf-8")
    options = _options(command)
    assert len(options) >= 2, command
    missing = sorted(o for o in options
                     if not re.search(pattern.format(option=re.escape(o)), text, re.MULTILINE))
    assert missing == [], f"{doc} does not document {missing} of taskeval {command}"


def test_the_readme_gives_loading_results_its_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "taskeval load" in readme and "benchmarks.load_results" not in readme
