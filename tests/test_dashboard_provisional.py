"""Provisional grades on the dashboard: every mean says how many of the PRs it rests on had a
provisional grade in it (coverage under ``taskeval.contract.PROVISIONAL_BELOW``), and
``?provisional=exclude`` leaves them out of means, intervals and ranks. The numbers are recomputed
here from the stored rows, and the page's CSV and JSON must carry the same ones (SQLite, and
PostgreSQL with DATABASE_URL_POSTGRES)."""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
from collections import defaultdict
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine

from dashboard import queries, teamwork
from dashboard.queries import Filters
from taskeval.contract import PROVISIONAL_BELOW
from tests.dashboard_store import START, Stored, fill

pytest_plugins = ["tests.bot.fixtures"]
pytestmark = pytest.mark.usefixtures("fresh_dashboard_cache")

MEASURES = {"overall": "overall_score", "agentPerformance": "agent_performance",
            "taskOutcomeQuality": "task_outcome_quality", "processCompliance": "process_compliance"}
COVERAGE = {"overall": "overall_coverage", "agentPerformance": "agent_performance_coverage",
            "taskOutcomeQuality": "task_outcome_quality_coverage",
            "processCompliance": "process_compliance_coverage"}
WEEK = 7 * 86400


@pytest.fixture
def stored(engine: Engine) -> Stored:
    return fill(engine, 500, seed=11)


@pytest.fixture
def client(engine: Engine, stored: Stored) -> FlaskClient:
    from dashboard.core import DashboardConfig, install

    app = Flask("provisional-test")
    install(app, DashboardConfig(engine=engine, open_access=True))
    return app.test_client()


def provisional(row: dict[str, Any], measure: str) -> bool:
    coverage = row[COVERAGE[measure]]
    return coverage is not None and coverage < PROVISIONAL_BELOW


def expected(stored: Stored, f: Filters, by: str, exclude: bool) -> dict[str, dict[str, Any]]:
    """Per group: PR count, and per measure the provisional count, the PRs the mean rests on and
    the mean, from the stored rows themselves."""
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in stored.latest():
        if (f.repo and r["repo"] != f.repo) or (f.task_type and r["task_type"] != f.task_type):
            continue
        when = r["activity_at"]
        if (f.since is not None and when < f.since) or (f.until is not None and when >= f.until):
            continue
        found[queries.group_key(r["agent_id"] if by == "agent" else r["author"], by)].append(r)
    out = {}
    for key, rows in found.items():
        per: dict[str, Any] = {"count": len(rows)}
        for m, column in MEASURES.items():
            kept = [r[column] for r in rows if not (exclude and provisional(r, m))]
            per[m] = (sum(provisional(r, m) for r in rows), len(kept), statistics.fmean(kept) if kept else None)
        out[key] = per
    return out


CASES = [  # (filters, by): through the rollup and through the scan, grouped both ways
    (Filters(), "agent"),
    (Filters(), "author"),
    (Filters(repo="octo-org/gadgets"), "agent"),
    (Filters(since=START.timestamp() + 4 * WEEK, until=START.timestamp() + 20 * WEEK), "agent"),  # whole weeks
    (Filters(since=START.timestamp() + 3 * 86400), "agent"),  # not a week's start: the scan
    (Filters(task_type="fix"), "agent"),  # the rollups have no task type: the scan
    (Filters(task_type="feature"), "author"),
]


@pytest.mark.parametrize("exclude", [False, True], ids=["counted", "left-out"])
@pytest.mark.parametrize(("f", "by"), CASES)
def test_each_mean_counts_its_provisional_prs_and_can_leave_them_out(
        engine: Engine, stored: Stored, f: Filters, by: str, exclude: bool) -> None:
    want = expected(stored, f, by, exclude)
    with engine.connect() as conn:
        got = {g.key: g for g in queries.groups(conn, f, by, exclude_provisional=exclude)}
    assert set(got) == set(want)
    some = 0
    for key, g in got.items():
        assert g.count == want[key]["count"]
        for m in MEASURES:
            count, rests_on, mean = want[key][m]
            shown = g.overall if m == "overall" else g.categories[m]
            assert (g.provisional[m], g.rests_on(m)) == (count, rests_on), (key, m)
            assert shown.mean == pytest.approx(mean, abs=1e-9) if mean is not None else shown.mean is None
            some += count
        assert g.small == (want[key]["overall"][1] < queries.SMALL_SAMPLE)
        assert g.rankable or g.rank is None
    assert some, "the store has provisional grades"


def test_leaving_them_out_moves_the_means_and_can_unrank(engine: Engine, stored: Stored) -> None:
    with engine.connect() as conn:
        counted = {g.key: g for g in queries.groups(conn, Filters(), "agent")}
        left = {g.key: g for g in queries.groups(conn, Filters(), "agent", exclude_provisional=True)}
    moved = [k for k in counted if counted[k].overall.mean != left[k].overall.mean]
    assert moved, "leaving provisional grades out changes some mean"
    for k, g in left.items():
        assert g.rests_on("overall") == counted[k].count - counted[k].provisional["overall"]
        assert sum(n for _w, _m, n in g.trend) <= g.rests_on("overall")


def _csv(client: FlaskClient, path: str, table: str) -> list[dict[str, str]]:
    sep = "&" if "?" in path else "?"
    resp = client.get(f"{path}{sep}format=csv&table={table}")
    assert resp.status_code == 200, resp.data[:300]
    return list(csv.DictReader(io.StringIO(resp.get_data(as_text=True))))


