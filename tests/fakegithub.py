"""An in-memory GitHub REST API for tests and benchmarks, served two ways.

``FakeGitHub`` holds repositories, pull requests and everything around them as the JSON GitHub
documents, routes requests through one pure-ish ``handle(method, path, query, headers, body)``, and
is reachable either in-process through ``responses`` (``with fake.mock():``) or over real HTTP from
a local ``ThreadingHTTPServer`` (``with fake.serve():``, for subprocess tests; put ``fake.url`` in
``GITHUB_API_URL``). Both transports go through the same router, so a test sees the same pages,
``Link`` headers, rate-limit headers and error bodies either way.

    fake = FakeGitHub()
    pr = fake.add_pr("octo-org/widgets", 482, commits=3, ci="fail-then-fix")
    with fake.mock():                       # base URL: fake.url (a GHES-style /api/v3 root)
        raw = collect(make_client(FAKE_TOKEN, base_url=fake.url), pr.repo, pr.number)
    assert fake.count(route="pulls.commits") == 1

Faults are queued per path prefix (``fake.inject("/repos/o/r/commits", Fault.server_error())``)
and consumed one per matching request. Every request is logged (method, path, query, status,
route, who) for assertions such as "no request per commit" or "exactly one comment".

Payload URLs are written against a placeholder API root and rewritten to the serving URL on the
way out, so PyGithub objects that follow ``url`` fields stay on the fake.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import json
import re
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, Literal
from urllib.parse import parse_qs, unquote, urlsplit

import responses
from github.Requester import Requester

from taskeval.corpus.replay import paginate
from taskeval.evidence.vocabulary import issues_to_read
from tests import fakegraphql
from tests.fakegraphql import GRAPHQL_LIMIT

FAKE_TOKEN: Final = "ghp_FakeToken0000000000000000000000000000"
MOCK_URL: Final = "https://github.fake.test/api/v3"  # GHES-shaped: a host and a path prefix
API_PLACEHOLDER: Final = "https://api.github.invalid"
DOCS: Final = "https://docs.github.com/rest"
BASE_TIME: Final = datetime(2025, 3, 4, 9, 0, tzinfo=UTC)

CI = Literal["green", "red", "none", "fail-then-fix"]
Permissions = Mapping[str, str]


# ---------------------------------------------------------------------------------- small parts


@dataclass
class Fault:
    """One faulty answer. ``status=None`` answers normally (after ``delay``)."""

    status: int | None = 500
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    truncated: bool = False
    method: str | None = None  # only requests with this verb consume the fault
    applied: bool = False  # the request takes effect first; then ``delay`` and this answer
    echo: bool = False  # the error message repeats the request's Authorization header

    def echoing(self) -> Fault:
        """The same fault, its message repeating the credential sent (as some proxies do)."""
        return replace(self, echo=True)

    def on(self, method: str) -> Fault:
        """The same fault, consumed only by requests with this verb."""
        return replace(self, method=method.upper())

    @classmethod
    def server_error(cls, status: int = 502) -> Fault:
        messages = {500: "Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
                    504: "Gateway Timeout"}
        return cls(status, {"message": messages.get(status, "Server Error")})

    @classmethod
    def secondary_rate_limit(cls, retry_after: int | None = 1) -> Fault:
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return cls(403, {
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes "
                       "before you try again. If you reach out to GitHub Support for help, "
                       "please include the request ID 0000:1111:2222:3333:4444.",
            "documentation_url": f"{DOCS}/overview/rate-limits-for-the-rest-api"
                                 "#about-secondary-rate-limits",
        }, headers)

    @classmethod
    def primary_rate_limit(cls, reset_in: int = 3600) -> Fault:
        return cls(403, {
            "message": "API rate limit exceeded for user ID 1. If you reach out to GitHub "
                       "Support for help, please include the request ID 0000:1111:2222:3333.",
            "documentation_url": f"{DOCS}/overview/rate-limits-for-the-rest-api"
                                 "#about-the-primary-rate-limit",
        }, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + reset_in)})

    @classmethod
    def not_found(cls) -> Fault:
        return cls(404, _error_body("Not Found", 404))

    @classmethod
    def unauthorized(cls) -> Fault:
        return cls(401, _error_body("Bad credentials", 401))

    @classmethod
    def forbidden(cls, message: str = "Resource not accessible by integration") -> Fault:
        return cls(403, _error_body(message, 403))

    @classmethod
    def truncated_json(cls) -> Fault:
        return cls(None, truncated=True)

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        return cls(None, delay=seconds)

    @classmethod
    def lost_answer(cls, status: int | None = 502, *, delay: float = 0.0) -> Fault:
        """GitHub did the work (a comment is created) but the answer is an error or, with
        ``status=None`` and a ``delay`` longer than the client's timeout, never arrives in time."""
        body = cls.server_error(status).body if status is not None else None
        return cls(status, body, delay=delay, applied=True)


@dataclass(frozen=True)
class LoggedRequest:
    method: str
    path: str  # relative to the API root, e.g. /repos/octo-org/widgets/pulls/482
    query: dict[str, str]
    status: int
    route: str  # e.g. "pulls.commits"; "unknown" when no route matched
    login: str | None  # who the credentials belong to; never the token itself


@dataclass
class Identity:
    login: str
    type: str = "User"
    integration: bool = False  # installation / Actions token: no /user, permission-checked
    permissions: Permissions | None = None  # None: everything (a classic token with repo scope)


