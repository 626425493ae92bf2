"""What an operator hits first with the bot: an App without GITHUB_APP_SLUG, a worker node
without the webhook secret, a GITHUB_API_URL without a scheme."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.jobs import events
from bot.jobs.worker import Worker
from bot.settings import BotSettings, SettingsError
from taskeval.store.db import init_schema, jobs, make_engine
from tests.bot.helpers import SECRET, settings_for
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault, app_key_pair
from tests.test_bot_serve import base_env

pytest_plugins = ["tests.bot.fixtures"]
REPO = "octo-org/widgets"
INSTALLATION = 5234567


@pytest.fixture(scope="module")
def app_key() -> tuple[str, str]:
    return app_key_pair("TraditionalOpenSSL")


def _app_worker(sqlite_url: str, fake: FakeGitHub, private: str, **overrides: object) -> Worker:
    settings = settings_for(sqlite_url, github_token=None, app_id="123456", private_key=private,
                            ai="off", api_url=fake.url, **overrides)
    engine = make_engine(sqlite_url)
    init_schema(engine)
    return Worker(settings, engine)


def _run(worker: Worker, fake: FakeGitHub, installation: int | None) -> tuple[str, str | None]:
    sha = fake.repos[REPO].pulls[42].data["head"]["sha"]
    worker.queue.accept("d1", "pull_request", "closed", events.Evaluate(REPO, 42, sha, installation))
    job = worker.queue.claim(worker.id)
    assert job is not None
    status = worker.run_one(job)
    with worker.engine.connect() as conn:
        error = conn.execute(select(jobs.c.last_error).where(jobs.c.id == job.id)).scalar_one()
    worker.engine.dispose()
    return status, error


def _fake_app(public: str) -> FakeGitHub:
    fake = FakeGitHub(token=None)
    fake.add_app(123456, public, slug="widget-grader", installations={INSTALLATION: [REPO]})
    fake.add_pr(REPO, 42)
    return fake


def test_app_without_slug_finds_it_with_get_app(sqlite_url: str, app_key: tuple[str, str]) -> None:
    private, public = app_key
    fake = _fake_app(public)
    with fake.mock():
        status, error = _run(_app_worker(sqlite_url, fake, private), fake, INSTALLATION)
    assert (status, error) == ("done", None)
    assert fake.count(route="app") == 1
    ours = [c for c in fake.comments(REPO, 42) if c["body"].startswith("<!-- taskeval")]
    assert [c["user"]["login"] for c in ours] == ["widget-grader[bot]"]


@pytest.mark.parametrize(("fault", "says"), [
    (Fault.not_found(), "404"),
    (Fault.unauthorized(), "401"),
])
def test_a_failed_get_app_names_the_call_and_what_to_set(
    sqlite_url: str, app_key: tuple[str, str], fault: Fault, says: str
) -> None:
    private, public = app_key
    fake = _fake_app(public)
    fake.inject("/app", fault, times=20)  # also the token endpoint below /app: both fail
    with fake.mock():
        status, error = _run(_app_worker(sqlite_url, fake, private), fake, INSTALLATION)
    assert status == "dead" and error is not None
    assert "GET /app" in error and says in error
    assert "GITHUB_APP_SLUG" in error and "GITHUB_APP_ID" in error and "GITHUB_API_URL" in error
    assert private.splitlines()[1] not in error


def test_a_set_slug_skips_get_app(sqlite_url: str, app_key: tuple[str, str]) -> None:
    private, public = app_key
    fake = _fake_app(public)
    with fake.mock():
        status, _ = _run(_app_worker(sqlite_url, fake, private, app_slug="widget-grader"), fake,
                         INSTALLATION)
    assert status == "done" and fake.count(route="app") == 0


def test_app_not_installed_on_the_repo_says_so(sqlite_url: str, app_key: tuple[str, str]) -> None:
    private, public = app_key
    fake = FakeGitHub(token=None)
    fake.add_app(123456, public, slug="widget-grader", installations={INSTALLATION: ["octo-org/other"]})
    fake.add_pr(REPO, 42)
    with fake.mock():
        status, error = _run(_app_worker(sqlite_url, fake, private), fake, None)
    assert status == "dead" and error is not None
    assert f"GET /repos/{REPO}/installation" in error and f"install the App on {REPO}" in error


# ------------------------------------------------------------------ the webhook secret (item 8)

def test_worker_settings_do_not_need_the_webhook_secret() -> None:
    env = {"GITHUB_TOKEN": FAKE_TOKEN}
    assert BotSettings.from_env(env, receives_webhooks=False).webhook_secret == ""
    with pytest.raises(SettingsError, match="GITHUB_WEBHOOK_SECRET is not set"):
        BotSettings.from_env(env)  # the web server still refuses


def test_taskeval_worker_starts_without_the_webhook_secret(tmp_path: Path) -> None:
    env = base_env(tmp_path, GITHUB_TOKEN=FAKE_TOKEN, TASKEVAL_QUEUE_WORKERS="1",
                   GITHUB_API_URL="http://127.0.0.1:9")
    proc = subprocess.Popen([sys.executable, "-m", "taskeval", "worker"], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            if (tmp_path / "bot.sqlite3").exists() and time.monotonic() > deadline - 15:
                break
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""  # still running
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "GITHUB_WEBHOOK_SECRET" not in err


def test_serve_still_needs_the_webhook_secret(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "taskeval", "serve", "--no-workers"],
                          env=base_env(tmp_path), cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "GITHUB_WEBHOOK_SECRET is not set" in done.stderr


# ------------------------------------------------------------------ GITHUB_API_URL

@pytest.mark.parametrize("argv", [["serve", "--no-workers"], ["worker"]])
def test_a_github_api_url_without_a_scheme_is_one_line(tmp_path: Path, argv: list[str]) -> None:
    env = base_env(tmp_path, GITHUB_WEBHOOK_SECRET=SECRET, GITHUB_TOKEN=FAKE_TOKEN,
                   GITHUB_API_URL="ghes.example.com/api/v3")
    done = subprocess.run([sys.executable, "-m", "taskeval", *argv], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "GITHUB_API_URL must be an http(s) URL" in done.stderr
