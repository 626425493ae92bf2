"""Collection against the fake GitHub over REST (HTTP-level mocks only): what a PR's
collection reads, how it pages, what it records as a gap, and the requests and budget it costs."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from taskeval.evidence import build_bundle
from taskeval.github import GitHubError, NotFoundError
from taskeval.github import collect as collect_over
from tests.fakegithub import ACTIONS_PERMISSIONS, FakeGitHub, Fault
from tests.github_support import BASELINE_REQUESTS, REPO, client, collect, fake_in_process  # noqa: F401 (the fixture)

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


def test_files_beyond_githubs_listing_limit_are_reported(fake: FakeGitHub) -> None:
    """GitHub lists at most 3,000 files of a PR; a bigger PR is scored on what it lists and says so."""
    fake.add_pr(REPO, 77, commits=2)
    fake.repos[REPO].pulls[77].data["changed_files"] = 4_200
    raw = collect(client(fake), REPO, 77)
    [issue] = [i for i in raw.issues if i.resource == "files"]
    assert "at most 3000 changed files" in issue.message and "3 of 4200" in issue.message


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
