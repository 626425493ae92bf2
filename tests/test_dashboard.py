"""Dashboard: numbers against the store (SQLite and PostgreSQL), filters, CSV/JSON, the PR page,
GitHub sign-in with per-repository visibility, sessions and CSRF, and ``taskeval dashboard``.

The browser tests (``test_dashboard_browser.py``) check the same pages as a person sees them.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, event, insert, update

from bot.app import create_app
from bot.settings import BotSettings
from dashboard import queries
from dashboard.cli import create_local_app, parse_bind, store_url
from taskeval.cli import main as taskeval_main
from taskeval.store.db import evaluations, make_engine
from tests.bot.helpers import SECRET
from tests.dashboard_store import Stored, fill
from tests.fake_github_oauth import FakeGitHubOAuth
from tests.processes import ctrl_c_reaches

pytest_plugins = ["tests.bot.fixtures"]
pytestmark = pytest.mark.usefixtures("fresh_dashboard_cache")
API_TOKEN = "dashboard-api-token-0123456789"
SESSION_SECRET = "dashboard-session-secret-0123456789"
N_PRS = 90


@pytest.fixture
def stored(engine: Engine) -> Stored:
    return fill(engine, N_PRS, full_results=True, seed=11)


@pytest.fixture
def sqlite_store(sqlite_url: str) -> Iterator[str]:
    """A filled SQLite store for the ``taskeval dashboard`` tests (one dialect is enough there)."""
    from taskeval.store.db import init_schema, make_engine

    eng = make_engine(sqlite_url)
    init_schema(eng)
    fill(eng, 30, seed=3)
    eng.dispose()
    yield sqlite_url


@pytest.fixture
def local(engine: Engine, stored: Stored) -> FlaskClient:
    """The loopback ``taskeval dashboard`` app over the filled store (no sign-in)."""
    from dashboard.core import DashboardConfig, install

    app = Flask("dashboard-test")
    install(app, DashboardConfig(engine=engine, open_access=True))
    return app.test_client()


def latest(stored: Stored, **match: Any) -> list[dict[str, Any]]:
    return [r for r in stored.latest() if all(r[k] == v for k, v in match.items())]


def ci(values: list[int]) -> tuple[float, float]:
    mean = statistics.fmean(values)
    half = queries.t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, half


def rows_of(resp: Any) -> list[dict[str, str]]:
    assert resp.status_code == 200, resp.data[:300]
    assert resp.mimetype == "text/csv"
    return list(csv.DictReader(io.StringIO(resp.get_data(as_text=True))))


# --- numbers --------------------------------------------------------------------------------------

def row_of(agent_id: str | None) -> str:
    """The overview row a stored agent id counts in: no agent found is one row of its own."""
    return queries.NO_AGENT if agent_id in (None, "human", "unknown-bot") else str(agent_id)


def test_overview_numbers_match_the_store(local: FlaskClient, stored: Stored) -> None:
    table = {r["agent"]: r for r in rows_of(local.get("/dashboard/?format=csv"))}
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for r in stored.latest():
        by_agent.setdefault(row_of(r["agent_id"]), []).append(r)
    assert set(table) == set(by_agent)
    for agent, rows in by_agent.items():
        got = table[agent]
        assert int(got["prs"]) == len(rows)
        mean, half = ci([r["overall_score"] for r in rows])
        assert float(got["overallMean"]) == pytest.approx(mean, abs=0.01)
        assert float(got["overallHigh"]) == pytest.approx(min(100, mean + half), abs=0.01)
        assert float(got["overallLow"]) == pytest.approx(max(0, mean - half), abs=0.01)
        tmean, _ = ci([r["task_outcome_quality"] for r in rows])
        assert float(got["taskOutcomeQualityMean"]) == pytest.approx(tmean, abs=0.01)
        bands = Counter(r["overall_band"] for r in rows)
        for band in queries.BANDS:
            assert int(got[band]) == bands.get(band, 0)
        merged = sum(r["pr_state"] == "merged" for r in rows) / len(rows)
        assert float(got["mergedShare"]) == pytest.approx(merged, abs=1e-4)
        # one denominator: merged, or closed after being marked ready (closed drafts and open PRs out)
        decided = [r for r in rows
                   if r["pr_state"] == "merged" or (r["pr_state"] == "closed" and not r["draft_at_end"])]
        closed = sum(r["pr_state"] == "closed" for r in decided) / len(decided)
        assert float(got["outcome.rejected"]) == pytest.approx(closed, abs=1e-4)
        assert int(got["decided"]) == len(decided)
        assert float(got["mergeRate"]) == pytest.approx(1 - closed, abs=1e-4)  # Rejected's complement
        assert got["smallSample"] == ("true" if len(rows) < queries.SMALL_SAMPLE else "false")
    # ranks: 1 + the rows whose whole interval lies above; small samples and no agent unranked
    ranked = [r for r in table.values() if r["rank"]]
    assert ranked
    for r in ranked:
        above = [o for o in ranked if float(o["overallLow"]) > float(r["overallHigh"])]
        assert int(r["rank"]) == 1 + len(above)
        assert r["rankShared"] == ("true" if sum(o["rank"] == r["rank"] for o in ranked) > 1 else "false")
    order = [r["agent"] for r in rows_of(local.get("/dashboard/?format=csv"))]
    assert order[-1] == queries.NO_AGENT  # its own row, after the ranked and the small samples
    assert table[queries.NO_AGENT]["rank"] == "" and table[queries.NO_AGENT]["agentName"] == "No agent found"
    assert table["jules"]["rank"] == "" and table["jules"]["smallSample"] == "true"


def test_no_agent_found_is_one_choice_one_row_and_one_page(local: FlaskClient, stored: Stored) -> None:
    nobody = [r for r in stored.latest() if row_of(r["agent_id"]) == queries.NO_AGENT]
    assert nobody
    page = local.get("/dashboard/").get_data(as_text=True)
    assert '<option value="no-agent">No agent found</option>' in page
    assert '<option value="human"' not in page
    rows = rows_of(local.get("/dashboard/?agent=no-agent&format=csv"))
    assert [(r["agent"], int(r["prs"]), r["rank"]) for r in rows] == [(queries.NO_AGENT, len(nobody), "")]
    detail = local.get("/dashboard/agent/no-agent")
    assert detail.status_code == 200 and "No agent found" in detail.get_data(as_text=True)
    listed = rows_of(local.get("/dashboard/agent/no-agent?format=csv&table=prs"))
    assert sorted(p["pr"] for p in listed) == sorted(f"{r['repo']}#{r['number']}" for r in nobody)


def test_each_pr_counts_once_with_its_latest_evaluation(local: FlaskClient, stored: Stored) -> None:
    assert len(stored.rows) > len(stored.latest())  # the store holds re-evaluations
    total = sum(int(r["prs"]) for r in rows_of(local.get("/dashboard/?format=csv")))
    assert total == len(stored.latest())


def test_author_toggle(local: FlaskClient, stored: Stored) -> None:
    table = {r["author"]: r for r in rows_of(local.get("/dashboard/?by=author&format=csv"))}
    authors = Counter(r["author"] for r in stored.latest())
    assert {k: int(v["prs"]) for k, v in table.items()} == dict(authors)
    page = local.get("/dashboard/?by=author").get_data(as_text=True)
    assert 'href="/dashboard/author/alice' in page


def test_filters_repo_band_and_time(local: FlaskClient, stored: Stored) -> None:
    from datetime import UTC, datetime

    since, until = "2025-03-01", "2025-05-31"
    lo = datetime(2025, 3, 1, tzinfo=UTC).timestamp()
    hi = datetime(2025, 6, 1, tzinfo=UTC).timestamp()
    url = f"/dashboard/?repo=octo-org/widgets&band=strong&since={since}&until={until}&format=csv"
    got = {r["agent"]: int(r["prs"]) for r in rows_of(local.get(url))}
    want = Counter(row_of(r["agent_id"]) for r in stored.latest()
                   if r["repo"] == "octo-org/widgets" and r["overall_band"] == "strong"
                   and lo <= r["activity_at"] < hi)
    assert got == dict(want)
    # the page keeps the filters: the form shows them, the CSV link carries them
    page = local.get(url.replace("&format=csv", "")).get_data(as_text=True)
    assert '<option value="octo-org/widgets" selected>' in page
    assert f'value="{since}"' in page and f'value="{until}"' in page
    link = re.search(r'class="csv" href="([^"]+)"', page)
    assert link is not None
    query = parse_qs(urlsplit(link.group(1).replace("&amp;", "&")).query)
    assert query["repo"] == ["octo-org/widgets"] and query["band"] == ["strong"]


def test_bad_filters_are_ignored_and_said(local: FlaskClient) -> None:
    page = local.get("/dashboard/?band=superb&since=yesterday&repo=../../etc")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "ignored band=" in text and "ignored since=" in text and "ignored repo=" in text


def test_agent_page_signals_distribution_and_prs(local: FlaskClient, engine: Engine, stored: Stored) -> None:
    rows = latest(stored, agent_id="copilot")
    ids = {r["id"] for r in rows}
    signals = rows_of(local.get("/dashboard/agent/copilot?format=csv&table=signals"))
    from sqlalchemy import select

    from taskeval.store.db import signals as signals_table

    with engine.connect() as conn:
        down = conn.execute(select(signals_table).where(
            signals_table.c.conclusive.is_(True), signals_table.c.weight > 0,
            signals_table.c.score < queries.PULL_DOWN_BELOW)).mappings().all()
    counts = Counter(s["signal_id"] for s in down if s["evaluation_id"] in ids)
    assert signals, "copilot has signals that pulled scores down"
    for s in signals:
        assert int(s["prs"]) == counts[s["signal"]]
        assert float(s["share"]) == pytest.approx(counts[s["signal"]] / len(rows), abs=1e-4)
        assert 1 <= len(s["examples"].split()) <= 3
    top = max(counts.values())
    assert int(signals[0]["prs"]) == top
    assert signals[0]["name"] and signals[0]["name"] != signals[0]["signal"]  # plain English

    dist = rows_of(local.get("/dashboard/agent/copilot?format=csv&table=distribution"))
    assert sum(int(d["prs"]) for d in dist) == len(rows)
    assert int(dist[-1]["prs"]) == sum(r["overall_score"] >= 95 for r in rows)
    assert [d["bucket"] for d in dist][-3:] == ["85–89", "90–94", "95–100"]

    prs = rows_of(local.get("/dashboard/agent/copilot?format=csv&table=prs"))
    assert sorted(p["pr"] for p in prs) == sorted(f"{r['repo']}#{r['number']}" for r in rows)
    page = local.get("/dashboard/agent/copilot").get_data(as_text=True)
    assert "<svg" in page and "Signals that pull the score down" in page
    assert local.get("/dashboard/agent/nobody").status_code == 404


def test_pr_page_history_comment_evidence_and_json(local: FlaskClient, stored: Stored) -> None:
    twice = next(r for r in stored.latest() if sum(x["number"] == r["number"] for x in stored.rows) == 2)
    owner, name = twice["repo"].split("/")
    url = f"/dashboard/pr/{owner}/{name}/{twice['number']}"
    page = local.get(url)
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    # the rendered comment's heading (a closed PR's says why it ended before the score)
    assert re.search(rf"<h2>taskeval: [^<]*\b{twice['overall_score']}/100", text)
    assert "<table>" in text  # GitHub-flavoured tables rendered, not shown as pipes
    assert 'href="https://github.com/' in text  # evidence links
    history = rows_of(local.get(url + "?format=csv&table=history"))
    assert len(history) == 2 and int(history[0]["overall"]) == twice["overall_score"]
    download = local.get(f"/dashboard/evaluation/{twice['id']}.json")
    assert download.status_code == 200 and "attachment" in download.headers["Content-Disposition"]
    assert json.loads(download.data)["overallScore"] == twice["overall_score"]
    older = int(history[1]["id"])
    assert f"(evaluation #{older})" in local.get(f"{url}?evaluation={older}").get_data(as_text=True)
    assert local.get(f"/dashboard/pr/{owner}/{name}/999999").status_code == 404


def test_pr_text_cannot_inject_markup(local: FlaskClient, engine: Engine, stored: Stored) -> None:
    row = stored.latest()[0]
    data = json.loads(row["result_json"])
    evil = '<script>alert(1)</script><img src=x onerror=alert(2)> [x](javascript:alert(3))'
    data["pullRequest"]["title"] = evil
    with engine.begin() as conn:
        conn.execute(update(evaluations).where(evaluations.c.id == row["id"])
                     .values(result_json=json.dumps(data)))
    owner, name = row["repo"].split("/")
    resp = local.get(f"/dashboard/pr/{owner}/{name}/{row['number']}")
    text = resp.get_data(as_text=True)
    assert "<script>alert(1)" not in text and "<img src=x" not in text
    assert 'href="javascript:' not in text
    assert "script-src" not in resp.headers["Content-Security-Policy"]  # default-src 'none' covers it
    assert "default-src 'none'" in resp.headers["Content-Security-Policy"]


def test_csv_cells_never_start_a_formula(local: FlaskClient, engine: Engine, stored: Stored) -> None:
    from taskeval.store.results import rebuild_rollup

    with engine.begin() as conn:
        conn.execute(update(evaluations).where(evaluations.c.author == "alice").values(author="=HYPERLINK(1)"))
        rebuild_rollup(conn)
    queries.clear_cache()  # rows rewritten in place: no new evaluation id tells the cache
    text = local.get("/dashboard/?by=author&format=csv").get_data(as_text=True)
    assert "'=HYPERLINK(1)" in text and "\n=HYPERLINK" not in text


def test_aggregates_are_remembered_until_a_new_evaluation_is_stored(local: FlaskClient, engine: Engine,
                                                                    stored: Stored) -> None:
    from taskeval.store.results import record_from_result, store_evaluation

    before = {r["agent"]: int(r["prs"]) for r in rows_of(local.get("/dashboard/?format=csv"))}
    row = stored.latest()[0]
    result = json.loads(row["result_json"])
    result["pullRequest"]["number"] = 99999
    result["headSha"] = "f" * 40
    with engine.begin() as conn:
        store_evaluation(conn, {**record_from_result(result), "stored_at": 0.0})
    after = {r["agent"]: int(r["prs"]) for r in rows_of(local.get("/dashboard/?format=csv"))}
    assert sum(after.values()) == sum(before.values()) + 1


def test_a_page_probes_the_data_version_once(local: FlaskClient, stored: Stored) -> None:
    """Every aggregate of a page is looked up in the cache under the same data version, read once
    per page rather than once per aggregate."""
    from dashboard.core import config

    probes: list[str] = []
    with local.application.app_context():
        reader = config().engine

    def record(_conn: Any, _cursor: Any, statement: str, *_a: Any) -> None:
        if "max(evaluations.id)" in statement.lower():
            probes.append(statement)

    event.listen(reader, "before_cursor_execute", record)
    try:
        for url in ("/dashboard/", "/dashboard/", "/dashboard/agent/copilot"):
            probes.clear()
            assert local.get(url).status_code == 200
            assert len(probes) == 1, (url, probes)
    finally:
        event.remove(reader, "before_cursor_execute", record)


def test_overview_and_agent_page_aggregate_in_sql(local: FlaskClient, engine: Engine, stored: Stored) -> None:
    """No statement behind the overview reads result_json: the numbers come from GROUP BYs."""
    from dashboard.core import config

    seen: list[str] = []
    app = local.application
    with app.app_context():
        reader = config().engine

    def record(_conn: Any, _cursor: Any, statement: str, *_a: Any) -> None:
        seen.append(statement)

    event.listen(reader, "before_cursor_execute", record)
    try:
        assert local.get("/dashboard/").status_code == 200
        assert local.get("/dashboard/?by=author").status_code == 200
    finally:
        event.remove(reader, "before_cursor_execute", record)
    assert seen and not any("result_json" in s for s in seen)
    assert any("GROUP BY" in s for s in seen)


# --- outcomes, when a store has them ---------------------------------------------------------------

def test_outcome_rates_appear_once_outcomes_are_recorded(local: FlaskClient, engine: Engine,
                                                         stored: Stored) -> None:
    from taskeval.store.db import outcomes

    assert "outcome.reverted" not in local.get("/dashboard/?format=csv").get_data(as_text=True)
    rows = latest(stored, agent_id="codex")
    with engine.begin() as conn:
        conn.execute(insert(outcomes), [
            {"repo": r["repo"], "number": r["number"], "outcome": "reverted", "value": i % 4 == 0,
             "evidence": "[]", "detail": "", "source": "derived", "observed_at": None, "recorded_at": 0.0}
            for i, r in enumerate(rows)])
    table = {r["agent"]: r for r in rows_of(local.get("/dashboard/?format=csv"))}
    want = sum(i % 4 == 0 for i in range(len(rows))) / len(rows)
    assert float(table["codex"]["outcome.reverted"]) == pytest.approx(want, abs=1e-4)
    assert table["copilot"]["outcome.reverted"] == ""  # nothing recorded: no rate, not 0 %
    assert "reverted" in local.get("/dashboard/").get_data(as_text=True)
    m = queries.wilson(1, 4)
    assert m.low is not None and m.high is not None and m.low < 0.25 < m.high


def test_one_column_per_outcome_however_its_label_was_written(local: FlaskClient, engine: Engine,
                                                                stored: Stored) -> None:
    """``outcomes --write-store`` and a team's file wrote "Rejected" and "rejected" (and "follow-up
    fix" beside "Follow_up_fix"): the overview shows one column each, each PR counted once, a
    record taking precedence over the PR's state, and a definition on the column's title."""
    from taskeval.store.db import outcomes

    rows = latest(stored, agent_id="codex")
    decided = [r for r in rows if r["pr_state"] == "merged" or (r["pr_state"] == "closed" and not r["draft_at_end"])]
    merged = [r for r in decided if r["pr_state"] == "merged"]
    flipped = merged[:2]  # merged when evaluated, recorded rejected later (a revert-and-close)

    def rec(r: dict[str, Any], label: str, value: bool) -> dict[str, Any]:
        return {"repo": r["repo"], "number": r["number"], "outcome": label, "value": value,
                "evidence": "[]", "detail": "", "source": "derived", "observed_at": None,
                "recorded_at": 0.0}

    with engine.begin() as conn:
        conn.execute(insert(outcomes), [rec(r, "Rejected", True) for r in flipped]
                     + [rec(r, "rejected", True) for r in flipped[:1]]  # the same PR, both spellings
                     + [rec(rows[0], "follow-up fix", True), rec(rows[1], "Follow_up_fix", False)])
    text = local.get("/dashboard/?format=csv").get_data(as_text=True)
    header = text.splitlines()[0].split(",")
    assert [h for h in header if h.lower().endswith("rejected")] == ["outcome.rejected"]
    assert [h for h in header if "follow" in h.lower()] == ["outcome.follow_up_fix"]
    codex = {r["agent"]: r for r in rows_of(local.get("/dashboard/?format=csv"))}["codex"]
    closed = sum(r["pr_state"] == "closed" for r in decided) + len(flipped)
    assert float(codex["outcome.rejected"]) == pytest.approx(closed / len(decided), abs=1e-4)
    assert float(codex["outcome.follow_up_fix"]) == pytest.approx(0.5, abs=1e-4)
    page = local.get("/dashboard/").get_data(as_text=True)
    titles = re.findall(r'<th[^>]*data-col="outcome\.(\w+)"[^>]*>([^<]+)</th>', page)
    assert [t for _k, t in titles] == ["Rejected", "Follow up fix"]
    rejected_th = re.search(r'<th[^>]*title="([^"]+)"[^>]*data-col="outcome\.rejected"', page)
    assert rejected_th and "closed without merging" in rejected_th.group(1)
    assert ">Rejected<" in page and ">rejected<" not in page


# --- sign-in and visibility ------------------------------------------------------------------------

@pytest.fixture
def github() -> Iterator[FakeGitHubOAuth]:
    fake = FakeGitHubOAuth()
    fake.users["alice"] = ["octo-org/widgets", "octo-org/gadgets", "Octo-Org/Docs", "octo-org/not-stored"]
    fake.users["mallory"] = ["secret-org/vault"]
    with fake.serve():
        yield fake


def bot_app(db_url: str, github: FakeGitHubOAuth, **extra: str) -> Flask:
    env = {"GITHUB_WEBHOOK_SECRET": SECRET, "DATABASE_URL": db_url, "GITHUB_TOKEN": "ghp_" + "x" * 36,
           "GITHUB_CLIENT_ID": github.client_id, "GITHUB_CLIENT_SECRET": github.client_secret,
           "GITHUB_API_URL": github.api_url, "GITHUB_WEB_URL": github.web_url,
           "TASKEVAL_API_TOKEN": API_TOKEN, "TASKEVAL_SESSION_SECRET": SESSION_SECRET, **extra}
    return create_app(BotSettings.from_env(env))


def sign_in(client: FlaskClient, github: FakeGitHubOAuth, login: str, start: str = "/dashboard/") -> Any:
    """Follow the OAuth dance by hand: dashboard -> GitHub authorize -> callback -> dashboard."""
    import requests

    github.next_login = login
    first = client.get(start)
    assert first.status_code == 302 and "/dashboard/login" in first.headers["Location"]
    to_github = client.get(first.headers["Location"])
    assert to_github.status_code == 302
    authorize = to_github.headers["Location"]
    assert authorize.startswith(f"{github.web_url}/login/oauth/authorize?")
    query = parse_qs(urlsplit(authorize).query)
    assert query["client_id"] == [github.client_id] and len(query["state"][0]) >= 32
    back = requests.get(authorize, allow_redirects=False, timeout=5)  # GitHub sends the browser back
    callback = urlsplit(back.headers["Location"])
    assert callback.path == "/dashboard/callback"
    return client.get(f"{callback.path}?{callback.query}")


@pytest.fixture
def bot(db_url: str, engine: Engine, stored: Stored, github: FakeGitHubOAuth) -> Iterator[Flask]:
    app = bot_app(db_url, github)
    yield app
    app.extensions["taskeval"].engine.dispose()


def test_sign_in_required_and_redirects_to_github(bot: Flask, github: FakeGitHubOAuth) -> None:
    client = bot.test_client()
    resp = client.get("/dashboard/agent/copilot?repo=octo-org/widgets")
    assert resp.status_code == 302
    login = urlsplit(resp.headers["Location"])
    assert login.path == "/dashboard/login"
    assert parse_qs(login.query)["next"] == ["/dashboard/agent/copilot?repo=octo-org/widgets"]
    for url in ("/dashboard/?format=csv", "/dashboard/?format=json", "/dashboard/evaluation/1.json?format=json"):
        assert client.get(url).status_code in (302, 401)
    assert client.get("/dashboard/?format=csv").status_code == 401


@pytest.mark.parametrize("mode", ["app", "oauth-app"])
def test_user_sees_only_repositories_github_says_they_can_read(bot: Flask, github: FakeGitHubOAuth,
                                                              stored: Stored, mode: str) -> None:
    github.mode = mode
    client = bot.test_client()
    done = sign_in(client, github, "alice")
    assert done.status_code == 302 and done.headers["Location"] == "/dashboard/"
    readable = {"octo-org/widgets", "octo-org/gadgets", "octo-org/docs"}  # case-insensitive match
    page = client.get("/dashboard/").get_data(as_text=True)
    assert "Signed in as" in page and "alice" in page
    assert "secret-org/vault" not in page
    total = sum(int(r["prs"]) for r in rows_of(client.get("/dashboard/?format=csv")))
    assert total == sum(r["repo"] in readable for r in stored.latest())
    body = json.loads(client.get("/dashboard/?format=json").data)
    assert sum(g["prs"] for g in body["groups"]) == total
    # a repository filter naming a hidden repository shows nothing, not its rows
    assert rows_of(client.get("/dashboard/?repo=secret-org/vault&format=csv")) == []
    hidden = next(r for r in stored.latest() if r["repo"] == "secret-org/vault")
    assert client.get(f"/dashboard/pr/secret-org/vault/{hidden['number']}").status_code == 404
    assert client.get(f"/dashboard/evaluation/{hidden['id']}.json").status_code == 404
    prs = rows_of(client.get(f"/dashboard/agent/{hidden['agent_id']}?format=csv&table=prs"))
    assert prs and not any(p["pr"].startswith("secret-org/") for p in prs)
    signals = rows_of(client.get(f"/dashboard/agent/{hidden['agent_id']}?format=csv&table=signals"))
    assert not any("secret-org/" in s["examples"] for s in signals)
    # the read API stays token-only: a dashboard session does not open it
    assert client.get(f"/api/evaluations/secret-org/vault/{hidden['number']}").status_code == 401
    if mode == "app":
        assert any(line.startswith("GET /api/v3/user/installations/7/repositories") for line in github.log)
        assert github.log.count("GET /api/v3/user/installations") == 1  # probe and first page are one
    else:
        assert "GET /api/v3/user/repos" in github.log


def test_a_user_with_no_stored_repository_sees_nothing(bot: Flask, github: FakeGitHubOAuth) -> None:
    github.users["nobody"] = ["elsewhere/else"]
    client = bot.test_client()
    sign_in(client, github, "nobody")
    assert rows_of(client.get("/dashboard/?format=csv")) == []
    assert "0</span> pull requests" in client.get("/dashboard/").get_data(as_text=True)


def test_api_token_sees_everything_and_wrong_token_nothing(bot: Flask, stored: Stored) -> None:
    client = bot.test_client()
    ok = rows_of(client.get("/dashboard/?format=csv", headers={"Authorization": f"Bearer {API_TOKEN}"}))
    assert sum(int(r["prs"]) for r in ok) == len(stored.latest())
    bad = client.get("/dashboard/?format=csv", headers={"Authorization": "Bearer nope"})
    assert bad.status_code == 401


def test_callback_refuses_a_forged_or_missing_state(bot: Flask, github: FakeGitHubOAuth) -> None:
    client = bot.test_client()
    assert client.get("/dashboard/callback?code=abc&state=forged").status_code == 400
    client.get("/dashboard/login")  # a state is now in the session, but not this one
    assert client.get("/dashboard/callback?code=abc&state=forged").status_code == 400
    assert client.get("/dashboard/").status_code == 302  # still signed out


def test_a_refused_code_exchange_is_said_not_crashed(bot: Flask, github: FakeGitHubOAuth) -> None:
    client = bot.test_client()
    to_github = client.get("/dashboard/login")
    state = parse_qs(urlsplit(to_github.headers["Location"]).query)["state"][0]
    resp = client.get(f"/dashboard/callback?code=never-issued&state={state}")
    assert resp.status_code == 502
    assert "GitHub refused the sign-in" in resp.get_data(as_text=True)


def test_next_is_never_an_open_redirect(bot: Flask, github: FakeGitHubOAuth) -> None:
    client = bot.test_client()
    github.next_login = "alice"
    for evil in ("https://evil.example/", "//evil.example/dashboard", "/elsewhere"):
        client.get(f"/dashboard/login?next={evil}")
        to_github = client.get(f"/dashboard/login?next={evil}")
        import requests

        back = requests.get(to_github.headers["Location"], allow_redirects=False, timeout=5)
        cb = urlsplit(back.headers["Location"])
        done = client.get(f"{cb.path}?{cb.query}")
        assert done.headers["Location"] == "/dashboard/"
        client.post("/dashboard/logout", data={"csrf": _csrf(client)})


def _csrf(client: FlaskClient) -> str:
    page = client.get("/dashboard/").get_data(as_text=True)
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has a CSRF field"
    return found.group(1)


def test_sign_out_is_a_post_with_a_csrf_token(bot: Flask, github: FakeGitHubOAuth) -> None:
    client = bot.test_client()
    sign_in(client, github, "alice")
    assert client.get("/dashboard/logout").status_code == 405
    assert client.post("/dashboard/logout").status_code == 400  # no token
    assert client.post("/dashboard/logout", data={"csrf": "x" * 43}).status_code == 400
    assert client.get("/dashboard/").status_code == 200  # still signed in
    out = client.post("/dashboard/logout", data={"csrf": _csrf(client)})
    assert out.status_code == 302 and out.headers["Location"].endswith("/dashboard/signed-out")
    assert client.get("/dashboard/").status_code == 302


# Where the Secure flag comes from: configuration (the public URL, trusted proxies), never the
# Host header a proxy passes on (Host: 127.0.0.1:8000 used to strip it).
@pytest.mark.parametrize(("extra", "base_url", "headers", "secure"), [
    ({}, "http://127.0.0.1:8000", {}, True),
    ({}, "http://localhost", {"X-Forwarded-Proto": "http"}, True),  # no proxy is trusted: ignored
    ({"TASKEVAL_PUBLIC_URL": "https://taskeval.example.com"}, "http://127.0.0.1:8000", {}, True),
    ({"TASKEVAL_PUBLIC_URL": "http://localhost:8000"}, "https://taskeval.example.com", {}, False),
    ({"TASKEVAL_TRUSTED_PROXIES": "1"}, "http://127.0.0.1:8000", {"X-Forwarded-Proto": "https"}, True),
    ({"TASKEVAL_TRUSTED_PROXIES": "1"}, "http://taskeval.example.com", {"X-Forwarded-Proto": "http"}, False),
])
def test_session_cookie_flags(sqlite_url: str, github: FakeGitHubOAuth, extra: dict[str, str], base_url: str,
                              headers: dict[str, str], secure: bool) -> None:
    app = bot_app(sqlite_url, github, **extra)
    try:
        resp = app.test_client().get("/dashboard/login", base_url=base_url, headers=headers)
        cookie = resp.headers["Set-Cookie"]
        assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/dashboard" in cookie
        assert ("; Secure" in cookie) is secure, cookie
        if "TASKEVAL_PUBLIC_URL" in extra:  # GitHub sends the browser back to the public address
            redirect_uri = parse_qs(urlsplit(resp.headers["Location"]).query)["redirect_uri"][0]
            assert redirect_uri == extra["TASKEVAL_PUBLIC_URL"] + "/dashboard/callback"
    finally:
        app.extensions["taskeval"].engine.dispose()


def test_the_users_github_token_is_never_kept(bot: Flask, github: FakeGitHubOAuth) -> None:
    cookie = sign_in(bot.test_client(), github, "alice").headers["Set-Cookie"]
    assert "ghu_" not in cookie


def test_signing_out_ends_the_session_for_a_copied_cookie(bot: Flask, github: FakeGitHubOAuth) -> None:
    """The server forgets the session: a copy of the cookie taken before signing out opens nothing."""
    client = bot.test_client()
    sign_in(client, github, "alice")
    cookie = client.get_cookie("taskeval_dashboard", path="/dashboard")
    assert cookie is not None
    copied = bot.test_client()
    copied.set_cookie("taskeval_dashboard", cookie.value, path="/dashboard")
    assert copied.get("/dashboard/").status_code == 200  # the copy works while the session lives
    assert client.post("/dashboard/logout", data={"csrf": _csrf(client)}).status_code == 302
    assert copied.get("/dashboard/").status_code == 302
    assert copied.get("/dashboard/?format=csv").status_code == 401


def test_a_session_expires(db_url: str, engine: Engine, stored: Stored, github: FakeGitHubOAuth) -> None:
    app = bot_app(db_url, github, TASKEVAL_SESSION_TTL="0.01")
    client = app.test_client()
    sign_in(client, github, "alice")
    import time

    time.sleep(0.05)
    assert client.get("/dashboard/").status_code == 302
    app.extensions["taskeval"].engine.dispose()


def test_token_sign_in_form(bot: Flask) -> None:
    client = bot.test_client()
    page = client.get("/dashboard/login?method=token")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.get_data(as_text=True))
    assert csrf
    bad = client.post("/dashboard/login", data={"csrf": csrf.group(1), "token": "wrong"})
    assert bad.status_code == 401
    ok = client.post("/dashboard/login", data={"csrf": csrf.group(1), "token": API_TOKEN})
    assert ok.status_code == 302
    assert client.get("/dashboard/").status_code == 200


def test_security_headers(local: FlaskClient) -> None:
    resp = local.get("/dashboard/")
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.headers["X-Frame-Options"] == "DENY"
    assert resp.headers["Cache-Control"] == "no-store"
    assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]


# --- taskeval dashboard ----------------------------------------------------------------------------

def test_store_url_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert store_url(None, {}) == f"sqlite:///{tmp_path / 'taskeval.db'}"
    assert store_url(None, {"DATABASE_URL": "postgres://u@h/db"}) == "postgresql+psycopg://u@h/db"
    assert store_url("sqlite:///x.db", {"DATABASE_URL": "postgres://u@h/db"}) == "sqlite:///x.db"
    assert parse_bind("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert parse_bind("[::1]:9000") == ("::1", 9000)
    with pytest.raises(ValueError):
        parse_bind("localhost")


def test_local_dashboard_refuses_a_public_bind_without_a_token(sqlite_store: str,
                                                              capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TASKEVAL_API_TOKEN", raising=False)
    code = taskeval_main(["dashboard", "--store", sqlite_store, "--bind", "0.0.0.0:0"])
    assert code == 2
    assert "not a loopback address" in capsys.readouterr().err


def test_local_dashboard_on_a_public_bind_asks_for_the_token(sqlite_store: str) -> None:
    app = create_local_app(sqlite_store, bind_host="0.0.0.0", env={"TASKEVAL_API_TOKEN": API_TOKEN})
    client = app.test_client()
    assert client.get("/dashboard/").status_code == 302
    assert client.get("/dashboard/?format=csv").status_code == 401
    assert client.get("/dashboard/?format=csv", headers={"Authorization": f"Bearer {API_TOKEN}"}).status_code == 200
    login = client.get("/dashboard/login")
    assert login.status_code == 200 and 'name="token"' in login.get_data(as_text=True)


def test_local_dashboard_on_loopback_is_open(sqlite_store: str) -> None:
    client = create_local_app(sqlite_store, bind_host="127.0.0.1", env={}).test_client()
    assert client.get("/").headers["Location"] == "/dashboard/"
    assert "no sign-in" in client.get("/dashboard/").get_data(as_text=True)


@pytest.mark.parametrize(("host", "status"), [
    ("localhost:8080", 200), ("LOCALHOST", 200), ("127.0.0.1:8080", 200), ("127.9.9.9:1", 200),
    ("[::1]:8080", 200), ("rebound.example:8080", 421), ("127.0.0.1.nip.io:8080", 421),
    ("localhost.attacker.example", 421), ("[::ffff:7f00:1]:8080", 421), ("10.0.0.1:8080", 421),
])
def test_local_open_dashboard_answers_only_loopback_host_names(sqlite_store: str, host: str, status: int) -> None:
    client = create_local_app(sqlite_store, bind_host="127.0.0.1", env={}).test_client()
    for path in ("/", "/dashboard/", "/dashboard/?format=csv"):
        resp = client.get(path, headers={"Host": host})
        assert resp.status_code == (302 if status == 200 and path == "/" else status), (host, path)
        if status == 421:
            assert "answers only at localhost" in resp.get_data(as_text=True)


def test_local_dashboard_without_a_store_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = taskeval_main(["dashboard", "--store", f"sqlite:///{tmp_path / 'missing.db'}"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no store at" in err and "taskeval backfill" in err
    assert not (tmp_path / "missing.db").exists()


def test_local_dashboard_serves_over_http(sqlite_store: str) -> None:
    """The real command: it listens, serves the overview, and stops on Ctrl-C (SIGINT)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import requests

    proc = subprocess.Popen([sys.executable, "-m", "taskeval", "dashboard", "--store", sqlite_store,
                             "--bind", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TASKEVAL_API_TOKEN": ""}, preexec_fn=ctrl_c_reaches)
    try:
        assert proc.stderr is not None
        seen, found = [], None
        while found is None and len(seen) < 50:  # the address line, after any warning lines
            line = proc.stderr.readline()
            if not line:
                break
            seen.append(line)
            found = re.search(r"http://127\.0\.0\.1:(\d+)/dashboard/", line)
        assert found, "".join(seen)
        resp = requests.get(f"http://127.0.0.1:{found.group(1)}/dashboard/", timeout=10)
        assert resp.status_code == 200 and "Overview" in resp.text
    finally:
        proc.send_signal(signal.SIGINT)
        deadline = time.time() + 10
        while proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0



# --- the signals table ------------------------------------------------------------------------------

def test_storing_an_evaluation_stores_its_signals(engine: Engine) -> None:
    from sqlalchemy import select

    from taskeval.store.db import signals
    from taskeval.store.results import record_from_result, store_evaluation

    result = json.loads((Path(__file__).resolve().parents[1] / "examples" / "agent-pr-482.result.json").read_text())
    with engine.begin() as conn:
        eid = store_evaluation(conn, {**record_from_result(result), "stored_at": 0.0})
    with engine.connect() as conn:
        rows = conn.execute(select(signals).where(signals.c.evaluation_id == eid)).mappings().all()
    assert {r["signal_id"] for r in rows} == {s["id"] for s in result["signals"]}
    inconclusive = {s["id"] for s in result["signals"] if s["status"] != "ok"}
    assert {r["signal_id"] for r in rows if not r["conclusive"]} == inconclusive
    assert all(r["score"] is None for r in rows if not r["conclusive"])


def test_upgrade_fills_signals_of_existing_evaluations(db_url: str) -> None:
    """A store at revision 0005 (evaluations but no signals table) gains signals from its JSON."""
    from sqlalchemy import func, select

    from taskeval.store import migrations
    from taskeval.store.db import drop_schema, signals, write
    from taskeval.store.results import record_from_result

    engine = make_engine(db_url)
    drop_schema(engine)
    with write(engine) as conn:
        migrations.upgrade(conn, "0005")
    result = json.loads((Path(__file__).resolve().parents[1] / "examples" / "agent-pr-482.result.json").read_text())
    from taskeval.store.export import STORED

    later = set(STORED.values())  # revision 0008's columns, not in a 0005 store
    row = {k: v for k, v in record_from_result(result).items() if k not in later}
    with engine.begin() as conn:
        conn.execute(insert(evaluations).values(**row, stored_at=0.0, is_latest=True))
        conn.execute(insert(evaluations).values(**{**row, "result_json": "not json"}, stored_at=0.0))
    from taskeval.store.db import init_schema

    assert "0006" in init_schema(engine)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(signals)).scalar() == len(result["signals"])
    engine.dispose()


def test_pr_page_says_why_it_ended_and_what_each_grade_rests_on(local: FlaskClient, stored: Stored) -> None:
    """The closure (or rescue) class, the turns and each category's coverage, as in the result."""
    seen = set()
    for row in stored.latest():
        data = json.loads(row["result_json"])
        kind = "closure" if data.get("closure") else ("rescue" if data.get("rescue") else None)
        if kind is None or kind in seen:
            continue
        seen.add(kind)
        owner, name = row["repo"].split("/")
        text = local.get(f"/dashboard/pr/{owner}/{name}/{row['number']}").get_data(as_text=True)
        assert f'id="{kind}-class">{data[kind]["class"]}<' in text
        assert ("Why it ended" if kind == "closure" else "Merge:") in text
        turns = data["turns"]
        assert f"the agent's turns {turns['agentHours']:.1f} h" in text
        first = data["categoryScores"][0]
        assert f"{first['category']} {first['signalsConclusive']} of {first['signalsTotal']} signals" in text
    assert seen, "the store holds merged or closed PRs"