def _as_csv(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


PAGES = [  # (path, table)
    ("/dashboard/", "groups"),
    ("/dashboard/?provisional=exclude", "groups"),
    ("/dashboard/?by=author&provisional=exclude&repo=octo-org/widgets", "groups"),
    ("/dashboard/agent/copilot", "groups"),
    ("/dashboard/agent/copilot?provisional=exclude&task_type=fix", "groups"),
    ("/dashboard/compare?a=copilot&b=codex", "compare"),
    ("/dashboard/compare?a=copilot&b=codex&provisional=exclude", "compare"),
]


@pytest.mark.parametrize(("path", "table"), PAGES)
def test_the_csv_and_the_json_carry_the_same_counts(client: FlaskClient, path: str, table: str) -> None:
    rows = _csv(client, path, table)
    sep = "&" if "?" in path else "?"
    body = json.loads(client.get(f"{path}{sep}format=json").get_data(as_text=True))[table]
    assert rows and [{k: _as_csv(v) for k, v in r.items()} for r in body] == rows
    excluded = "provisional=exclude" in path
    if table == "groups":
        for r in rows:
            assert r["provisionalLeftOut"] == _as_csv(excluded)
            for m in MEASURES:
                rests, count, prs = int(r[f"{m}RestsOn"]), int(r[f"{m}Provisional"]), int(r["prs"])
                assert rests == (prs - count if excluded else prs)
    else:
        for r in rows:
            assert r["mean_agentPerformanceAProvisional"] != ""


def test_the_page_shows_the_counts_it_downloads(client: FlaskClient) -> None:
    for path in ("/dashboard/", "/dashboard/?provisional=exclude"):
        html = client.get(path).get_data(as_text=True)
        # what each row says under its overall mean (its parts may wrap apart: spans inside)
        said = {re.sub(r"<[^>]+>", "", m) for m in re.findall(r'data-measure="overall">(.*?)</span></span>', html)}
        for r in _csv(client, path, "groups"):
            n, v = int(r["overallRestsOn"]), int(r["overallProvisional"])
            text = (f"{n} PRs, {v} provisional left out" if "exclude" in path and v
                    else f"{n} PRs" if "exclude" in path else f"{n} PRs, {v} provisional")
            assert text in said, (path, r["agent"], said)


def test_the_switch_is_kept_in_links_and_downloads(client: FlaskClient) -> None:
    html = client.get("/dashboard/?provisional=exclude&repo=octo-org/widgets").get_data(as_text=True)
    assert 'id="provisional-include"' in html and 'id="provisional-state">left out<' in html
    assert 'href="/dashboard/agent/copilot?repo=octo-org/widgets&amp;provisional=exclude"' in html
    assert "?provisional=exclude&amp;repo=octo-org/widgets&amp;format=csv&amp;table=groups" in html  # the CSV too
    assert '<input type="hidden" name="provisional" value="exclude">' in html  # the filter form keeps it
    plain = client.get("/dashboard/").get_data(as_text=True)
    assert 'id="provisional-exclude" href="/dashboard/?provisional=exclude"' in plain
    compare = client.get("/dashboard/compare?a=copilot&b=codex&provisional=exclude").get_data(as_text=True)
    assert 'id="provisional-state">left out<' in compare
    assert "ignored provisional=" in client.get("/dashboard/?provisional=maybe").get_data(as_text=True)


def test_comparison_counts_and_leaves_out_provisional_agent_performance(engine: Engine, stored: Stored) -> None:
    latest = stored.latest()
    for exclude in (False, True):
        with engine.connect() as conn:
            first = teamwork.compare(conn, Filters(agent="copilot"), Filters(agent="codex"),
                                     exclude_provisional=exclude)[0].agent_performance
        for agent, n, v, mean in (("copilot", first.a_n, first.a_provisional, first.a),
                                  ("codex", first.b_n, first.b_provisional, first.b)):
            mine = [r for r in latest if r["agent_id"] == agent]
            unsure = [r for r in mine if provisional(r, "agentPerformance")]
            kept = [r["agent_performance"] for r in mine if not (exclude and provisional(r, "agentPerformance"))]
            assert (n, v) == (len(kept), len(unsure))
            assert mean == pytest.approx(statistics.fmean(kept), abs=1e-9)


def test_pr_lists_mark_a_provisional_overall(client: FlaskClient, stored: Stored) -> None:
    """Every PR list (an agent's page, here) carries ``overallProvisional`` by the contract's rule on
    the overall's coverage, and the page marks those rows' bands "provisional"."""
    rows = {f"{r['repo']}#{r['number']}": r for r in stored.latest()}
    listed = list(csv.DictReader(io.StringIO(
        client.get("/dashboard/agent/copilot?format=csv&table=prs").get_data(as_text=True))))
    assert listed
    marked = [r for r in listed if r["overallProvisional"] == "true"]
    assert marked and len(marked) < len(listed)
    for r in listed:
        assert (r["overallProvisional"] == "true") is provisional(rows[r["pr"]], "overall")
    page = client.get("/dashboard/agent/copilot").get_data(as_text=True)
    assert page.count('class="tag provisional"') == sum(
        provisional(rows[r["pr"]], "overall") for r in listed[:50])
