"""Read API and health: bearer auth, latest/history, leaderboard ranking, database reachability."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine

from bot.app import create_app
from bot.jobs import events
from taskeval.store.db import make_engine, write
from taskeval.store.results import record_from_result, store_evaluation
from tests.bot.helpers import API_TOKEN, settings_for

pytest_plugins = ["tests.bot.fixtures"]
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}


def result(repo: str, number: int, author: str, finals: tuple[int, int, int], overall: int,
           sha: str = "c" * 40, evaluated_at: str = "2026-03-02T10:11:12Z",
           agent: dict[str, Any] | None = None, merged: bool = True) -> dict[str, Any]:
    """The stored fields of a result, in the contract's camelCase shape."""
    names = ("agentPerformance", "taskOutcomeQuality", "processCompliance")
    extra = {"agent": agent} if agent is not None else {}
    return {**extra,
        "schemaVersion": "1", "scorerVersion": "2026.11.1", "repository": repo,
        "pullRequest": {"number": number, "title": "t", "url": "u", "author": author,
                        "merged": merged, "mergedAt": evaluated_at if merged else None},
        "headSha": sha, "evaluatedAt": evaluated_at, "trigger": "pull_request",
        "overallScore": overall, "overallBand": "strong",
        "categoryScores": [{"category": n, "finalScore": f} for n, f in zip(names, finals,
                                                                             strict=True)],
        "judge": {"status": "off"},
    }


def store(engine: Engine, data: dict[str, Any]) -> None:
    with write(engine) as conn:
        store_evaluation(conn, {**record_from_result(data), "stored_at": 0.0})


@pytest.fixture
def engine_of(app: Flask) -> Engine:
    return app.extensions["taskeval"].engine


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), ({"Authorization": "Bearer wrong"}, 401), ({"Authorization": API_TOKEN}, 401),
     ({"Authorization": f"Basic {API_TOKEN}"}, 401), (AUTH, 404),
     ({"Authorization": f"bearer {API_TOKEN}"}, 404)],
)
def test_api_requires_the_bearer_token(client: FlaskClient, headers: dict[str, str],
                                       status: int) -> None:
    response = client.get("/api/evaluations/octo-org/widgets/1", headers=headers)
    assert response.status_code == status  # 404: authorised, nothing stored yet
    assert API_TOKEN not in response.get_data(as_text=True)
    if status == 401:
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_api_is_disabled_without_a_token(sqlite_url: str) -> None:
    client = create_app(settings_for(sqlite_url)).test_client()
    for path in ("/api/evaluations/o/r/1", "/api/leaderboard"):
        response = client.get(path, headers=AUTH)
        assert response.status_code == 404
        assert "TASKEVAL_API_TOKEN" in response.get_json()["error"]


def test_latest_and_history(client: FlaskClient, engine_of: Engine) -> None:
    store(engine_of, result("octo-org/widgets", 42, "copilot-swe-agent[bot]", (60, 70, 80), 70,
                            sha="1" * 40))
    store(engine_of, result("octo-org/widgets", 42, "copilot-swe-agent[bot]", (90, 90, 90), 90,
                            sha="2" * 40))
    store(engine_of, result("octo-org/widgets", 43, "octocat", (10, 10, 10), 10))
    latest = client.get("/api/evaluations/octo-org/widgets/42", headers=AUTH)
    assert latest.status_code == 200
    assert (latest.get_json()["headSha"], latest.get_json()["overallScore"]) == ("2" * 40, 90)
    history = client.get("/api/evaluations/octo-org/widgets/42?all=1", headers=AUTH).get_json()
    assert history["count"] == 2
    assert [e["headSha"] for e in history["evaluations"]] == ["2" * 40, "1" * 40]
    missing = client.get("/api/evaluations/octo-org/widgets/44", headers=AUTH)
    assert missing.status_code == 404 and "octo-org/widgets#44" in missing.get_json()["error"]


def test_leaderboard_orders_by_mean_then_count_and_ranks_no_small_sample(client: FlaskClient,
                                                                        engine_of: Engine) -> None:
    repo = "octo-org/widgets"
    # Copilot: two PRs, 80 and 90 -> 85. Devin: one PR at 85 -> tie on mean, fewer evaluations.
    store(engine_of, result(repo, 1, "Copilot", (70, 80, 90), 80))
    store(engine_of, result(repo, 2, "Copilot", (80, 90, 100), 90))
    store(engine_of, result(repo, 3, "devin-ai-integration[bot]", (85, 85, 85), 85))
    # A re-evaluation replaces the PR's earlier score instead of counting twice.
    store(engine_of, result(repo, 4, "octocat", (10, 10, 10), 10, sha="1" * 40))
    store(engine_of, result(repo, 4, "octocat", (95, 95, 95), 95, sha="2" * 40))
    # Another repository stays out of this repo's board.
    store(engine_of, result("octo-org/gadgets", 1, "Copilot", (0, 0, 0), 0))
    board = client.get(f"/api/leaderboard?repo={repo}&by=author", headers=AUTH).get_json()
    assert (board["repository"], board["by"]) == (repo, "author")
    # one or two PRs each: small samples, listed by mean then count, none ranked
    assert [(e["rank"], e["author"], e["count"], e["meanOverall"], e["smallSample"])
            for e in board["entries"]] == [
        (None, "octocat", 1, 95.0, True),
        (None, "Copilot", 2, 85.0, True),
        (None, "devin-ai-integration[bot]", 1, 85.0, True),
    ]
    assert board["entries"][1]["meanCategories"] == {
        "agentPerformance": 75.0, "taskOutcomeQuality": 85.0, "processCompliance": 95.0}
    assert board["entries"][1]["overallInterval"] == {"low": 21.5, "high": 100.0}  # 85 ± 12.706 · 5
    everywhere = client.get("/api/leaderboard?by=author", headers=AUTH).get_json()["entries"]
    copilot = next(e for e in everywhere if e["author"] == "Copilot")
    assert (copilot["count"], copilot["meanOverall"]) == (3, 56.7)


