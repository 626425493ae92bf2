"""Collection, comments and permissions against the fake GitHub (HTTP-level mocks only)."""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from github import Github

from taskeval.evidence import build_bundle
from taskeval.github import (
    MARKER,
    AuthError,
    GitHubError,
    NotFoundError,
    RateLimitError,
    add_reaction,
    api_url,
    collaborator_permission,
    env_token,
    make_client,
    parse_pr_ref,
    upsert_comment,
)
from taskeval.github import collect as collect_over
from taskeval.raw import CommentSeed, RawCollection
from tests import fakegraphql
from tests.fakegithub import ACTIONS_PERMISSIONS, FAKE_TOKEN, FakeGitHub, Fault, app_key_pair

REPO = "octo-org/widgets"
# One request each: repository, PR, the PR's issue object, commits, reviews, review comments,
# conversation comments, issue timeline, files, config, check runs, workflow runs, and the issue
# the default PR body fixes (#12), read for its labels.
BASELINE_REQUESTS = 13


def collect(gh: Github, repository: str, number: int, **kwargs: object) -> RawCollection:
    """This module tests the REST path (its requests, faults and pages), so it pins it; the
    GraphQL path has the same cases in tests/test_graphql.py."""
    return collect_over(gh, repository, number, api="rest", **kwargs)  # type: ignore[arg-type]


def client(fake: FakeGitHub, token: str | None = FAKE_TOKEN, **kwargs: object) -> Github:
    options: dict[str, object] = {"retries": 2, "backoff_factor": 0, "max_wait": 5}
    options.update(kwargs)
    return make_client(token, base_url=fake.url, **options)  # type: ignore[arg-type]


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    github = FakeGitHub()
    with github.mock():
        yield github


# ------------------------------------------------------------------------------------ collection


def test_collects_a_merged_agent_pr_completely(fake: FakeGitHub) -> None:
    pr = fake.add_pr(REPO, 482, config_text="ai: false\n")

    raw = collect(client(fake), REPO, 482)

    assert raw.repository == REPO and raw.default_branch == "main"
    assert raw.html_base == "https://github.com"
    assert raw.pull.merged and raw.pull.merged_by is not None
    assert raw.pull.merged_by.login == "octocat"
    assert raw.pull.user.login == "copilot-swe-agent[bot]" and raw.pull.user.is_bot
    assert raw.pull.head_sha == pr.head_sha and raw.pull.labels == ["bug"]
    assert "Fixes #12" in raw.pull.body
    assert [c.sha for c in raw.commits] == pr.commit_shas
    assert raw.commits[1].message.startswith("Handle empty input in parse_widget")
    assert all(c.verified and c.verification_reason == "valid" for c in raw.commits)
    assert raw.commits[1].parents == [pr.commit_shas[0]]
    assert [(r.user.login if r.user else None, r.state) for r in raw.reviews] == [
        ("octocat", "APPROVED")
    ]
    assert [c.path for c in raw.review_comments] == ["src/widgets/parser.py"]
    assert [c.user.login for c in raw.issue_comments if c.user] == [
        "octocat", "copilot-swe-agent[bot]"
    ]
    assert [f.filename for f in raw.files] == [
        "src/widgets/parser.py", "tests/test_parser.py", "CHANGELOG.md"
    ]
    assert sorted((c.name, c.conclusion) for c in raw.check_runs) == [
        ("lint", "success"), ("test", "success")
    ]
    assert all(c.app_slug == "github-actions" for c in raw.check_runs)
    assert sorted(r.head_sha for r in raw.workflow_runs) == sorted(pr.commit_shas)
    assert raw.config_text == "ai: false\n"
    assert raw.issues == []
    assert raw.requests == BASELINE_REQUESTS == len(fake.log)
    assert (raw.rate_limit_remaining, raw.rate_limit_limit) == (fake.rate_remaining, 5000)


def test_timeline_is_collected_in_githubs_event_shape(fake: FakeGitHub) -> None:
    pr = fake.add_pr(REPO, 482)
    fake.add_timeline_event(REPO, 482, "copilot_work_finished_failure", actor="octocat")
    fake.add_timeline_event(REPO, 482, "head_ref_force_pushed", actor="copilot-swe-agent[bot]",
                            commit_id=pr.head_sha)
    fake.add_timeline_event(REPO, 482, "cross-referenced", actor="octocat", id=None, source={
        "type": "issue", "issue": {
            "number": 490, "state": "open", "title": "Retry the parser fix",
            "user": fake.user("copilot-swe-agent[bot]"), "created_at": "2026-03-05T10:00:00Z",
            "pull_request": {"url": "x"}, "repository": {"full_name": REPO}}})

    raw = collect(client(fake), REPO, 482)

    assert raw.timeline is not None
    events = [e.event for e in raw.timeline]
    assert events.count("committed") == len(pr.commit_shas)
    assert {"commented", "reviewed", "merged", "copilot_work_finished_failure",
            "head_ref_force_pushed", "cross-referenced"} <= set(events)
    committed = next(e for e in raw.timeline if e.event == "committed")
    assert committed.commit_id == pr.commit_shas[0] and committed.created_at is not None
    assert committed.actor is None
    reviewed = next(e for e in raw.timeline if e.event == "reviewed")
    assert reviewed.actor and reviewed.actor.login == "octocat" and reviewed.state == "APPROVED"
    pushed = next(e for e in raw.timeline if e.event == "head_ref_force_pushed")
    assert pushed.actor and pushed.actor.is_bot and pushed.commit_id == pr.head_sha
    ref = next(e for e in raw.timeline if e.event == "cross-referenced")
    assert (ref.source_repository, ref.source_number, ref.source_is_pull, ref.source_author) == (
        REPO, 490, True, "copilot-swe-agent[bot]")
    assert ref.source_created_at is not None and ref.source_created_at.year > 2000  # a datetime, not text

    facts = build_bundle(raw).facts
    assert facts.timeline is not None and len(facts.timeline) == len(raw.timeline)
    failure = next(e for e in facts.timeline if e.event == "copilot_work_finished_failure")
    assert failure.id.startswith("event:") and failure.actor == "octocat"
    assert next(e for e in facts.timeline if e.event == "cross-referenced").source == f"{REPO}#490"
    activity = build_bundle(raw).groups[5]
    assert failure.id in {item.id for item in activity.items}
    assert activity.items[0].facts["agentFailures"] == 1
    assert activity.items[0].facts["forcePushes"] == 1


