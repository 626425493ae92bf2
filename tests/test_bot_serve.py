"""``taskeval serve`` for real: gunicorn, queue workers, a local fake GitHub, signed deliveries.

This is the issue's "done when": a signed merged-PR delivery reaches a freshly started service,
exactly one comment is posted and exactly one result is stored, and the API returns it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.bot.helpers import API_TOKEN, SECRET, delivery_headers, payload
from tests.fakegithub import FAKE_TOKEN, FakeGitHub
from tests.processes import stop
from tests.waiting import wait_for as poll

REPO = "octo-org/widgets"
ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])




def wait_for(condition: Callable[[], Any], what: str, limit: float = 60.0) -> Any:
    """A bounded poll that takes a refused or timed-out connection as "not up yet"."""
    return poll(condition, what, limit, ignoring=(requests.ConnectionError, requests.Timeout))


def base_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "OPENAI_", "TASKEVAL_", "DATABASE_URL"))}
    env.update(PYTHONPATH=str(ROOT), DATABASE_URL=f"sqlite:///{tmp_path / 'bot.sqlite3'}",
               **extra)
    return env


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.add_pr(REPO, 42)
    with fake.serve():
        yield fake


@pytest.fixture
def service(tmp_path: Path,
            fake: FakeGitHub) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    port = free_port()
    log = tmp_path / "serve.log"
    env = base_env(tmp_path, GITHUB_WEBHOOK_SECRET=SECRET, GITHUB_TOKEN=FAKE_TOKEN,
                   GITHUB_API_URL=fake.url, TASKEVAL_API_TOKEN=API_TOKEN, TASKEVAL_AI="off",
                   WEB_CONCURRENCY="2", TASKEVAL_QUEUE_WORKERS="2", TASKEVAL_POLL_SECONDS="0.2")
    proc = subprocess.Popen([sys.executable, "-m", "taskeval", "serve", "--bind",
                             f"127.0.0.1:{port}"], env=env, cwd=tmp_path,
                            stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: requests.get(f"{url}/healthz", timeout=2).ok, "the service to start")
        yield url, proc, log
    finally:
        if proc.poll() is None:
            stop(proc)


def post(url: str, event: str, data: dict[str, Any], delivery: str) -> requests.Response:
    body = json.dumps(data).encode()
    return requests.post(f"{url}/webhook", data=body,
                         headers=delivery_headers(event, body, delivery), timeout=10)


def merged_delivery(fake: FakeGitHub) -> dict[str, Any]:
    data = payload("pull_request.closed.merged")
    data["pull_request"]["head"]["sha"] = fake.repos[REPO].pulls[42].data["head"]["sha"]
    return data


def test_serve_evaluates_a_signed_delivery_once(
    service: tuple[str, subprocess.Popen[bytes], Path], fake: FakeGitHub
) -> None:
    url, proc, log = service
    data = merged_delivery(fake)
    # GitHub's redelivery and a second hook firing at once: eight copies of one delivery and
    # four more deliveries of the same merge, concurrently.
    sends = [("same-delivery", i) for i in range(8)] + [(f"other-{i}", i) for i in range(4)]
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda s: post(url, "pull_request", data, s[0]), sends))
    assert {a.status_code for a in answers} == {202}
    bodies = [a.json() for a in answers]
    assert len({b["job"] for b in bodies}) == 1
    assert Counter(b["status"] for b in bodies[:8])["duplicate"] == 7
    bad = requests.post(f"{url}/webhook", data=b"{}", timeout=10, headers={
        **delivery_headers("ping", b"{}", "x"), "X-Hub-Signature-256": "sha256=" + "0" * 64})
    assert bad.status_code == 401

    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    result = wait_for(
        lambda: (r := requests.get(f"{url}/api/evaluations/{REPO}/42", headers=auth,
                                   timeout=5)).ok and r.json(),
        "the evaluation to be stored")
    assert result["headSha"] == data["pull_request"]["head"]["sha"]
    assert result["trigger"] == "pull_request"
    ours = [c for c in fake.comments(REPO, 42) if c["body"].startswith("<!-- taskeval")]
    assert len(ours) == 1
    history = requests.get(f"{url}/api/evaluations/{REPO}/42?all=1", headers=auth,
                           timeout=5).json()
    assert history["count"] == 1
    board = requests.get(f"{url}/api/leaderboard", params={"repo": REPO, "by": "author"},
                         headers=auth, timeout=5).json()
    assert board["entries"][0]["author"] == "copilot-swe-agent[bot]"
    health = requests.get(f"{url}/healthz", timeout=5).json()
    assert health["queue"]["done"] == 1 and health["queue"]["dead"] == 0

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(40) == 0
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert lines, "no log output"
    for line in lines:
        assert {"delivery", "job", "repo", "pr", "level", "msg"} <= line.keys()
    text = log.read_text()
    for secret in (SECRET, API_TOKEN, FAKE_TOKEN):
        assert secret not in text
    webhook_lines = [x for x in lines if x["logger"] == "bot.webhook"]
    assert {x["delivery"] for x in webhook_lines} >= {"same-delivery", "other-0"}
    assert all(x["repo"] == REPO and x["pr"] == 42 for x in webhook_lines if x["status"] == 202)
    done = [x for x in lines if x["msg"] == "job done"]
    assert len(done) == 1 and done[0]["job"] == bodies[0]["job"] and done[0]["pr"] == 42


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["serve", "--no-workers"], {}, "GITHUB_WEBHOOK_SECRET is not set"),
        (["serve"], {"GITHUB_WEBHOOK_SECRET": SECRET}, "no GitHub credentials"),
        (["worker"], {"GITHUB_WEBHOOK_SECRET": SECRET}, "no GitHub credentials"),
        (["worker"], {"GITHUB_WEBHOOK_SECRET": SECRET, "GITHUB_APP_ID": "12"},
         "neither GITHUB_APP_PRIVATE_KEY"),
        (["serve", "--no-workers"], {"GITHUB_WEBHOOK_SECRET": SECRET,
                                     "DATABASE_URL": "sqlite:////nonexistent/dir/x.db"},
         "cannot open the database"),
        (["serve"], {"GITHUB_WEBHOOK_SECRET": SECRET, "GITHUB_TOKEN": "ghp_x",
                     "TASKEVAL_RATE_RESERVE": "10%"}, "TASKEVAL_RATE_RESERVE must be an integer, got '10%'"),
        (["worker"], {"GITHUB_TOKEN": "ghp_x", "TASKEVAL_RATE_RESERVE": "-5"},
         "TASKEVAL_RATE_RESERVE must be at least 0, got -5"),
    ],
)
def test_commands_refuse_to_start_with_a_reason(tmp_path: Path, argv: list[str],
                                                env: dict[str, str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "taskeval", *argv],
                          env={**base_env(tmp_path), **env}, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr
    assert SECRET not in done.stderr + done.stdout


def test_plain_gunicorn_refuses_to_start_without_the_secret(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "python:bot.web.gunicorn_conf", "--bind",
         f"127.0.0.1:{free_port()}", "bot.app:create_app()"],
        env=base_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "GITHUB_WEBHOOK_SECRET is not set" in done.stderr