def agent(id_: str, name: str, operator: str | None = None) -> dict[str, Any]:
    return {"id": id_, "name": name, "operator": operator, "confidence": "certain",
            "evidence": [], "reason": "test"}


def test_leaderboard_by_agent_is_the_default(client: FlaskClient, engine_of: Engine) -> None:
    repo = "octo-org/widgets"
    claude = agent("claude-code", "Claude Code", "alice")
    # Two people run Claude Code: one agent entry; by author they stay apart.
    store(engine_of, result(repo, 1, "alice", (70, 80, 90), 80, agent=claude))
    store(engine_of, result(repo, 2, "bob", (60, 60, 60), 60, merged=False,
                            agent={**claude, "operator": "bob"}))
    store(engine_of, result(repo, 3, "Copilot", (90, 90, 90), 90,
                            agent=agent("copilot", "GitHub Copilot", "carol")))
    store(engine_of, result(repo, 4, "dave", (50, 50, 50), 50, agent=agent("human", "Human")))
    # Stored before results named their agent: grouped as unattributed, not as a person.
    store(engine_of, result(repo, 5, "erin", (40, 40, 40), 40))
    # The newest evaluation of a PR replaces the older one, agent included.
    store(engine_of, result(repo, 6, "frank", (0, 0, 0), 0, sha="1" * 40))
    store(engine_of, result(repo, 6, "frank", (100, 100, 100), 100, sha="2" * 40,
                            agent=agent("devin", "Devin", "frank")))
    board = client.get("/api/leaderboard", headers=AUTH).get_json()
    assert board["by"] == "agent"
    rows = [(e["rank"], e["agent"], e["agentName"], e["count"], e["meanOverall"])
            for e in board["entries"]]
    assert rows == [  # small samples first by mean; the PRs where no agent was found last
        (None, "devin", "Devin", 1, 100.0),
        (None, "copilot", "GitHub Copilot", 1, 90.0),
        (None, "claude-code", "Claude Code", 2, 70.0),
        (None, "human", "Human", 1, 50.0),
        (None, None, "unattributed", 1, 40.0),
    ]
    assert [e["noAgentFound"] for e in board["entries"]] == [False, False, False, True, True]
    assert board["entries"][2]["prStates"] == {"merged": 1, "closed": 0, "open": 0}
    authors = client.get("/api/leaderboard?by=author", headers=AUTH).get_json()["entries"]
    assert {e["author"] for e in authors} == {"alice", "bob", "Copilot", "dave", "erin", "frank"}
    assert client.get("/api/leaderboard?by=operator", headers=AUTH).status_code == 400


@pytest.mark.parametrize(
    ("path", "status"),
    [("/api/leaderboard?repo=not-a-repo", 400), ("/api/leaderboard?by=nobody", 400),
     ("/api/evaluations/o/r/notanumber", 404),
     ("/api/evaluations/o/r%20x/1", 400), ("/api/jobs/999", 404)],
)
def test_api_bad_requests(client: FlaskClient, path: str, status: int) -> None:
    response = client.get(path, headers=AUTH)
    assert response.status_code == status
    assert "error" in response.get_json()


