"""GraphQL collection: the same bundle as REST, byte for byte, against GitHub's own schema.

The fake GitHub answers GraphQL by executing each query against the vendored schema
(tests/fakegraphql.py) over the fixture data its REST routes serve, so a query GitHub would
reject fails here, and both transports read one set of facts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from github import Github
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskeval.evidence import build_bundle
from taskeval.github import NotFoundError, RateLimitError, collect, make_client
from taskeval.github import collection as collection_module
from taskeval.github.graphql.queries import FIRST_PAGE, FIRST_SIZES, every_query
from taskeval.github.writes import COMMENT_MUTATIONS
from taskeval.raw import RawCollection
from tests import fakegraphql
from tests.fakegithub import ACTIONS_PERMISSIONS, BASE_TIME, FAKE_TOKEN, FakeGitHub, Fault
from tests.fakegraphql import query_cost, schema, validation_errors
from tests.test_properties import pr_texts

REPO = "octo-org/widgets"
# Fields that say how a collection was made, not what it found.
_HOW = {"requests", "transport", "graphql_queries", "graphql_points", "graphql_remaining",
        "graphql_limit", "notes", "rate_limit_remaining", "rate_limit_limit"}


def client(fake: FakeGitHub, token: str | None = FAKE_TOKEN) -> Github:
    return make_client(token, base_url=fake.url, retries=2, backoff_factor=0, max_wait=5)


@pytest.fixture(autouse=True)
def _fresh_run() -> Iterator[None]:
    """Each test is its own run: no server remembered as refusing GraphQL."""
    collection_module._REST_ONLY.clear()
    yield
    collection_module._REST_ONLY.clear()


# ------------------------------------------------------------------------- fixture PRs


def _many_conversation(fake: FakeGitHub) -> int:
    reviews = [{"user": f"rev{i}", "state": ["COMMENTED", "CHANGES_REQUESTED", "APPROVED"][i % 3],
                "body": f"review {i}"} for i in range(110)]
    fake.add_pr(REPO, 7, reviews=reviews, review_comments=[
        {"user": "octocat", "body": f"note {i}", "path": f"src/m{i % 7}.py"} for i in range(130)
    ], issue_comments=[{"user": f"user{i}", "body": f"comment {i}"} for i in range(120)])
    pull = fake.repos[REPO].pulls[7]
    root = pull.review_comments[0]["id"]
    for comment in pull.review_comments[1:70]:  # one thread of 70 (pages inside it), 60 others
        comment["in_reply_to_id"] = root
    return 7


def _renamed_files(fake: FakeGitHub) -> int:
    files = [{"filename": f"src/pkg/mod_{i:03}.py", "additions": i % 9, "deletions": i % 4}
             for i in range(150)]
    files.append({"filename": "src/pkg/new_name.py", "status": "renamed",
                  "previous_filename": "src/pkg/old_name.py", "additions": 1, "deletions": 1})
    files.append({"filename": "docs/gone.md", "status": "removed", "additions": 0, "deletions": 9})
    files.append({"filename": "docs/new.md", "status": "added", "additions": 9, "deletions": 0})
    fake.add_pr(REPO, 8, files=files)
    return 8


def _timeline_events(fake: FakeGitHub) -> int:
    pr = fake.add_pr(REPO, 9, merged=False, state="closed")
    fake.add_timeline_event(REPO, 9, "copilot_work_finished_failure", actor="octocat")
    fake.add_timeline_event(REPO, 9, "head_ref_force_pushed", actor="copilot-swe-agent[bot]",
                            commit_id=pr.head_sha)
    fake.add_timeline_event(REPO, 9, "cross-referenced", actor="octocat", id=None, source={
        "type": "issue", "issue": {
            "number": 490, "state": "open", "title": "Retry the parser fix",
            "user": fake.user("copilot-swe-agent[bot]"), "created_at": "2025-03-05T10:00:00Z",
            "pull_request": {"url": "x"}, "repository": {"full_name": REPO}}})
    return 9


def _many_checks(fake: FakeGitHub) -> int:
    pr = fake.add_pr(REPO, 10, commits=4)
    for i in range(130):
        fake.add_check_run(REPO, pr.head_sha, f"matrix ({i})", "success" if i % 11 else "failure",
                           started_at=BASE_TIME + timedelta(minutes=i), summary=f"job {i}")
    return 10


def _labelled_and_assigned(fake: FakeGitHub) -> int:
    pr = fake.add_pr(REPO, 11, labels=[f"area/{i}" for i in range(105)], merged=False, draft=True)
    pr.data["assignees"] = [fake.user("octocat"), fake.user("copilot-swe-agent[bot]")]
    pr.data["requested_reviewers"] = [fake.user("hubot"), fake.user("reviewer-bot[bot]")]
    pr.data["merge_commit_sha"] = "f" * 40  # GitHub's test merge of an open PR
    return 11


def _copilot_named_twice(fake: FakeGitHub) -> int:
    """GitHub's Copilot agent as REST names it: ``Copilot`` (a Bot) on the PR, its comments and
    commits, ``copilot-swe-agent[bot]`` on its reviews; GraphQL names it ``copilot-swe-agent``."""
    fake.add_pr(REPO, 12, author="Copilot", reviews=[
        {"user": "copilot-swe-agent[bot]", "state": "COMMENTED", "body": "Addressed the review."},
        {"user": "octocat", "state": "APPROVED", "body": "Thanks"}])
    return 12


def _linked_issues(fake: FakeGitHub) -> int:
    """A PR that links issues of every kind: labelled, unlabelled, a PR, one that does not
    exist, another repository's, and more than the three that are read."""
    fake.add_issue(REPO, 20, labels=["Type: Bug", "good first issue"])
    fake.add_issue(REPO, 21, labels=[])
    fake.add_pr(REPO, 22, labels=["documentation"], body="Docs for the parser.")
    fake.add_pr(REPO, 13, title="Guard the parser", labels=(), linked_issues=False, body=(
        "Fixes #20, fixes #22 and closes #23; resolves other-org/lib#4.\n\nSee #21 and #24."))
    return 13


