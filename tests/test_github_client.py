"""The GitHub client against the fake GitHub (HTTP-level mocks only): credentials, errors,
retries and rate limits, the API root, the token's environment variables, PR references."""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime

import pytest

from taskeval.github import (
    AuthError,
    GitHubError,
    NotFoundError,
    RateLimitError,
    api_url,
    env_token,
    make_client,
    parse_pr_ref,
    upsert_comment,
)
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault, app_key_pair
from tests.github_support import BASELINE_REQUESTS, REPO, client, collect, fake_in_process  # noqa: F401 (the fixture)

# ---------------------------------------------------------------------------- access and errors


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
