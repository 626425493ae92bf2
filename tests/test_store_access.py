"""Which database a command takes as its store, and whether it can write there
(taskeval/store/access.py), through the real entry point, on SQLite and on a real PostgreSQL
server (DATABASE_URL_POSTGRES):

* readers (``export``, ``dashboard``, ``validate``/``outcomes --store``, ``read_outcomes``)
  refuse a database that holds no taskeval store, in one line, and write nothing to it;
* the commands that store results create a store only in a new file or an empty database,
  never beside another application's tables;
* one default store for every command, so ``serve`` then ``dashboard`` in one folder agree;
* a store that can be read but not written is refused before any work, and ``/healthz`` says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from sqlalchemy import inspect, text

from bot.app import create_app
from taskeval.store.access import StoreError
from taskeval.store.db import drop_schema, init_schema, make_engine
from taskeval.store.outcomes import read_outcomes
from tests.bot.helpers import (
    POSTGRES_SKIP,
    SECRET,
    deliver,
    delivery_headers,
    payload,
    postgres_url,
    settings_for,
)
from tests.fakegithub import FAKE_TOKEN, FakeGitHub
from tests.processes import child_env, ctrl_c_reaches, one_line
from tests.readonly import read_only, read_only_transactions, select_only_role
from tests.test_bot_serve import free_port, wait_for
from tests.test_cli import run_cli

pytest_plugins = ["tests.bot.fixtures"]
ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "examples" / "agent-pr-482.result.json"
REPO = "octo-org/widgets"
OTHER_TABLES = {"customers", "orders"}


def _postgres() -> str:
    url = postgres_url()
    if url is None:
        pytest.skip(POSTGRES_SKIP)
    return url


def tables(url: str) -> set[str]:
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        if not path.exists():
            return set()
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def fingerprint(url: str) -> object:
    """What a database is, to tell it was not written: a SQLite file's bytes (and which files
    lie beside it), PostgreSQL's tables."""
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        files = sorted(p.name for p in path.parent.iterdir())
        return files, hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
    return tables(url)


@pytest.fixture(params=["sqlite", "postgres"])
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# (dialect, kind) of the databases that hold no store: a PostgreSQL database is never missing the
# way a file is.
NO_STORE = [("sqlite", "missing"), ("sqlite", "empty"), ("sqlite", "other"), ("postgres", "empty"),
            ("postgres", "other")]
NEW_STORE = [("sqlite", "missing"), ("sqlite", "empty"), ("postgres", "empty")]


