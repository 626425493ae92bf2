"""Out of the dashboard: ``taskeval export`` (a real process), ``GET /api/export`` and
``GET /metrics`` (the Flask test client) over a real store (SQLite; PostgreSQL with
DATABASE_URL_POSTGRES). The numbers in the export equal the API's and the store's."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine, insert, select

from bot.app import create_app
from bot.jobs import events
from bot.jobs.queue import Queue
from taskeval.config import LoadedConfig, Settings
from taskeval.outcomes import OutcomeRecord
from taskeval.pipeline import Options, score_bundle
from taskeval.store.db import evaluations, jobs, rate_budgets, write
from taskeval.store.export import COLUMNS
from taskeval.store.outcomes import upsert
from taskeval.store.results import record_from_result, store_evaluation
from tests import builders
from tests.bot.helpers import API_TOKEN, settings_for

pytest_plugins = ["tests.bot.fixtures"]
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
ROOT = Path(__file__).resolve().parents[1]


def _result(number: int, title: str, labels: list[str], *, merged: bool = True) -> dict[str, Any]:
    raw = builders.merged_agent_pr(title=title, labels=labels, number=number, merged=merged,
                                   html_url=f"https://github.com/{builders.REPO}/pull/{number}")
    result = score_bundle(builders.bundle(raw), LoadedConfig(Settings(), "defaults"),
                          Options(ai="off", env={}, evaluated_at="2026-03-02T12:00:00Z"))
    data: dict[str, Any] = json.loads(result.to_json())
    return data


def _fill(engine: Engine) -> list[dict[str, Any]]:
    """Three PRs: a merged fix, a closed feature, and a result stored before task types (its
    type is computed from its evidence). One PR evaluated twice: only the latest counts."""
    stored = [_result(11, "fix(fetcher): retry 502s", []), _result(12, "feat: dark mode", [], merged=False),
              _result(13, "Bump lodash", ["dependencies"])]
    older = _result(11, "fix(fetcher): retry 502s", [])
    older["overallScore"] = 1
    del stored[2]["taskType"]
    with write(engine) as conn:
        for data in (older, *stored):
            store_evaluation(conn, {**record_from_result(data), "stored_at": 0.0})
        upsert(conn, [OutcomeRecord(builders.REPO, 11, "reverted", True, ["commit:abc"], "reverted", "scan"),
                      OutcomeRecord(builders.REPO, 12, "rejected", True, [], "closed", "results"),
                      OutcomeRecord(builders.REPO, 13, "follow_up_fix", False, [], "none", "scan")])
    return stored


def _engine(app: Flask) -> Engine:
    engine: Engine = app.extensions["taskeval"].engine
    return engine


def _export(store: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.run([sys.executable, "-m", "taskeval", "export", "--store", store, *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False)


def test_export_cli_api_and_store_agree(app: Flask, client: FlaskClient, db_url: str, tmp_path: Path) -> None:
    stored = _fill(_engine(app))
    out = tmp_path / "out" / "prs.csv"
    done = _export(db_url, "--format", "csv", "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    cli_csv = out.read_bytes().decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(cli_csv)))
    assert tuple(rows[0]) == COLUMNS
    assert [r["number"] for r in rows] == ["11", "12", "13"]  # one row per PR, the latest

    api = client.get("/api/export?format=csv", headers=AUTH)
    assert api.status_code == 200 and api.mimetype == "text/csv"
    assert api.get_data(as_text=True) == cli_csv

    ndjson = _export(db_url, "--format", "ndjson")
    assert ndjson.returncode == 0, ndjson.stderr
    lines = [json.loads(line) for line in ndjson.stdout.splitlines()]
    api_lines = [json.loads(line) for line in
                 client.get("/api/export?format=ndjson", headers=AUTH).get_data(as_text=True).splitlines()]
    assert lines == api_lines and [set(line) for line in lines] == [set(COLUMNS)] * 3

    with _engine(app).connect() as conn:
        db = {r.number: r for r in conn.execute(select(evaluations).where(evaluations.c.is_latest.is_(True)))}
    for line, data in zip(lines, stored, strict=True):
        row = db[line["number"]]
        assert line["overall_score"] == row.overall_score == data["overallScore"]
        assert line["agent_performance_final"] == row.agent_performance
        assert line["task_outcome_quality_final"] == row.task_outcome_quality
        assert line["process_compliance_final"] == row.process_compliance
        assert line["agent_id"] == row.agent_id == data["agent"]["id"]
        cats = {c["category"]: c for c in data["categoryScores"]}
        assert line["task_outcome_quality_deterministic"] == cats["taskOutcomeQuality"]["deterministicScore"]
        assert line["agent_performance_coverage"] == cats["agentPerformance"]["coverage"]
        assert line["turns_partial"] == data["turns"]["partial"]
        assert line["agent_hours"] == (None if data["turns"]["partial"] else data["turns"]["agentHours"])
        assert line["rounds"] == data["turns"]["rounds"]
    by = {line["number"]: line for line in lines}
    assert (by[11]["task_type"], by[11]["task_type_source"], by[11]["rescue_class"]) == ("fix", "title", "clean")
    assert (by[12]["task_type"], by[12]["state"], by[12]["closure_class"]) == ("feature", "closed",
                                                                                stored[1]["closure"]["class"])
    assert (by[13]["task_type"], by[13]["task_type_source"]) == ("deps", "label")  # computed from the facts
    assert (by[11]["outcome_reverted"], by[12]["outcome_rejected"], by[13]["outcome_follow_up_fix"]) == (
        True, True, False)
    assert by[11]["outcome_rejected"] is None  # not recorded is not false
    csv_by = {r["number"]: r for r in rows}
    assert (csv_by["11"]["outcome_reverted"], csv_by["11"]["outcome_rejected"]) == ("true", "")
    assert csv_by["11"]["agent_hours"] == ("" if by[11]["agent_hours"] is None else str(by[11]["agent_hours"]))
    assert csv_by["11"]["turns_partial"] == str(by[11]["turns_partial"]).lower()

    only = client.get(f"/api/export?format=ndjson&repo={builders.REPO}", headers=AUTH).get_data(as_text=True)
    assert len(only.splitlines()) == 3
    assert client.get("/api/export?format=ndjson&repo=other/repo", headers=AUTH).get_data() == b""


@pytest.mark.parametrize(("path", "headers", "status"), [
    ("/api/export", {}, 401), ("/api/export?format=ndjson", {"Authorization": "Bearer wrong"}, 401),
    ("/metrics", {}, 401), ("/metrics", {"Authorization": "Bearer wrong"}, 401),
    ("/api/export?format=xlsx", AUTH, 400), ("/api/export?repo=nope", AUTH, 400),
])
def test_export_and_metrics_need_the_token(client: FlaskClient, path: str, headers: dict[str, str],
                                           status: int) -> None:
    response = client.get(path, headers=headers)
    assert response.status_code == status
    assert API_TOKEN not in response.get_data(as_text=True)


def test_metrics_are_off_without_an_api_token(sqlite_url: str) -> None:
    app = create_app(settings_for(sqlite_url))
    try:
        assert app.test_client().get("/metrics").status_code == 404
    finally:
        app.extensions["taskeval"].engine.dispose()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_report_queue_store_and_budget(app: Flask, client: FlaskClient) -> None:
    engine = _engine(app)
    stored = _fill(engine)
    queue = Queue(engine)
    queue.enqueue(events.Evaluate(builders.REPO, 20, "a" * 40, None))
    queue.enqueue(events.Evaluate(builders.REPO, 21, "b" * 40, None))
    now = time.time()
    with write(engine) as conn:
        conn.execute(jobs.update().where(jobs.c.number == 20).values(created_at=now - 600))
        for n, seconds in enumerate((10.0, 20.0, 30.0, 40.0, 50.0)):
            conn.execute(insert(jobs).values(
                kind="evaluate", repo=builders.REPO, number=100 + n, head_sha="c" * 40, trigger="pull_request",
                status="done" if n else "dead", attempts=1, max_attempts=5, triggers=1, run_after=now - 100,
                created_at=now - 100, updated_at=now - 100 + seconds, finished_at=now - 100 + seconds))
        conn.execute(insert(jobs).values(  # finished two hours ago: outside the latency window
            kind="evaluate", repo=builders.REPO, number=199, head_sha="d" * 40, trigger="pull_request",
            status="done", attempts=1, max_attempts=5, triggers=1, run_after=now - 8000,
            created_at=now - 8000, updated_at=now - 7200, finished_at=now - 7200))
        conn.execute(insert(rate_budgets).values(key="api.github.com|installation:7", limit=5000, remaining=1234,
                                                 reset_at=now + 900, window=1, updated_at=now))
        conn.execute(insert(rate_budgets).values(key="api.github.com|installation:7", resource="graphql",
                                                 limit=5000, remaining=4321, reset_at=now + 900, window=1,
                                                 updated_at=now))
    response = client.get("/metrics", headers=AUTH)
    assert response.status_code == 200
    assert response.mimetype == "text/plain" and "version=" in response.content_type
    got = _samples(response.get_data(as_text=True))

    assert got[("taskeval_queue_depth", (("status", "queued"),))] == 2
    assert got[("taskeval_queue_depth", (("status", "running"),))] == 0
    assert 590 <= got[("taskeval_queue_oldest_job_age_seconds", ())] <= 700
    assert got[("taskeval_jobs", (("kind", "evaluate"), ("status", "done")))] == 5
    assert got[("taskeval_jobs", (("kind", "evaluate"), ("status", "dead")))] == 1
    assert got[("taskeval_job_latency_window_jobs", ())] == 5
    assert got[("taskeval_job_latency_seconds", (("quantile", "0.5"),))] == pytest.approx(30.0, abs=0.01)
    assert got[("taskeval_job_latency_seconds", (("quantile", "0.9"),))] == pytest.approx(46.0, abs=0.01)
    install = ("budget", "api.github.com|installation:7")
    assert got[("taskeval_github_rate_limit_remaining", (install, ("resource", "core")))] == 1234
    assert got[("taskeval_github_rate_limit_remaining", (install, ("resource", "graphql")))] == 4321
    assert got[("taskeval_github_rate_limit_limit", (install, ("resource", "core")))] == 5000
    assert got[("taskeval_evaluations", (("judge_status", "off"),))] == 4  # every stored evaluation

    agent = stored[0]["agent"]["id"]
    owner, name = builders.REPO.split("/")
    change = {labels: value for (metric, labels), value in got.items() if metric == "vcs_change_count"}
    base = (("taskeval_agent_id", agent), ("vcs_owner_name", owner), ("vcs_provider_name", "github"),
            ("vcs_repository_name", name))
    assert change[tuple(sorted((*base, ("vcs_change_state", "merged"))))] == 2
    assert change[tuple(sorted((*base, ("vcs_change_state", "closed"))))] == 1
    with engine.connect() as conn:
        latest = conn.execute(select(evaluations.c.pr_created_at, evaluations.c.merged_at)
                              .where(evaluations.c.is_latest.is_(True), evaluations.c.pr_state == "merged")).all()
    merge_seconds = sorted(m - c for c, m in latest)
    assert got[("vcs_change_time_to_merge_seconds", (("quantile", "0.5"), ("taskeval_agent_id", agent)))] == (
        pytest.approx(sum(merge_seconds) / 2))
    assert got[("taskeval_merged_changes", (("taskeval_agent_id", agent),))] == 2


def test_export_cli_reports_bad_input_in_one_line(tmp_path: Path) -> None:
    missing = _export(f"sqlite:///{tmp_path / 'none.db'}")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "no store at" in missing.stderr and "Traceback" not in missing.stderr
    unreachable = _export("postgresql+psycopg://u:secret-pw@127.0.0.1:1/db")
    assert unreachable.returncode == 2 and "secret-pw" not in unreachable.stderr
    assert "cannot read the store" in unreachable.stderr and "Traceback" not in unreachable.stderr
    bad = _export(f"sqlite:///{tmp_path / 'none.db'}", "--format", "xlsx")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
    folder = _export(f"sqlite:///{tmp_path / 'none.db'}", "--output", str(tmp_path))
    assert folder.returncode == 2 and "is a directory" in folder.stderr


@pytest.mark.parametrize(("turns", "partial", "hours"), [
    ({"agentHours": 1.5, "peopleHours": 20.0, "draftHours": 0.5, "rounds": 1, "partial": False},
     False, (1.5, 20.0, 0.5)),
    # No timeline: the account cannot see drafts or sessions, so its hours are unknown.
    ({"agentHours": 0.0, "peopleHours": 40.0, "draftHours": 0.0, "rounds": 1, "partial": True},
     True, (None, None, None)),
    (None, None, (None, None, None)),  # stored before turns existed
])
def test_the_export_leaves_the_hours_of_a_pr_without_its_timeline_empty(
        turns: dict[str, Any] | None, partial: bool | None, hours: tuple[Any, ...]) -> None:
    from taskeval.store.export import row_of, stored_columns

    result: dict[str, Any] = {"pullRequest": {"number": 7}, "turns": turns}
    row = row_of(result)
    assert row["turns_partial"] is partial
    assert (row["agent_hours"], row["people_hours"], row["draft_hours"]) == hours
    assert row["rounds"] == (turns or {}).get("rounds")  # rounds come from reviews, kept
    stored = stored_columns(result)
    assert (stored["agent_hours"], stored["people_hours"], stored["draft_hours"]) == hours
