"""``POST /webhook`` through the Flask test client: routing, acknowledgements, every bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from bot.app import create_app
from bot.settings import BotSettings, SettingsError
from taskeval.store.db import deliveries, installation_events, jobs
from tests.bot.helpers import SECRET, count, deliver, delivery_headers, payload, settings_for, sign

pytest_plugins = ["tests.bot.fixtures"]


@pytest.fixture
def app(sqlite_url: str) -> Iterator[Flask]:
    app = create_app(settings_for(sqlite_url, max_body_bytes=64 * 1024))
    yield app
    app.extensions["taskeval"].engine.dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()




def test_ping_answers_200(client: FlaskClient) -> None:
    response = deliver(client, "ping", payload("ping"))
    assert response.status_code == 200
    assert response.get_json()["message"] == "pong"


def test_merged_pull_request_is_queued_and_stored_before_the_202(
    app: Flask, client: FlaskClient
) -> None:
    response = deliver(client, "pull_request", payload("pull_request.closed.merged"), "abc-1")
    assert response.status_code == 202
    body = response.get_json()
    assert body["status"] == "queued" and isinstance(body["job"], int)
    with app.extensions["taskeval"].engine.connect() as conn:
        job = conn.execute(select(jobs).where(jobs.c.id == body["job"])).one()
        stored = conn.execute(select(deliveries).where(deliveries.c.id == "abc-1")).one()
    assert (job.kind, job.repo, job.number, job.status) == ("evaluate", "octo-org/widgets", 42,
                                                            "queued")
    assert job.head_sha == "6dcb09b5b57875f334f61aebed695e2e4193db5e"
    assert job.installation_id == 5234567
    assert stored.job_id == body["job"]


def test_evaluate_comment_queues_a_command_job(app: Flask, client: FlaskClient) -> None:
    response = deliver(client, "issue_comment", payload("issue_comment.created.evaluate"))
    assert response.status_code == 202
    job = app.extensions["taskeval"].queue.job(response.get_json()["job"])
    assert job is not None
    assert (job["kind"], job["commenter"], job["comment_id"]) == ("command", "octocat", 1780000001)


@pytest.mark.parametrize(
    ("event", "fixture", "reason"),
    [
        ("pull_request", "pull_request.closed.unmerged", "closed without merging"),
        ("pull_request", "pull_request.opened", "'opened' is not evaluated"),
        ("issue_comment", "issue_comment.created.bot", "bot account"),
        ("issue_comment", "issue_comment.created.chatter", "does not start with /evaluate"),
        ("issue_comment", "issue_comment.created.on_issue", "not a pull request"),
        ("push", "push", "'push' is not handled"),
    ],
)
def test_everything_else_is_acknowledged_as_ignored(
    app: Flask, client: FlaskClient, event: str, fixture: str, reason: str
) -> None:
    response = deliver(client, event, payload(fixture))
    assert response.status_code == 202
    body = response.get_json()
    assert body["message"].startswith("ignored: ") and reason in body["message"]
    assert body["job"] is None
    assert count(app, jobs) == 0
    assert count(app, deliveries) == 1  # stored all the same: it was acknowledged


@pytest.mark.parametrize("fixture", ["installation.created", "installation_repositories.added"])
def test_installation_events_are_recorded(app: Flask, client: FlaskClient, fixture: str) -> None:
    event = fixture.split(".")[0]
    response = deliver(client, event, payload(fixture))
    assert response.status_code == 202
    assert response.get_json()["status"] == "recorded"
    with app.extensions["taskeval"].engine.connect() as conn:
        row = conn.execute(select(installation_events)).one()
    assert row.installation_id == 5234567 and row.account == "octo-org"


def test_redelivery_is_acknowledged_and_not_requeued(app: Flask, client: FlaskClient) -> None:
    first = deliver(client, "pull_request", payload("pull_request.closed.merged"), "same-id")
    again = deliver(client, "pull_request", payload("pull_request.closed.merged"), "same-id")
    assert again.status_code == 202
    assert again.get_json()["status"] == "duplicate"
    assert again.get_json()["job"] == first.get_json()["job"]
    assert count(app, jobs) == 1 and count(app, deliveries) == 1


def test_new_delivery_for_the_same_commit_coalesces(app: Flask, client: FlaskClient) -> None:
    first = deliver(client, "pull_request", payload("pull_request.closed.merged"), "one")
    second = deliver(client, "pull_request", payload("pull_request.closed.merged"), "two")
    assert second.get_json()["status"] == "coalesced"
    assert second.get_json()["job"] == first.get_json()["job"]
    assert count(app, jobs) == 1 and count(app, deliveries) == 2


def _bad_signature(client: FlaskClient) -> Any:
    return deliver(client, "ping", payload("ping"), X_Hub_Signature_256="sha256=" + "0" * 64)


def _signed_with_other_secret(client: FlaskClient) -> Any:
    body = json.dumps(payload("ping")).encode()
    return deliver(client, "ping", body, X_Hub_Signature_256=sign(body, "another-secret"))


def _tampered_body(client: FlaskClient) -> Any:
    body = json.dumps(payload("pull_request.closed.merged")).encode()
    headers = delivery_headers("pull_request", body, "t-1")
    return client.post("/webhook", data=body.replace(b'"merged": true', b'"merged": false'),
                       headers=headers)


@pytest.mark.parametrize(
    ("send", "status", "reason"),
    [
        (lambda c: deliver(c, "ping", payload("ping"), X_Hub_Signature_256=None), 401,
         "missing X-Hub-Signature-256"),
        (_bad_signature, 401, "does not match"),
        (_signed_with_other_secret, 401, "does not match"),
        (_tampered_body, 401, "does not match"),
        (lambda c: deliver(c, "ping", payload("ping"),
                           X_Hub_Signature_256="sha1=" + "0" * 40), 401, "does not match"),
        (lambda c: deliver(c, "ping", payload("ping"), X_GitHub_Event=None), 400,
         "X-GitHub-Event"),
        (lambda c: deliver(c, "ping", payload("ping"), X_GitHub_Delivery=None), 400,
         "X-GitHub-Delivery"),
        (lambda c: deliver(c, "ping", payload("ping"), X_GitHub_Delivery="a b; drop"), 400,
         "X-GitHub-Delivery"),
        (lambda c: deliver(c, "ping", payload("ping"), X_GitHub_Event="Pull-Request!"), 400,
         "X-GitHub-Event"),
        (lambda c: deliver(c, "ping", b"{not json"), 400, "malformed JSON"),
        (lambda c: deliver(c, "ping", b"\xff\xfe\x00"), 400, "malformed JSON"),
        (lambda c: deliver(c, "ping", b"[1, 2]"), 400, "expected a JSON object"),
        (lambda c: deliver(c, "ping", b"payload=%7B%7D",
                           Content_Type="application/x-www-form-urlencoded"), 415,
         "application/json"),
        (lambda c: deliver(c, "pull_request", {**payload("pull_request.closed.merged"),
                                               "pull_request": {"number": 1, "merged": True}}),
         400, "pull_request.head"),
        (lambda c: deliver(c, "ping", {"zen": "x" * 70_000}), 413, "larger than 65536 bytes"),
    ],
)
def test_bad_input_is_refused_with_a_reason(app: Flask, client: FlaskClient, send: Any,
                                            status: int, reason: str) -> None:
    response = send(client)
    assert response.status_code == status
    assert reason in response.get_json()["error"]
    assert count(app, deliveries) == 0 and count(app, jobs) == 0


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/webhook", 405), ("PUT", "/webhook", 405), ("GET", "/nope", 404),
     ("POST", "/", 404)],
)
def test_other_routes_answer_json_errors(client: FlaskClient, method: str, path: str,
                                         status: int) -> None:
    response = client.open(path, method=method)
    assert response.status_code == status
    assert "error" in response.get_json()


def test_the_secret_is_mandatory(sqlite_url: str) -> None:
    with pytest.raises(SettingsError, match="GITHUB_WEBHOOK_SECRET is not set"):
        create_app(BotSettings.from_env({"DATABASE_URL": sqlite_url}))
    with pytest.raises(SettingsError, match="GITHUB_WEBHOOK_SECRET"):
        BotSettings.from_env({"GITHUB_WEBHOOK_SECRET": "   "})


def test_database_down_means_no_acknowledgement(app: Flask, client: FlaskClient) -> None:
    """A delivery that cannot be stored must fail loudly so GitHub shows it for redelivery."""
    with app.extensions["taskeval"].engine.begin() as conn:
        conn.execute(deliveries.delete())
        conn.exec_driver_sql("DROP TABLE deliveries")
    response = deliver(client, "pull_request", payload("pull_request.closed.merged"))
    assert response.status_code == 503
    assert "not accepted" in response.get_json()["error"]


def test_signature_check_uses_the_raw_body_bytes(client: FlaskClient) -> None:
    """Re-serialising the JSON would change bytes (spacing, key order) and break the HMAC."""
    body = b'{"zen":  "Keep it logically awesome.",   "hook_id": 1}'
    response = client.post("/webhook", data=body, headers=delivery_headers("ping", body, "raw"))
    assert response.status_code == 200
    assert SECRET not in response.get_data(as_text=True)


@pytest.fixture
def any_app(engine: Any, db_url: str) -> Flask:
    """The receiver on SQLite and on PostgreSQL (``engine`` runs each test on both)."""
    return create_app(settings_for(db_url), engine=engine)


def test_the_outcome_a_delivery_shows_is_stored_with_it_in_one_commit(
    any_app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import event

    from taskeval.store.db import outcomes

    engine = any_app.extensions["taskeval"].engine
    commits: list[int] = []
    event.listen(engine, "commit", lambda conn: commits.append(1))
    client = any_app.test_client()
    answer = deliver(client, "pull_request", payload("pull_request.closed.merged"), "one-commit")
    assert answer.status_code == 202 and answer.get_json()["status"] == "queued"
    assert len(commits) == 1  # delivery, job and outcome: one durable commit, not two
    with engine.connect() as conn:
        rows = conn.execute(select(outcomes.c.outcome, outcomes.c.value)).all()
        stored = conn.execute(select(deliveries.c.id)).scalars().all()
    assert [tuple(r) for r in rows] == [("rejected", False)] and stored == ["one-commit"]

    again = deliver(client, "pull_request", payload("pull_request.closed.merged"), "one-commit")
    assert again.get_json()["status"] == "duplicate"

    def broken(*_args: Any) -> int:
        raise RuntimeError("outcomes table unreadable")

    monkeypatch.setattr("bot.web.outcome_events.upsert", broken)
    closed = payload("pull_request.closed.merged")
    closed["number"] = closed["pull_request"]["number"] = 77
    answer = deliver(client, "pull_request", closed, "outcome-fails")
    assert answer.status_code == 202  # the by-product failed; the delivery is stored all the same
    with engine.connect() as conn:
        assert "outcome-fails" in conn.execute(select(deliveries.c.id)).scalars().all()
    assert count(any_app, jobs) == 2
