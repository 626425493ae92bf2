"""Suite-wide hygiene: a test that runs the CLI in-process must not leak its logging set-up.

``taskeval.cli.main`` quiets library loggers (PyGithub, urllib3, openai, httpx) for users; in a
test process that state would otherwise carry into every later test, so a test's outcome would
depend on which tests ran before it. The same holds for the process's ETag cache
(``taskeval.github.etags``): each test starts with it empty.

The adapters' end-to-end suites (the CLI as a process, the Action's entrypoint, the bot's
worker, backfill) run once per transport: each test of those modules is parametrized with
``transport`` (``[graphql]``, ``[rest]``), which sets ``TASKEVAL_API`` for the test and for the
processes it starts (``tests/processes.py``). A test that names its transport itself (an ``api``
parameter, or ``--api`` and the ``one_transport`` mark) runs as it says.

Also the fixed sample of real PRs, evaluated once per run: the real-PR tests and the dashboard's
replay store read the same 200 results.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from taskeval.transports import API_CHOICES, API_ENV
from tests.fakegithub import FakeGitHub

if TYPE_CHECKING:
    from taskeval.corpus.aidev import Corpus, PullRecord

_LOGGERS = ("github", "urllib3", "openai", "httpx", "taskeval")
BOTH_TRANSPORTS = frozenset({
    "tests.test_cli_first_contact", "tests.test_action_e2e", "tests.test_bot_worker",
    "tests.test_backfill",
})


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if (metafunc.module.__name__ in BOTH_TRANSPORTS and "api" not in metafunc.fixturenames
            and metafunc.definition.get_closest_marker("one_transport") is None):
        metafunc.parametrize("transport", API_CHOICES, indirect=True)


@pytest.fixture(autouse=True)
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """The transport this run of the test collects over (``TASKEVAL_API``), in the modules that
    run once per transport; None elsewhere. Autouse, so it is set up before every fixture that
    makes a worker's settings or a backfill's options."""
    api = getattr(request, "param", None)
    if api is not None:
        monkeypatch.setenv(API_ENV, api)
    return api


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


@pytest.fixture(scope="session")
def sample_corpus() -> Corpus:
    """The fixed sample of real PRs (``tests/test_real_corpus.py``'s ``SAMPLE``); skips, or fails
    under ``TASKEVAL_REQUIRE_CORPUS=1``, without the data."""
    from taskeval.corpus.aidev import load
    from tests.test_real_corpus import SAMPLE
    from tests.waiting import corpus_dir

    return load(corpus_dir("the real-PR tests"), ids=[i for ids in SAMPLE.values() for i in ids])


@pytest.fixture(scope="session")
def sample_results(
    sample_corpus: Corpus,
) -> dict[int, tuple[PullRecord, dict[str, Any] | BaseException]]:
    """Every sample PR evaluated in process (collection over HTTP to the replay), AI off. A
    crash is kept as the exception, so one test can list them all."""
    from taskeval.corpus.evaluate import as_json, client, evaluate
    from taskeval.corpus.replay import serving

    out: dict[int, tuple[PullRecord, dict[str, Any] | BaseException]] = {}
    with serving(sample_corpus) as replay:
        gh = client(replay.url)
        for pr in sample_corpus.prs:
            try:
                out[pr.id] = (pr, as_json(evaluate(gh, pr)))
            except Exception as exc:  # the test reports every crash, with its PR
                out[pr.id] = (pr, exc)
    return out