def database(dialect: str, tmp_path: Path, kind: str) -> str:
    """A database of ``kind``: ``missing`` (a SQLite file that is not there), ``empty``, or
    ``other`` (another application's tables, no taskeval store)."""
    if dialect == "sqlite":
        folder = tmp_path / "db"
        folder.mkdir(exist_ok=True)
        path = folder / "app.db"
        if kind != "missing":
            with sqlite3.connect(path) as conn:
                for name in OTHER_TABLES if kind == "other" else ():
                    conn.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY)")
        return f"sqlite:///{path}"
    url = _postgres()
    engine = make_engine(url)
    drop_schema(engine)
    if kind == "other":
        with engine.begin() as conn:
            for name in OTHER_TABLES:
                conn.execute(text(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY)"))
    engine.dispose()
    return url



# ------------------------------------------------------------------ readers never create (15)

READERS = {
    "export": lambda url, tmp: ["export", "--store", url],
    "dashboard": lambda url, tmp: ["dashboard", "--store", url, "--bind", "127.0.0.1:0"],
    "validate": lambda url, tmp: ["validate", "--store", url, "--output-dir", str(tmp / "report")],
    "outcomes": lambda url, tmp: ["outcomes", "--store", url, "--output", str(tmp / "o.jsonl")],
}


@pytest.mark.parametrize(("dialect", "kind"), NO_STORE)
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_reader_refuses_a_database_without_a_store_and_writes_nothing(
        reader: str, kind: str, dialect: str, tmp_path: Path) -> None:
    url = database(dialect, tmp_path, kind)
    before = fingerprint(url)
    proc = run_cli(*READERS[reader](url, tmp_path), cwd=tmp_path)
    line = one_line(proc)
    assert ("no store at" if kind == "missing" else "no taskeval store") in line
    if kind == "other":
        assert "another application's tables (customers, orders)" in line
    assert fingerprint(url) == before  # not a table, not a journal mode, not a file
    assert not (tmp_path / "report").exists() and not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize(("dialect", "kind"), NO_STORE)
def test_reading_outcomes_never_creates_a_store(kind: str, dialect: str, tmp_path: Path) -> None:
    url = database(dialect, tmp_path, kind)
    before = fingerprint(url)
    with pytest.raises(StoreError, match="store"):
        read_outcomes(url)
    assert fingerprint(url) == before
    if kind != "missing":  # an engine the caller made: its tables stay as they are
        engine = make_engine(url)
        with pytest.raises(StoreError, match="holds no taskeval store"):
            read_outcomes(engine)
        engine.dispose()
        assert tables(url) == (OTHER_TABLES if kind == "other" else set())


def test_a_reader_still_reads_and_migrates_a_store(dialect: str, tmp_path: Path) -> None:
    url = database(dialect, tmp_path, "empty")
    assert run_cli("load", str(RESULT), "--store", url).returncode == 0
    proc = run_cli("export", "--store", url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1].startswith("octo-org/widgets,482,")


# ------------------------------------------------ writers create only where nothing else is (15)

def _writers(url: str, tmp: Path, fake: FakeGitHub) -> dict[str, tuple[list[str], dict[str, str]]]:
    github = {"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": fake.url}
    return {
        "backfill": (["backfill", REPO, "--store", url, "--no-ai"], github),
        "load": (["load", str(RESULT), "--store", url], {}),
        "outcomes --write-store": (["outcomes", REPO, "--write-store", url], github),
        "serve": (["serve", "--no-workers", "--bind", f"127.0.0.1:{free_port()}"],
                  {"DATABASE_URL": url, "GITHUB_WEBHOOK_SECRET": SECRET}),
        "worker": (["worker"], {"DATABASE_URL": url, **github}),
    }


@pytest.mark.parametrize("writer", ["backfill", "load", "outcomes --write-store", "serve", "worker"])
def test_a_store_is_never_made_beside_another_applications_tables(
        writer: str, dialect: str, tmp_path: Path, fake: FakeGitHub) -> None:
    url = database(dialect, tmp_path, "other")
    before = fingerprint(url)
    argv, env = _writers(url, tmp_path, fake)[writer]
    line = one_line(run_cli(*argv, env=env, cwd=tmp_path))
    assert "another application's tables (customers, orders)" in line
    assert "a database of its own" in line
    assert fingerprint(url) == before and fake.log == []  # GitHub was not asked either


@pytest.mark.parametrize(("dialect", "kind"), NEW_STORE)
def test_a_store_is_made_in_a_new_file_or_an_empty_database(kind: str, dialect: str, tmp_path: Path) -> None:
    url = database(dialect, tmp_path, kind)
    proc = run_cli("load", str(RESULT), "--store", url)
    assert proc.returncode == 0, proc.stderr
    assert "evaluations" in tables(url)


# ------------------------------------------------------------------ one default store (16)

def _serve(cwd: Path, env: dict[str, str]) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "taskeval", "serve", "--no-workers", "--bind",
                             f"127.0.0.1:{port}"], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: requests.get(f"{url}/healthz", timeout=2).ok, "the bot to start")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=40)


def test_serve_then_dashboard_in_one_folder_read_one_store(tmp_path: Path) -> None:
    """Neither names a store: what the bot stored, the dashboard and the export show."""
    env = child_env(GITHUB_WEBHOOK_SECRET=SECRET, PYTHONPATH=str(ROOT))
    for url in _serve(tmp_path, env):
        body = json.dumps(payload("pull_request.closed.merged")).encode()
        sent = requests.post(f"{url}/webhook", data=body, timeout=10,
                             headers=delivery_headers("pull_request", body, "one-store"))
        assert sent.status_code == 202, sent.text
    assert sorted(p.name for p in tmp_path.glob("*.db")) == ["taskeval.db"]
    exported = run_cli("export", cwd=tmp_path)  # a reader: it finds the bot's store or refuses
    assert exported.returncode == 0, exported.stderr
    port = free_port()
    dash = subprocess.Popen([sys.executable, "-m", "taskeval", "dashboard", "--bind", f"127.0.0.1:{port}"],
                            env=child_env(), cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_reaches)
    try:
        page = wait_for(lambda: (r := requests.get(f"http://127.0.0.1:{port}/dashboard/", timeout=2)).ok and r,
                        "the dashboard to start")
        assert page.status_code == 200
    finally:
        dash.send_signal(signal.SIGINT)
        _, err = dash.communicate(timeout=30)
    assert f"store: sqlite:///{tmp_path / 'taskeval.db'}" in err


