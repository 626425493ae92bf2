"""When GitHub will not say which account a token posts as (``GET /user`` refused for App and
installation tokens), each adapter's message names the setting that adapter reads, and no other:
``--comment-as``/``TASKEVAL_COMMENT_AS`` for ``taskeval evaluate``, ``TASKEVAL_COMMENT_AS`` for
``taskeval backfill``, ``TASKEVAL_BOT_LOGIN`` for the bot's workers, and for the Action (which has
no input for it) the tokens it can name. The CLI's and backfill's cases are in
tests/test_cli_first_contact.py and tests/test_backfill.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.jobs import events
from bot.jobs.worker import Worker
from taskeval.store.db import init_schema, make_engine
from tests.bot.helpers import settings_for
from tests.fakegithub import FakeGitHub

pytest_plugins = ["tests.bot.fixtures"]
REPO = "octo-org/widgets"
INSTALLATION_TOKEN = "ghs_InstallationToken0000000000000000000001"
CLI_ONLY = ("--comment-as", "TASKEVAL_COMMENT_AS")


@pytest.fixture
def app_token_fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)  # outside Actions: no github-actions[bot] guess
    fake = FakeGitHub(token=None)
    fake.add_token(INSTALLATION_TOKEN, "my-app[bot]", integration=True)
    fake.add_pr(REPO, 42)
    yield fake


def test_the_bots_message_names_the_bots_setting(db_url: str, app_token_fake: FakeGitHub,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """Token mode over REST with an installation token and no TASKEVAL_BOT_LOGIN: the result is
    stored, the comment is not posted, and the worker's log says to set TASKEVAL_BOT_LOGIN, never
    a CLI flag the bot does not read."""
    settings = settings_for(db_url, github_token=INSTALLATION_TOKEN, ai="off", api="rest",
                            api_url=app_token_fake.url, max_attempts=1)
    engine = make_engine(db_url)
    init_schema(engine)
    try:
        with app_token_fake.mock():
            worker = Worker(settings, engine)
            sha = app_token_fake.repos[REPO].pulls[42].data["head"]["sha"]
            accepted = worker.queue.accept("d1", "pull_request", "closed", events.Evaluate(REPO, 42, sha, None))
            job = worker.queue.claim(worker.id)
            assert job is not None
            worker.run_one(job)
        row = worker.queue.job(accepted.job_id)
        assert row is not None and row["status"] == "done" and "comment not posted" in str(row["note"])
        error = "\n".join(r.getMessage() for r in caplog.records if r.name == "bot.worker")
        assert "GET /user is refused" in error and "set TASKEVAL_BOT_LOGIN" in error
        assert not any(name in error for name in CLI_ONLY)
    finally:
        engine.dispose()


def test_the_actions_message_names_no_input_it_does_not_have(tmp_path: Path) -> None:
    """An App's installation token given as github-token, outside a runner that says it is one:
    the comment fails with a message about the tokens the Action can name, not a CLI flag."""
    from tests.test_action_e2e import payload, run_action

    fake = FakeGitHub(token=None)
    fake.add_token(INSTALLATION_TOKEN, "my-app[bot]", integration=True)
    fake.add_pr(REPO, 42)
    with fake.serve():
        done = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"),
                          inputs={"github-token": INSTALLATION_TOKEN, "api": "rest"},
                          extra_env={"GITHUB_ACTIONS": ""})
    errors = "\n".join(done.annotations("error"))
    assert "GET /user is refused" in errors and "pass one of those as github-token" in errors, done.stdout
    assert not any(name in errors for name in CLI_ONLY)
    assert done.outputs["evaluated"] == "true" and done.outputs["comment-url"] == ""