def test_healthz_reports_database_and_queue_depth(client: FlaskClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.get_json()
    assert body["database"] == "ok"
    assert body["queue"] == {"queued": 0, "running": 0, "done": 0, "dead": 0}


def test_healthz_fails_when_the_database_is_unreachable(tmp_path: Any) -> None:
    missing_dir = tmp_path / "gone"
    missing_dir.mkdir()
    url = f"sqlite:///{missing_dir / 'bot.sqlite3'}"
    app = create_app(settings_for(url))
    app.extensions["taskeval"].engine.dispose()
    shutil.rmtree(missing_dir)
    app.extensions["taskeval"].engine = make_engine(url, connect_args={"timeout": 0.1})
    response = app.test_client().get("/healthz")
    assert response.status_code == 503
    assert response.get_json()["database"].startswith("unreachable: OperationalError")


def test_job_status_is_served(app: Flask, client: FlaskClient) -> None:
    queue = app.extensions["taskeval"].queue
    job_id = queue.accept("d1", "pull_request", "closed",
                          events.Evaluate("octo-org/widgets", 42, "a" * 40, None)).job_id
    body = client.get(f"/api/jobs/{job_id}", headers=AUTH).get_json()
    assert (body["status"], body["repo"], body["number"], body["attempts"]) == (
        "queued", "octo-org/widgets", 42, 0)
    assert client.get(f"/api/jobs/{job_id}").status_code == 401


def test_leaderboard_counts_provisional_grades_and_can_leave_them_out(client: FlaskClient,
                                                                      engine_of: Engine) -> None:
    """Per mean: how many PRs had a provisional grade (coverage under 0.5) and how many it rests on;
    ``provisional=exclude`` leaves them out of the means, and the ranking follows."""
    repo = "octo-org/widgets"

    def unsure(data: dict[str, Any], coverage: float) -> dict[str, Any]:
        for cat, weight in zip(data["categoryScores"], (0.30, 0.45, 0.25), strict=True):
            cat.update(coverage=coverage, weight=weight)
        return data

    store(engine_of, unsure(result(repo, 1, "alice", (90, 90, 90), 90), 1.0))
    store(engine_of, unsure(result(repo, 2, "alice", (40, 40, 40), 40), 0.2))  # provisional throughout
    store(engine_of, unsure(result(repo, 3, "bob", (70, 70, 70), 70), 0.9))
    store(engine_of, result(repo, 4, "bob", (60, 60, 60), 60))  # stored before coverage: not provisional
    counted = client.get(f"/api/leaderboard?repo={repo}&by=author", headers=AUTH).get_json()
    left = client.get(f"/api/leaderboard?repo={repo}&by=author&provisional=exclude", headers=AUTH).get_json()
    assert [(e["author"], e["meanOverall"], e["provisional"]["overall"], e["restsOn"]["overall"])
            for e in counted["entries"]] == [("alice", 65.0, 1, 2), ("bob", 65.0, 0, 2)]
    assert [(e["author"], e["meanOverall"], e["restsOn"]["agentPerformance"], e["provisionalLeftOut"])
            for e in left["entries"]] == [("alice", 90.0, 1, True), ("bob", 65.0, 2, True)]
    assert left["provisional"] == "exclude" and counted["provisional"] == "include"
    bad = client.get("/api/leaderboard?provisional=maybe", headers=AUTH)
    assert bad.status_code == 400 and "provisional must be include or exclude" in bad.get_json()["error"]


def test_the_leaderboard_and_the_dashboard_rank_the_same_data_alike(db_url: str) -> None:
    """One rule, one implementation: for every agent and author, the API's rank, shared rank and
    small-sample flag are the dashboard overview's, provisional grades counted or left out. The
    store holds groups whose intervals overlap, so some ranks are shared ("=1"), which strict
    ranks 1, 2, 3 (the API's old rule) would not show."""
    import csv
    import io

    from bot.settings import BotSettings
    from dashboard import queries
    from tests.bot.helpers import SECRET
    from tests.dashboard_store import fill

    app = create_app(BotSettings.from_env({"GITHUB_WEBHOOK_SECRET": SECRET, "DATABASE_URL": db_url,
                                           "TASKEVAL_API_TOKEN": API_TOKEN}))
    client = app.test_client()
    fill(app.extensions["taskeval"].engine, 400, seed=19)
    shared = 0
    for by in ("agent", "author"):
        for provisional in ("include", "exclude"):
            queries.clear_cache()
            api = client.get(f"/api/leaderboard?by={by}&provisional={provisional}", headers=AUTH).get_json()
            page = client.get(f"/dashboard/?by={by}&provisional={provisional}&format=csv", headers=AUTH)
            assert page.status_code == 200
            dash = {r[by]: r for r in csv.DictReader(io.StringIO(page.get_data(as_text=True)))}
            compared = 0
            for e in api["entries"]:
                key = e[by] if e[by] is not None else queries.UNATTRIBUTED
                if by == "agent" and e["noAgentFound"]:
                    assert e["rank"] is None and dash[queries.NO_AGENT]["rank"] == ""
                    continue
                row = dash[key]
                assert (e["rank"], e["rankShared"], e["smallSample"]) == (
                    int(row["rank"]) if row["rank"] else None, row["rankShared"] == "true",
                    row["smallSample"] == "true"), (by, provisional, key)
                assert e["overallInterval"]["low"] == pytest.approx(float(row["overallLow"]), abs=0.06)
                assert e["overallInterval"]["high"] == pytest.approx(float(row["overallHigh"]), abs=0.06)
                compared += 1
                shared += e["rankShared"]
            assert compared >= 5
            ranked = [e[by] for e in api["entries"] if e["rank"] is not None]
            assert [k for k in dash if dash[k]["rank"]] == ranked  # the same order, too
    assert shared, "the store has groups the intervals cannot tell apart"
    app.extensions["taskeval"].engine.dispose()