@pytest.mark.parametrize(("fault", "says"), [
    (Fault.not_found(), "`issues: read` or `pull-requests: read`"),
    (Fault.forbidden(), "`issues: read` or `pull-requests: read`"),
    # The timeline is the issue's: a deleted issue's is gone too, and GitHub says why.
    (Fault(410, {"message": "This issue was deleted", "status": "410"}),
     "(410: This issue was deleted)"),
], ids=["404", "403", "410"])
def test_unreadable_timeline_is_a_recorded_gap_never_an_empty_timeline(
    fake: FakeGitHub, fault: Fault, says: str
) -> None:
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/issues/482/timeline", fault)

    raw = collect(client(fake), REPO, 482)

    assert raw.timeline is None
    assert [(i.resource, i.status) for i in raw.issues] == [("timeline", fault.status)]
    assert says in raw.issues[0].message
    facts = build_bundle(raw).facts
    assert facts.timeline is None and facts.unavailable == ["timeline"]


def test_file_patches_are_never_collected(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)

    raw = collect(client(fake), REPO, 482)

    assert raw.files and all("patch" not in f.model_dump() for f in raw.files)
    assert "added line" not in raw.model_dump_json()


@pytest.mark.parametrize(
    ("knob", "count", "route"),
    [
        ("commits", 300, "pulls.commits"),  # GitHub lists at most 250 of them
        ("files", 230, "pulls.files"),
        ("reviews", 101, "pulls.reviews"),
        ("issue_comments", 205, "issues.comments"),
    ],
)
def test_long_listings_page_at_100_without_a_request_per_item(
    fake: FakeGitHub, knob: str, count: int, route: str
) -> None:
    # No CI here: the fake makes one workflow run per commit, which would page on their own.
    if knob == "commits":
        fake.add_pr(REPO, 482, commits=count, ci="none")
        listed = min(count, 250)
    elif knob == "files":
        fake.add_pr(REPO, 482, ci="none",
                    files=[{"filename": f"src/m{i}.py"} for i in range(count)])
        listed = count
    elif knob == "reviews":
        fake.add_pr(REPO, 482, ci="none", reviews=[{"user": f"rev{i}", "state": "COMMENTED"}
                                                   for i in range(count)])
        listed = count
    else:
        fake.add_pr(REPO, 482, ci="none", issue_comments=[
            {"user": "octocat", "body": f"note {i}"} for i in range(count)])
        listed = count

    raw = collect(client(fake), REPO, 482)

    pages = math.ceil(listed / 100)
    assert len(getattr(raw, knob)) == listed
    assert fake.count(route=route) == pages
    # The timeline lists commits, comments and reviews too, so it pages along with them.
    timeline_pages = fake.count(route="issues.timeline")
    assert timeline_pages == max(1, math.ceil(len(raw.timeline or []) / 100))
    assert raw.requests == len(fake.log) == BASELINE_REQUESTS - 2 + pages + timeline_pages
    assert set(fake.counts()) <= {
        "repos.get", "pulls.get", "issues.get", "pulls.commits", "pulls.reviews",
        "pulls.review_comments", "issues.comments", "issues.timeline", "pulls.files",
        "repos.contents", "checks.list", "actions.runs",
    }


def test_pr_beyond_githubs_250_commit_listing_says_so(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482, commits=260)

    raw = collect(client(fake), REPO, 482)

    assert raw.pull.commits == 260 and len(raw.commits) == 250
    assert [(i.resource, i.status) for i in raw.issues] == [("commits", None)]
    assert "250 of 260" in raw.issues[0].message


def test_pr_without_ci_collects_no_checks_and_no_issue(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482, ci="none")

    raw = collect(client(fake), REPO, 482)

    assert raw.check_runs == [] and raw.workflow_runs == [] and raw.issues == []
    assert raw.requests == BASELINE_REQUESTS


def test_missing_config_is_none_not_an_issue(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)

    raw = collect(client(fake), REPO, 482)

    assert raw.config_text is None and raw.issues == []
    assert [r.status for r in fake.log if r.route == "repos.contents"] == [404]


def test_fail_then_fix_and_reruns_keep_every_attempt(fake: FakeGitHub) -> None:
    pr = fake.add_pr(REPO, 482, commits=3, ci="fail-then-fix", rerun=True)

    raw = collect(client(fake), REPO, 482)

    by_sha = {r.head_sha: r for r in raw.workflow_runs}
    assert [by_sha[s].conclusion for s in pr.commit_shas] == ["failure", "failure", "success"]
    assert by_sha[pr.head_sha].run_attempt == 2
    tests = sorted((c.started_at, c.conclusion) for c in raw.check_runs if c.name == "test")
    assert [conclusion for _, conclusion in tests] == ["failure", "success"]


def test_fork_pr_runs_are_found_by_branch_and_kept_only_for_its_commits(
    fake: FakeGitHub,
) -> None:
    pr = fake.add_pr(REPO, 77, fork="contributor", commits=2)
    decoy = fake.add_workflow_run(REPO, "f" * 40, "patch-1", "failure", event="push")

    raw = collect(client(fake), REPO, 77)

    assert raw.pull.head_repo == "contributor/widgets" and raw.pull.head_ref == "patch-1"
    assert {r.head_sha for r in raw.workflow_runs} == set(pr.commit_shas)
    assert decoy["id"] not in {r.id for r in raw.workflow_runs}
    runs_query = next(r.query for r in fake.log if r.route == "actions.runs")
    assert runs_query["branch"] == "patch-1"


def test_runs_listing_is_bounded_to_the_prs_lifetime(fake: FakeGitHub) -> None:
    pr = fake.add_pr(REPO, 482, commits=1)
    old = fake.add_workflow_run(REPO, pr.head_sha, pr.head_ref, "failure",
                                created_at=datetime(2024, 1, 1, tzinfo=UTC))

    raw = collect(client(fake), REPO, 482)

    assert old["id"] not in {r.id for r in raw.workflow_runs}
    assert len(raw.workflow_runs) == 1


