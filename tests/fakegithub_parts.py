"""The fake GitHub's small parts (``tests/fakegithub.py``): constants, the state it keeps per
repository and pull request, faults, the request log's entries, identities, payload helpers and
the table of routes. Imported by the fake's other modules; imports none of them.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

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


# --------------------------------------------------------------------------------------- routes


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
