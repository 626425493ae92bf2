"""Security of the webhook bot: signatures and replays, who may run ``/evaluate``, the read API's
token, and secrets, which must never appear in a log, an answer, a stored row or a comment.

The last test runs the real ``taskeval serve`` in App mode at debug log level with distinctive
secrets, drives it down failure paths (forged deliveries, wrong API tokens, GitHub and the AI
endpoint echoing credentials back), and scans everything it can capture.
"""

from __future__ import annotations

import hmac
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import MetaData, select

from bot.app import create_app
from bot.jobs.worker import Worker
from taskeval.store.db import deliveries, jobs, make_engine
from tests.bot.helpers import API_TOKEN, SECRET, count, deliver, delivery_headers, payload, settings_for, sign
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault, app_key_pair
from tests.fakeopenai import Fail, FakeOpenAI
from tests.processes import stop
from tests.test_bot_serve import base_env, free_port, wait_for

pytest_plugins = ["tests.bot.fixtures"]
REPO = "octo-org/widgets"


@pytest.fixture
def app(sqlite_url: str) -> Iterator[Flask]:
    app = create_app(settings_for(sqlite_url, api_token=API_TOKEN))
    yield app
    app.extensions["taskeval"].engine.dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()




# -------------------------------------------------------------------------------- signatures


BODY = json.dumps(payload("pull_request.closed.merged")).encode()


@pytest.mark.parametrize(
    ("headers", "body", "reason"),
    [
        ({"X-Hub-Signature-256": None}, BODY, "missing X-Hub-Signature-256"),
        # Only the legacy SHA-1 header, as an old hook or a downgrade attempt would send.
        ({"X-Hub-Signature-256": None,
          "X-Hub-Signature": "sha1=" + hmac.new(SECRET.encode(), BODY, "sha1").hexdigest()},
         BODY, "missing X-Hub-Signature-256"),
        ({"X-Hub-Signature-256": "sha1=" + hmac.new(SECRET.encode(), BODY, "sha1").hexdigest()},
         BODY, "does not match"),
        ({"X-Hub-Signature-256": "sha256=" + "0" * 64}, BODY, "does not match"),
        ({"X-Hub-Signature-256": sign(BODY, "not-the-secret")}, BODY, "does not match"),
        ({"X-Hub-Signature-256": sign(BODY).upper().replace("SHA256=", "sha256=")}, BODY,
         "does not match"),
        ({"X-Hub-Signature-256": "sha256="}, BODY, "does not match"),
        ({"X-Hub-Signature-256": sign(BODY)[:-2]}, BODY, "does not match"),
        # Signed, then re-serialised on the way (spacing): the bytes differ, so does the HMAC.
        ({"X-Hub-Signature-256": sign(BODY)}, json.dumps(json.loads(BODY), indent=1).encode(),
         "does not match"),
        # A forged signature over a body that is not even JSON: refused before parsing.
        ({"X-Hub-Signature-256": "sha256=" + "f" * 64}, b"{not json", "does not match"),
    ],
    ids=["missing", "sha1-header-only", "sha1-in-sha256-header", "forged", "other-secret",
         "uppercase-hex", "empty", "truncated", "re-serialised-body", "before-parsing"],
)
def test_unsigned_or_forged_deliveries_are_refused_and_not_stored(
    app: Flask, client: FlaskClient, headers: dict[str, str | None], body: bytes, reason: str
) -> None:
    sent = {**delivery_headers("pull_request", BODY, "forged-1"), **headers}
    response = client.post("/webhook", data=body,
                           headers={k: v for k, v in sent.items() if v is not None})
    assert response.status_code == 401
    assert reason in response.get_json()["error"]
    text = response.get_data(as_text=True)
    assert SECRET not in text and sign(body) not in text  # never says what would have matched
    assert count(app, deliveries) == 0 and count(app, jobs) == 0