Scenario = Callable[[FakeGitHub], int]
SCENARIOS: dict[str, Scenario] = {
    "merged agent PR, green CI": lambda f: f.add_pr(REPO, 482).number,
    "red CI at merge": lambda f: f.add_pr(REPO, 483, ci="red").number,
    "fail then fix, re-run": lambda f: f.add_pr(REPO, 484, ci="fail-then-fix", rerun=True).number,
    "no CI": lambda f: f.add_pr(REPO, 485, ci="none").number,
    "fork PR": lambda f: f.add_pr(REPO, 486, fork="someone", author="someone").number,
    "open draft, human author, unsigned": lambda f: f.add_pr(
        REPO, 487, merged=False, draft=True, author="alice", verified=False).number,
    "closed unmerged, timeline events": _timeline_events,
    "opened through an App": lambda f: f.add_pr(REPO, 488, via_app="chatgpt-codex-connector").number,
    "repository config": lambda f: f.add_pr(REPO, 489, config_text="ai: false\n").number,
    "pending and dismissed reviews": lambda f: f.add_pr(REPO, 490, reviews=[
        {"user": "octocat", "state": "CHANGES_REQUESTED", "body": "Please add tests."},
        {"user": "hubot", "state": "DISMISSED", "body": ""},
        {"user": "octocat", "state": "PENDING", "body": "draft"},
        {"user": "copilot-pull-request-reviewer[bot]", "state": "COMMENTED", "body": "Summary"},
    ]).number,
    "120 commits (pages)": lambda f: f.add_pr(REPO, 491, commits=120).number,
    "260 commits (GitHub's 250 cap)": lambda f: f.add_pr(REPO, 492, commits=260).number,
    "110 reviews, 130 review comments, 120 comments": _many_conversation,
    "153 files, one renamed": _renamed_files,
    "130 check runs on the head": _many_checks,
    "105 labels, assignees, requested reviewers": _labelled_and_assigned,
    "Copilot: two REST logins, one GraphQL login": _copilot_named_twice,
    "linked issues: labelled, missing, a PR, cross-repository, past the cap": _linked_issues,
}