@pytest.mark.parametrize(
    ("missing", "resource", "hint"),
    [
        ("checks", "check_runs", "checks: read"),
        ("actions", "workflow_runs", "actions: read"),
        ("contents", "config", "contents: read"),
    ],
)
def test_a_forbidden_secondary_resource_becomes_an_issue(
    missing: str, resource: str, hint: str
) -> None:
    token = "ghs_InstallationToken00000000000000000000"
    fake = FakeGitHub(token=None)
    fake.add_token(token, "taskeval[bot]", integration=True,
                   permissions={k: v for k, v in ACTIONS_PERMISSIONS.items() if k != missing})
    fake.add_pr(REPO, 482, config_text="ai: false\n")
    with fake.mock():
        raw = collect(client(fake, token), REPO, 482)

    assert [(i.resource, i.status) for i in raw.issues] == [(resource, 403)]
    assert hint in raw.issues[0].message and token not in raw.issues[0].message
    assert len(raw.commits) == 3 and len(raw.reviews) == 1 and raw.pull.number == 482
    assert (raw.check_runs == []) == (resource == "check_runs")
    assert (raw.workflow_runs == []) == (resource == "workflow_runs")


def test_a_404_on_check_runs_is_an_issue_too(fake: FakeGitHub) -> None:
    pr = fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/commits/{pr.head_sha}/check-runs", Fault.not_found())

    raw = collect(client(fake), REPO, 482)

    assert [(i.resource, i.status) for i in raw.issues] == [("check_runs", 404)]
    assert raw.workflow_runs


def test_the_app_a_pr_was_opened_through_comes_from_its_issue_object(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482, author="dana", via_app="chatgpt-codex-connector")

    raw = collect(client(fake), REPO, 482)

    assert raw.pull.performed_via_github_app == "chatgpt-codex-connector" and raw.issues == []
    # The PR's issue object once, and the issue its body fixes (#12) for its labels.
    assert fake.count(route="issues.get") == 2 and fake.count(route="pulls.get") == 1
    assert raw.requests == len(fake.log) == BASELINE_REQUESTS


@pytest.mark.parametrize(("fault", "status", "says"), [
    (Fault.not_found(), 404, "`issues: read` or `pull-requests: read`"),
    (Fault.forbidden(), 403, "`issues: read` or `pull-requests: read`"),
    (Fault(410, {"message": "This issue was deleted", "status": "410"}), 410, "deleted"),
    (Fault(200, ["not", "an", "issue"]), None, "malformed (expected an object, got list)"),
    (Fault(200, {"number": 482, "pull_request": {}, "performed_via_github_app": "codex"}), None,
     "performed_via_github_app is neither null nor an App with a slug"),
], ids=["404", "403", "410", "not-an-object", "app-not-an-object"])
def test_an_unreadable_issue_object_is_a_gap_and_no_app(
    fake: FakeGitHub, fault: Fault, status: int | None, says: str
) -> None:
    fake.add_pr(REPO, 482, author="dana", via_app="chatgpt-codex-connector")
    fake.inject(f"/repos/{REPO}/issues/482", fault, exact=True)

    raw = collect(client(fake), REPO, 482)

    assert raw.pull.performed_via_github_app is None  # never assumed
    assert [(i.resource, i.status) for i in raw.issues] == [("issue", status)]
    assert says in raw.issues[0].message
    assert raw.timeline and raw.issue_comments and len(raw.commits) == 3  # the rest is read
    assert raw.requests == len(fake.log) == BASELINE_REQUESTS
    assert build_bundle(raw).facts.unavailable == ["issue"]


