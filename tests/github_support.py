"""What the test_github_* modules share: the repository they use, the requests a default PR's
REST collection makes, the fake GitHub served in process, and a client of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from github import Github

from taskeval.github import collect as collect_over
from taskeval.github import make_client
from taskeval.raw import RawCollection
from tests.fakegithub import FAKE_TOKEN, FakeGitHub

REPO = "octo-org/widgets"
# One request each: repository, PR, the PR's issue object, commits, reviews, review comments,
# conversation comments, issue timeline, files, config, check runs, workflow runs, and the issue
# the default PR body fixes (#12), read for its labels.
BASELINE_REQUESTS = 13


def collect(gh: Github, repository: str, number: int, **kwargs: object) -> RawCollection:
    """The test_github_* modules test the REST path (its requests, faults and pages), so they
    pin it; the GraphQL path has the same cases in tests/test_graphql.py."""
    return collect_over(gh, repository, number, api="rest", **kwargs)  # type: ignore[arg-type]


def client(fake: FakeGitHub, token: str | None = FAKE_TOKEN, **kwargs: object) -> Github:
    options: dict[str, object] = {"retries": 2, "backoff_factor": 0, "max_wait": 5}
    options.update(kwargs)
    return make_client(token, base_url=fake.url, **options)  # type: ignore[arg-type]


@pytest.fixture(name="fake")
def fake_in_process() -> Iterator[FakeGitHub]:
    """The fake GitHub served in process through ``responses``; a module that imports this has it
    as ``fake`` in place of the conftest's, which is served over HTTP."""
    github = FakeGitHub()
    with github.mock():
        yield github
