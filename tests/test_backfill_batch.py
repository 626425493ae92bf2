"""Backfill over GraphQL reads several PRs per query and shares the repository-wide REST reads
(issue objects through one listing, workflow runs by day range) among them: every fixture PR's
bundle is still byte for byte the bundle of its single-PR collection; a batch GitHub times out
on is asked again in halves; a PR that cannot be read is recorded with its reason."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot.jobs import backfill
from taskeval.evidence import build_bundle
from taskeval.github import collection as collection_module
from taskeval.github import make_client
from taskeval.github.batch import BatchSizer, IssueFeed, RunIndex, Shared, run_window
from taskeval.github.client import Meter, clone
from taskeval.github.collection import collect, collect_read
from taskeval.github.errors import NotFoundError
from taskeval.github.graphql.read import PullRead, read_pulls
from taskeval.pipeline import Options, evaluate_pull_request
from taskeval.store.budget import Budget, budget_key
from taskeval.store.db import evaluations, make_engine
from tests.fakegithub import BASE_TIME, FAKE_TOKEN, FakeGitHub
from tests.test_graphql import _HOW, REPO, SCENARIOS

pytest_plugins = ["tests.bot.fixtures"]


@pytest.fixture(autouse=True)
def _fresh_run() -> Iterator[None]:
    collection_module._REST_ONLY.clear()
    yield
    collection_module._REST_ONLY.clear()


def _every_fixture_pr() -> tuple[FakeGitHub, list[int]]:
    fake = FakeGitHub()
    numbers = [build(fake) for build in SCENARIOS.values()]
    return fake, numbers


def test_a_batch_read_gives_every_fixture_pr_the_bundle_of_its_own_collection() -> None:
    fake, numbers = _every_fixture_pr()
    with fake.mock():
        gh = make_client(FAKE_TOKEN, base_url=fake.url, retries=2, backoff_factor=0, max_wait=5)
        single = {n: collect(gh, REPO, n, api="graphql") for n in numbers}
        own_timelines = {r.path for r in fake.log if r.route == "issues.timeline"}
        fake.reset_log()
        queries_before = len(fake.graphql_queries)
        meter = Meter()
        requester = clone(gh, meter)
        batch = read_pulls(requester, REPO, numbers)
        shared = Shared(IssueFeed(requester, REPO), RunIndex(requester, REPO))
        assert shared.issues is not None and shared.runs is not None
        shared.issues.read_until("")
        windows = [w for r in single.values()
                   if (w := run_window(r.pull.created_at, r.pull.merged_at or r.pull.closed_at))]
        shared.runs.ensure(min(w[0] for w in windows), max(w[1] for w in windows))
        batched = {}
        for n in numbers:
            read = batch.reads[n]
            assert isinstance(read, PullRead), read
            batched[n] = collect_read(gh, REPO, read, shared=shared)
    assert batch.sizes == [len(numbers)], "one query for all of them"
    for n in numbers:
        mine, theirs = single[n].model_dump(exclude=_HOW), batched[n].model_dump(exclude=_HOW)
        for key in mine:
            assert theirs[key] == mine[key], (n, key)
        assert build_bundle(batched[n]).model_dump_json().encode() == \
            build_bundle(single[n]).model_dump_json().encode(), n
    counts = fake.counts()
    assert counts["issues.get"] == 0, "every issue object came from the listing"
    # The run index's listings (no branch), and the open PRs' own: their window has no end yet.
    listings = [r.query for r in fake.log if r.route == "actions.runs"]
    assert sum(1 for q in listings if "branch" not in q) == shared.runs.requests == 5
    assert {q["created"] for q in listings if "branch" in q} == {">=2025-02-02"}
    # The REST timeline is read for the PRs an agent account with REST-only events is on, as a
    # single collection reads it, and for no other: the others' came with the batch query.
    timelines = [r.path for r in fake.log if r.route == "issues.timeline"]
    assert set(timelines) == own_timelines
    humans = [n for n in numbers if single[n].pull.user.login in ("someone", "alice")]
    assert humans and not {f"/repos/{REPO}/issues/{n}/timeline" for n in humans} & own_timelines
    first = fake.graphql_queries[queries_before][0]
    assert len(re.findall(r"\bpr\d+: pullRequest", first)) == len(numbers)


def test_a_missing_pr_is_its_own_entry_not_the_batchs() -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 1)
    fake.add_pr(REPO, 3)
    with fake.mock():
        gh = make_client(FAKE_TOKEN, base_url=fake.url)
        batch = read_pulls(clone(gh, None), REPO, [1, 2, 3])
    assert isinstance(batch.reads[1], PullRead) and isinstance(batch.reads[3], PullRead)
    assert isinstance(batch.reads[2], NotFoundError) and "PR #2" in str(batch.reads[2])


def test_a_batch_github_times_out_on_is_asked_again_in_halves() -> None:
    fake = FakeGitHub()
    for n in range(1, 5):
        fake.add_pr(REPO, n)
    fake.graphql_max_page = 50  # 100-item pages time out (the batch's, a PR's timeline), 50 do not
    with fake.mock():
        gh = make_client(FAKE_TOKEN, base_url=fake.url)
        batch = read_pulls(clone(gh, None), REPO, [1, 2, 3, 4])
    assert all(isinstance(r, PullRead) for r in batch.reads.values())
    aliases = [len(re.findall(r"\bpr\d+: pullRequest", q)) for q, _ in fake.graphql_queries]
    # 4 timed out, then each half did; then each PR alone, whose first query's 100-item
    # timeline page times out too, and is answered at half the size.
    assert [a for a in aliases if a] == [4, 2, 2], aliases
    assert aliases.count(0) == 8 and batch.sizes == [1, 1, 1, 1]


def test_the_batch_size_follows_the_cost_github_reports() -> None:
    sizer = BatchSizer(target=10, first=10, most=50)
    assert sizer.expected(10) == 10  # nothing reported yet: a point a PR
    sizer.reported(10, 6)
    assert sizer.size == 16 and sizer.expected(16) == 10
    sizer.reported(16, 40)  # heavier PRs: smaller batches
    assert sizer.size == 4


def _typical(fake: FakeGitHub, count: int) -> None:
    for n in range(1, count + 1):
        # Each fixes an issue of its own (created by the fake, labelled bug).
        fake.add_pr(REPO, n, commits=3, ci="fail-then-fix", body=f"Fixes #{100 + n}: guard the parser.",
                    created_at=BASE_TIME.replace(day=1 + n % 27, hour=n % 20))


def _run(fake: FakeGitHub, engine: Any, db_url: str, api: str) -> backfill.Backfill:
    gh = make_client(FAKE_TOKEN, base_url=fake.url, retries=1, backoff_factor=0, max_wait=5)
    opts = backfill.Options(repository=REPO, store_url=db_url, ai="off", api=api,  # type: ignore[arg-type]
                            parallel=2)
    job = backfill.Backfill(opts, gh, engine, token=FAKE_TOKEN, api_url=fake.url,
                            stream=io.StringIO(), tty=False)
    job.run()
    return job


def test_backfill_over_graphql_reads_many_prs_a_query(engine: Any, db_url: str) -> None:
    fake = FakeGitHub()
    _typical(fake, 24)
    with fake.mock():
        job = _run(fake, engine, db_url, "graphql")
    summary = job.summary
    assert (summary.evaluated, summary.failed) == (24, {})
    counts = fake.counts()
    # A query per batch for its PRs; the first batch's linked issues (newer than the issue
    # listing had reached) one query for all of them; the second's come from the listing, which
    # its older PRs took back past the issues (opened 2 days before BASE_TIME).
    linked = [q for q, _ in fake.graphql_queries if "TaskevalLinkedIssues" in q]
    assert len(linked) == 1 and linked[0].count("issueOrPullRequest") == job.batches[0]
    assert counts["graphql"] == len(job.batches) + 1 and len(job.batches) < 24 // 4, job.batches
    assert sum(job.batches) == 24
    assert job.batches[0] == 10 and job.batches[1] > 10, "sized by the cost GitHub reported"
    assert counts["issues.get"] == 0 and counts["issues.timeline"] == 24
    assert counts["actions.runs"] < 5
    assert summary.points == fake.graphql_points
    rest = sum(n for route, n in counts.items() if route not in ("graphql", "rate_limit"))
    assert summary.requests == rest + counts["graphql"]
    with engine.connect() as conn:
        stored = {r.number: json.loads(r.result_json)["bundleHash"]
                  for r in conn.execute(select(evaluations.c.number, evaluations.c.result_json))}
    # The same bundles as PR-by-PR collection.
    with fake.mock():
        gh = make_client(FAKE_TOKEN, base_url=fake.url)
        for n in (1, 13, 24):
            evaluation = evaluate_pull_request(gh, REPO, n, Options(ai="off", api="graphql"))
            assert stored[n] == evaluation.result.bundle_hash, n


def test_a_pr_that_cannot_be_read_is_recorded_with_its_reason(engine: Any, db_url: str) -> None:
    fake = FakeGitHub()
    _typical(fake, 3)
    fake.graphql_max_page = 1  # GitHub times out on every page size
    with fake.mock():
        job = _run(fake, engine, db_url, "graphql")
    assert job.summary.evaluated == 0
    assert sorted(job.summary.failed) == [1, 2, 3]
    assert all("timed out" in reason for reason in job.summary.failed.values())
    assert job.summary.exit_code() == 1


def test_a_long_backfill_as_an_app_renews_its_installation_token(
        sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``taskeval backfill`` with GITHUB_APP_ID and its key reads as the repository's installation;
    its tokens here live 23 s, so PyGithub (which renews one 20 s before it expires) needs a new
    one every 3 s: the run outlives at least one, and GitHub never sees an expired one. (A
    shorter life made a request that waited over a second for a busy CPU arrive expired.)"""
    from taskeval import cli
    from tests.fakegithub import app_key_pair

    private, public = app_key_pair()
    fake = FakeGitHub(token=None, latency=0.3)
    fake.add_app(4242, public, installations={77: [REPO]})
    fake.installation_token_ttl = 23.0
    _typical(fake, 10)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_APP_ID", "4242")
    monkeypatch.setenv("GITHUB_APP_PRIVATE_KEY", private)
    monkeypatch.setenv("GITHUB_API_URL", fake.url)
    with fake.mock():
        code = cli.main(["backfill", REPO, "--store", sqlite_url, "--no-ai", "--parallel", "1"])
    assert code == 0
    assert fake.count(route="app.token") >= 2, "the run outlived a token"
    assert fake.expired_uses == 0, "no request went out with an expired token"
    engine = make_engine(sqlite_url)  # (the token's lifetime is the point, not the database)
    with engine.connect() as conn:
        assert len(conn.execute(select(evaluations.c.number)).all()) == 10
    assert Budget(engine, budget_key(fake.url, installation_id=77)).state() is not None
    engine.dispose()


def test_the_run_index_stays_bounded_and_never_answers_for_a_day_it_dropped() -> None:
    fake = FakeGitHub()
    _typical(fake, 12)
    with fake.mock():
        gh = make_client(FAKE_TOKEN, base_url=fake.url)
        index = RunIndex(clone(gh, None), REPO, max_runs=5)
        pulls = {n: collect(gh, REPO, n, api="graphql").pull for n in (1, 12)}
        late = run_window(pulls[12].created_at, pulls[12].merged_at)
        early = run_window(pulls[1].created_at, pulls[1].merged_at)
        assert late and early and late != early
        index.ensure(*late)
        assert index.workflow_runs(pulls[12]) is not None
        index.ensure(early[0] - timedelta(days=40), early[0] - timedelta(days=35))
    # The days of the first range that were farthest from the second were dropped: the index
    # says it cannot answer for that PR rather than answering from part of its window.
    assert index.workflow_runs(pulls[12]) is None