def _both(fake: FakeGitHub, number: int) -> tuple[RawCollection, RawCollection]:
    gh = client(fake)
    return collect(gh, REPO, number, api="rest"), collect(gh, REPO, number, api="graphql")


def _assert_same(rest: RawCollection, graphql: RawCollection, raw: bool = True) -> None:
    assert graphql.transport == "graphql" and rest.transport == "rest"
    assert graphql.notes == []
    mine, theirs = rest.model_dump(exclude=_HOW), graphql.model_dump(exclude=_HOW)
    for key in mine if raw else ():  # the field that differs, before the bundle bytes say only "differs"
        assert theirs[key] == mine[key], key
    assert build_bundle(graphql).model_dump_json().encode() == \
        build_bundle(rest).model_dump_json().encode()


@pytest.mark.parametrize("build", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_every_fixture_pr_gives_the_same_bundle_through_both_transports(build: Scenario) -> None:
    fake = FakeGitHub()
    number = build(fake)
    with fake.mock():
        rest, graphql = _both(fake, number)
    _assert_same(rest, graphql)
    assert graphql.requests < rest.requests or rest.requests <= 4


@pytest.mark.parametrize("build", [SCENARIOS["merged agent PR, green CI"],
                                   SCENARIOS["110 reviews, 130 review comments, 120 comments"]],
                         ids=["typical", "long conversation"])
def test_same_bundle_over_http_from_the_served_fake(build: Scenario) -> None:
    fake = FakeGitHub()
    number = build(fake)
    with fake.serve(prefix="/api/v3"):  # GHES: REST under /api/v3, GraphQL at /api/graphql
        rest, graphql = _both(fake, number)
    _assert_same(rest, graphql)


@pytest.mark.parametrize(("body", "queries"), [
    ("Handles empty input.", 1),  # no linked issue: nothing extra
    (None, 2),  # the default body fixes #12: one more query, for its labels
], ids=["no-link", "fixes-12"])
def test_a_typical_pr_costs_one_query_one_point_and_three_rest_reads(body: str | None,
                                                                     queries: int) -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482, body=body)
    with fake.mock():
        raw = collect(client(fake), REPO, 482, api="graphql")
    assert (raw.graphql_queries, raw.graphql_points, raw.requests) == (queries, queries, 3 + queries)
    assert fake.graphql_points == queries and raw.graphql_remaining == fake.graphql_remaining
    # REST for what GraphQL lacks: the issue object's App, the workflow runs, and, since the
    # fixture's PR is the Copilot agent's, its timeline (a person's PR reads none:
    # tests/test_graphql_timeline.py).
    assert fake.counts() == {"graphql": queries, "issues.get": 1, "issues.timeline": 1,
                             "actions.runs": 1}


def test_every_connection_is_paged_to_its_end() -> None:
    fake = FakeGitHub()
    number = _many_conversation(fake)
    with fake.mock():
        raw = collect(client(fake), REPO, number, api="graphql")
    assert (len(raw.reviews), len(raw.review_comments), len(raw.issue_comments)) == (110, 130, 120)
    # Pages after the first are read by node(id:), 100 at a time; the default body fixes #12,
    # whose labels take one more query.
    assert raw.graphql_queries == 1 + 1 + 1 + 1 + 1 + 1  # first, reviews, threads, comments, a thread, #12


# ----------------------------------------------------------------------- the schema


def test_every_query_the_collector_can_send_is_valid_against_githubs_schema() -> None:
    queries = every_query()
    assert len(queries) >= 10
    for query in queries:
        assert validation_errors(query) == [], query


def test_the_comment_mutations_are_valid_and_cost_one_point_each() -> None:
    """``addComment`` (with the PR's comments in its answer), ``updateIssueComment``,
    ``deleteIssueComment`` and the comments' further pages, as GitHub's schema types them."""
    assert len(COMMENT_MUTATIONS) == 4
    for query in COMMENT_MUTATIONS:
        assert validation_errors(query) == [], query
        assert query_cost(query, {"page": 100})[0] == 1, query


