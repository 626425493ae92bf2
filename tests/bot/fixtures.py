"""Shared fixtures for the bot tests (loaded with ``pytest_plugins = ["tests.bot.fixtures"]``).

``engine`` runs each queue/store test twice: on a SQLite file and on the PostgreSQL server named
by ``DATABASE_URL_POSTGRES`` (``.ci/run`` starts one). Without that variable the PostgreSQL half
is skipped with a reason that says so plainly; with it set but the server down, the tests fail.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine

from bot.app import create_app
from taskeval.store.db import drop_schema, init_schema, make_engine
from tests.bot.helpers import API_TOKEN, POSTGRES_SKIP, postgres_url, settings_for


def _reset(engine: Engine) -> None:
    drop_schema(engine)
    init_schema(engine)


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL of each dialect."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'bot.sqlite3'}"
        return
    url = postgres_url()
    if url is None:
        warnings.warn(POSTGRES_SKIP, stacklevel=1)
        pytest.skip(POSTGRES_SKIP)
    engine = make_engine(url)
    _reset(engine)
    engine.dispose()
    yield url


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    eng = make_engine(db_url)
    init_schema(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'bot.sqlite3'}"


# The app over the store of ``db_url``, with the API token set (a module that needs other
# settings defines its own ``app``).
@pytest.fixture
def app(db_url: str) -> Iterator[Flask]:
    app = create_app(settings_for(db_url, api_token=API_TOKEN))
    yield app
    app.extensions["taskeval"].engine.dispose()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def fresh_dashboard_cache() -> Iterator[None]:
    """Dashboard tests rewrite rows in place (which the bot never does), so no aggregate may be
    remembered from one test to the next: ``pytestmark = pytest.mark.usefixtures(...)``."""
    from dashboard import queries

    queries.clear_cache()
    yield
    queries.clear_cache()
