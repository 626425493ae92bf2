"""Bot settings from the environment, log redaction, and the process supervisor."""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from bot import logs
from bot.jobs.queue import Queue
from bot.jobs.supervise import Supervisor
from bot.settings import BotSettings, SettingsError
from taskeval.store.db import normalise_database_url

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----"
BASE = {"GITHUB_WEBHOOK_SECRET": "s3cret-value-0123456789"}


@pytest.mark.parametrize(
    ("env", "mode"),
    [
        ({}, "none"),
        ({"GITHUB_TOKEN": "ghp_abc"}, "token"),
        ({"GITHUB_APP_ID": "123", "GITHUB_APP_PRIVATE_KEY": PEM}, "app"),
        ({"GITHUB_APP_ID": "123", "GITHUB_APP_PRIVATE_KEY": PEM.replace("\n", "\\n")}, "app"),
        ({"GITHUB_APP_ID": "123", "GITHUB_APP_PRIVATE_KEY": PEM, "GITHUB_TOKEN": "x"}, "app"),
    ],
)
def test_auth_mode(env: dict[str, str], mode: str) -> None:
    settings = BotSettings.from_env({**BASE, **env})
    assert settings.auth_mode == mode
    if mode == "app":
        assert settings.private_key is not None and settings.private_key.count("\n") == 2


def test_private_key_is_read_from_a_path(tmp_path: Path) -> None:
    key = tmp_path / "app.pem"
    key.write_text(PEM + "\n")
    settings = BotSettings.from_env({**BASE, "GITHUB_APP_ID": "9",
                                     "GITHUB_APP_PRIVATE_KEY_PATH": str(key)})
    assert settings.private_key == PEM


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"GITHUB_WEBHOOK_SECRET": ""}, "GITHUB_WEBHOOK_SECRET is not set"),
        ({"GITHUB_APP_ID": "12"}, "neither GITHUB_APP_PRIVATE_KEY"),
        ({"GITHUB_APP_ID": "my-app", "GITHUB_APP_PRIVATE_KEY": PEM}, "numeric id"),
        ({"GITHUB_APP_PRIVATE_KEY": PEM}, "GITHUB_APP_ID is not"),
        ({"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY": "not a key"}, "PEM private key"),
        ({"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY_PATH": "/nonexistent/app.pem"},
         "cannot read /nonexistent/app.pem"),
        ({"TASKEVAL_AI": "sometimes"}, "TASKEVAL_AI"),
        ({"TASKEVAL_MAX_ATTEMPTS": "0"}, "TASKEVAL_MAX_ATTEMPTS must be at least 1"),
        ({"TASKEVAL_LEASE_SECONDS": "soon"}, "TASKEVAL_LEASE_SECONDS must be a number"),
        ({"TASKEVAL_SQLITE_SYNCHRONOUS": "off"}, "TASKEVAL_SQLITE_SYNCHRONOUS"),
        ({"TASKEVAL_WORKER_STALE_SECONDS": "1"}, "TASKEVAL_WORKER_STALE_SECONDS must be at least 2"),
        ({"TASKEVAL_WORKER_STALE_SECONDS": "soon"}, "TASKEVAL_WORKER_STALE_SECONDS must be a number"),
        ({"TASKEVAL_RATE_RESERVE": "10%"}, "TASKEVAL_RATE_RESERVE must be an integer"),
        ({"TASKEVAL_RATE_RESERVE": "-5"}, "TASKEVAL_RATE_RESERVE must be at least 0"),
    ],
)
def test_bad_settings_name_the_variable_not_the_value(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message) as info:
        BotSettings.from_env({**BASE, **env})
    assert "MIIBOgIBAAJBAK" not in str(info.value)


@pytest.mark.parametrize(("value", "reserve"), [(None, 500), ("", 500), (" 0 ", 0), ("1200", 1200)])
def test_the_workers_rate_reserve(value: str | None, reserve: int) -> None:
    env = BASE if value is None else {**BASE, "TASKEVAL_RATE_RESERVE": value}
    assert BotSettings.from_env(env).rate_reserve == reserve