@pytest.mark.parametrize(("present", "chosen"), [
    ([], "taskeval.db"), (["taskeval-bot.sqlite3"], "taskeval-bot.sqlite3"),
    (["taskeval.db", "taskeval-bot.sqlite3"], "taskeval.db"), (["taskeval.db"], "taskeval.db"),
])
def test_every_command_has_the_same_default_store(present: list[str], chosen: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The bot's settings, backfill, export/load/dashboard: one default, and the bot's earlier
    file where it is the only one (not an empty store beside the history)."""
    from bot.jobs.backfill import Options
    from bot.settings import BotSettings
    from dashboard.cli import store_url

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    for name in present:
        (tmp_path / name).write_bytes(b"")
    expected = f"sqlite:///{tmp_path / chosen}"
    bot = BotSettings.from_env({"GITHUB_WEBHOOK_SECRET": SECRET}).database_url
    assert bot == store_url(None) == Options(repository=REPO).store_url == expected
    assert BotSettings.from_env({"GITHUB_WEBHOOK_SECRET": SECRET, "DATABASE_URL": "sqlite:///x.db"}
                                ).database_url == "sqlite:///x.db"


# ------------------------------------------------------------------ a read-only store (13)

@pytest.fixture(params=["sqlite file", "postgres read-only transactions", "postgres select-only role"])
def read_only_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A taskeval store (at the newest schema) that can be read but not written."""
    if request.param == "sqlite file":
        url = f"sqlite:///{tmp_path / 'db' / 'taskeval.db'}"
        (tmp_path / "db").mkdir()
        engine = make_engine(url)
        init_schema(engine)
        engine.dispose()
        with read_only(tmp_path / "db" / "taskeval.db"):  # the file; its folder stays writable
            yield url
        return
    url = _postgres()
    engine = make_engine(url)
    drop_schema(engine)
    init_schema(engine)
    engine.dispose()
    if request.param == "postgres read-only transactions":
        yield read_only_transactions(url)
        return
    with select_only_role(url, "taskeval_i27a_reader") as reader:
        yield reader


def test_backfill_refuses_a_read_only_store_before_reading_github(
        read_only_store: str, tmp_path: Path, fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 42)
    proc = run_cli("backfill", REPO, "--store", read_only_store, "--no-ai",
                   env={"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": fake.url}, cwd=tmp_path)
    line = one_line(proc)
    assert line.startswith("taskeval backfill: cannot write the store "), line
    assert fake.log == []  # refused before the first request


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_the_bot_refuses_to_start_on_a_read_only_store(command: str, read_only_store: str,
                                                       tmp_path: Path) -> None:
    argv = ["serve", "--no-workers", "--bind", f"127.0.0.1:{free_port()}"] if command == "serve" else ["worker"]
    proc = run_cli(*argv, cwd=tmp_path, env={"DATABASE_URL": read_only_store, "GITHUB_WEBHOOK_SECRET": SECRET,
                                             "GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": "http://127.0.0.1:9"})
    assert one_line(proc).startswith(f"taskeval {command}: cannot write the database ")


def test_healthz_says_a_store_that_cannot_be_written_is_not_ok(read_only_store: str) -> None:
    app = create_app(settings_for(read_only_store))
    client = app.test_client()
    health = client.get("/healthz")
    assert health.status_code == 503, health.get_json()
    assert health.get_json()["status"] == "error"
    assert health.get_json()["database"].startswith("read-only: ")
    # What it warns of: the deliveries it would be sent are refused too.
    assert deliver(client, "ping", payload("ping"), "d-ro").status_code == 503
    app.extensions["taskeval"].engine.dispose()


def test_healthz_is_ok_on_a_writable_store(db_url: str) -> None:
    app = create_app(settings_for(db_url))
    health = app.test_client().get("/healthz")
    assert health.status_code == 200 and health.get_json()["database"] == "ok"
    app.extensions["taskeval"].engine.dispose()


@pytest.mark.skipif(os.geteuid() != 0, reason="the immutable attribute needs root")
def test_an_unwritable_folder_makes_a_sqlite_store_read_only(tmp_path: Path) -> None:
    """SQLite writes its journal beside the file: a folder it cannot write is a read-only store
    even when the file itself could be written."""
    from taskeval.store.access import unwritable

    folder = tmp_path / "db"
    folder.mkdir()
    url = f"sqlite:///{folder / 'taskeval.db'}"
    engine = make_engine(url)
    init_schema(engine)
    engine.dispose()
    for extra in folder.glob("taskeval.db-*"):
        extra.unlink()
    engine = make_engine(url)
    with read_only(folder):
        assert unwritable(engine) == f"{folder} is read-only (SQLite writes its journal beside the store)"
    assert unwritable(engine) is None
    engine.dispose()
