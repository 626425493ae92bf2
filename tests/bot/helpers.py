"""Helpers for the bot tests: GitHub-shaped payloads, signing, settings, concurrent processes."""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from bot.settings import BotSettings
from taskeval.store.db import normalise_database_url
from tests.processes import transport_env

PAYLOADS = Path(__file__).parent / "payloads"
SECRET = "test-webhook-secret-7f3a"
API_TOKEN = "test-api-token-0c9d41"
POSTGRES_SKIP = (
    "DATABASE_URL_POSTGRES is not set: the PostgreSQL queue tests did NOT run "
    "(.ci/run starts a server and sets it)"
)


def payload(name: str) -> dict[str, Any]:
    """A webhook payload shaped like GitHub's documented example for that event/action."""
    return json.loads((PAYLOADS / f"{name}.json").read_text(encoding="utf-8"))


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def delivery_headers(event: str, body: bytes, delivery: str,
                     secret: str = SECRET) -> dict[str, str]:
    """The headers GitHub sends with every delivery."""
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(body, secret),
        "X-GitHub-Hook-ID": "109948940",
        "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-GitHub-Hook-Installation-Target-ID": "123456",
        "User-Agent": "GitHub-Hookshot/7f3a2b1",
        "Content-Type": "application/json",
    }


def settings_for(url: str, **overrides: Any) -> BotSettings:
    env = {"GITHUB_WEBHOOK_SECRET": SECRET, "DATABASE_URL": url, "GITHUB_TOKEN": "ghp_" + "x" * 36,
           **transport_env()}  # as a deployment that sets TASKEVAL_API
    base = BotSettings.from_env(env)
    return BotSettings(**{**base.__dict__, **overrides})


@functools.cache
def postgres_url() -> str | None:
    """``DATABASE_URL_POSTGRES``; under pytest-xdist, a database of this worker's own on the same
    server (made on first use), so two workers never drop or count each other's tables."""
    url = os.environ.get("DATABASE_URL_POSTGRES", "").strip()
    if not url:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return worker_database(normalise_database_url(url), worker) if worker else normalise_database_url(url)


def worker_database(url: str, worker: str) -> str:
    """``url`` with its database renamed ``<name>_<worker>``, created when the server lacks it."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    given = make_url(url)
    name = f"{given.database}_{worker}"
    admin = create_engine(given, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            if conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first() is None:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    return given.set(database=name).render_as_string(hide_password=False)


def deliver(client: FlaskClient, event: str, data: Any, delivery: str = "d-1",
            **header_overrides: str | None) -> Any:
    """POST a signed delivery through the test client; ``X_Header=None`` drops a header."""
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    headers = delivery_headers(event, body, delivery)
    for key, value in header_overrides.items():
        name = key.replace("_", "-")
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    return client.post("/webhook", data=body, headers=headers)


def count(app: Flask, table: Any) -> int:
    """Rows in one of the bot's tables."""
    with app.extensions["taskeval"].engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def run_together(target: Callable[[str, Any, Any], None], url: str, n: int = 4) -> list[Any]:
    """Run ``target(url, barrier, results)`` in ``n`` spawned processes that start their work at
    the same moment (they meet at the barrier); returns what each put on ``results``."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=target, args=(url, barrier, results)) for _ in range(n)]
    for p in procs:
        p.start()
    found = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return found