def test_a_failing_issue_object_fails_like_any_listing(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/issues/482", Fault.server_error(502), times=3, exact=True)

    with pytest.raises(GitHubError, match="issue object"):
        collect(client(fake), REPO, 482)
    # The first try and two retries (beside them, #12 may be read for its labels).
    assert sum(r.path == f"/repos/{REPO}/issues/482" for r in fake.log) == 3


@pytest.mark.parametrize(
    ("repository", "number", "message"),
    [
        ("octo-org/nope", 482, "repository octo-org/nope or PR #482 not found"),
        (REPO, 999, "PR #999 in octo-org/widgets not found"),
    ],
)
def test_missing_repository_or_pr_raises_not_found(
    fake: FakeGitHub, repository: str, number: int, message: str
) -> None:
    fake.add_pr(REPO, 482)

    with pytest.raises(NotFoundError) as caught:
        collect(client(fake), repository, number)

    assert message in str(caught.value) and caught.value.status == 404
    assert fake.count(route="pulls.commits") == 0


def test_private_repository_is_invisible_without_a_token() -> None:
    fake = FakeGitHub(token=None)
    fake.add_repo("octo-org/secret", private=True)
    fake.add_pr("octo-org/secret", 1)
    fake.add_pr("octo-org/public", 2)
    with fake.mock():
        anonymous = client(fake, None)
        assert collect(anonymous, "octo-org/public", 2).pull.number == 2
        with pytest.raises(NotFoundError):
            collect(anonymous, "octo-org/secret", 1)
    assert all(r.login is None for r in fake.log)


def test_bad_credentials_raise_auth_error_without_the_token(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    wrong = "ghp_WrongToken11111111111111111111111111111"

    with pytest.raises(AuthError) as caught:
        collect(client(fake, wrong), REPO, 482)

    assert caught.value.status == 401 and "Bad credentials" in str(caught.value)
    assert wrong not in str(caught.value) and FAKE_TOKEN not in str(caught.value)


def test_an_echoed_token_is_redacted_from_errors(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}", Fault(403, {"message": f"token {FAKE_TOKEN} is blocked"}))

    with pytest.raises(AuthError) as caught:
        collect(client(fake), REPO, 482)

    assert FAKE_TOKEN not in str(caught.value) and "[redacted]" in str(caught.value)


def test_an_unreachable_api_is_a_github_error() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gh = make_client(FAKE_TOKEN, base_url=f"http://127.0.0.1:{port}", retries=1,
                     backoff_factor=0, timeout=2)

    with pytest.raises(GitHubError, match="could not reach GitHub") as caught:
        collect(gh, REPO, 482)

    assert caught.value.status is None and FAKE_TOKEN not in str(caught.value)


def test_upsert_on_a_missing_pr_is_not_found(fake: FakeGitHub) -> None:
    fake.add_repo(REPO)

    with pytest.raises(NotFoundError, match="PR #5 in octo-org/widgets"):
        upsert_comment(client(fake), REPO, 5, "score", own_login="taskeval-user")


def test_a_502_is_retried_and_collection_succeeds(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482, commits=150, ci="none")
    fake.inject(f"/repos/{REPO}/pulls/482/commits", Fault.server_error(502))

    raw = collect(client(fake), REPO, 482)

    assert len(raw.commits) == 150
    assert [r.status for r in fake.log if r.route == "pulls.commits"] == [502, 200, 200]
    # a retried commits page and the second page of commits, and of the timeline that lists them
    assert raw.requests == len(fake.log) == BASELINE_REQUESTS + 3


def test_persistent_5xx_fails_after_bounded_retries(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/pulls/482/files", Fault.server_error(503), times=10)

    with pytest.raises(GitHubError) as caught:
        collect(client(fake, retries=2), REPO, 482)

    assert caught.value.status == 503 and "changed files" in str(caught.value)
    assert fake.count(route="pulls.files") == 3  # the first try and two retries


def test_secondary_rate_limit_waits_retry_after_then_succeeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/pulls/482/reviews", Fault.secondary_rate_limit(retry_after=3))
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)  # record the waits instead of waiting

    with fake.serve():
        raw = collect(client(fake, max_wait=10), REPO, 482)

    assert waits == [3]
    assert [r.status for r in fake.log if r.route == "pulls.reviews"] == [403, 200]
    assert len(raw.reviews) == 1 and raw.requests == len(fake.log) == BASELINE_REQUESTS + 1


def test_a_primary_limit_resetting_soon_is_waited_out(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/pulls/482/files", Fault.primary_rate_limit(reset_in=2))
    waits: list[float] = []
    monkeypatch.setattr(time, "sleep", waits.append)

    with fake.serve():
        raw = collect(client(fake, max_wait=10), REPO, 482)

    # GithubRetry waits until X-RateLimit-Reset plus a second: 2-3 s for a reset 2 s away.
    assert len(waits) == 1 and 1 < waits[0] <= 3.5
    assert len(raw.files) == 3 and raw.requests == len(fake.log) == BASELINE_REQUESTS + 1


@pytest.mark.parametrize(
    "fault",
    [Fault.primary_rate_limit(reset_in=3600), Fault.secondary_rate_limit(retry_after=600)],
    ids=["primary", "secondary-long-retry-after"],
)
def test_a_limit_longer_than_the_allowed_wait_fails_fast(
    fake: FakeGitHub, fault: Fault
) -> None:
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/pulls/482/files", fault)

    with pytest.raises(RateLimitError) as caught:
        collect(client(fake, max_wait=5), REPO, 482)

    assert fake.count(route="pulls.files") == 1
    assert caught.value.reset_at is not None and caught.value.reset_at > datetime.now(UTC)
    assert "rate limit" in str(caught.value)


def test_a_secondary_limit_that_persists_exhausts_retries(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/pulls/482/comments", Fault.secondary_rate_limit(1), times=10)

    with pytest.raises(RateLimitError):
        collect(client(fake, retries=2, max_wait=5), REPO, 482)

    assert fake.count(route="pulls.review_comments") == 3


def test_truncated_json_is_a_clear_error(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/pulls/482/files", Fault.truncated_json())

    with pytest.raises(GitHubError, match="malformed JSON"):
        collect(client(fake), REPO, 482)


def test_concurrent_collection_over_http_matches_sequential() -> None:
    fake = FakeGitHub(latency=0.01)
    fake.add_pr(REPO, 482, commits=120, ci="fail-then-fix")
    with fake.serve():
        parallel = collect(client(fake), REPO, 482, max_workers=8)
        sequential = collect(client(fake), REPO, 482, max_workers=1)

    assert parallel.model_dump(exclude={"requests", "rate_limit_remaining"}) == \
        sequential.model_dump(exclude={"requests", "rate_limit_remaining"})
    # 120 commits, 120 workflow runs and the timeline that lists the commits: two pages each.
    assert parallel.requests == sequential.requests == BASELINE_REQUESTS + 3
    assert len(fake.log) == 2 * parallel.requests and {r.status for r in fake.log} <= {200, 304, 404}
    # The second read of the unchanged PR is conditional: every 200 of the first is now a 304,
    # which GitHub does not charge.
    first, second = fake.log[:parallel.requests], fake.log[parallel.requests:]
    assert [r.status for r in second].count(304) == [r.status for r in first].count(200)
    assert fake.rate_limit - fake.rate_remaining == len(fake.log) - fake.not_modified


def test_github_api_url_is_honoured(monkeypatch: pytest.MonkeyPatch, fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    monkeypatch.setenv("GITHUB_API_URL", fake.url + "/")

    raw = collect(make_client(FAKE_TOKEN, retries=0), REPO, 482)

    assert raw.pull.number == 482 and len(fake.log) == raw.requests


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "https://api.github.com"),
        ({"GITHUB_API_URL": ""}, "https://api.github.com"),
        ({"GITHUB_API_URL": "https://ghe.example.com/api/v3/"}, "https://ghe.example.com/api/v3"),
        ({"GITHUB_API_URL": " http://127.0.0.1:8080 "}, "http://127.0.0.1:8080"),
    ],
)
def test_api_url(env: dict[str, str], expected: str) -> None:
    assert api_url(env) == expected


def test_app_installation_auth_goes_through_the_same_factory() -> None:
    private_pem, public_pem = app_key_pair()
    fake = FakeGitHub(token=None)
    fake.add_app(12345, public_pem, slug="taskeval", installations={42: [REPO]})
    fake.add_pr(REPO, 482)
    with fake.serve():
        gh = make_client(base_url=fake.url, app_id="12345", private_key=private_pem,
                         installation_id=42, retries=0)
        raw = collect(gh, REPO, 482)
        _, created = upsert_comment(gh, REPO, 482, "score: 81", own_login="taskeval[bot]")

    assert raw.pull.number == 482 and raw.issues == []
    assert fake.count(route="app.token") == 1  # one installation token, reused
    assert raw.requests == BASELINE_REQUESTS  # the token exchange is not the PR's
    assert {r.login for r in fake.log if r.route != "app.token"} == {"taskeval[bot]"}
    assert created and fake.comments(REPO, 482)[-1]["user"]["login"] == "taskeval[bot]"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"app_id": "1"},
        {"private_key": "-----BEGIN PRIVATE KEY-----"},
        {"token": "ghp_x", "app_id": "1", "private_key": "k"},
        {"base_url": "ftp://example.com"},
    ],
)
def test_make_client_rejects_inconsistent_credentials(kwargs: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        make_client(**kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ references


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("octo-org/widgets#482", ("octo-org/widgets", 482)),
        ("  octo-org/widgets#482\n", ("octo-org/widgets", 482)),
        ("octo-org/widgets/pull/482", ("octo-org/widgets", 482)),
        ("https://github.com/octo-org/widgets/pull/482", ("octo-org/widgets", 482)),
        ("https://github.com/octo-org/widgets/pull/482/files", ("octo-org/widgets", 482)),
        ("https://github.com/octo-org/widgets/pull/482/", ("octo-org/widgets", 482)),
        ("https://github.com/octo-org/widgets/pull/482#issuecomment-1", ("octo-org/widgets", 482)),
        ("https://ghe.corp.example/team/my.repo_x/pull/7/commits?w=1", ("team/my.repo_x", 7)),
        ("http://localhost:8080/a/b/pull/1", ("a/b", 1)),
    ],
)
def test_parse_pr_ref_accepts(ref: str, expected: tuple[str, int]) -> None:
    assert parse_pr_ref(ref) == expected


