"""Suite-wide hygiene: a test that runs the CLI in-process must not leak its logging set-up.

``taskeval.cli.main`` quiets library loggers (PyGithub, urllib3, openai, httpx) for users; in a
test process that state would otherwise carry into every later test, so a test's outcome would
depend on which tests ran before it. The same holds for the process's ETag cache
(``taskeval.github.etags``): each test starts with it empty.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from tests.fakegithub import FakeGitHub

_LOGGERS = ("github", "urllib3", "openai", "httpx", "taskeval")


@pytest.fixture(autouse=True)
def _restore_logger_levels() -> Iterator[None]:
    levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture(autouse=True)
def _empty_etag_cache() -> Iterator[None]:
    from taskeval.github.etags import shared_cache

    cache = shared_cache()
    if cache is not None:
        cache.clear()
    yield


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    """The fake GitHub served over real HTTP, with no PRs yet: tests that run the CLI or the bot as
    processes point ``GITHUB_API_URL`` at ``fake.url``. A module that needs it set up differently
    (in process through ``responses``, with PRs or a token of another kind) defines its own."""
    gh = FakeGitHub()
    with gh.serve():
        yield gh
