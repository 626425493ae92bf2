"""Who names an agent: taskeval names its built-in agents, a repository names only its own, and
only on its own PRs. Results feed views shared across repositories by agent (the leaderboard,
the dashboard's rows and filters), so one repository's config must not rename an agent there.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine

from bot.app import create_app
from bot.settings import BotSettings
from taskeval.agent_table import BUILTIN_RULES, FIXED_NAMES
from taskeval.config import parse_config
from taskeval.pipeline import Options, score_bundle
from taskeval.store.db import write
from taskeval.store.results import record_from_result, store_evaluation
from tests import builders
from tests.bot.helpers import API_TOKEN, settings_for
from tests.test_bot_api import result

pytest_plugins = ["tests.bot.fixtures"]
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
SOURCE = "repo:.github/taskeval.yml"


def loaded(agents: list[dict[str, Any]]) -> Any:
    return parse_config(yaml.safe_dump({"agents": agents}), SOURCE)


@pytest.mark.parametrize("rule", BUILTIN_RULES, ids=[r.id for r in BUILTIN_RULES])
def test_a_repository_cannot_rename_a_built_in_agent(rule: Any) -> None:
    config = loaded([{"id": rule.id, "name": f"{rule.name} (as this repository sees it)"}])
    [error] = config.errors
    assert error.startswith(f"{SOURCE}: agents: ") and f"{rule.id!r} is built in and keeps its name" in error
    assert config.settings.agents == []
    # Overriding how it is recognised is still the repository's to do, and keeps the name.
    marks = loaded([{"id": rule.id, "logins": ["our-bot[bot]"]}])
    assert marks.errors == [] and marks.settings.agents[0].logins == ["our-bot[bot]"]


def test_an_evaluation_under_a_renaming_config_names_the_agent_as_taskeval_does() -> None:
    bundle = builders.bundle(builders.merged_agent_pr())  # a Copilot PR
    for config in (loaded([{"id": "copilot", "name": "Sloppy Copilot"}]),
                   loaded([{"id": "copilot", "branch_prefixes": ["copilot/", "bot/"]}])):
        agent = score_bundle(bundle, config, Options(ai="off")).agent
        assert agent is not None and (agent.id, agent.name) == ("copilot", "GitHub Copilot")


TAKEN = [*FIXED_NAMES.values(), "No agent found"]


@pytest.mark.parametrize("name", [*TAKEN, *(f"  {n.upper()} " for n in TAKEN),
                                  *(n.replace(" ", "   ") for n in TAKEN if " " in n)])
def test_a_new_agent_cannot_take_a_name_taskeval_gives(name: str) -> None:
    config = loaded([{"id": "acme-agent", "name": name, "logins": ["acme[bot]"]}])
    [error] = config.errors
    assert "cannot be named" in error and config.settings.agents == []


@pytest.mark.parametrize("agent_id", ["human", "unknown-bot", "no-agent", "unattributed"])
def test_the_ids_of_the_no_agent_rows_are_not_an_agent_of_a_repository(agent_id: str) -> None:
    config = loaded([{"id": agent_id, "name": "Mine"}])
    assert len(config.errors) == 1 and "is reserved" in config.errors[0]


# ------------------------------------------------------------------ views shared across repositories


def agent(agent_id: str, name: str) -> dict[str, Any]:
    return {"id": agent_id, "name": name, "confidence": "certain", "evidence": [], "reason": "r"}


@pytest.fixture
def app(db_url: str) -> Iterator[Flask]:
    """One store, three repositories: a result naming Copilot otherwise (from an older taskeval,
    or a result file loaded by hand), and two repositories whose configs both add an agent with
    the id ``acme``, under different names."""
    base = settings_for(db_url)
    app = create_app(BotSettings.from_env({**base.env, "TASKEVAL_API_TOKEN": API_TOKEN}))
    engine = app.extensions["taskeval"].engine
    store(engine, result("team-a/app", 1, "alice", (80, 80, 80), 80, agent=agent("copilot", "ZZ Copilot (renamed)")))
    store(engine, result("team-a/app", 2, "bob", (70, 70, 70), 70, sha="b" * 40,
                         agent=agent("copilot", "GitHub Copilot")))
    store(engine, result("team-b/app", 3, "carol", (60, 60, 60), 60, sha="d" * 40,
                         agent=agent("acme", "Acme Agent")))
    store(engine, result("team-c/app", 4, "dave", (50, 50, 50), 50, sha="e" * 40,
                         agent=agent("acme", "Zz Scam Agent")))
    yield app
    engine.dispose()


def store(engine: Engine, data: dict[str, Any]) -> None:
    with write(engine) as conn:
        store_evaluation(conn, {**record_from_result(data), "stored_at": 0.0})


def test_shared_views_name_agents_as_taskeval_does(client: FlaskClient) -> None:
    board = {e["agent"]: e["agentName"] for e in client.get("/api/leaderboard", headers=AUTH).get_json()["entries"]}
    assert board == {"copilot": "GitHub Copilot", "acme": "acme"}

    overview = client.get("/dashboard/?format=json", headers=AUTH).get_json()
    rows = {r["agent"]: r["agentName"] for r in overview["groups"]}
    assert rows["copilot"] == "GitHub Copilot" and rows["acme"] == "acme"
    page = client.get("/dashboard/", headers=AUTH).get_data(as_text=True)
    for name in ("renamed", "Acme Agent", "Scam"):  # neither in the rows nor in the agent filter
        assert name not in page
    assert "GitHub Copilot" in client.get("/dashboard/agent/copilot", headers=AUTH).get_data(as_text=True)


def test_a_repositorys_own_agent_keeps_its_name_on_its_own_prs(client: FlaskClient) -> None:
    assert "Acme Agent" in client.get("/dashboard/pr/team-b/app/3", headers=AUTH).get_data(as_text=True)
    assert "Zz Scam Agent" in client.get("/dashboard/pr/team-c/app/4", headers=AUTH).get_data(as_text=True)
    renamed = client.get("/dashboard/pr/team-a/app/1", headers=AUTH).get_data(as_text=True)
    assert "GitHub Copilot" in renamed and "renamed" not in renamed
    prs = [r["pr"] for r in client.get("/dashboard/agent/acme?format=json", headers=AUTH).get_json()["prs"]]
    assert sorted(prs) == ["team-b/app#3", "team-c/app#4"]  # one agent id, two repositories' PRs
    exported = {int(r["number"]): r["agent_name"] for r in csv.DictReader(io.StringIO(
        client.get("/api/export?format=csv", headers=AUTH).get_data(as_text=True)))}
    assert exported == {1: "GitHub Copilot", 2: "GitHub Copilot", 3: "Acme Agent", 4: "Zz Scam Agent"}
