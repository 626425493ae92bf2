"""A merged PR whose commits' writers are unknown (rescue class ``unknown``, docs/turns.md#rescue)
is counted apart from every rescue figure, as provisional grades are from means: the rescue mix,
the rescue rate of the comparison and people's commits per merged PR rest on the merged PRs with a
known class, and each says how many were left out. The results are written into the store the way
the bot writes them (their columns from the result, ``record_from_result``'s own columns), on
SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, select, update

from dashboard import teamwork
from taskeval.models import Rescue
from taskeval.store.db import evaluations
from taskeval.store.export import csv_chunks, rows, stored_columns
from tests.dashboard_store import fill

pytest_plugins = ["tests.bot.fixtures"]
pytestmark = pytest.mark.usefixtures("fresh_dashboard_cache")

AGENT = "copilot"


@pytest.fixture
def client(engine: Engine) -> FlaskClient:
    """The synthetic store, with every third merged Copilot PR made ``unknown`` as scoring writes it."""
    from dashboard.core import DashboardConfig, install

    fill(engine, 300, full_results=True, seed=5)
    with engine.begin() as conn:
        merged = conn.execute(select(evaluations.c.id, evaluations.c.result_json).where(
            evaluations.c.agent_id == AGENT, evaluations.c.pr_state == "merged",
            evaluations.c.is_latest.is_(True)).order_by(evaluations.c.id)).all()
        for row in merged[::3]:
            result = json.loads(row.result_json)
            result["rescue"] = Rescue.model_validate({
                "class": "unknown", "rounds": 1, "commitsByPeople": None, "evidence": [],
                "reason": "Who finished the work is unknown: 2 of 4 commits have no GitHub account.",
                "unattributedCommits": 2}).model_dump(mode="json", by_alias=True)
            conn.execute(update(evaluations).where(evaluations.c.id == row.id).values(
                result_json=json.dumps(result), **stored_columns(result)))
    app = Flask("rescue-unknown-test")
    install(app, DashboardConfig(engine=engine, open_access=True))
    return app.test_client()


def _csv(client: FlaskClient, path: str, table: str) -> list[dict[str, str]]:
    sep = "&" if "?" in path else "?"
    resp = client.get(f"{path}{sep}format=csv&table={table}")
    assert resp.status_code == 200, resp.data[:300]
    return list(csv.DictReader(io.StringIO(resp.get_data(as_text=True))))


def _merged(engine: Engine) -> list[dict[str, Any]]:
    export = list(csv.DictReader(io.StringIO("".join(csv_chunks(rows(engine))))))
    return [r for r in export if r["agent_id"] == AGENT and r["state"] == "merged"]


def test_unknown_is_counted_apart_from_the_rescue_figures(client: FlaskClient, engine: Engine) -> None:
    merged = _merged(engine)
    unknown = [r for r in merged if r["rescue_class"] == "unknown"]
    known = [r for r in merged if r["rescue_class"] in teamwork.RESCUE_CLASSES]
    assert unknown and known and len(unknown) + len(known) == len(merged)
    assert {r["commits_by_people"] for r in unknown} == {""}  # no count is stored for them
    path = f"/dashboard/agent/{AGENT}"
    mix = {r["rescue"]: r for r in _csv(client, path, "rescue")}
    assert set(mix) == set(teamwork.RESCUE_CLASSES)  # no "unknown" share beside the others
    for cls in teamwork.RESCUE_CLASSES:
        assert int(mix[cls]["prs"]) == sum(r["rescue_class"] == cls for r in known)
        assert int(mix[cls]["of"]) == len(known)
    per_pr = {r["figure"]: r for r in _csv(client, path, "per_pr")}
    assert int(per_pr["people_commits"]["prs"]) == len(known)
    page = client.get(path).get_data(as_text=True)
    assert f"Counted apart: {len(unknown)} merged PRs whose commits" in page
    sentence = page.split('id="detail-sentence">', 1)[1].split("<", 1)[0]
    assert f"({len(unknown)} merged PRs whose commits&#39; writers are unknown left out)" in sentence


def test_the_comparisons_rescue_rate_leaves_unknown_out(client: FlaskClient, engine: Engine) -> None:
    merged = _merged(engine)
    known = [r for r in merged if r["rescue_class"] in teamwork.RESCUE_CLASSES]
    overall = _csv(client, f"/dashboard/compare?a={AGENT}&b=codex", "compare")[0]
    assert int(overall["rescue_rateAPrs"]) == len(known)


def test_the_pr_page_says_unknown_is_counted_apart(client: FlaskClient, engine: Engine) -> None:
    with engine.connect() as conn:
        row = conn.execute(select(evaluations.c.repo, evaluations.c.number).where(
            evaluations.c.rescue_class == "unknown")).first()
    assert row is not None
    page = client.get(f"/dashboard/pr/{row.repo}/{row.number}").get_data(as_text=True)
    assert 'id="rescue-class">unknown</code>' in page and 'id="rescue-apart"' in page