@functools.cache
def app_key_pair(private_format: str = "PKCS8") -> tuple[str, str]:
    """(private PEM, public PEM) of an RSA key for a fake GitHub App; generated once per format
    ("PKCS8" or "TraditionalOpenSSL") because 2048-bit generation is slow."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM,
                                getattr(serialization.PrivateFormat, private_format),
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@dataclass
class FakeApp:
    app_id: int
    slug: str
    public_key: str  # PEM; JWTs are verified with it
    installations: dict[int, list[str]]  # installation id -> repositories
    permissions: dict[str, str]


@dataclass
class FakePR:
    """What ``add_pr`` built, for assertions."""

    repo: str
    number: int
    head_sha: str
    head_ref: str
    commit_shas: list[str]
    data: dict[str, Any]


@dataclass
class _Pull:
    data: dict[str, Any]
    commits: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    review_comments: list[dict[str, Any]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)  # extra timeline events
    via_app: dict[str, Any] | None = None  # the issue object's ``performed_via_github_app``


@dataclass
class _Repo:
    data: dict[str, Any]
    pulls: dict[int, _Pull] = field(default_factory=dict)
    issue_comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    workflow_runs: list[dict[str, Any]] = field(default_factory=list)
    contents: dict[tuple[str, str], str] = field(default_factory=dict)  # (ref, path) -> text
    permissions: dict[str, tuple[str, str]] = field(default_factory=dict)  # login -> (perm, role)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)  # plain issues (not PRs)


class _Answer(Exception):
    """Raised inside a route to answer with an error status."""

    def __init__(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


def _error_body(message: str, status: int, doc: str = "") -> dict[str, Any]:
    return {"message": message, "documentation_url": f"{DOCS}{doc}", "status": str(status)}


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sha(*parts: object) -> str:
    return hashlib.sha1(":".join(map(str, parts)).encode()).hexdigest()


def _num(*parts: object) -> int:
    return int(_sha(*parts)[:8], 16)


def _api(path: str) -> str:
    return f"{API_PLACEHOLDER}{path}"


# ------------------------------------------------------------------------------------- the fake


_SEG = r"[^/]+"
_REPO = rf"/repos/(?P<owner>{_SEG})/(?P<repo>{_SEG})"
_ROUTES: Final[Sequence[tuple[str, str, str]]] = (
    ("GET", r"/user", "user"),
    ("GET", r"/rate_limit", "rate_limit"),
    ("GET", r"/app", "app"),
    ("POST", r"/app/installations/(?P<id>\d+)/access_tokens", "app.token"),
    ("GET", rf"{_REPO}/installation", "repos.installation"),
    ("GET", rf"{_REPO}", "repos.get"),
    ("GET", rf"{_REPO}/pulls", "pulls.list"),
    ("GET", rf"{_REPO}/pulls/(?P<n>\d+)", "pulls.get"),
    ("GET", rf"{_REPO}/pulls/(?P<n>\d+)/commits", "pulls.commits"),
    ("GET", rf"{_REPO}/pulls/(?P<n>\d+)/reviews", "pulls.reviews"),
    ("GET", rf"{_REPO}/pulls/(?P<n>\d+)/comments", "pulls.review_comments"),
    ("GET", rf"{_REPO}/pulls/(?P<n>\d+)/files", "pulls.files"),
    ("GET", rf"{_REPO}/issues", "issues.list"),
    ("GET", rf"{_REPO}/issues/(?P<n>\d+)", "issues.get"),
    ("GET", rf"{_REPO}/issues/(?P<n>\d+)/comments", "issues.comments"),
    ("GET", rf"{_REPO}/issues/(?P<n>\d+)/timeline", "issues.timeline"),
    ("POST", rf"{_REPO}/issues/(?P<n>\d+)/comments", "issues.create_comment"),
    ("GET", rf"{_REPO}/issues/comments/(?P<id>\d+)", "issues.get_comment"),
    ("PATCH", rf"{_REPO}/issues/comments/(?P<id>\d+)", "issues.update_comment"),
    ("DELETE", rf"{_REPO}/issues/comments/(?P<id>\d+)", "issues.delete_comment"),
    ("GET", rf"{_REPO}/issues/comments/(?P<id>\d+)/reactions", "reactions.list"),
    ("POST", rf"{_REPO}/issues/comments/(?P<id>\d+)/reactions", "reactions.create"),
    ("GET", rf"{_REPO}/commits/(?P<ref>{_SEG})", "commits.get"),
    ("GET", rf"{_REPO}/commits/(?P<ref>{_SEG})/check-runs", "checks.list"),
    ("GET", rf"{_REPO}/actions/runs", "actions.runs"),
    ("GET", rf"{_REPO}/contents/(?P<path>.+)", "repos.contents"),
    ("GET", rf"{_REPO}/collaborators/(?P<login>{_SEG})/permission", "repos.permission"),
    ("POST", r"/graphql", "graphql"),
)
_COMPILED: Final = [(m, re.compile(p), name) for m, p, name in _ROUTES]
# Fine-grained permission each route needs from an installation token; (any of, level).
_NEEDS: Final[Mapping[str, tuple[tuple[str, ...], str]]] = {
    "repos.get": (("metadata",), "read"),
    "repos.permission": (("metadata",), "read"),
    "pulls.list": (("pull_requests",), "read"),
    "pulls.get": (("pull_requests",), "read"),
    "pulls.commits": (("pull_requests",), "read"),
    "pulls.reviews": (("pull_requests",), "read"),
    "pulls.review_comments": (("pull_requests",), "read"),
    "pulls.files": (("pull_requests",), "read"),
    "issues.list": (("issues",), "read"),
    "issues.get": (("issues", "pull_requests"), "read"),
    "issues.comments": (("issues", "pull_requests"), "read"),
    "issues.timeline": (("issues", "pull_requests"), "read"),
    "issues.get_comment": (("issues", "pull_requests"), "read"),
    "reactions.list": (("issues", "pull_requests"), "read"),
    "issues.create_comment": (("issues", "pull_requests"), "write"),
    "issues.update_comment": (("issues", "pull_requests"), "write"),
    "issues.delete_comment": (("issues", "pull_requests"), "write"),
    "reactions.create": (("issues", "pull_requests"), "write"),
    "commits.get": (("contents",), "read"),
    "checks.list": (("checks",), "read"),
    "actions.runs": (("actions",), "read"),
    "repos.contents": (("contents",), "read"),
}
ACTIONS_PERMISSIONS: Final = {  # the default GITHUB_TOKEN of a pull_request_target workflow
    "metadata": "read", "contents": "read", "pull_requests": "write", "issues": "write",
    "checks": "read", "actions": "read",
}


class FakeGitHub:
    """GitHub's REST API for one test: state, router, fault injection and a request log."""

    def __init__(
        self,
        token: str | None = FAKE_TOKEN,
        *,
        login: str = "taskeval-user",
        integration: bool = False,
        permissions: Permissions | None = None,
        latency: float = 0.0,
        html_base: str = "https://github.com",
        rate_limit: int = 5000,
        rate_window: float = 3600.0,
        enforce_rate_limit: bool = False,
    ) -> None:
        self.url = MOCK_URL
        self.prefix = ""
        self.html_base = html_base.rstrip("/")
        self.latency = latency
        self.rate_limit = rate_limit
        self.rate_remaining = rate_limit
        self.rate_window = rate_window
        self.rate_reset = int(time.time() + rate_window)
        # Like GitHub: once the window's quota is spent, 403 with X-RateLimit-Remaining 0 until
        # the reset; off by default, where the count floors at 0 and requests still succeed.
        self.enforce_rate_limit = enforce_rate_limit
        self.rate_limited = 0  # requests refused for the primary limit
        self.not_modified = 0  # conditional GETs answered 304 (not charged)
        # App installation tokens live this long (GitHub: one hour); a token used after its
        # expiry is refused with 401, as GitHub refuses it.
        self.installation_token_ttl = 3600.0
        self.token_expiry: dict[str, float] = {}
        self.expired_uses = 0  # requests refused for an expired installation token
        # The GraphQL API (tests/fakegraphql.py): its own budget of points, in the same window.
        self.graphql_enabled = True  # False: no GraphQL endpoint (404), as on some GHES setups
        self.graphql_limit = GRAPHQL_LIMIT
        self.graphql_remaining = GRAPHQL_LIMIT
        self.graphql_points = 0  # points charged so far
        self.graphql_max_page: int | None = None  # a bigger `first`/`last` times out
        self.graphql_queries: list[tuple[str, dict[str, Any]]] = []  # every executed query
        # Conversation-comment writes made, by action (create/update/delete), whichever API
        # made them: what a PR's readers see happen, whatever the transport.
        self.comment_writes: Counter[str] = Counter()
        self.tokens: dict[str, Identity] = {}
        if token is not None:
            self.add_token(token, login, integration=integration, permissions=permissions)
        self.repos: dict[str, _Repo] = {}
        self.apps: dict[int, FakeApp] = {}
        self.reactions: dict[int, list[dict[str, Any]]] = {}
        self.log: list[LoggedRequest] = []
        self.credentials_seen: set[str] = set()  # every Authorization credential presented
        self._faults: dict[str, deque[Fault]] = {}
        self._lock = threading.RLock()
        self._ids = itertools.count(1_000_001)
        self._request_ids = itertools.count(1)

    # ----------------------------------------------------------------------------- identities

    def add_token(
        self,
        token: str,
        login: str,
        *,
        integration: bool = False,
        permissions: Permissions | None = None,
        type: str | None = None,
    ) -> Identity:
        """Accept ``token`` as ``login``. Integration tokens cannot read ``/user`` and are
        checked against ``permissions`` (``ACTIONS_PERMISSIONS`` when not given)."""
        identity = Identity(
            login=login,
            type=type or ("Bot" if login.endswith("[bot]") else "User"),
            integration=integration,
            permissions=(dict(permissions) if permissions is not None
                         else dict(ACTIONS_PERMISSIONS) if integration else None),
        )
        self.tokens[token] = identity
        return identity

    def add_app(
        self,
        app_id: int,
        public_key: str,
        *,
        slug: str = "taskeval",
        installations: Mapping[int, Sequence[str]] | None = None,
        permissions: Permissions | None = None,
    ) -> FakeApp:
        """A GitHub App whose RS256 JWTs (signed by the matching private key) are accepted."""
        app = FakeApp(app_id, slug, public_key,
                      {k: list(v) for k, v in (installations or {}).items()},
                      dict(permissions or ACTIONS_PERMISSIONS))
        self.apps[app_id] = app
        return app

    # -------------------------------------------------------------------------------- builders

    def user(self, login: str, type: str | None = None) -> dict[str, Any]:
        # GitHub's Copilot agent is the Bot "Copilot" on REST (no [bot] suffix).
        kind = type or ("Bot" if login.endswith("[bot]") or login == "Copilot" else "User")
        uid = _num("user", login) % 90_000_000 + 1
        return {
            "login": login, "id": uid, "node_id": f"U_{uid}",
            "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
            "url": _api(f"/users/{login}"), "html_url": f"{self.html_base}/{login}",
            "type": kind, "site_admin": False,
        }

    def add_repo(
        self,
        full_name: str = "octo-org/widgets",
        *,
        private: bool = False,
        default_branch: str = "main",
        config_text: str | None = None,
    ) -> dict[str, Any]:
        """A repository (returned as its REST payload); re-adding returns the existing one."""
        with self._lock:
            if full_name in self.repos:
                return self.repos[full_name].data
            owner, name = full_name.split("/")
            rid = _num("repo", full_name) % 900_000_000 + 1
            data = {
                "id": rid, "node_id": f"R_{rid}", "name": name, "full_name": full_name,
                "private": private, "owner": self.user(owner, "Organization"),
                "html_url": f"{self.html_base}/{full_name}", "description": "Widgets, parsed.",
                "fork": False, "url": _api(f"/repos/{full_name}"),
                "pulls_url": _api(f"/repos/{full_name}/pulls{{/number}}"),
                "created_at": "2023-01-10T08:00:00Z", "updated_at": _iso(BASE_TIME),
                "pushed_at": _iso(BASE_TIME), "default_branch": default_branch,
                "visibility": "private" if private else "public", "archived": False,
                "language": "Python", "stargazers_count": 42, "forks_count": 3,
                "open_issues_count": 7,
            }
            repo = _Repo(data)
            repo.permissions["octocat"] = ("admin", "admin")
            self.repos[full_name] = repo
            if config_text is not None:
                repo.contents[(default_branch, ".github/taskeval.yml")] = config_text
            return data

    def set_config(self, repo: str, text: str, *, ref: str | None = None,
                   path: str = ".github/taskeval.yml") -> None:
        with self._lock:
            state = self.repos[repo]
            state.contents[(ref or state.data["default_branch"], path)] = text

    def set_permission(self, repo: str, login: str, permission: str,
                       role_name: str | None = None) -> None:
        with self._lock:
            self.repos[repo].permissions[login] = (permission, role_name or permission)

    def add_pr(
        self,
        repo: str = "octo-org/widgets",
        number: int = 482,
        *,
        commits: int = 3,
        title: str = "Handle empty input in parse_widget",
        body: str | None = None,
        author: str = "copilot-swe-agent[bot]",
        merged: bool = True,
        draft: bool = False,
        state: str | None = None,
        ci: CI = "green",
        rerun: bool = False,
        reviews: Sequence[Mapping[str, Any]] | None = None,
        review_comments: Sequence[Mapping[str, Any]] | None = None,
        issue_comments: Sequence[Mapping[str, Any]] | None = None,
        files: Sequence[Mapping[str, Any]] | None = None,
        fork: str | None = None,
        head_ref: str | None = None,
        labels: Sequence[str] = ("bug",),
        verified: bool = True,
        config_text: str | None = None,
        created_at: datetime = BASE_TIME,
        via_app: str | None = None,
        linked_issues: bool = True,
    ) -> FakePR:
        """A pull request with everything around it; defaults give a merged agent PR with green
        CI, one approving review, one review comment and a short conversation.

        ``commits`` above 250 exercises GitHub's cap on listed PR commits (``commits`` in the PR
        payload keeps the true number). ``ci``: ``green``, ``red`` (head fails), ``none`` (no
        checks or runs), ``fail-then-fix`` (every commit's run fails but the head's). ``rerun``
        gives the head's run a second attempt and an earlier failed attempt of its ``test`` check
        run. ``fork="someone"`` opens the PR from ``someone/<name>`` (branch ``patch-1``).
        ``via_app="chatgpt-codex-connector"`` says the PR was opened through that GitHub App: as on
        GitHub, only its issue object (``/issues/{n}``) carries ``performed_via_github_app``.
        The same-repository issues the body links (the default body fixes #12) are created as
        plain issues labelled ``bug`` unless they exist already (``add_issue`` first to label
        them otherwise) or ``linked_issues=False`` (then reading them answers 404).
        """
        self.add_repo(repo)
        if config_text is not None:
            self.set_config(repo, config_text)
        owner, name = repo.split("/")
        head_owner = fork or owner
        head_full = f"{head_owner}/{name}"
        ref = head_ref or ("patch-1" if fork else "copilot/fix-empty-input")
        closed = merged or state == "closed"
        start = created_at - timedelta(minutes=5)
        shas = [_sha(repo, number, "commit", i) for i in range(commits)]
        last_commit_at = start + timedelta(minutes=7 * max(commits - 1, 0))
        merged_at = last_commit_at + timedelta(hours=1) if merged else None
        closed_at = merged_at or (last_commit_at + timedelta(hours=2) if closed else None)
        pid = _num("pull", repo, number) % 2_000_000_000 + 1
        file_specs = list(files) if files is not None else [
            {"filename": "src/widgets/parser.py", "additions": 12, "deletions": 3},
            {"filename": "tests/test_parser.py", "additions": 24, "deletions": 0},
            {"filename": "CHANGELOG.md", "additions": 1, "deletions": 0},
        ]
        base_sha = _sha(repo, "base", number)
        head_repo = self.add_repo(head_full) if fork else self.repos[repo].data
        if fork:
            head_repo["fork"] = True
        data: dict[str, Any] = {
            "url": _api(f"/repos/{repo}/pulls/{number}"), "id": pid, "node_id": f"PR_{pid}",
            "html_url": f"{self.html_base}/{repo}/pull/{number}",
            "diff_url": f"{self.html_base}/{repo}/pull/{number}.diff",
            "patch_url": f"{self.html_base}/{repo}/pull/{number}.patch",
            "issue_url": _api(f"/repos/{repo}/issues/{number}"),
            "commits_url": _api(f"/repos/{repo}/pulls/{number}/commits"),
            "review_comments_url": _api(f"/repos/{repo}/pulls/{number}/comments"),
            "comments_url": _api(f"/repos/{repo}/issues/{number}/comments"),
            "statuses_url": _api(f"/repos/{repo}/statuses/{shas[-1] if shas else base_sha}"),
            "number": number, "state": "closed" if closed else (state or "open"),
            "locked": False, "title": title,
            "user": self.user(author),
            "body": body if body is not None else _DEFAULT_BODY,
            "labels": [{"id": _num("label", lb), "name": lb, "color": "d73a4a", "default": True}
                       for lb in labels],
            "milestone": None, "active_lock_reason": None,
            "created_at": _iso(created_at),
            "updated_at": _iso(closed_at or last_commit_at),
            "closed_at": _iso(closed_at) if closed_at else None,
            "merged_at": _iso(merged_at) if merged_at else None,
            "merge_commit_sha": _sha(repo, number, "merge") if merged else None,
            "assignee": None, "assignees": [], "requested_reviewers": [], "requested_teams": [],
            "head": {
                "label": f"{head_owner}:{ref}", "ref": ref,
                "sha": shas[-1] if shas else base_sha,
                "user": self.user(head_owner), "repo": head_repo,
            },
            "base": {
                "label": f"{owner}:main", "ref": "main", "sha": base_sha,
                "user": self.user(owner, "Organization"), "repo": self.repos[repo].data,
            },
            "author_association": "CONTRIBUTOR" if fork else "NONE",
            "auto_merge": None, "draft": draft, "merged": merged,
            "mergeable": None if merged else True, "rebaseable": None,
            "mergeable_state": "unknown" if merged else "clean",
            "merged_by": self.user("octocat") if merged else None,
            "comments": 0, "review_comments": 0, "maintainer_can_modify": False,
            "commits": commits,
            "additions": sum(int(f.get("additions", 0)) for f in file_specs),
            "deletions": sum(int(f.get("deletions", 0)) for f in file_specs),
            "changed_files": len(file_specs),
        }
        pull = _Pull(data, via_app=self.app_payload(via_app) if via_app else None)
        pull.commits = [
            self._commit(repo, sha, i, start + timedelta(minutes=7 * i), author,
                         shas[i - 1] if i else base_sha, verified, commits)
            for i, sha in enumerate(shas)
        ]
        pull.files = [self._file(repo, data["head"]["sha"], spec) for spec in file_specs]
        review_specs = list(reviews) if reviews is not None else [
            {"user": "octocat", "state": "APPROVED", "body": "Looks good, thanks!"}
        ]
        review_at = last_commit_at + timedelta(minutes=20)
        pull.reviews = [
            self._review(repo, number, spec, review_at + timedelta(minutes=i),
                         data["head"]["sha"])
            for i, spec in enumerate(review_specs)
        ]
        rc_specs = list(review_comments) if review_comments is not None else [
            {"user": "octocat", "body": "Could this also cover whitespace-only input?",
             "path": "src/widgets/parser.py"}
        ]
        pull.review_comments = [
            self._review_comment(repo, number, spec, review_at - timedelta(minutes=10 - i),
                                 data["head"]["sha"], pull.reviews)
            for i, spec in enumerate(rc_specs)
        ]
        ic_specs = list(issue_comments) if issue_comments is not None else [
            {"user": "octocat", "body": "@copilot please also add a test for `None`.",
             "author_association": "OWNER"},
            {"user": author, "body": "Added `test_parse_none` and handled `None` input."},
        ]
        if linked_issues:  # the issues the body links exist, as they do on GitHub
            for linked in issues_to_read(title, data["body"], number, repo):
                if linked not in self.repos[repo].issues and linked not in self.repos[repo].pulls:
                    self.add_issue(repo, linked)
        with self._lock:
            state_repo = self.repos[repo]
            state_repo.pulls[number] = pull
            comments = state_repo.issue_comments.setdefault(number, [])
            for i, spec in enumerate(ic_specs):
                comments.append(self._issue_comment(
                    repo, number, str(spec["body"]), str(spec.get("user", "octocat")),
                    created_at + timedelta(minutes=30 + i),
                    str(spec.get("author_association") or self._association(repo, spec))))
            self._sync_counts(repo, number)
            self._add_ci(repo, pull, ci, rerun, ref, head_full)
        return FakePR(repo, number, data["head"]["sha"], ref, shas, data)

    def add_issue(self, repo: str = "octo-org/widgets", number: int = 12, *,
                  title: str = "parse_widget raises IndexError on empty input",
                  labels: Sequence[str] = ("bug",), state: str = "open", user: str = "octocat",
                  created_at: datetime = BASE_TIME - timedelta(days=2)) -> dict[str, Any]:
        """A plain issue (not a PR), in GitHub's issue shape (``GET /repos/{o}/{r}/issues/{n}``
        and the repository's issue listing); re-adding replaces it."""
        self.add_repo(repo)
        iid = _num("issue", repo, number) % 2_000_000_000 + 1
        issue_url = f"/repos/{repo}/issues/{number}"
        data = {
            "id": iid, "node_id": f"I_{iid}", "url": _api(issue_url),
            "repository_url": _api(f"/repos/{repo}"),
            "labels_url": _api(f"{issue_url}/labels{{/name}}"),
            "comments_url": _api(f"{issue_url}/comments"),
            "events_url": _api(f"{issue_url}/events"),
            "html_url": f"{self.html_base}/{repo}/issues/{number}",
            "number": number, "title": title, "user": self.user(user),
            "labels": [{"id": _num("label", lb), "node_id": f"LA_{_num('label', lb)}",
                        "name": lb, "color": "d73a4a", "default": False} for lb in labels],
            "state": state, "locked": False, "assignee": None, "assignees": [],
            "milestone": None, "comments": 0, "created_at": _iso(created_at),
            "updated_at": _iso(created_at), "closed_at": None, "author_association": "OWNER",
            "active_lock_reason": None, "body": "", "performed_via_github_app": None,
            "state_reason": None, "timeline_url": _api(f"{issue_url}/timeline"),
        }
        with self._lock:
            self.repos[repo].issues[number] = data
        return data

    def issue_object(self, repo: str, number: int) -> dict[str, Any] | None:
        """What ``GET /repos/{o}/{r}/issues/{n}`` answers: a PR's issue object, a plain
        issue, or None (404)."""
        state = self.repos[repo]
        if number in state.pulls:
            return self._pr_issue(repo, state.pulls[number])
        return state.issues.get(number)

    def add_issue_comment(self, repo: str, number: int, body: str, *, user: str = "octocat",
                          author_association: str = "OWNER") -> dict[str, Any]:
        with self._lock:
            comment = self._issue_comment(repo, number, body, user, BASE_TIME + timedelta(
                hours=6, minutes=len(self.repos[repo].issue_comments.get(number, []))),
                author_association)
            self.repos[repo].issue_comments.setdefault(number, []).append(comment)
            self._sync_counts(repo, number)
            return comment

    def add_check_run(self, repo: str, head_sha: str, name: str, conclusion: str | None,
                      *, status: str = "completed", started_at: datetime = BASE_TIME,
                      summary: str = "") -> dict[str, Any]:
        with self._lock:
            run = self._check_run(repo, head_sha, name, conclusion, status, started_at, summary)
            self.repos[repo].check_runs.setdefault(head_sha, []).append(run)
            return run

    def add_workflow_run(self, repo: str, head_sha: str, head_branch: str,
                         conclusion: str | None, *, name: str = "CI",
                         event: str = "pull_request", run_attempt: int = 1,
                         created_at: datetime = BASE_TIME,
                         head_repo: str | None = None) -> dict[str, Any]:
        with self._lock:
            run = self._workflow_run(repo, head_sha, head_branch, conclusion, name, event,
                                     run_attempt, created_at, head_repo or repo)
            self.repos[repo].workflow_runs.append(run)
            return run

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """The PR's conversation comments as stored now (after any writes)."""
        with self._lock:
            return list(self.repos[repo].issue_comments.get(number, []))

    # -------------------------------------------------------------------------- fault injection

    def inject(self, prefix: str, *faults: Fault, times: int = 1, exact: bool = False) -> None:
        """Queue faults for requests whose path (relative to the API root) starts with
        ``prefix`` (is ``prefix`` with ``exact``: ``/issues/7`` but not ``/issues/7/comments``);
        each request consumes one. The longest matching prefix wins, an exact one first."""
        with self._lock:
            key = (prefix.rstrip("/") or "/") + ("$" if exact else "")
            queue = self._faults.setdefault(key, deque())
            for _ in range(times):
                queue.extend(faults)

    def clear_faults(self) -> int:
        """Drop every queued fault (an outage ends); returns how many were dropped."""
        with self._lock:
            dropped = self.pending_faults()
            self._faults.clear()
            return dropped

    def pending_faults(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._faults.values())

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            keys = sorted((k for k, q in self._faults.items() if q and (
                path == k.removesuffix("$") if k.endswith("$") else
                path == k or path.startswith(k.rstrip("/") + "/") or k == "/")),
                key=len, reverse=True)
            for key in keys:
                queue = self._faults[key]
                for fault in list(queue):
                    if fault.method is None or fault.method == method:
                        queue.remove(fault)
                        return fault
            return None

    # ---------------------------------------------------------------------------------- the log

    def count(self, *, route: str | None = None, method: str | None = None,
              prefix: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.log if (route is None or r.route == route)
                       and (method is None or r.method == method)
                       and (prefix is None or r.path.startswith(prefix)))

    def counts(self) -> Counter[str]:
        """Requests per route, e.g. ``{"pulls.commits": 3, "repos.get": 1}``."""
        with self._lock:
            return Counter(r.route for r in self.log)

    def reset_log(self) -> None:
        with self._lock:
            self.log.clear()

    # ------------------------------------------------------------------------------- the router

    def handle(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | Sequence[str]] | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | str | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        """Answer one request: ``(status, headers, JSON value or raw bytes)``.

        ``path`` is relative to the API root; ``query`` values may be lists (``parse_qs``).
        Sleeps for the configured latency (outside the lock, so concurrent requests overlap).
        """
        flat = {k: (v[0] if isinstance(v, list | tuple) else v) for k, v in (query or {}).items()}
        lower = {k.lower(): v for k, v in (headers or {}).items()}
        method = method.upper()
        path = "/" + unquote(path).strip("/") if path.strip("/") else "/"
        route = next((name for m, rx, name in _COMPILED if m == method and rx.fullmatch(path)),
                     "unknown")
        if self.latency:
            time.sleep(self.latency)
        fault = self._take_fault(method, path)
        if self.enforce_rate_limit and route not in ("rate_limit", "graphql"):
            with self._lock:
                self._roll_rate_window()
                spent = self.rate_remaining <= 0
                if spent:
                    self.rate_limited += 1
            if spent and fault is None:
                fault = Fault.primary_rate_limit(max(0, self.rate_reset - int(time.time())))
        if fault is not None and fault.delay and not fault.applied:
            time.sleep(fault.delay)
        credential = (lower.get("authorization") or "").partition(" ")[2].strip()
        if credential:
            with self._lock:
                self.credentials_seen.add(credential)
        identity: Identity | None = None
        extra: dict[str, str] = {}
        truncated = False
        try:
            identity = self._authenticate(lower.get("authorization"), route)
            if fault is not None and fault.status is not None and not fault.applied:
                extra = dict(fault.headers)
                body_out = fault.body
                if fault.echo:
                    said = (fault.body or {}).get("message", "")
                    body_out = {**(fault.body or {}), "message":
                                f"{said} (Authorization: {lower.get('authorization')})"}
                raise _Answer(fault.status, body_out, fault.headers)
            truncated = fault is not None and fault.truncated
            status, payload, extra = self._route(method, path, flat, route, identity, body)
            if fault is not None and fault.applied:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.status is not None:
                    raise _Answer(fault.status, fault.body, fault.headers)
        except _Answer as answer:
            status, payload, extra = answer.status, answer.body, answer.headers
        # Like GitHub: a 200 GET carries an ETag, and a conditional GET whose tag still matches
        # is answered 304 Not Modified with no body and not charged to the rate limit.
        not_modified = False
        if method == "GET" and status == 200 and route != "rate_limit" and not truncated:
            extra = {**extra, "ETag": self.etag(payload, extra)}
            not_modified = lower.get("if-none-match") == extra["ETag"]
            if not_modified:
                status, payload = 304, None
                with self._lock:
                    self.not_modified += 1
        # GitHub does not charge /rate_limit; GraphQL has a budget of its own (its headers).
        out = self._headers(extra, charge=route not in ("rate_limit", "graphql")
                            and not not_modified)
        with self._lock:
            self.log.append(LoggedRequest(method, path, flat, status, route,
                                          identity.login if identity else None))
        if truncated:
            encoded = self.encode(payload)
            return status, out, encoded[: max(1, len(encoded) // 2)]
        return status, out, payload

    @staticmethod
    def etag(payload: Any, headers: Mapping[str, str]) -> str:
        """A strong ETag of an answer: its body and its Link header."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload, sort_keys=True,
                                                                     default=str).encode()
        link = str(headers.get("Link") or headers.get("link") or "").encode()
        return '"' + hashlib.sha256(data + b"|" + link).hexdigest()[:40] + '"'

    def encode(self, payload: Any) -> bytes:
        """The body bytes: JSON with placeholder URLs pointing at the serving root."""
        if isinstance(payload, bytes):
            return payload
        if payload is None:
            return b""
        return json.dumps(payload).replace(API_PLACEHOLDER, self.url).encode()

    def _roll_rate_window(self) -> None:
        now = time.time()
        if now >= self.rate_reset:
            self.rate_remaining = self.rate_limit
            self.graphql_remaining = self.graphql_limit
            self.rate_reset = int(now + self.rate_window)

    def _headers(self, extra: Mapping[str, str], charge: bool = True) -> dict[str, str]:
        with self._lock:
            self._roll_rate_window()
            if charge:
                self.rate_remaining = max(0, self.rate_remaining - 1)
            headers = {
                "Content-Type": "application/json; charset=utf-8",
                "X-GitHub-Media-Type": "github.v3; format=json",
                "X-GitHub-Request-Id": f"FAKE:{next(self._request_ids):06d}",
                "X-RateLimit-Limit": str(self.rate_limit),
                "X-RateLimit-Remaining": str(self.rate_remaining),
                "X-RateLimit-Reset": str(self.rate_reset),
                "X-RateLimit-Used": str(self.rate_limit - self.rate_remaining),
                "X-RateLimit-Resource": "core",
            }
        headers.update(extra)
        return headers

    def _authenticate(self, authorization: str | None, route: str) -> Identity | None:
        if not authorization:
            return None
        scheme, _, credential = authorization.partition(" ")
        credential = credential.strip()
        if scheme.lower() == "bearer" and credential.count(".") == 2:
            return self._app_identity(credential, route)
        if scheme.lower() in ("token", "bearer") and credential in self.tokens:
            if time.time() >= self.token_expiry.get(credential, float("inf")):
                with self._lock:
                    self.expired_uses += 1
                raise _Answer(401, _error_body("Bad credentials", 401))
            return self.tokens[credential]
        raise _Answer(401, _error_body("Bad credentials", 401))

    def _app_identity(self, jwt_token: str, route: str) -> Identity:
        import jwt  # PyJWT, a PyGithub dependency

        try:
            issuer = int(jwt.decode(jwt_token, options={"verify_signature": False})["iss"])
            app = self.apps[issuer]
            jwt.decode(jwt_token, app.public_key, algorithms=["RS256"], leeway=120)
        except (jwt.PyJWTError, KeyError, ValueError) as exc:
            raise _Answer(401, _error_body(
                "A JSON web token could not be decoded", 401)) from exc
        if route not in ("app", "app.token", "repos.installation"):
            raise _Answer(401, _error_body(
                "A JSON web token is only accepted on /app endpoints", 401))
        return Identity(login=f"{app.slug}[bot]", type="Bot", integration=True,
                        permissions={"app_id": str(app.app_id)})

    def _require(self, identity: Identity | None, route: str, repo: _Repo | None) -> None:
        if repo is not None and repo.data["private"] and identity is None:
            raise _Answer(404, _error_body("Not Found", 404))
        if route in ("issues.create_comment", "issues.update_comment", "issues.delete_comment",
                     "reactions.create") \
                and identity is None:
            raise _Answer(401, _error_body("Requires authentication", 401))
        if identity is None or identity.permissions is None or route not in _NEEDS:
            return
        scopes, level = _NEEDS[route]
        granted = [identity.permissions.get(scope) for scope in scopes]
        ok = any(g == "write" or (g == "read" and level == "read") for g in granted)
        if not ok:
            raise _Answer(403, _error_body("Resource not accessible by integration", 403))

    def _repo(self, match: re.Match[str] | None) -> tuple[str, _Repo]:
        assert match is not None
        full = f"{match['owner']}/{match['repo']}"
        for name, repo in self.repos.items():
            if name.lower() == full.lower():
                return name, repo
        raise _Answer(404, _error_body("Not Found", 404))

    def _pull(self, repo: _Repo, number: str) -> _Pull:
        pull = repo.pulls.get(int(number))
        if pull is None:
            raise _Answer(404, _error_body("Not Found", 404))
        return pull

    def _route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        route: str,
        identity: Identity | None,
        body: bytes | str | None,
    ) -> tuple[int, Any, dict[str, str]]:
        if route == "unknown":
            raise _Answer(404, _error_body("Not Found", 404))
        match = next(rx.fullmatch(path) for m, rx, name in _COMPILED
                     if name == route and m == method)
        if route == "user":
            if identity is None:
                raise _Answer(401, _error_body("Requires authentication", 401))
            if identity.integration:
                raise _Answer(403, _error_body("Resource not accessible by integration", 403))
            return 200, self.user(identity.login, identity.type), {}
        if route == "rate_limit":
            core = {"limit": self.rate_limit, "remaining": self.rate_remaining,
                    "reset": self.rate_reset, "used": self.rate_limit - self.rate_remaining}
            graphql = {"limit": self.graphql_limit, "remaining": self.graphql_remaining,
                       "reset": self.rate_reset,
                       "used": self.graphql_limit - self.graphql_remaining}
            return 200, {"resources": {"core": core, "graphql": graphql}, "rate": core}, {}
        if route.startswith("app") or route == "repos.installation":
            return self._app_route(route, match, identity)
        if route == "graphql":
            return fakegraphql.answer(self, identity, body)
        with self._lock:
            name, repo = self._repo(match)
            self._require(identity, route, repo)
            if route == "repos.get":
                return 200, repo.data, {}
            if route == "pulls.list":
                return self._page(self._list_pulls(repo, query), query, path)
            if route == "pulls.get":
                return 200, self._pull(repo, match["n"]).data, {}
            if route == "pulls.commits":
                commits = self._pull(repo, match["n"]).commits[:250]
                return self._page(commits, query, path)
            if route == "pulls.reviews":
                return self._page(self._pull(repo, match["n"]).reviews, query, path)
            if route == "pulls.review_comments":
                return self._page(self._pull(repo, match["n"]).review_comments, query, path)
            if route == "pulls.files":
                return self._page(self._pull(repo, match["n"]).files[:3000], query, path)
            if route == "issues.list":
                return self._page(self._list_issues(name, repo, query), query, path)
            if route == "issues.get":
                found = self.issue_object(name, int(match["n"]))
                if found is None:
                    raise _Answer(404, _error_body("Not Found", 404))
                return 200, found, {}
            if route == "issues.comments":
                if int(match["n"]) not in repo.pulls:
                    raise _Answer(404, _error_body("Not Found", 404))
                return self._page(repo.issue_comments.get(int(match["n"]), []), query, path)
            if route == "issues.timeline":
                if int(match["n"]) not in repo.pulls:
                    raise _Answer(404, _error_body("Not Found", 404))
                return self._page(self._timeline(repo, int(match["n"])), query, path)
            if route == "issues.create_comment":
                text = self._body_field(body, "body")
                assert identity is not None
                comment = self.write_comment("create", name, int(match["n"]), text, identity)
                if comment is None:
                    raise _Answer(404, _error_body("Not Found", 404))
                return 201, comment, {"Location": comment["url"]}
            if route == "issues.delete_comment":
                assert identity is not None
                if self.write_comment("delete", name, int(match["id"]), "", identity) is None:
                    raise _Answer(404, _error_body("Not Found", 404))
                return 204, None, {}
            if route in ("issues.get_comment", "issues.update_comment", "reactions.create",
                         "reactions.list"):
                comment = self._find_comment(repo, int(match["id"]))
                if route == "issues.get_comment":
                    return 200, comment, {}
                if route == "issues.update_comment":
                    assert identity is not None
                    self.write_comment("update", name, comment["id"],
                                       self._body_field(body, "body"), identity)
                    return 200, comment, {}
                reactions = self.reactions.setdefault(comment["id"], [])
                if route == "reactions.list":
                    return self._page(reactions, query, path)
                assert identity is not None
                content = self._body_field(body, "content")
                if content not in {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket",
                                   "eyes"}:
                    raise _Answer(422, {"message": "Validation Failed", "errors": [
                        {"resource": "Reaction", "code": "invalid", "field": "content"}],
                        "documentation_url": f"{DOCS}/reactions", "status": "422"})
                for existing in reactions:
                    if existing["content"] == content \
                            and existing["user"]["login"] == identity.login:
                        return 200, existing, {}
                reaction = {"id": next(self._ids), "node_id": "REA_x",
                            "user": self.user(identity.login, identity.type),
                            "content": content, "created_at": _iso(BASE_TIME)}
                reactions.append(reaction)
                return 201, reaction, {}
            if route == "commits.get":
                for pull in repo.pulls.values():
                    for commit in pull.commits:
                        if commit["sha"].startswith(match["ref"].lower()):
                            return 200, {**commit, "stats": {"total": 0, "additions": 0,
                                                             "deletions": 0}, "files": []}, {}
                raise _Answer(422, _error_body(f"No commit found for SHA: {match['ref']}", 422))
            if route == "checks.list":
                runs = repo.check_runs.get(match["ref"], [])
                if query.get("filter", "latest") == "latest":
                    latest: dict[str, dict[str, Any]] = {}
                    for run in runs:
                        if run["name"] not in latest or run["id"] > latest[run["name"]]["id"]:
                            latest[run["name"]] = run
                    runs = [r for r in runs if latest[r["name"]] is r]
                return self._page(runs, query, path, wrapper="check_runs")
            if route == "actions.runs":
                runs = sorted(self._filter_runs(repo.workflow_runs, query),
                              key=lambda r: (r["created_at"], r["id"]), reverse=True)
                if query.get("exclude_pull_requests") == "true":
                    runs = [{**r, "pull_requests": []} for r in runs]
                return self._page(runs, query, path, wrapper="workflow_runs")
            if route == "repos.contents":
                ref = query.get("ref") or repo.data["default_branch"]
                text = repo.contents.get((ref, match["path"]))
                if text is None:
                    raise _Answer(404, _error_body(
                        "Not Found", 404, "/repos/contents#get-repository-content"))
                return 200, self._content(name, ref, match["path"], text), {}
            if route == "repos.permission":
                login = match["login"]
                perm, role = repo.permissions.get(login, (
                    "read" if not repo.data["private"] else "none",
                    "read" if not repo.data["private"] else "none"))
                if login.startswith("ghost-"):
                    raise _Answer(404, _error_body(f"{login} is not a user", 404))
                return 200, {"permission": perm, "role_name": role,
                             "user": self.user(login)}, {}
        raise _Answer(404, _error_body("Not Found", 404))  # pragma: no cover - routes exhausted

    def _app_route(self, route: str, match: re.Match[str] | None,
                   identity: Identity | None) -> tuple[int, Any, dict[str, str]]:
        if identity is None or identity.permissions is None \
                or "app_id" not in identity.permissions:
            raise _Answer(401, _error_body(
                "A JSON web token could not be decoded", 401))
        app = self.apps[int(identity.permissions["app_id"])]
        if route == "app":
            return 200, {"id": app.app_id, "slug": app.slug, "name": app.slug.title(),
                         "owner": self.user("octo-org", "Organization"),
                         "permissions": app.permissions}, {}
        assert match is not None
        if route == "repos.installation":
            full = f"{match['owner']}/{match['repo']}"
            for iid, repos in app.installations.items():
                if any(r.lower() == full.lower() for r in repos):
                    return 200, {"id": iid, "app_id": app.app_id, "app_slug": app.slug,
                                 "account": self.user(match["owner"], "Organization"),
                                 "permissions": app.permissions}, {}
            raise _Answer(404, _error_body("Not Found", 404))
        iid = int(match["id"])
        if iid not in app.installations:
            raise _Answer(404, _error_body("Not Found", 404))
        token = f"ghs_{_sha('installation', iid, len(self.tokens))[:36]}"
        self.add_token(token, f"{app.slug}[bot]", integration=True, permissions=app.permissions)
        expires = datetime.now(UTC) + timedelta(seconds=self.installation_token_ttl)
        self.token_expiry[token] = expires.timestamp()
        return 201, {"token": token, "expires_at": _iso(expires),
                     "permissions": app.permissions, "repository_selection": "selected"}, {}

    @staticmethod
    def _list_pulls(repo: _Repo, query: Mapping[str, str]) -> list[dict[str, Any]]:
        """``GET /repos/{o}/{r}/pulls``: ``state`` (open, closed, all; default open), ``sort``
        (created, updated; default created), ``direction`` (default desc), the list's shape
        (no merge or size fields: those are in the full PR only)."""
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            raise _Answer(422, _error_body("Validation Failed", 422))
        sort = query.get("sort", "created")
        if sort not in ("created", "updated"):
            raise _Answer(422, _error_body("Validation Failed", 422))
        descending = query.get("direction", "desc") == "desc"
        chosen = [p.data for p in repo.pulls.values()
                  if state == "all" or p.data["state"] == state]
        chosen.sort(key=lambda d: (d[f"{sort}_at"], d["number"]), reverse=descending)
        full_only = ("merged", "mergeable", "mergeable_state", "merged_by", "comments",
                     "review_comments", "commits", "additions", "deletions", "changed_files")
        return [{k: v for k, v in d.items() if k not in full_only} for d in chosen]

    def _list_issues(self, name: str, repo: _Repo, query: Mapping[str, str]) -> list[Any]:
        """``GET /repos/{o}/{r}/issues``: pull requests are issues here, beside the plain
        issues, each the object ``GET /issues/{n}`` answers; ``state`` (default open),
        ``sort`` (created, updated, comments; default created), ``direction``, ``since``
        (updated at or after)."""
        state = query.get("state", "open")
        sort = query.get("sort", "created")
        if state not in ("open", "closed", "all") or sort not in ("created", "updated",
                                                                  "comments"):
            raise _Answer(422, _error_body("Validation Failed", 422))
        since = query.get("since")
        every = [self._pr_issue(name, p) for p in repo.pulls.values()] + [
            i for n, i in repo.issues.items() if n not in repo.pulls]
        chosen = [d for d in every if (state == "all" or d["state"] == state)
                  and (not since or d["updated_at"] >= since)]
        key = "comments" if sort == "comments" else f"{sort}_at"
        chosen.sort(key=lambda d: (d[key], d["number"]), reverse=query.get("direction",
                                                                          "desc") == "desc")
        return chosen

    # ------------------------------------------------------------------------------ pagination

    def _page(self, items: Sequence[Any], query: Mapping[str, str], path: str,
              wrapper: str | None = None) -> tuple[int, Any, dict[str, str]]:
        """One page as GitHub serves it: ``per_page`` (default 30, max 100), ``page``, and a
        ``Link`` header with prev/next/last/first as applicable."""
        try:
            chunk, headers = paginate(items, query, f"{self.url}{path}")
        except ValueError as exc:
            raise _Answer(422, _error_body("Invalid pagination parameter", 422)) from exc
        payload: Any = {"total_count": len(items), wrapper: chunk} if wrapper else chunk
        return 200, payload, headers

    @staticmethod
    def _filter_runs(runs: Iterable[dict[str, Any]], query: Mapping[str, str]) -> list[Any]:
        def created_ok(value: str) -> bool:
            spec = query.get("created")
            if not spec:
                return True
            day = date.fromisoformat(value[:10])
            if ".." in spec:
                low, high = spec.split("..", 1)
                return date.fromisoformat(low[:10]) <= day <= date.fromisoformat(high[:10])
            for op in (">=", "<=", ">", "<"):
                if spec.startswith(op):
                    bound = date.fromisoformat(spec[len(op):][:10])
                    return {">=": day >= bound, "<=": day <= bound, ">": day > bound,
                            "<": day < bound}[op]
            return day == date.fromisoformat(spec[:10])

        return [r for r in runs
                if (not query.get("branch") or r["head_branch"] == query["branch"])
                and (not query.get("event") or r["event"] == query["event"])
                and (not query.get("head_sha") or r["head_sha"] == query["head_sha"])
                and (not query.get("status") or query["status"] in (r["status"], r["conclusion"]))
                and created_ok(r["created_at"])]

    # ------------------------------------------------------------------------ payload builders

    def _association(self, repo: str, spec: Mapping[str, Any]) -> str:
        login = str(spec.get("user", "octocat"))
        perm = self.repos[repo].permissions.get(login)
        return "OWNER" if perm and perm[0] == "admin" else "NONE"

    def app_payload(self, slug: str) -> dict[str, Any]:
        """A GitHub App as ``performed_via_github_app`` shows it (GitHub's ``integration``)."""
        names = {"chatgpt-codex-connector": "ChatGPT Codex Connector",
                 "copilot-swe-agent": "Copilot"}
        aid = _num("app", slug) % 9_000_000 + 1
        return {
            "id": aid, "slug": slug, "node_id": f"A_{aid}", "client_id": f"Iv1.{aid:016x}",
            "owner": self.user("octo-apps", "Organization"),
            "name": names.get(slug, slug.replace("-", " ").title()), "description": "",
            "external_url": f"https://{slug}.example", "html_url": f"{self.html_base}/apps/{slug}",
            "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
            "permissions": {"contents": "write", "pull_requests": "write", "issues": "write",
                            "metadata": "read"},
            "events": [],
        }

    def _pr_issue(self, repo: str, pull: _Pull) -> dict[str, Any]:
        """``GET /repos/{o}/{r}/issues/{n}`` for a PR, in GitHub's issue shape: the PR's common
        fields, a ``pull_request`` key, and ``performed_via_github_app`` (which the pull request
        object lacks)."""
        data = pull.data
        number = data["number"]
        iid = _num("issue", repo, number) % 2_000_000_000 + 1
        issue_url = f"/repos/{repo}/issues/{number}"
        return {
            "id": iid, "node_id": f"PR_{data['id']}", "url": _api(issue_url),
            "repository_url": _api(f"/repos/{repo}"),
            "labels_url": _api(f"{issue_url}/labels{{/name}}"),
            "comments_url": _api(f"{issue_url}/comments"),
            "events_url": _api(f"{issue_url}/events"), "html_url": data["html_url"],
            "number": number, "title": data["title"], "user": data["user"],
            "labels": data["labels"], "state": data["state"], "locked": data["locked"],
            "assignee": data["assignee"], "assignees": data["assignees"],
            "milestone": data["milestone"], "comments": data["comments"],
            "created_at": data["created_at"], "updated_at": data["updated_at"],
            "closed_at": data["closed_at"], "author_association": data["author_association"],
            "active_lock_reason": data["active_lock_reason"], "draft": data["draft"],
            "pull_request": {"url": data["url"], "html_url": data["html_url"],
                             "diff_url": data["diff_url"], "patch_url": data["patch_url"],
                             "merged_at": data["merged_at"]},
            "body": data["body"],
            "reactions": {"url": _api(f"{issue_url}/reactions"), "total_count": 0, "+1": 0,
                          "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": 0,
                          "rocket": 0, "eyes": 0},
            "timeline_url": _api(f"{issue_url}/timeline"),
            "performed_via_github_app": pull.via_app,
            "state_reason": None,
        }

    def _sync_counts(self, repo: str, number: int) -> None:
        state = self.repos[repo]
        if number in state.pulls:
            pull = state.pulls[number]
            pull.data["comments"] = len(state.issue_comments.get(number, []))
            pull.data["review_comments"] = len(pull.review_comments)

    def add_timeline_event(self, repo: str, number: int, event: str, *, actor: str = "octocat",
                           at: datetime | None = None, **extra: Any) -> dict[str, Any]:
        """An extra ``/issues/{n}/timeline`` event in GitHub's generic shape (``id``, ``actor``,
        ``event``, ``created_at``, ``commit_id``...), e.g. ``head_ref_force_pushed`` or
        ``copilot_work_finished_failure``; ``extra`` adds or overrides fields (``source`` ...)."""
        with self._lock:
            pull = self._pull(self.repos[repo], str(number))
            eid = next(self._ids)
            when = at or datetime.fromisoformat(pull.data["created_at"].replace("Z", "+00:00"))
            data: dict[str, Any] = {
                "id": eid, "node_id": f"E_{eid}", "url": _api(f"/repos/{repo}/issues/events/{eid}"),
                "actor": self.user(actor), "event": event, "commit_id": None, "commit_url": None,
                "created_at": _iso(when), "performed_via_github_app": None,
            }
            data.update(extra)
            pull.events.append(data)
            return data

    def _timeline(self, repo: _Repo, number: int) -> list[dict[str, Any]]:
        """The PR's timeline as GitHub lists it: its commits (``committed``: sha and git dates, no
        actor), conversation comments (``commented``), reviews (``reviewed``), extra events, and
        the merge or close, in time order."""
        pull = repo.pulls[number]
        entries: list[tuple[str, int, dict[str, Any]]] = []
        for n, c in enumerate(pull.commits):
            git = c["commit"]
            entries.append((git["committer"]["date"], n, {
                "sha": c["sha"], "node_id": c["node_id"], "url": git["url"],
                "html_url": c["html_url"], "author": git["author"], "committer": git["committer"],
                "message": git["message"], "tree": git["tree"],
                "parents": c["parents"], "verification": git["verification"],
                "event": "committed"}))
        for c in repo.issue_comments.get(number, []):
            entries.append((c["created_at"], 0, {**c, "event": "commented", "actor": c["user"]}))
        for r in pull.reviews:
            if "submitted_at" in r:
                entries.append((r["submitted_at"], 0, {**r, "event": "reviewed"}))
        for e in pull.events:
            entries.append((e["created_at"], 1, dict(e)))
        data = pull.data
        if data.get("closed_at"):
            eid = _num("closed-event", data["id"])
            entries.append((data["closed_at"], 2, {
                "id": eid, "node_id": f"E_{eid}", "actor": data.get("merged_by") or self.user("octocat"),
                "event": "merged" if data.get("merged") else "closed",
                "commit_id": data.get("merge_commit_sha"), "created_at": data["closed_at"],
                "performed_via_github_app": None}))
        return [entry for _, _, entry in sorted(entries, key=lambda t: (t[0], t[1]))]

    def _commit(self, repo: str, sha: str, index: int, at: datetime, author: str, parent: str,
                verified: bool, total: int) -> dict[str, Any]:
        messages = ["Initial plan", "Handle empty input in parse_widget",
                    "Add tests for empty and None input"]
        subject = messages[index] if index < len(messages) and total <= len(messages) \
            else f"Step {index + 1}: refine widget parsing"
        # GitHub's no-reply address names the account REST links the commit to (and the only
        # way GraphQL, whose git authors link to Users only, can name a bot author).
        account = self.user(author)
        person = {"name": "Copilot",
                  "email": f"{account['id']}+{author}@users.noreply.github.com",
                  "date": _iso(at)}
        return {
            "sha": sha, "node_id": f"C_{sha[:12]}", "url": _api(f"/repos/{repo}/commits/{sha}"),
            "html_url": f"{self.html_base}/{repo}/commit/{sha}",
            "comments_url": _api(f"/repos/{repo}/commits/{sha}/comments"),
            "commit": {
                "url": _api(f"/repos/{repo}/git/commits/{sha}"),
                "author": person,
                "committer": {"name": "GitHub", "email": "noreply@github.com",
                              "date": _iso(at)},
                "message": f"{subject}\n\nCo-authored-by: octocat <octocat@users.noreply"
                           ".github.com>",
                "tree": {"sha": _sha("tree", sha), "url": _api(f"/repos/{repo}/git/trees/x")},
                "comment_count": 0,
                "verification": {
                    "verified": verified, "reason": "valid" if verified else "unsigned",
                    "signature": "-----BEGIN PGP SIGNATURE-----\n...\n" if verified else None,
                    "payload": f"tree {_sha('tree', sha)}\n" if verified else None,
                    "verified_at": _iso(at) if verified else None,
                },
            },
            "author": self.user(author),
            "committer": self.user("web-flow"),
            "parents": [{"sha": parent, "url": _api(f"/repos/{repo}/commits/{parent}"),
                         "html_url": f"{self.html_base}/{repo}/commit/{parent}"}],
        }

    def _file(self, repo: str, head: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        name = str(spec["filename"])
        adds, dels = int(spec.get("additions", 5)), int(spec.get("deletions", 1))
        entry: dict[str, Any] = {
            "sha": _sha("blob", repo, name), "filename": name,
            "status": spec.get("status", "modified"),
            "additions": adds, "deletions": dels, "changes": adds + dels,
            "blob_url": f"{self.html_base}/{repo}/blob/{head}/{name}",
            "raw_url": f"{self.html_base}/{repo}/raw/{head}/{name}",
            "contents_url": _api(f"/repos/{repo}/contents/{name}?ref={head}"),
            "patch": "@@ -1,3 +1,4 @@\n" + "+added line\n" * adds + "-removed line\n" * dels,
        }
        if spec.get("previous_filename"):
            entry["previous_filename"] = spec["previous_filename"]
        return entry

    def _review(self, repo: str, number: int, spec: Mapping[str, Any], at: datetime,
                head: str) -> dict[str, Any]:
        rid = next(self._ids)
        state = str(spec.get("state", "APPROVED"))
        review: dict[str, Any] = {
            "id": rid, "node_id": f"PRR_{rid}",
            "user": self.user(str(spec.get("user", "octocat"))),
            "body": str(spec.get("body", "")), "state": state,
            "html_url": f"{self.html_base}/{repo}/pull/{number}#pullrequestreview-{rid}",
            "pull_request_url": _api(f"/repos/{repo}/pulls/{number}"),
            "author_association": str(spec.get("author_association", "OWNER")),
            "_links": {"html": {"href": f"{self.html_base}/{repo}/pull/{number}"}},
            "commit_id": str(spec.get("commit_id", head)),
        }
        if state != "PENDING":
            review["submitted_at"] = _iso(at)
        return review

    def _review_comment(self, repo: str, number: int, spec: Mapping[str, Any], at: datetime,
                        head: str, reviews: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        cid = next(self._ids)
        comment = {
            "url": _api(f"/repos/{repo}/pulls/comments/{cid}"),
            "pull_request_review_id": reviews[0]["id"] if reviews else None,
            "id": cid, "node_id": f"PRRC_{cid}", "diff_hunk": "@@ -1,3 +1,4 @@",
            "path": str(spec.get("path", "src/widgets/parser.py")), "position": 4,
            "original_position": 4, "commit_id": head, "original_commit_id": head,
            "user": self.user(str(spec.get("user", "octocat"))),
            "body": str(spec.get("body", "")), "created_at": _iso(at), "updated_at": _iso(at),
            "html_url": f"{self.html_base}/{repo}/pull/{number}#discussion_r{cid}",
            "pull_request_url": _api(f"/repos/{repo}/pulls/{number}"),
            "author_association": str(spec.get("author_association", "OWNER")),
            "line": 4, "side": "RIGHT",
        }
        if spec.get("in_reply_to_id"):
            comment["in_reply_to_id"] = spec["in_reply_to_id"]
        return comment

    def _issue_comment(self, repo: str, number: int, body: str, login: str, at: datetime,
                       association: str, *, type: str | None = None) -> dict[str, Any]:
        cid = next(self._ids)
        return {
            "id": cid, "node_id": f"IC_{cid}",
            "url": _api(f"/repos/{repo}/issues/comments/{cid}"),
            "html_url": f"{self.html_base}/{repo}/pull/{number}#issuecomment-{cid}",
            "body": body, "user": self.user(login, type),
            "created_at": _iso(at), "updated_at": _iso(at),
            "issue_url": _api(f"/repos/{repo}/issues/{number}"),
            "author_association": association, "performed_via_github_app": None,
        }

    def write_comment(self, action: str, repo: str, target: int, body: str,
                      identity: Identity) -> dict[str, Any] | None:
        """One conversation-comment write, as REST (``POST``/``PATCH``/``DELETE``) and GraphQL
        (``addComment``/``updateIssueComment``/``deleteIssueComment``) both make it:
        ``create`` on PR ``target``, ``update``/``delete`` of comment ``target``. The comment
        written (the deleted one for ``delete``), None when the PR or comment does not exist.
        The caller has checked the permission."""
        with self._lock:
            state = self.repos[repo]
            if action == "create":
                if target not in state.pulls:
                    return None
                comment = self._issue_comment(repo, target, body, identity.login,
                                              BASE_TIME + timedelta(days=1),
                                              "NONE" if identity.integration else "MEMBER",
                                              type=identity.type)
                state.issue_comments.setdefault(target, []).append(comment)
                self._sync_counts(repo, target)
                self.comment_writes[action] += 1
                return comment
            for number, thread in state.issue_comments.items():
                for comment in thread:
                    if comment["id"] != target:
                        continue
                    if action == "delete":
                        thread.remove(comment)
                        self._sync_counts(repo, number)
                    else:
                        comment["body"] = body
                        comment["updated_at"] = _iso(BASE_TIME + timedelta(days=1, minutes=1))
                    self.comment_writes[action] += 1
                    return comment
            return None

    def _find_comment(self, repo: _Repo, cid: int) -> dict[str, Any]:
        for comments in repo.issue_comments.values():
            for comment in comments:
                if comment["id"] == cid:
                    return comment
        raise _Answer(404, _error_body("Not Found", 404))

    def _check_run(self, repo: str, head: str, name: str, conclusion: str | None, status: str,
                   started_at: datetime, summary: str) -> dict[str, Any]:
        cid = next(self._ids)
        done = status == "completed"
        return {
            "id": cid, "head_sha": head, "node_id": f"CR_{cid}", "external_id": "",
            "url": _api(f"/repos/{repo}/check-runs/{cid}"),
            "html_url": f"{self.html_base}/{repo}/actions/runs/{cid}/job/{cid}",
            "details_url": f"{self.html_base}/{repo}/actions/runs/{cid}/job/{cid}",
            "status": status, "conclusion": conclusion if done else None,
            "started_at": _iso(started_at),
            "completed_at": _iso(started_at + timedelta(minutes=3)) if done else None,
            "output": {"title": None if conclusion == "success" else f"{name} {conclusion}",
                       "summary": summary or None, "text": None, "annotations_count": 0,
                       "annotations_url": _api(f"/repos/{repo}/check-runs/{cid}/annotations")},
            "name": name, "check_suite": {"id": _num("suite", head) % 10**9},
            "app": {"id": 15368, "slug": "github-actions", "node_id": "MDM6QXBwMTUzNjg=",
                    "name": "GitHub Actions", "owner": self.user("github", "Organization")},
            "pull_requests": [],
        }

    def _workflow_run(self, repo: str, head: str, branch: str, conclusion: str | None,
                      name: str, event: str, attempt: int, created: datetime,
                      head_repo: str) -> dict[str, Any]:
        rid = next(self._ids)
        return {
            "id": rid, "name": name, "node_id": f"WFR_{rid}", "head_branch": branch,
            "head_sha": head, "path": ".github/workflows/ci.yml", "display_title": name,
            "run_number": rid % 1000, "event": event,
            "status": "completed" if conclusion else "in_progress", "conclusion": conclusion,
            "workflow_id": 161335, "check_suite_id": _num("suite", head) % 10**9,
            "url": _api(f"/repos/{repo}/actions/runs/{rid}"),
            "html_url": f"{self.html_base}/{repo}/actions/runs/{rid}",
            "pull_requests": [{"number": 0, "head": {"sha": head, "ref": branch}}],
            "created_at": _iso(created), "updated_at": _iso(created + timedelta(minutes=4)),
            "actor": self.user("copilot-swe-agent[bot]"), "run_attempt": attempt,
            "run_started_at": _iso(created + timedelta(seconds=5)),
            "triggering_actor": self.user("copilot-swe-agent[bot]"),
            "jobs_url": _api(f"/repos/{repo}/actions/runs/{rid}/jobs"),
            "logs_url": _api(f"/repos/{repo}/actions/runs/{rid}/logs"),
            "head_commit": {"id": head, "tree_id": _sha("tree", head)},
            "repository": {"full_name": repo}, "head_repository": {"full_name": head_repo},
        }

    def _add_ci(self, repo: str, pull: _Pull, ci: CI, rerun: bool, ref: str,
                head_repo: str) -> None:
        if ci == "none" or not pull.commits:
            return
        state = self.repos[repo]
        head = pull.data["head"]["sha"]
        head_at = BASE_TIME
        for commit in pull.commits:
            is_head = commit["sha"] == head
            if ci == "green":
                conclusion = "success"
            elif ci == "red":
                conclusion = "failure" if is_head else "success"
            else:
                conclusion = "success" if is_head else "failure"
            at = datetime.fromisoformat(commit["commit"]["committer"]["date"].replace(
                "Z", "+00:00")) + timedelta(minutes=1)
            state.workflow_runs.append(self._workflow_run(
                repo, commit["sha"], ref, conclusion, "CI", "pull_request",
                2 if (rerun and is_head) else 1, at, head_repo))
            if is_head:
                head_at = at
        test_conclusion = "failure" if ci == "red" else "success"
        runs = state.check_runs.setdefault(head, [])
        if rerun:
            runs.append(self._check_run(repo, head, "test", "failure", "completed", head_at,
                                        "1 failed, 47 passed (flaky network test)"))
        runs.append(self._check_run(repo, head, "lint", "success", "completed", head_at, ""))
        runs.append(self._check_run(
            repo, head, "test", test_conclusion, "completed",
            head_at + timedelta(minutes=10 if rerun else 0),
            "48 passed" if test_conclusion == "success" else "2 failed, 46 passed"))

    def _content(self, repo: str, ref: str, path: str, text: str) -> dict[str, Any]:
        encoded = base64.b64encode(text.encode()).decode()
        wrapped = "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60)) + "\n"
        sha = _sha("blob", repo, ref, path, text)
        return {
            "type": "file", "encoding": "base64", "size": len(text.encode()),
            "name": path.rsplit("/", 1)[-1], "path": path, "content": wrapped, "sha": sha,
            "url": _api(f"/repos/{repo}/contents/{path}?ref={ref}"),
            "git_url": _api(f"/repos/{repo}/git/blobs/{sha}"),
            "html_url": f"{self.html_base}/{repo}/blob/{ref}/{path}",
            "download_url": f"https://raw.githubusercontent.com/{repo}/{ref}/{path}",
        }

    @staticmethod
    def _body_field(body: bytes | str | None, name: str) -> str:
        try:
            data = json.loads(body or b"{}")
            value = data[name]
            if not isinstance(value, str):
                raise TypeError(name)
            return value
        except (ValueError, KeyError, TypeError) as exc:
            raise _Answer(422, {"message": "Invalid request.", "documentation_url": DOCS,
                                "status": "422", "errors": [f"{name} wasn't supplied."]}) from exc

    # ------------------------------------------------------------------------------ transports

    @contextmanager
    def mock(self, base_url: str = MOCK_URL) -> Iterator[FakeGitHub]:
        """Serve in-process through ``responses``: every requests call to ``base_url`` reaches
        the router; anything else fails loudly (``responses`` refuses unknown URLs)."""
        self.url = base_url.rstrip("/")
        root = urlsplit(self.url)
        prefix = root.path.rstrip("/")
        fakegraphql.schema()  # built once a process (~2 s), not inside a client's timeout

        graphql_path = Requester.get_graphql_prefix(prefix)

        def callback(request: Any) -> tuple[int, dict[str, str], bytes]:
            parts = urlsplit(request.url)
            path = parts.path[len(prefix):] if parts.path.startswith(prefix) else parts.path
            if parts.path == graphql_path:
                path = "/graphql"
            status, headers, payload = self.handle(
                request.method, path, parse_qs(parts.query), dict(request.headers), request.body)
            return status, headers, self.encode(payload)

        with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
            # PyGithub spells out default ports (https://host:443/...), so the port is optional.
            port = f"(?::{root.port or (443 if root.scheme == 'https' else 80)})?"
            pattern = re.compile(f"{re.escape(root.scheme)}://{re.escape(root.hostname or '')}"
                                 f"{port}{re.escape(prefix)}(?:[/?].*)?$")
            for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
                rsps.add_callback(method, pattern, callback=callback,
                                  content_type="application/json")
            if not graphql_path.startswith(prefix + "/"):  # GHES: /api/graphql beside /api/v3
                rsps.add_callback("POST", re.compile(
                    f"{re.escape(root.scheme)}://{re.escape(root.hostname or '')}{port}"
                    f"{re.escape(graphql_path)}$"), callback=callback,
                    content_type="application/json")
            yield self

    @contextmanager
    def serve(self, prefix: str = "") -> Iterator[FakeGitHub]:
        """Serve over real HTTP on 127.0.0.1 (an ephemeral port) from a background thread;
        ``fake.url`` is the API root to put in ``GITHUB_API_URL``."""
        fake = self
        root = prefix.rstrip("/")
        graphql_path = Requester.get_graphql_prefix(root)
        fakegraphql.schema()  # built once a process (~2 s), not inside a client's timeout

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if parts.path == graphql_path:
                    status, headers, payload = fake.handle(
                        self.command, "/graphql", {}, dict(self.headers.items()), body)
                elif root and not parts.path.startswith(root):
                    status, headers, payload = 404, fake._headers({}), _error_body(
                        "Not Found", 404)
                else:
                    status, headers, payload = fake.handle(
                        self.command, parts.path[len(root):], parse_qs(parts.query),
                        dict(self.headers.items()), body)
                data = fake.encode(payload)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the fake keeps its own log

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)
                # a client that timed out or was killed hung up: nothing to report

        server = Server(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        # A short poll interval: shutdown() waits for the serve loop to notice.
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                  name="fakegithub", daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}{root}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


_DEFAULT_BODY: Final = """\
## Summary
Fixes #12. `parse_widget("")` raised `IndexError`; empty and whitespace-only input now return an
empty `Widget`.

## Changes
- Handle empty, whitespace-only and `None` input in `src/widgets/parser.py`
- Add tests for the three cases in `tests/test_parser.py`
- Note the fix in `CHANGELOG.md`

## Testing
- `pytest` passes locally (48 passed)
"""