def test_worker_needs_credentials() -> None:
    with pytest.raises(SettingsError, match="no GitHub credentials"):
        BotSettings.from_env(BASE).require_github_auth()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://u:p@db/x", "postgresql+psycopg://u:p@db/x"),
        ("postgres://u@db/x", "postgresql+psycopg://u@db/x"),
        ("postgresql+psycopg://u@db/x", "postgresql+psycopg://u@db/x"),
        ("sqlite:///taskeval.store.db", "sqlite:///taskeval.store.db"),
    ],
)
def test_database_urls_use_psycopg3(url: str, expected: str) -> None:
    assert normalise_database_url(url) == expected


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """``logs.setup`` configures the whole process; put things back for the other tests."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    hooks = (sys.excepthook, threading.excepthook)
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    sys.excepthook, threading.excepthook = hooks
    logging.captureWarnings(False)


@pytest.mark.usefixtures("restore_logging")
def test_settings_repr_and_logs_hide_secrets(capsys: pytest.CaptureFixture[str]) -> None:
    settings = BotSettings.from_env({
        **BASE, "GITHUB_TOKEN": "plain-token-value-1234", "TASKEVAL_API_TOKEN": "api-tok-5678",
        "DATABASE_URL": "postgresql://bot:db-pass-9012@db/bot"})
    assert "s3cret-value" not in repr(settings) and "plain-token" not in repr(settings)
    secret = BASE["GITHUB_WEBHOOK_SECRET"]
    logs.setup("info", settings.secrets())
    log = logging.getLogger("bot.test")
    with logs.context(delivery="d-1", repo="o/r", pr=3):
        log.info("token %s secret %s api %s db %s app ghs_%s", "plain-token-value-1234",
                 secret, "api-tok-5678", "db-pass-9012", "A" * 36)
        log.info("bearer header: Bearer abcdefghijklmnopqrstuvwxyz", extra={"fields": {"x": 1}})
    lines = [json.loads(x) for x in capsys.readouterr().err.splitlines()]
    assert lines[0]["msg"].count("[redacted]") == 5
    assert (lines[0]["delivery"], lines[0]["repo"], lines[0]["pr"], lines[0]["job"]) == (
        "d-1", "o/r", 3, None)
    assert "abcdefghijklmnop" not in lines[1]["msg"] and lines[1]["x"] == 1
    assert logs.current() == {"delivery": None, "job": None, "repo": None, "pr": None}


def test_context_undoes_binds_made_inside() -> None:
    with logs.context(delivery="d"):
        logs.bind(job=5, repo="o/r")
        assert logs.current()["job"] == 5
    assert logs.current() == {"delivery": None, "job": None, "repo": None, "pr": None}


def test_supervisor_restarts_a_crashed_worker_and_stops_with_the_web_server(
    tmp_path: Path
) -> None:
    starts = tmp_path / "starts"
    worker = f"open({str(starts)!r}, 'a').write('x\\n')"
    # The "web server" waits until the worker has been started twice, then exits with 7.
    web = (f"import pathlib, sys, time\np = pathlib.Path({str(starts)!r})\n"
           "for _ in range(600):\n"
           "    if p.exists() and len(p.read_text().splitlines()) >= 2: sys.exit(7)\n"
           "    time.sleep(0.05)\nsys.exit(1)\n")
    sup = Supervisor(grace_seconds=1)
    sup.add("web", [sys.executable, "-c", web], critical=True)
    sup.add("queue-worker-1", [sys.executable, "-c", worker])
    assert sup.run() == 7
    assert len(starts.read_text().splitlines()) >= 2


@pytest.mark.parametrize(("env", "stale", "beat"), [
    ({}, 16.0, 5.0),  # default lease 120 s: 3 missed 5 s beats and a second, well under a minute
    ({"TASKEVAL_WORKER_STALE_SECONDS": "8"}, 8.0, 2.0),  # beats at a quarter of the window
    ({"TASKEVAL_LEASE_SECONDS": "3"}, 4.0, 1.0),
])
def test_a_silent_workers_jobs_are_requeued_after_the_stale_window(
    env: dict[str, str], stale: float, beat: float
) -> None:
    from bot.jobs.presence import presence_interval

    settings = BotSettings.from_env({**BASE, **env})
    queue = Queue.for_settings(create_engine("sqlite://"), settings)
    assert queue.worker_stale_seconds == stale
    assert presence_interval(settings.lease_seconds, settings.worker_stale_seconds) == beat
