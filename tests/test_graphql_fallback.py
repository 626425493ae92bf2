"""After GraphQL is refused, the fallback to REST reads each resource once: the issue object and
the timeline, read over REST beside the refused query, are not asked for again (request counts
on the fake GitHub, tests/fakegithub.py), and the collection is still REST's, byte for byte."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from taskeval.evidence import build_bundle
from taskeval.github import collect, make_client
from taskeval.github import collection as collection_module
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault

REPO = "octo-org/widgets"


@pytest.fixture(autouse=True)
def _fresh_run() -> Iterator[None]:
    """Each test is its own run: no server remembered as refusing GraphQL."""
    collection_module._REST_ONLY.clear()
    yield
    collection_module._REST_ONLY.clear()


def _requests(fake: FakeGitHub) -> Counter[tuple[str, str]]:
    return Counter((r.method, r.path) for r in fake.log)


@pytest.mark.parametrize("setup", ["no graphql endpoint", "token refused"])
@pytest.mark.parametrize("workers", [8, 1])
def test_the_rest_fallback_reads_every_resource_once(setup: str, workers: int) -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    fake.add_timeline_event(REPO, 482, "ready_for_review", actor="octocat")
    if setup == "no graphql endpoint":
        fake.graphql_enabled = False
    else:
        fake.inject("/graphql", Fault.forbidden("Resource not accessible by personal access token"))
    with fake.mock():
        gh = make_client(FAKE_TOKEN, base_url=fake.url, retries=2, backoff_factor=0, max_wait=5)
        fell_back = collect(gh, REPO, 482, api="graphql", max_workers=workers)
        sent = _requests(fake)
        fake.reset_log()
        rest = collect(gh, REPO, 482, api="rest", max_workers=workers)
        rest_sent = _requests(fake)
    assert fell_back.transport == "rest" and "GraphQL was not available" in fell_back.notes[0]
    base = f"/repos/{REPO}/issues/482"
    assert sent[("GET", base)] == 1 and sent[("GET", f"{base}/timeline")] == 1
    twice = sorted(key for key, n in sent.items() if n > 1)
    assert twice == []  # nothing at all is read twice
    # Every REST request, and only those, plus the one refused GraphQL query.
    assert sent - Counter({("POST", "/graphql"): 1}) == rest_sent
    assert fell_back.requests == rest.requests + 1
    assert build_bundle(fell_back).model_dump_json() == build_bundle(rest).model_dump_json()
