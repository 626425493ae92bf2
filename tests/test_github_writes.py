"""Writes against the fake GitHub (HTTP-level mocks only): the marker comment over REST and
GraphQL, reactions, and collaborators' permissions."""

from __future__ import annotations

import threading

import pytest
from github import Github

from taskeval.github import (
    MARKER,
    AuthError,
    GitHubError,
    NotFoundError,
    add_reaction,
    collaborator_permission,
    upsert_comment,
)
from taskeval.github import collect as collect_over
from taskeval.raw import CommentSeed
from tests import fakegraphql
from tests.fakegithub import ACTIONS_PERMISSIONS, FAKE_TOKEN, FakeGitHub, Fault
from tests.github_support import REPO, client, fake_in_process  # noqa: F401 (the fixture)

# -------------------------------------------------------------------------------------- comments


def test_upsert_on_a_missing_pr_is_not_found(fake: FakeGitHub) -> None:
    fake.add_repo(REPO)

    with pytest.raises(NotFoundError, match="PR #5 in octo-org/widgets"):
        upsert_comment(client(fake), REPO, 5, "score", own_login="taskeval-user")


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
