"""Bad numbers and odd stored data are bad input, not server errors: every route of the read API,
the webhook and the dashboard answers them with a 4xx and a reason.

One table over the routes: a PR number, id or page of 20 digits and more, dates at the calendar's
edge, a stored result that is not an object, a line break in ``next``, a signed webhook body
holding an integer of 5,000 digits. Run against SQLite and PostgreSQL (``DATABASE_URL_POSTGRES``),
whose integer columns overflow differently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, update

from bot.app import create_app
from bot.settings import BotSettings
from taskeval.store.db import evaluations, write
from taskeval.store.results import record_from_result, store_evaluation
from tests.bot.helpers import API_TOKEN, delivery_headers, payload, settings_for
from tests.test_bot_api import result

pytest_plugins = ["tests.bot.fixtures"]
AUTH = {"Authorization": f"Bearer {API_TOKEN}"}
REPO = "octo-org/widgets"
HUGE = "9" * 20  # past every integer column (64 bits hold 19 digits)
HUGER = "1" + "0" * 400
BIG_INT32 = str(2**31)  # past PostgreSQL's integer, within SQLite's


@pytest.fixture
def app(db_url: str) -> Iterator[Flask]:
    base = settings_for(db_url)
    app = create_app(BotSettings.from_env({**base.env, "TASKEVAL_API_TOKEN": API_TOKEN}))
    engine = app.extensions["taskeval"].engine
    store(engine, result(REPO, 7, "alice", (80, 70, 60), 70, agent={
        "id": "copilot", "name": "GitHub Copilot", "confidence": "certain", "evidence": [], "reason": "r"}))
    store(engine, result(REPO, 8, "bob", (80, 70, 60), 70, sha="d" * 40))
    with write(engine) as conn:  # a stored result that is not an object (written by hand or by a bug)
        conn.execute(update(evaluations).where(evaluations.c.number == 8).values(result_json="[]"))
    yield app
    engine.dispose()


def store(engine: Engine, data: dict[str, Any]) -> None:
    with write(engine) as conn:
        store_evaluation(conn, {**record_from_result(data), "stored_at": 0.0})


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    status: int  # what the route answers
    reason: str  # a fragment of the answer (or of its Location) that says what was wrong
    body: bytes | None = None


def _delivery(number: bytes) -> bytes:
    """A merged-PR delivery whose PR number is ``number``, as JSON text."""
    data = payload("pull_request.closed.merged")
    data["number"] = data["pull_request"]["number"] = 0
    return json.dumps(data).encode().replace(b'"number": 0', b'"number": ' + number)


WORDS = "must be a whole number from 0 to 2147483647"
CASES = {
    # The read API: 400 naming the parameter.
    "api-pr-number": Case("GET", f"/api/evaluations/{REPO}/{HUGE}", 400, f"number {WORDS}"),
    "api-pr-number-400-digits": Case("GET", f"/api/evaluations/{REPO}/{HUGER}", 400, f"number {WORDS}"),
    "api-pr-number-past-int32": Case("GET", f"/api/evaluations/{REPO}/{BIG_INT32}", 400, f"number {WORDS}"),
    "api-pr-history": Case("GET", f"/api/evaluations/{REPO}/{HUGE}?all=1", 400, f"number {WORDS}"),
    "api-job-id": Case("GET", f"/api/jobs/{HUGE}", 400, f"job_id {WORDS}"),
    # A stored result that is not an object is a damaged row, skipped as the export skips it.
    "api-stored-list": Case("GET", f"/api/evaluations/{REPO}/8", 404, "no evaluation stored"),
    "api-stored-list-history": Case("GET", f"/api/evaluations/{REPO}/8?all=1", 404, "no evaluation stored"),
    # The webhook: 400 naming what is wrong.
    "webhook-5000-digit-integer": Case("POST", "/webhook", 400, "malformed JSON: Exceeds the limit",
                                       _delivery(b"7" * 5000)),
    "webhook-25-digit-pr-number": Case("POST", "/webhook", 400, "number", _delivery(b"7" * 25)),
    # The dashboard: numbers in the path and ?page= are 400 naming them; its filters keep their
    # rule (an unusable value is ignored and the page says so), dates past the calendar included.
    "dashboard-pr-number": Case("GET", f"/dashboard/pr/{REPO}/{HUGE}", 400, f"number {WORDS}"),
    "dashboard-pr-past-int32": Case("GET", f"/dashboard/pr/{REPO}/{BIG_INT32}", 400, f"number {WORDS}"),
    "dashboard-evaluation-id": Case("GET", f"/dashboard/evaluation/{HUGE}.json", 400, f"evaluation_id {WORDS}"),
    "dashboard-stored-list": Case("GET", f"/dashboard/pr/{REPO}/8", 200, "not a JSON object"),
    "dashboard-agent-page": Case("GET", f"/dashboard/agent/copilot?page={HUGE}", 400, "page must be"),
    "dashboard-author-page": Case("GET", f"/dashboard/author/alice?page={HUGER}", 400, "page must be"),
    "dashboard-until-last-day": Case("GET", "/dashboard/?until=9999-12-31", 200, "ignored until="),
    "dashboard-since-first-day": Case("GET", "/dashboard/?since=0001-01-01", 200, "ignored since="),
    "dashboard-compare-until": Case("GET", "/dashboard/compare?a=copilot&b=human&a_until=9999-12-31", 200,
                                    "ignored a_until="),
    "dashboard-tasks-until": Case("GET", "/dashboard/tasks?until=9999-12-31", 200, "ignored until="),
    "dashboard-agent-until": Case("GET", "/dashboard/agent/copilot?until=9999-12-31", 200, "ignored until="),
    # A line break in ?next= cannot be a Location header: it is not followed, like any unsafe next.
    "dashboard-login-next-newline": Case("GET", "/dashboard/login?next=/dashboard/%0D%0AX-Evil:%201", 302,
                                         "/dashboard/"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_numbers_and_odd_stored_data_get_a_reason_not_a_server_error(client: FlaskClient, name: str) -> None:
    case = CASES[name]
    if case.method == "POST":
        assert case.body is not None
        answer = client.post(case.path, data=case.body, headers=delivery_headers("pull_request", case.body, name))
    else:
        answer = client.get(case.path, headers=AUTH)
    text = answer.get_data(as_text=True)
    assert answer.status_code == case.status, (answer.status_code, text[:500])
    assert case.reason in (answer.headers.get("Location", "") if answer.status_code == 302 else text), text[:500]
    assert "Traceback" not in text and "Internal Server Error" not in text


def test_the_same_routes_still_answer_good_input(client: FlaskClient) -> None:
    """The limits refuse only what no store holds: the largest number that fits is looked up."""
    assert client.get(f"/api/evaluations/{REPO}/7", headers=AUTH).get_json()["overallScore"] == 70
    assert client.get(f"/api/evaluations/{REPO}/{2**31 - 1}", headers=AUTH).status_code == 404
    assert client.get(f"/dashboard/pr/{REPO}/7", headers=AUTH).status_code == 200
    for day in ("1970-01-01", "9998-12-31"):
        page = client.get(f"/dashboard/?since={day}&until={day}", headers=AUTH)
        assert page.status_code == 200 and "ignored" not in page.get_data(as_text=True)
    assert client.get("/dashboard/agent/copilot?page=2", headers=AUTH).status_code == 200
    assert json.loads(client.get("/dashboard/tasks?format=json", headers=AUTH).get_data())
    assert client.get("/dashboard/login?next=/dashboard/tasks", headers=AUTH).headers["Location"] == "/dashboard/tasks"