def test_the_fake_rejects_what_github_would() -> None:
    assert validation_errors("{ repository(owner: \"o\", name: \"r\") { pullRequest(number: 1) "
                             "{ runAttempt } } }")
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    with fake.mock():
        gh = client(fake)
        _, body = gh.requester.requestJsonAndCheck("POST", gh.requester.graphql_url, input={
            "query": "{ repository(owner: \"octo-org\", name: \"widgets\") { pullRequest(number: "
                     "482) { commits { totalCount } } } }"})
    assert body["data"]["repository"]["pullRequest"] is None
    assert "first" in body["errors"][0]["message"]


def _fields(type_name: str) -> set[str]:
    kind = schema().get_type(type_name)
    return set(getattr(kind, "fields", {}))


@pytest.mark.parametrize(("type_name", "missing", "read_over_rest"), [
    # A workflow run's attempt, start time and actors.
    ("WorkflowRun", "runAttempt", "workflow runs"), ("WorkflowRun", "runStartedAt", "workflow runs"),
    ("WorkflowRun", "actor", "workflow runs"),
    # The App a PR was opened through (REST: the issue object's performed_via_github_app).
    ("PullRequest", "performedViaGithubApp", "issue object"),
    ("PullRequest", "viaApp", "issue object"),
    # A renamed file's previous path.
    ("PullRequestChangedFile", "previousPath", "changed files"),
    ("PullRequestChangedFile", "previousFilename", "changed files"),
])
def test_what_graphql_lacks_is_read_over_rest(type_name: str, missing: str,
                                              read_over_rest: str) -> None:
    """If GitHub adds one of these, that read can move to GraphQL (docs/collection.md)."""
    assert _fields(type_name), type_name
    assert missing not in _fields(type_name), f"{type_name}.{missing} exists now: {read_over_rest}"


def test_the_rest_only_agent_events_are_not_in_graphqls_timeline() -> None:
    kinds = schema().get_type("PullRequestTimelineItemsItemType")
    assert kinds is not None
    values = set(getattr(kinds, "values", {}))
    assert "MERGED_EVENT" in values
    assert not {v for v in values if "COPILOT" in v}


def test_a_typical_first_query_costs_one_point_by_githubs_formula() -> None:
    first = every_query()[0]
    assert query_cost(first, FIRST_SIZES)[0] == 1
    assert query_cost(first, {**FIRST_SIZES, "page": 100})[0] == 2  # why the first page is 50


# ------------------------------------------------------------------- faults and fallback