def test_signatures_and_tokens_are_compared_in_constant_time(
    client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No timing is measured here: the comparisons must go through ``hmac.compare_digest``."""
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    assert deliver(client, "ping", payload("ping"), "ct-1").status_code == 200
    assert calls[-1] == (sign(json.dumps(payload("ping")).encode()).encode(),) * 2
    wrong = client.get(f"/api/evaluations/{REPO}/42", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert calls[-1] == (b"nope", API_TOKEN.encode())


# ------------------------------------------------------------------------------------ replays


def run_jobs(app: Flask, fake: FakeGitHub) -> list[str]:
    settings = settings_for(app.extensions["taskeval"].settings.database_url,
                            github_token=FAKE_TOKEN, ai="off", api_url=fake.url)
    worker = Worker(settings, app.extensions["taskeval"].engine)
    statuses = []
    while (job := worker.queue.claim(worker.id)) is not None:
        statuses.append(worker.run_one(job))
    return statuses


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.add_pr(REPO, 42)
    with fake.mock():
        yield fake


def merged_body(fake: FakeGitHub) -> dict[str, Any]:
    data = payload("pull_request.closed.merged")
    data["pull_request"]["head"]["sha"] = fake.repos[REPO].pulls[42].data["head"]["sha"]
    return data


def test_a_replayed_delivery_id_is_acknowledged_but_never_queued_again(
    app: Flask, client: FlaskClient, fake: FakeGitHub
) -> None:
    first = deliver(client, "pull_request", merged_body(fake), "replay-1").get_json()
    while_queued = deliver(client, "pull_request", merged_body(fake), "replay-1").get_json()
    assert run_jobs(app, fake) == ["done"]
    after_done = deliver(client, "pull_request", merged_body(fake), "replay-1").get_json()
    # Even a different (validly signed) body under a stored id is that delivery again.
    other = deliver(client, "issue_comment", payload("issue_comment.created.evaluate"),
                 "replay-1").get_json()
    for answer in (while_queued, after_done, other):
        assert (answer["status"], answer["job"]) == ("duplicate", first["job"])
    assert run_jobs(app, fake) == []
    assert count(app, jobs) == 1 and count(app, deliveries) == 1


def test_a_replayed_body_under_a_new_delivery_id_does_nothing_twice(
    app: Flask, client: FlaskClient, fake: FakeGitHub
) -> None:
    """The HMAC covers the body, not the X-GitHub-Delivery header, so whoever captured a signed
    delivery can resend it under a new id; GitHub itself only reuses an id on redelivery. The
    secret stops forged bodies; a replayed one finds its work already queued or done."""
    merged = merged_body(fake)
    first = deliver(client, "pull_request", merged, "orig-1").get_json()
    assert deliver(client, "pull_request", merged, "new-id-1").get_json()["status"] == "coalesced"
    assert run_jobs(app, fake) == ["done"]
    late = deliver(client, "pull_request", merged, "new-id-2").get_json()
    assert (late["status"], late["job"]) == ("coalesced", first["job"])

    fake.set_permission(REPO, "octocat", "admin")
    command = payload("issue_comment.created.evaluate")
    asked = deliver(client, "issue_comment", command, "cmd-1").get_json()
    assert asked["status"] == "queued"
    replayed = deliver(client, "issue_comment", command, "cmd-new-id").get_json()
    assert (replayed["status"], replayed["job"]) == ("duplicate", asked["job"])
    assert run_jobs(app, fake) == ["done", "done"]  # the command and its one evaluation
    ours = [c for c in fake.comments(REPO, 42) if c["body"].startswith("<!-- taskeval")]
    assert len(ours) == 1


# --------------------------------------------------------------------------- who may /evaluate


def comment_payload(body: str, *, login: str = "mona", user_type: str = "User",
                    action: str = "created") -> dict[str, Any]:
    data = payload("issue_comment.created.evaluate")
    data["action"] = action
    data["comment"]["body"] = body
    data["comment"]["user"].update(login=login, type=user_type)
    return data


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (comment_payload("/evaluate", action="edited"), "'edited' is not a new command"),
        (comment_payload("/evaluate", action="deleted"), "'deleted' is not a new command"),
        (comment_payload("/evaluate", login="renovate[bot]"), "bot account"),
        (comment_payload("/evaluate", login="ci-runner", user_type="Bot"), "bot account"),
        (comment_payload("> /evaluate"), "does not start with /evaluate"),
        (comment_payload("> /evaluate\n\nquoting the docs"), "does not start with /evaluate"),
        (comment_payload("```\n/evaluate\n```"), "does not start with /evaluate"),
        (comment_payload("``` /evaluate ```"), "does not start with /evaluate"),
        (comment_payload("`/evaluate`"), "does not start with /evaluate"),
        (comment_payload("<!-- /evaluate -->"), "does not start with /evaluate"),
        (comment_payload("<details>\n/evaluate\n</details>"), "does not start with /evaluate"),
        (comment_payload("please run /evaluate"), "does not start with /evaluate"),
        (comment_payload("<!-- taskeval:evaluation -->\n/evaluate"), "own evaluation comment"),
    ],
    ids=["edited", "deleted", "bot-login", "bot-type", "quoted", "quoted-then-text",
         "fenced-block", "fenced-inline", "inline-code", "html-comment", "details",
         "mid-sentence", "our-marker"],
)
def test_what_is_not_an_evaluate_command(app: Flask, client: FlaskClient, data: dict[str, Any],
                                         reason: str) -> None:
    answer = deliver(client, "issue_comment", data, "cmt-1").get_json()
    assert answer["status"] == "ignored" and reason in answer["message"]
    assert count(app, jobs) == 0


@pytest.mark.parametrize(("permission", "reaction", "evaluated"),
                         [("triage", "confused", False), ("write", "eyes", True)])
def test_only_writers_can_run_evaluate(app: Flask, client: FlaskClient, fake: FakeGitHub,
                                       permission: str, reaction: str, evaluated: bool) -> None:
    fake.set_permission(REPO, "mona", permission)
    comment = fake.add_issue_comment(REPO, 42, "/evaluate", user="mona")
    data = comment_payload("/evaluate")
    data["comment"]["id"] = comment["id"]
    assert deliver(client, "issue_comment", data, "perm-1").get_json()["status"] == "queued"
    run_jobs(app, fake)
    assert [r["content"] for r in fake.reactions[comment["id"]]] == [reaction]
    ours = [c for c in fake.comments(REPO, 42) if c["body"].startswith("<!-- taskeval")]
    assert len(ours) == (1 if evaluated else 0)




# --------------------------------------------------------------------------------- the read API


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer ", f"Basic {API_TOKEN}", f"token {API_TOKEN}",
     f"Bearer {API_TOKEN[:-1]}", f"Bearer {API_TOKEN}x", f"Bearer {API_TOKEN.upper()}",
     f"Bearer {SECRET}"],
    ids=["absent", "empty", "scheme-only", "scheme-and-space", "basic", "token-scheme",
         "prefix", "suffix", "case", "webhook-secret"],
)
def test_the_api_needs_the_exact_bearer_token(client: FlaskClient,
                                              authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    for path in (f"/api/evaluations/{REPO}/42", "/api/leaderboard", "/api/jobs/1"):
        response = client.get(path, headers=headers)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == 'Bearer realm="taskeval"'
        text = response.get_data(as_text=True)
        assert API_TOKEN not in text and SECRET not in text


def test_the_api_answers_the_right_token_and_is_off_without_one(client: FlaskClient,
                                                                sqlite_url: str) -> None:
    auth = {"Authorization": f"bearer {API_TOKEN}"}  # the scheme is case-insensitive
    assert client.get("/api/leaderboard", headers=auth).status_code == 200
    off = create_app(settings_for(sqlite_url, api_token=None)).test_client()
    for headers in ({}, auth):
        response = off.get("/api/leaderboard", headers=headers)
        assert response.status_code == 404 and "API disabled" in response.get_json()["error"]
    assert off.get("/healthz").status_code == 200  # health needs no token


# ---------------------------------------------------------------------- secrets never leak


WEBHOOK_SECRET = "whsec-canary-7Qp2-webhook-secret"
API_SECRET = "apitoken-canary-Zk81-read-api-token"
AI_SECRET = "sk-canary-TaskevalBotSecurity-000000000000"


@pytest.fixture(scope="module")
def app_key() -> tuple[str, str]:
    return app_key_pair("TraditionalOpenSSL")


def key_fragments(pem: str) -> list[str]:
    """The PEM and each of its base64 lines: a single leaked line is a leak."""
    return [pem.strip()] + [line for line in pem.splitlines() if len(line) >= 40]


def dump_database(url: str) -> str:
    engine = make_engine(url)
    meta = MetaData()
    meta.reflect(engine)
    out = []
    with engine.connect() as conn:
        for table in meta.sorted_tables:
            for row in conn.execute(select(table)):
                out.extend(str(v) for v in row)
    engine.dispose()
    return "\n".join(out)


def test_no_secret_reaches_logs_answers_stored_rows_or_comments(
    tmp_path: Path, app_key: tuple[str, str]
) -> None:
    private, public = app_key
    key_file = tmp_path / "app.pem"
    key_file.write_text(private)
    fake = FakeGitHub(token=None)
    fake.add_app(123456, public, slug="taskeval", installations={5234567: [REPO]})
    for number in (42, 8, 7):
        fake.add_pr(REPO, number)
    # GitHub answers 401 for PR 7 and repeats the installation token it was sent.
    # The PR's issue object, read over REST by either transport.
    fake.inject(f"/repos/{REPO}/issues/7", Fault.unauthorized().echoing().on("GET"), times=20,
                exact=True)
    captured: list[str] = []
    url = f"sqlite:///{tmp_path / 'bot.sqlite3'}"
    # The AI endpoint fails for PR 42 (400) and PR 8 (500) with messages that repeat the key.
    with FakeOpenAI(api_key=AI_SECRET) as ai, fake.serve():
        ai.script(Fail(400, f"bad request: Authorization: Bearer {AI_SECRET}"),
                  *[Fail(500, f"upstream failed for key {AI_SECRET}")] * 3)
        port = free_port()
        env = base_env(tmp_path, GITHUB_WEBHOOK_SECRET=WEBHOOK_SECRET, GITHUB_APP_ID="123456",
                       GITHUB_APP_PRIVATE_KEY_PATH=str(key_file), GITHUB_API_URL=fake.url,
                       TASKEVAL_API_TOKEN=API_SECRET, TASKEVAL_AI="on", OPENAI_API_KEY=AI_SECRET,
                       OPENAI_BASE_URL=ai.base_url, TASKEVAL_ACCESS_LOG="1",
                       WEB_CONCURRENCY="1", TASKEVAL_QUEUE_WORKERS="1",
                       TASKEVAL_POLL_SECONDS="0.1", TASKEVAL_MAX_ATTEMPTS="1")
        log = tmp_path / "serve.log"
        proc = subprocess.Popen([sys.executable, "-m", "taskeval", "serve", "--bind",
                                 f"127.0.0.1:{port}", "--log-level", "debug"], env=env,
                                cwd=tmp_path, stdout=log.open("wb"), stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: requests.get(f"{base}/healthz", timeout=2).ok, "the service")

            def send(body: bytes, delivery: str, secret: str = WEBHOOK_SECRET,
                     **extra: str) -> requests.Response:
                headers = {**delivery_headers("pull_request", body, delivery, secret), **extra}
                answer = requests.post(f"{base}/webhook", data=body, headers=headers, timeout=10)
                captured.append(f"{answer.status_code} {answer.headers} {answer.text}")
                return answer

            for number in (42, 8, 7):
                data = payload("pull_request.closed.merged")
                data["pull_request"]["number"] = number
                data["pull_request"]["head"]["sha"] = fake.repos[REPO].pulls[number].data[
                    "head"]["sha"]
                assert send(json.dumps(data).encode(), f"sec-{number}").status_code == 202
            # Failure paths on the receiver: forged, unsigned, malformed.
            assert send(BODY, "sec-forged", secret="guess").status_code == 401
            assert send(BODY, "sec-unsigned", **{"X-Hub-Signature-256": ""}).status_code == 401
            assert send(b"{oops", "sec-bad").status_code == 400

            def api(path: str, token: str | None) -> requests.Response:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                answer = requests.get(f"{base}{path}", headers=headers, timeout=10)
                captured.append(f"{answer.status_code} {answer.headers} {answer.text}")
                return answer

            wait_for(lambda: api("/healthz", None).json()["queue"]["queued"] == 0
                     and api("/healthz", None).json()["queue"]["running"] == 0,
                     "the jobs to finish")
            assert api(f"/api/evaluations/{REPO}/42", API_SECRET).status_code == 200
            dead = api("/api/jobs/3", API_SECRET).json()
            assert dead["status"] == "dead" and "GitHub rejected the credentials" in \
                dead["last_error"]
            assert api(f"/api/evaluations/{REPO}/42", WEBHOOK_SECRET).status_code == 401
            assert api("/api/leaderboard", None).status_code == 401
            history = api(f"/api/evaluations/{REPO}/42?all=1", API_SECRET).json()
        finally:
            stop(proc)
        prompts = [json.dumps(r.body) for r in ai.requests]
        assert ai.requests, "the AI endpoint was never called"
    credentials = sorted(fake.credentials_seen)  # the JWTs and the installation token
    assert any(c.startswith("ghs_") for c in credentials) and any(c.startswith("eyJ")
                                                                   for c in credentials)
    stored = dump_database(url)
    assert "GitHub rejected the credentials" in stored  # the failure path ran and was stored
    assert history["evaluations"][0]["judge"]["status"] == "error"  # the AI's 400, recorded
    places = {
        "service log": log.read_text(errors="replace"),
        "HTTP answers": "\n".join(captured),
        "database": stored,
        "PR comments": "\n".join(c["body"] for n in (42, 8, 7) for c in fake.comments(REPO, n)),
        "AI prompts": "\n".join(prompts),
    }
    secrets = {"webhook secret": [WEBHOOK_SECRET], "API token": [API_SECRET],
               "OpenAI key": [AI_SECRET], "App private key": key_fragments(private),
               "GitHub credentials": credentials}
    assert '"level": "debug"' in places["service log"]
    # The echoes happened and were scrubbed: the scan below is not vacuous.
    assert "[redacted]" in places["service log"] and "[redacted]" in places["database"]
    leaks = [f"{what} in {where}" for where, text in places.items()
             for what, values in secrets.items() for value in values if value in text]
    assert leaks == []


@pytest.mark.parametrize(
    ("env", "secret", "message"),
    [
        ({"GITHUB_APP_ID": "12", "GITHUB_APP_PRIVATE_KEY": "canary-not-a-pem-Hx81Lq0-private"},
         "canary-not-a-pem-Hx81Lq0-private", "does not hold a PEM private key"),
        ({"GITHUB_TOKEN": FAKE_TOKEN,
          "DATABASE_URL": "postgresql://taskeval:canary-db-password-93kd@127.0.0.1:{port}/x"},
         "canary-db-password-93kd", "cannot open the database"),
        ({"GITHUB_TOKEN": FAKE_TOKEN, "TASKEVAL_MAX_ATTEMPTS": "lots"}, WEBHOOK_SECRET,
         "TASKEVAL_MAX_ATTEMPTS must be an integer"),
    ],
    ids=["malformed-app-key", "database-password", "bad-setting"],
)
def test_refusing_to_start_names_the_problem_not_the_secret(
    tmp_path: Path, env: dict[str, str], secret: str, message: str
) -> None:
    env = {k: v.replace("{port}", str(free_port())) for k, v in env.items()}
    done = subprocess.run([sys.executable, "-m", "taskeval", "serve"],
                          env={**base_env(tmp_path), "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET,
                               **env},
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr
    for value in (secret, WEBHOOK_SECRET):
        assert value not in done.stderr + done.stdout