@pytest.mark.parametrize(
    "ref",
    [
        "", "octo-org/widgets", "octo-org/widgets#", "octo-org/widgets#0", "widgets#12",
        "octo-org/widgets#12a", "https://github.com/octo-org/widgets/issues/482",
        "https://github.com/octo-org/widgets", "octo-org/widgets/pull/-3", "a/b/c#1",
        "-bad/widgets#1",
    ],
)
def test_parse_pr_ref_rejects_with_a_clear_message(ref: str) -> None:
    with pytest.raises(ValueError, match="OWNER/REPO#N"):
        parse_pr_ref(ref)


# -------------------------------------------------------------------------------------- comments


def marker_comments(fake: FakeGitHub, number: int = 482) -> list[dict[str, object]]:
    return [c for c in fake.comments(REPO, number) if str(c["body"]).startswith(MARKER)]


def test_upsert_creates_once_then_updates_in_place(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    gh = client(fake)

    first_url, first_created = upsert_comment(gh, REPO, 482, f"{MARKER}\nscore: 70")
    second_url, second_created = upsert_comment(gh, REPO, 482, f"{MARKER}\nscore: 81")

    assert (first_created, second_created) == (True, False) and first_url == second_url
    ours = marker_comments(fake)
    assert len(ours) == 1 and ours[0]["body"] == f"{MARKER}\nscore: 81"
    assert ours[0]["user"]["login"] == "taskeval-user"  # type: ignore[index]
    assert fake.count(route="issues.create_comment") == 1
    assert fake.count(route="issues.update_comment") == 1


def test_upsert_adds_the_marker_so_the_next_run_finds_it(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    gh = client(fake)

    upsert_comment(gh, REPO, 482, "score: 70", own_login="taskeval-user")
    _, created = upsert_comment(gh, REPO, 482, "score: 75", own_login="taskeval-user")

    assert not created
    assert [c["body"] for c in marker_comments(fake)] == [f"{MARKER}\nscore: 75"]


def test_upsert_never_edits_a_marker_comment_by_someone_else(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    pasted = fake.add_issue_comment(REPO, 482, f"{MARKER}\nI copied this from another PR",
                                    user="mallory", author_association="NONE")

    _, created = upsert_comment(client(fake), REPO, 482, "score: 90")

    assert created
    assert pasted["body"] == f"{MARKER}\nI copied this from another PR"
    assert [c["user"]["login"] for c in marker_comments(fake)] == [  # type: ignore[index]
        "mallory", "taskeval-user"
    ]


def test_upsert_finds_its_comment_on_a_later_page(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482, issue_comments=[{"user": "octocat", "body": f"chatter {i}"}
                                           for i in range(150)])
    gh = client(fake)
    upsert_comment(gh, REPO, 482, "score: 60", own_login="taskeval-user")

    _, created = upsert_comment(gh, REPO, 482, "score: 61", own_login="taskeval-user")

    assert not created and len(marker_comments(fake)) == 1


@pytest.mark.parametrize(
    ("permissions", "existing", "route"),
    [
        ({**ACTIONS_PERMISSIONS, "issues": "read", "pull_requests": "read"}, False,
         "issues.create_comment"),
        ({**ACTIONS_PERMISSIONS, "issues": "read", "pull_requests": "read"}, True,
         "issues.update_comment"),
    ],
)
def test_upsert_without_write_permission_names_it(
    permissions: dict[str, str], existing: bool, route: str
) -> None:
    token = "ghs_ReadOnlyInstallation000000000000000000"
    fake = FakeGitHub(token=None)
    fake.add_token(token, "taskeval[bot]", integration=True, permissions=permissions)
    fake.add_pr(REPO, 482)
    if existing:
        fake.add_issue_comment(REPO, 482, f"{MARKER}\nold", user="taskeval[bot]")
    with fake.mock(), pytest.raises(AuthError) as caught:
        upsert_comment(client(fake, token), REPO, 482, "score", own_login="taskeval[bot]")

    assert "pull-requests: write" in str(caught.value) and token not in str(caught.value)
    assert [r.status for r in fake.log if r.route == route] == [403]


def test_upsert_as_the_actions_token_falls_back_to_github_actions_bot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = "ghs_ActionsToken000000000000000000000000000"
    fake = FakeGitHub(token=None)
    fake.add_token(token, "github-actions[bot]", integration=True)
    fake.add_pr(REPO, 482)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    with fake.mock():
        gh = client(fake, token)
        _, first = upsert_comment(gh, REPO, 482, "score: 70")
        _, second = upsert_comment(gh, REPO, 482, "score: 72")

    assert (first, second) == (True, False)
    assert [r.status for r in fake.log if r.route == "user"] == [403, 403]
    assert len(marker_comments(fake)) == 1


def test_upsert_with_an_installation_token_outside_actions_needs_own_login(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = "ghs_AppToken00000000000000000000000000000"
    fake = FakeGitHub(token=None)
    fake.add_token(token, "taskeval[bot]", integration=True)
    fake.add_pr(REPO, 482)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    with fake.mock(), pytest.raises(AuthError, match=r"installation tokens; name it here$"):
        upsert_comment(client(fake, token), REPO, 482, "score", login_hint="name it here")  # the adapter's words

    assert fake.comments(REPO, 482) == fake.comments(REPO, 482)[:2]  # nothing was posted
    assert fake.count(method="POST") == 0


def test_a_failed_post_is_not_resent(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/issues/482/comments", Fault.server_error(502).on("POST"))

    with pytest.raises(GitHubError) as caught:
        upsert_comment(client(fake, retries=3), REPO, 482, "score", own_login="taskeval-user")

    assert caught.value.status == 502
    assert fake.count(route="issues.create_comment") == 1 and marker_comments(fake) == []


def test_a_rate_limited_post_is_retried(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    fake.inject(f"/repos/{REPO}/issues/482/comments",
                Fault.secondary_rate_limit(retry_after=1).on("POST"))

    _, created = upsert_comment(client(fake), REPO, 482, "score", own_login="taskeval-user")

    assert created and len(marker_comments(fake)) == 1
    assert [r.status for r in fake.log if r.route == "issues.create_comment"] == [403, 201]


# ----------------------------------------------------------------- the comment over GraphQL


def graphql_seed(gh: Github, number: int = 482) -> CommentSeed:
    """What a GraphQL collection of the PR holds for the comment."""
    seed = collect_over(gh, REPO, number, api="graphql").comment_seed
    assert seed is not None
    return seed


def mutations(fake: FakeGitHub) -> list[str]:
    return [q.split("(", 1)[0].split()[1] for q, _ in fake.graphql_queries
            if q.startswith("mutation ")]


def rest_comment_requests(fake: FakeGitHub) -> int:
    return sum(fake.count(route=r) for r in ("user", "issues.comments", "issues.create_comment",
                                             "issues.update_comment", "issues.delete_comment"))


@pytest.mark.parametrize("token_kind", ["actions", "pat", "app"])
def test_over_graphql_the_comment_is_created_then_updated_without_rest(
    monkeypatch: pytest.MonkeyPatch, token_kind: str,
) -> None:
    """Whatever account the token posts as (the Actions bot, a user, another App), GitHub's
    ``viewerDidAuthor`` finds its comment: no login is asked or guessed."""
    token, login, integration = {
        "actions": ("ghs_ActionsToken000000000000000000000000000", "github-actions[bot]", True),
        "pat": ("ghp_SomeonesPersonalToken0000000000000000", "mona", False),
        "app": ("ghs_OtherAppToken00000000000000000000000000", "other-app[bot]", True),
    }[token_kind]
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    fake = FakeGitHub(token=None)
    fake.add_token(token, login, integration=integration)
    fake.add_pr(REPO, 482)
    with fake.mock():
        gh = client(fake, token)
        fake.reset_log()
        first_url, first = upsert_comment(gh, REPO, 482, "score: 70", seed=graphql_seed(gh))
        second_url, second = upsert_comment(gh, REPO, 482, "score: 72", seed=graphql_seed(gh))

    assert (first, second) == (True, False) and first_url == second_url
    ours = marker_comments(fake)
    assert [(c["body"], c["user"]["login"]) for c in ours] == [  # type: ignore[index]
        (f"{MARKER}\nscore: 72", login)]
    assert first_url == ours[0]["html_url"]  # IssueComment.url is REST's html_url
    assert mutations(fake) == ["TaskevalAddComment", "TaskevalUpdateComment"]
    assert rest_comment_requests(fake) == 0


def test_over_graphql_a_marker_comment_by_someone_else_is_never_touched(
    fake: FakeGitHub,
) -> None:
    fake.add_pr(REPO, 482)
    pasted = fake.add_issue_comment(REPO, 482, f"{MARKER}\nI copied this from another PR",
                                    user="mallory", author_association="NONE")
    # A bot whose login differs from ours only by the suffix is someone else too.
    lookalike = fake.add_issue_comment(REPO, 482, f"{MARKER}\nscore: 10",
                                       user="taskeval-user[bot]")
    gh = client(fake)

    _, created = upsert_comment(gh, REPO, 482, "score: 90", seed=graphql_seed(gh))
    _, again = upsert_comment(gh, REPO, 482, "score: 91", seed=graphql_seed(gh))

    assert (created, again) == (True, False)
    assert pasted["body"] == f"{MARKER}\nI copied this from another PR"
    assert lookalike["body"] == f"{MARKER}\nscore: 10"
    assert [(c["user"]["login"], c["body"]) for c in marker_comments(fake)] == [  # type: ignore[index]
        ("mallory", pasted["body"]), ("taskeval-user[bot]", lookalike["body"]),
        ("taskeval-user", f"{MARKER}\nscore: 91")]


def test_over_graphql_two_runs_that_both_found_no_comment_end_with_one(fake: FakeGitHub) -> None:
    """Both runs read the PR before either posted; each creates, and the later one, whose
    ``addComment`` answer lists both, deletes its own and updates the older one."""
    fake.add_pr(REPO, 482)
    gh = client(fake)
    first_seed, second_seed = graphql_seed(gh), graphql_seed(gh)
    assert first_seed.own == second_seed.own == []

    first_url, first = upsert_comment(gh, REPO, 482, "score: 70", seed=first_seed)
    second_url, second = upsert_comment(gh, REPO, 482, "score: 71", seed=second_seed)

    ours = marker_comments(fake)
    assert [c["body"] for c in ours] == [f"{MARKER}\nscore: 71"]
    assert first_url == second_url == ours[0]["html_url"]
    assert (first, second) == (True, False)
    assert mutations(fake) == ["TaskevalAddComment", "TaskevalAddComment",
                               "TaskevalDeleteComment", "TaskevalUpdateComment"]


@pytest.mark.parametrize("api", ["graphql", "rest"])
def test_two_concurrent_runs_converge_to_one_comment(api: str) -> None:
    """Two runs at once, each request slow enough that both look before either writes."""
    fake = FakeGitHub()
    fake.add_pr(REPO, 482, issue_comments=[{"user": "octocat", "body": f"chatter {i}"}
                                           for i in range(120)])  # the listing takes two pages
    with fake.mock():
        gh = client(fake)
        seeds = [graphql_seed(gh), graphql_seed(gh)] if api == "graphql" else [None, None]
        fake.latency = 0.2
        outcomes: list[tuple[str, bool]] = []
        threads = [threading.Thread(target=lambda n=n: outcomes.append(upsert_comment(
            gh, REPO, 482, f"score: {70 + n}", own_login="taskeval-user", seed=seeds[n])))
            for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

    ours = marker_comments(fake)
    assert len(ours) == 1 and len(outcomes) == 2
    assert {url for url, _ in outcomes} == {ours[0]["html_url"]}
    assert fake.count(route="issues.create_comment") == (2 if api == "rest" else 0)
    assert mutations(fake).count("TaskevalAddComment") == (2 if api == "graphql" else 0)


def test_over_graphql_a_comment_deleted_since_the_read_is_posted_again(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    gh = client(fake)
    upsert_comment(gh, REPO, 482, "score: 70", seed=graphql_seed(gh))
    stale = graphql_seed(gh)
    assert len(stale.own) == 1
    fake.write_comment("delete", REPO, stale.own[0].id, "", fake.tokens[FAKE_TOKEN])

    url, created = upsert_comment(gh, REPO, 482, "score: 71", seed=stale)

    assert created and [c["html_url"] for c in marker_comments(fake)] == [url]


def test_over_graphql_without_write_permission_names_it() -> None:
    token = "ghs_ReadOnlyInstallation000000000000000000"
    fake = FakeGitHub(token=None)
    fake.add_token(token, "github-actions[bot]", integration=True, permissions={
        **ACTIONS_PERMISSIONS, "issues": "read", "pull_requests": "read"})
    fake.add_pr(REPO, 482)
    with fake.mock():
        gh = client(fake, token)
        seed = graphql_seed(gh)
        with pytest.raises(AuthError) as caught:
            upsert_comment(gh, REPO, 482, "score", seed=seed)

    assert "pull-requests: write" in str(caught.value) and token not in str(caught.value)
    assert marker_comments(fake) == [] and mutations(fake) == ["TaskevalAddComment"]


def test_when_graphql_is_refused_for_the_write_rest_writes_the_same_comment(
    fake: FakeGitHub,
) -> None:
    fake.add_pr(REPO, 482)
    gh = client(fake)
    seed = graphql_seed(gh)
    fake.graphql_enabled = False  # e.g. a GHES whose GraphQL endpoint went away

    url, created = upsert_comment(gh, REPO, 482, "score: 70", own_login="taskeval-user",
                                  seed=seed)

    assert created and [c["html_url"] for c in marker_comments(fake)] == [url]
    assert fake.count(route="issues.create_comment") == 1


@pytest.mark.parametrize(("rest_limit", "points_limit", "over"), [
    (1_000, 1_000, "graphql"),  # GITHUB_TOKEN: REST is the scarce budget
    (5_000, 5_000, "graphql"),  # a personal token or an App installation
    (15_000, 1_000, "rest"),  # GITHUB_TOKEN on GitHub Enterprise Cloud: points are scarce
    (5_000, 30, "rest"),  # points nearly spent by other work this hour
])
def test_the_comment_takes_the_budget_that_lasts_longer(
    rest_limit: int, points_limit: int, over: str,
) -> None:
    fake = FakeGitHub(rate_limit=rest_limit)
    fake.graphql_limit = fake.graphql_remaining = points_limit
    fake.add_pr(REPO, 482)
    with fake.mock():
        gh = client(fake)
        seed = graphql_seed(gh)
        fake.reset_log()
        _, created = upsert_comment(gh, REPO, 482, "score: 70", own_login="taskeval-user",
                                    seed=seed)
    assert created and len(marker_comments(fake)) == 1
    assert (mutations(fake), fake.count(route="issues.create_comment")) == (
        (["TaskevalAddComment"], 0) if over == "graphql" else ([], 1))


@pytest.mark.parametrize(("existing", "requests", "created"), [
    (False, ["issues.create_comment", "issues.comments"], True),  # POST, then the race's listing
    (True, ["issues.update_comment"], False),  # the PATCH alone
])
def test_over_rest_after_a_graphql_read_no_login_is_asked_and_nothing_listed_first(
    monkeypatch: pytest.MonkeyPatch, existing: bool, requests: list[str], created: bool,
) -> None:
    """Where REST lasts longer (points nearly spent), the comment is written over REST from what
    the GraphQL read found: an App's installation token, which GET /user refuses, needs no
    ``--comment-as``, and a marker comment pasted by someone else is still left alone."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    token = "ghs_InstallationToken0000000000000000000000"
    fake = FakeGitHub(token=None, rate_limit=15_000)
    fake.add_token(token, "taskeval[bot]", integration=True)
    fake.graphql_limit = fake.graphql_remaining = 30
    fake.add_pr(REPO, 482)
    pasted = fake.add_issue_comment(REPO, 482, f"{MARKER}\npasted", user="mallory")
    with fake.mock():
        gh = client(fake, token)
        if existing:
            upsert_comment(gh, REPO, 482, "score: 60", seed=graphql_seed(gh))
        seed = graphql_seed(gh)
        fake.reset_log()
        url, was_created = upsert_comment(gh, REPO, 482, "score: 70", seed=seed)

    assert was_created is created and mutations(fake) == []
    assert [r.route for r in fake.log] == requests
    assert pasted["body"] == f"{MARKER}\npasted"
    assert [(c["user"]["login"], c["body"]) for c in marker_comments(fake)] == [  # type: ignore[index]
        ("mallory", f"{MARKER}\npasted"), ("taskeval[bot]", f"{MARKER}\nscore: 70")]
    assert url == marker_comments(fake)[-1]["html_url"]


def test_a_graphql_collection_that_could_not_read_the_comments_has_no_seed(
    fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without every conversation comment the comment cannot be found in what was read: it is
    then found and written over REST, as after a REST collection."""
    def refuse(*_: object) -> None:
        raise fakegraphql.Refused("Resource not accessible by integration")

    monkeypatch.setattr(fakegraphql._FakeFacts, "issue_comments", refuse)
    fake.add_pr(REPO, 482)
    raw = collect_over(client(fake), REPO, 482, api="graphql")
    assert [i.resource for i in raw.issues] == ["issue_comments"]
    assert raw.comment_seed is None


# --------------------------------------------------------------------- permissions and reactions


@pytest.mark.parametrize(
    ("login", "permission", "role_name", "expected"),
    [
        ("octocat", "admin", "admin", "admin"),
        ("mona", "write", "maintain", "maintain"),
        ("hubot", "read", "triage", "triage"),
        ("dev", "write", "write", "write"),
        ("auditor", "read", "security-reviewer", "read"),  # a custom role: its base permission
        ("stranger", None, None, "read"),  # public repository: everyone reads
        ("ghost-user", None, None, "none"),  # 404: not a user
    ],
)
def test_collaborator_permission(
    fake: FakeGitHub, login: str, permission: str | None, role_name: str | None, expected: str
) -> None:
    fake.add_repo(REPO)
    if permission is not None:
        fake.set_permission(REPO, login, permission, role_name)

    assert collaborator_permission(client(fake), REPO, login) == expected


def test_add_reaction_reacts_once(fake: FakeGitHub) -> None:
    fake.add_pr(REPO, 482)
    comment = fake.add_issue_comment(REPO, 482, "/evaluate", user="octocat")
    gh = client(fake)

    add_reaction(gh, REPO, comment["id"], "eyes")
    add_reaction(gh, REPO, comment["id"], "eyes")

    assert [r["content"] for r in fake.reactions[comment["id"]]] == ["eyes"]
    with pytest.raises(ValueError, match="reaction must be one of"):
        add_reaction(gh, REPO, comment["id"], "thumbsup")


def test_add_reaction_on_a_missing_comment_is_not_found(fake: FakeGitHub) -> None:
    fake.add_repo(REPO)

    with pytest.raises(NotFoundError):
        add_reaction(client(fake), REPO, 123, "eyes")


def test_files_beyond_githubs_listing_limit_are_reported(fake: FakeGitHub) -> None:
    """GitHub lists at most 3,000 files of a PR; a bigger PR is scored on what it lists and says so."""
    fake.add_pr(REPO, 77, commits=2)
    fake.repos[REPO].pulls[77].data["changed_files"] = 4_200
    raw = collect(client(fake), REPO, 77)
    [issue] = [i for i in raw.issues if i.resource == "files"]
    assert "at most 3000 changed files" in issue.message and "3 of 4200" in issue.message


def test_pygithub_logs_go_through_the_adapters_logging(caplog: pytest.LogCaptureFixture) -> None:
    """PyGithub's own stderr handler would bypass the bot's JSON logs and redaction: it is removed,
    and its records reach whatever handlers the adapter configured."""
    import logging

    library = logging.getLogger("github")
    assert library.handlers == [] and library.level == logging.NOTSET
    with caplog.at_level(logging.INFO):
        logging.getLogger("github.GithubRetry").info("Request GET /x failed with 502")
    assert [r.getMessage() for r in caplog.records] == ["Request GET /x failed with 502"]


@pytest.mark.parametrize(("env", "expected"), [
    ({"GITHUB_TOKEN": "ghs_one", "GH_TOKEN": "gho_two"}, "ghs_one"),  # GITHUB_TOKEN wins
    ({"GH_TOKEN": "gho_two"}, "gho_two"),  # the GitHub CLI's name
    ({"GITHUB_TOKEN": "", "GH_TOKEN": "gho_two"}, "gho_two"),  # blank counts as absent
    ({"GITHUB_TOKEN": " \t\n", "GH_TOKEN": "gho_two"}, "gho_two"),
    ({"GITHUB_TOKEN": "  ghs_one\n"}, "ghs_one"),  # as pasted, with a newline
    ({"GITHUB_TOKEN": " ", "GH_TOKEN": ""}, None),
    ({}, None),
])
def test_the_token_is_github_token_else_gh_token_and_blank_is_absent(
    env: dict[str, str], expected: str | None
) -> None:
    assert env_token(env) == expected


def test_repeated_reads_are_conditional_and_a_304_is_the_cached_answer() -> None:
    """The config file, read again for every PR of a repository, costs nothing once GitHub has
    answered it: the next read carries its ETag and GitHub's 304 (not charged) stands for the
    same text. A changed file has a new ETag, so it is read afresh, never served stale; another
    token never gets the first one's answers."""
    fake = FakeGitHub()
    fake.add_token("ghp_SecondToken000000000000000000000000", "mona")
    fake.add_pr(REPO, 482, config_text="ai: false\n")
    fake.add_pr(REPO, 483)
    with fake.mock():
        gh = client(fake)
        first = collect(gh, REPO, 482)
        fake.reset_log()
        used = fake.rate_limit - fake.rate_remaining
        second = collect(gh, REPO, 483)
        config = [r for r in fake.log if r.route == "repos.contents"]
        assert [r.status for r in config] == [304] and second.config_text == first.config_text
        charged = fake.rate_limit - fake.rate_remaining - used
        assert charged == len(fake.log) - fake.not_modified < second.requests
        fake.set_config(REPO, "ai: true\n")
        fake.reset_log()
        assert collect(gh, REPO, 483).config_text == "ai: true\n"
        assert [r.status for r in fake.log if r.route == "repos.contents"] == [200]
        fake.reset_log()
        other = collect(client(fake, "ghp_SecondToken000000000000000000000000"), REPO, 483)
    assert other.config_text == "ai: true\n" and 304 not in {r.status for r in fake.log}


@pytest.mark.parametrize("api", ["rest", "graphql"])
def test_the_rest_budget_a_collection_reports_is_never_the_points_budget(api: str) -> None:
    """GraphQL answers carry the points budget's rate-limit headers; the REST quota a collection
    reports (and the comment's choice of budget rests on) comes from REST answers only."""
    fake = FakeGitHub(rate_limit=15_000)
    fake.graphql_limit = fake.graphql_remaining = 1_000
    fake.add_pr(REPO, 482)
    with fake.mock():
        raw = collect_over(client(fake), REPO, 482, api=api)
    assert raw.rate_limit_limit == 15_000
    assert raw.rate_limit_remaining is not None and raw.rate_limit_remaining > 14_000