def test_a_page_github_times_out_on_is_asked_again_at_half_the_size() -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 491, commits=120)
    fake.graphql_max_page = 30
    with fake.mock():
        rest, graphql = _both(fake, 491)
    _assert_same(rest, graphql)
    sizes = [v.get("page") for _, v in fake.graphql_queries]
    assert sizes[:2] == [FIRST_PAGE, FIRST_PAGE // 2]


def test_a_timeout_that_persists_is_a_clear_error() -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    fake.graphql_max_page = 1
    with fake.mock(), pytest.raises(Exception, match="timed out on the GraphQL query"):
        collect(client(fake), REPO, 482, api="graphql")


def test_a_502_on_graphql_is_retried_at_half_the_size() -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    fake.inject("/graphql", Fault.server_error(502))
    with fake.mock():
        raw = collect(client(fake), REPO, 482, api="graphql")
    assert raw.transport == "graphql" and len(raw.commits) == 3


def test_rate_limited_is_a_rate_limit_error_with_the_reset() -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    fake.graphql_remaining = 0
    with fake.mock(), pytest.raises(RateLimitError, match="GraphQL rate limit") as caught:
        collect(client(fake), REPO, 482, api="graphql")
    assert caught.value.reset_at is not None


def test_missing_pr_is_not_found_through_either_transport() -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    with fake.mock():
        for api in ("rest", "graphql"):
            with pytest.raises(NotFoundError, match="not found"):
                collect(client(fake), REPO, 999, api=api)
            with pytest.raises(NotFoundError, match="not found"):
                collect(client(fake), "octo-org/nothing", 1, api=api)


@pytest.mark.parametrize("missing", ["checks", "contents", "actions"])
def test_a_permission_the_token_lacks_is_the_same_gap_through_both(missing: str) -> None:
    """GraphQL answers FORBIDDEN beside partial data; the gap, its message and the bundle match
    REST's 403."""
    permissions = {k: v for k, v in ACTIONS_PERMISSIONS.items() if k != missing}
    fake = FakeGitHub(integration=True, permissions=permissions)
    fake.add_pr(REPO, 482, config_text="ai: false\n")
    with fake.mock():
        rest, graphql = _both(fake, 482)
    assert rest.issues and [i.resource for i in graphql.issues] == [i.resource for i in rest.issues]
    _assert_same(rest, graphql)


@pytest.mark.parametrize(("refused", "rest_path", "resource"), [
    ("issue_comments", "/repos/octo-org/widgets/issues/482/comments", "issue_comments"),
    ("review_comments", "/repos/octo-org/widgets/pulls/482/comments", "review_comments"),
    ("commits", "/repos/octo-org/widgets/pulls/482/commits", "commits"),
])
def test_a_refused_non_null_connection_is_the_same_gap_as_rest(
        refused: str, rest_path: str, resource: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FORBIDDEN on a non-null connection (commits, review threads, comments) nulls the whole
    PR, by GraphQL's null propagation; collection asks again without that connection and
    records REST's gap (a refused commit listing also hides the head's checks: REST reads
    them)."""
    message = "Resource not accessible by integration"

    def refuse(*_: object) -> None:
        raise fakegraphql.Refused(message)

    monkeypatch.setattr(fakegraphql._FakeFacts, refused, refuse)
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    fake.inject(rest_path, Fault.forbidden(message), exact=True, times=1)
    with fake.mock():
        gh = client(fake)
        rest = collect(gh, REPO, 482, api="rest")
        graphql = collect(gh, REPO, 482, api="graphql")
    assert [i.resource for i in rest.issues] == [i.resource for i in graphql.issues] == [resource]
    # The first query, asked again without the refused connection, and #12's labels.
    assert graphql.graphql_queries == 3 and fake.count(route="graphql") == 3
    assert rest.issues[0].message == graphql.issues[0].message
    if resource == "commits":
        # Known difference (docs/collection.md): the count lives on the refused connection.
        assert (rest.pull.commits, graphql.pull.commits) == (3, 0)
        graphql.pull = graphql.pull.model_copy(update={"commits": rest.pull.commits})
    _assert_same(rest, graphql, raw=False)


@pytest.mark.parametrize("setup", ["no graphql endpoint", "token refused"])
def test_without_graphql_collection_falls_back_to_rest_once_and_says_so(setup: str) -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    if setup == "no graphql endpoint":
        fake.graphql_enabled = False
    else:
        fake.inject("/graphql", Fault.forbidden("Resource not accessible by personal access token"))
    with fake.mock():
        gh = client(fake)
        first = collect(gh, REPO, 482, api="graphql")
        second = collect(gh, REPO, 482, api="graphql")
        rest = collect(gh, REPO, 482, api="rest")
    assert first.transport == second.transport == "rest"
    assert "GraphQL was not available" in first.notes[0] and "keeps to REST" in first.notes[0]
    assert second.notes == ["GraphQL was refused earlier in this run; collected over REST"]
    assert fake.count(route="graphql") == 1  # remembered for the run
    assert build_bundle(first).model_dump_json() == build_bundle(rest).model_dump_json()


# ---------------------------------------------------------------------------- adapters


def test_an_evaluation_over_graphql_says_its_rest_fallback_in_the_warnings() -> None:
    from taskeval.pipeline import Options, evaluate_pull_request

    fake = FakeGitHub()
    fake.add_pr(REPO, 482)
    fake.graphql_enabled = False
    with fake.mock():
        gh = client(fake)
        fallen = evaluate_pull_request(gh, REPO, 482, Options(ai="off", api="graphql", env={}))
        rest = evaluate_pull_request(gh, REPO, 482, Options(ai="off", api="rest", env={}))
    assert fallen.result.warnings[0].startswith("GraphQL was not available")
    assert fallen.result.bundle_hash == rest.result.bundle_hash


@pytest.mark.parametrize(("argv", "env", "expected"), [
    (["evaluate", "o/r#1"], {}, "graphql"),
    (["evaluate", "o/r#1", "--api", "rest"], {}, "rest"),
    (["evaluate", "o/r#1"], {"TASKEVAL_API": "rest"}, "rest"),  # one setting for every command
    (["evaluate", "o/r#1"], {"TASKEVAL_API": " REST "}, "rest"),
    (["evaluate", "o/r#1"], {"TASKEVAL_API": ""}, "graphql"),
    (["evaluate", "o/r#1", "--api", "graphql"], {"TASKEVAL_API": "rest"}, "graphql"),  # flag wins
    (["evaluate", "o/r#1", "--api", "graphql"], {"TASKEVAL_API": "soap"}, "graphql"),
    (["backfill", "o/r"], {}, "graphql"), (["backfill", "o/r", "--api", "rest"], {}, "rest"),
    (["backfill", "o/r"], {"TASKEVAL_API": "rest"}, "rest"),
    (["evaluate", "o/r#1"], {"TASKEVAL_API": "soap"},
     "TASKEVAL_API must be rest or graphql, got 'soap'"),
])
def test_commands_that_read_github_take_api(argv: list[str], env: dict[str, str],
                                            expected: str) -> None:
    from taskeval.cli import build_parser, resolve_api

    args = build_parser().parse_args(argv)
    problem = resolve_api(args, env)
    assert (problem or args.api) == expected


def test_a_bad_taskeval_api_is_one_line_and_sends_nothing(fake: FakeGitHub) -> None:
    from tests.test_cli import run_cli

    proc = run_cli("evaluate", f"{REPO}#482", "--no-ai",
                   env={"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": fake.url,
                        "TASKEVAL_API": "soap"})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == "taskeval: TASKEVAL_API must be rest or graphql, got 'soap'"
    assert fake.log == []


def test_taskeval_api_sets_the_library_default_and_an_explicit_option_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from taskeval.pipeline import Options

    monkeypatch.delenv("TASKEVAL_API", raising=False)
    assert Options().api == "graphql"
    monkeypatch.setenv("TASKEVAL_API", "rest")
    assert Options().api == "rest" and Options(api="graphql").api == "graphql"
    monkeypatch.setenv("TASKEVAL_API", "soap")
    with pytest.raises(ValueError, match="TASKEVAL_API must be rest or graphql"):
        Options()


def test_the_action_input_and_the_bot_setting_are_named_api() -> None:
    from action.inputs import ActionInputs, InputError
    from bot.settings import BotSettings as Settings
    from bot.settings import SettingsError

    assert ActionInputs.from_env({"INPUT_API": "graphql"}).api == "graphql"
    assert ActionInputs.from_env({}).api == "graphql"  # the default
    assert ActionInputs.from_env({"INPUT_API": ""}).api == "graphql"  # action.yml's default
    assert ActionInputs.from_env({"INPUT_API": "rest"}).api == "rest"
    assert ActionInputs.from_env({"TASKEVAL_API": "rest"}).api == "rest"  # the workflow's env
    assert ActionInputs.from_env({"INPUT_API": "graphql", "TASKEVAL_API": "rest"}).api == "graphql"
    with pytest.raises(InputError, match="'api' must be rest or graphql"):
        ActionInputs.from_env({"INPUT_API": "soap"})
    with pytest.raises(InputError, match="TASKEVAL_API must be rest or graphql"):
        ActionInputs.from_env({"TASKEVAL_API": "soap"})
    env = {"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_WEBHOOK_SECRET": "s" * 32, "TASKEVAL_API": "graphql"}
    assert Settings.from_env(env).api == "graphql"
    assert Settings.from_env({**env, "TASKEVAL_API": ""}).api == "graphql"  # the default
    assert Settings.from_env({**env, "TASKEVAL_API": "rest"}).api == "rest"
    with pytest.raises(SettingsError, match="TASKEVAL_API"):
        Settings.from_env({**env, "TASKEVAL_API": "soap"})


# ------------------------------------------------------------------------- generated PRs

# Logins as REST names them. GitHub's Copilot agent is "Copilot" on its own PRs and their
# conversation, "copilot-swe-agent[bot]" on its reviews; GraphQL has one name for both, so
# "Copilot" comments only on PRs it authored (docs/collection.md: known differences).
# TASKEVAL_SLOW=1 searches ten times longer.
HUMANS = ("octocat", "alice", "someone")
BOTS = ("copilot-swe-agent[bot]", "devin-ai-integration[bot]", "github-actions[bot]")
PATHS = ("src/app.py", "src/lib/util.py", "tests/test_app.py", "README.md", "docs/guide.md",
         "CHANGELOG.md", "src/vendored/big.js")
REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING")
texts = st.one_of(pr_texts, st.text(max_size=60))


@st.composite
def generated_prs(draw: st.DrawFn) -> dict[str, Any]:
    """``FakeGitHub.add_pr`` arguments for any PR hypothesis can build: any author, size, state,
    CI, reviews, review threads, conversation, changed files (renamed and removed among them),
    labels, texts, forks, an App, a config."""
    author = draw(st.sampled_from(("Copilot", *HUMANS, *BOTS)))
    # One account has one REST name per endpoint: on Copilot's PR its comments are "Copilot".
    speakers = st.sampled_from((*HUMANS, *BOTS) if author != "Copilot" else
                               (*HUMANS, *BOTS[1:], "Copilot"))
    reviewers = st.sampled_from((*HUMANS, *BOTS, "copilot-pull-request-reviewer[bot]"))
    merged = draw(st.booleans())
    files = draw(st.lists(st.sampled_from(PATHS), min_size=0, max_size=6, unique=True))
    file_specs = []
    for name in files:
        status = draw(st.sampled_from(("added", "modified", "removed", "renamed")))
        spec: dict[str, Any] = {"filename": name, "status": status,
                                "additions": draw(st.integers(0, 400)),
                                "deletions": draw(st.integers(0, 400))}
        if status == "renamed":
            spec["previous_filename"] = f"old/{name}"
        file_specs.append(spec)
    return {
        "commits": draw(st.integers(1, 8)), "author": author, "merged": merged,
        "draft": (not merged) and draw(st.booleans()),
        "state": "closed" if not merged and draw(st.booleans()) else None,
        "ci": draw(st.sampled_from(("green", "red", "fail-then-fix", "none"))),
        "rerun": draw(st.booleans()), "verified": draw(st.booleans()),
        "title": draw(texts), "body": draw(st.none() | texts),
        "labels": draw(st.lists(st.sampled_from(("bug", "enhancement", "area/ci", "tests")),
                                max_size=3, unique=True)),
        "fork": draw(st.none() | st.just("someone")),
        "via_app": draw(st.none() | st.just("chatgpt-codex-connector")),
        "config_text": draw(st.none() | st.sampled_from(("ai: false\n", "thresholds: {}\n"))),
        "reviews": draw(st.lists(st.fixed_dictionaries({
            "user": reviewers, "state": st.sampled_from(REVIEW_STATES), "body": texts}),
            max_size=4)),
        "review_comments": draw(st.lists(st.fixed_dictionaries({
            "user": st.sampled_from((*HUMANS, *BOTS)), "body": texts,
            "path": st.sampled_from(PATHS)}), max_size=4)),
        "issue_comments": draw(st.lists(st.fixed_dictionaries({"user": speakers, "body": texts}),
                                        max_size=4)),
        "files": file_specs,
    }


@settings(max_examples=400 if os.environ.get("TASKEVAL_SLOW") == "1" else 40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=generated_prs())
def test_any_generated_pr_gives_the_same_bundle_through_both_transports(
        spec: dict[str, Any]) -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482, **spec)
    with fake.mock():
        rest, graphql = _both(fake, 482)
    _assert_same(rest, graphql)


def test_the_linked_issue_scenario_reads_what_it_says() -> None:
    fake = FakeGitHub()
    number = _linked_issues(fake)
    with fake.mock():
        rest, graphql = _both(fake, number)
    for raw in (rest, graphql):
        assert [(i.number, i.labels, i.is_pull) for i in raw.linked_issues] == [
            (20, ["Type: Bug", "good first issue"], False), (22, ["documentation"], True)]
        assert [(i.resource, i.status) for i in raw.issues] == [("linked_issues", 404)]
    assert graphql.graphql_queries == 2  # the PR, then its three linked issues in one query
