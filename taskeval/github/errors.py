"""GitHub failures as taskeval errors: one plain line a user can act on, with the secret redacted.

``translate`` turns whatever PyGithub, requests or a malformed payload raised into the
``GitHubError`` family; ``NEEDS`` names the permission each resource probably needs, so a 403
says what to grant.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import requests
import urllib3
from github.GithubException import GithubException, RateLimitExceededException
from pydantic import ValidationError

from taskeval.config import CONFIG_PATH
from taskeval.raw import CollectionIssue
from taskeval.redact import redact

# What each resource collection reads is called in a gap's message ("check runs could not be
# read ..."), for the REST and the GraphQL path alike.
RESOURCE_LABELS: Final[Mapping[str, str]] = {
    "issue": "issue object (performed_via_github_app)",
    "pull_request": "pull request",
    "commits": "commits",
    "reviews": "reviews",
    "review_comments": "review comments",
    "issue_comments": "conversation comments",
    "timeline": "timeline events",
    "files": "changed files",
    "check_runs": "check runs",
    "workflow_runs": "workflow runs",
    "config": CONFIG_PATH,
    "linked_issues": "linked issues' labels",
}

# The permission a resource probably needs, named as GitHub names fine-grained permissions.
NEEDS: Final[Mapping[str, str]] = {
    "repository": "read access to the repository (`metadata: read`)",
    "pull_request": "`pull-requests: read`",
    "issue": "`issues: read` or `pull-requests: read`",
    "commits": "`pull-requests: read`",
    "reviews": "`pull-requests: read`",
    "review_comments": "`pull-requests: read`",
    "issue_comments": "`issues: read` or `pull-requests: read`",
    "timeline": "`issues: read` or `pull-requests: read`",
    "files": "`pull-requests: read`",
    "check_runs": "`checks: read`",
    "workflow_runs": "`actions: read`",
    "config": "`contents: read`",
    "linked_issues": "`issues: read`",
    "user": "a user token (installation tokens cannot read `/user`)",
    "installation": "an installation of the App on this repository (check app id, key and "
                    "installation id)",
    "comment": "`pull-requests: write` (or `issues: write`)",
    "reaction": "`pull-requests: write` (or `issues: write`)",
    "collaborator": "`metadata: read` and push access to the repository",
}


@dataclass(frozen=True)
class LinkFailure:
    """A linked issue that could not be read for its labels: its number, the HTTP status (GraphQL's
    ``NOT_FOUND`` is 404, ``FORBIDDEN`` 403; None for a malformed answer) and what went wrong."""

    number: int
    status: int | None
    detail: str


_LINK_DETAILS: Final[Mapping[int, str]] = {403: "Forbidden", 404: "Not Found", 410: "Gone"}


def link_failure(number: int, status: int | None) -> LinkFailure:
    """The failure for a status, worded the same whichever transport met it (GitHub's own
    message differs between REST and GraphQL, and the bundle must not)."""
    return LinkFailure(number, status, _LINK_DETAILS.get(status or 0, "unreadable"))


def linked_issue_gap(failures: Sequence[LinkFailure]) -> CollectionIssue | None:
    """One gap for every linked issue that could not be read, in reading order; None for none.
    Its status is the first failure's; a 403 names the permission the token probably lacks."""
    if not failures:
        return None
    parts = []
    for f in failures:
        status = f"{f.status}: {f.detail}" if f.status else f.detail
        hint = f"; the token probably lacks {NEEDS['linked_issues']}" if f.status == 403 else ""
        parts.append(f"linked issue #{f.number} could not be read for its labels ({status}){hint}")
    return CollectionIssue(resource="linked_issues", status=failures[0].status,
                           message=redact("; ".join(parts)))


class GitHubError(Exception):
    """A GitHub request failed in a way the caller must report; the message is one plain line."""

    def __init__(self, message: str, *, status: int | None = None, resource: str = "") -> None:
        super().__init__(redact(message))
        self.status = status
        self.resource = resource


class NotFoundError(GitHubError):
    """404: it does not exist, or the credentials cannot see it (GitHub does not say which)."""


class AuthError(GitHubError):
    """401, or a 403 that is about permissions rather than rate limits."""


class RateLimitError(GitHubError):
    """A primary or secondary rate limit that bounded retries could not wait out."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        resource: str = "",
        reset_at: datetime | None = None,
    ) -> None:
        super().__init__(message, status=status, resource=resource)
        self.reset_at = reset_at


def message_of(exc: GithubException) -> str:
    """GitHub's own ``message`` of a failed answer, on one line (empty when it gave none)."""
    data = exc.data
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return " ".join(data["message"].split())
    return exc.message or ""


def _header(headers: Mapping[str, Any] | None, name: str) -> str | None:
    if not headers:
        return None
    for key, value in headers.items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _reset_at(headers: Mapping[str, Any] | None) -> datetime | None:
    """When the limit lifts. A secondary limit says so in ``Retry-After``; ``X-RateLimit-Reset``
    is on every answer and is the primary window's end, which only matters once it is spent."""
    retry_after = _header(headers, "retry-after")
    if retry_after and retry_after.strip().isdigit():
        return datetime.now(UTC) + timedelta(seconds=int(retry_after))
    value = _header(headers, "x-ratelimit-reset")
    if _header(headers, "x-ratelimit-remaining") == "0" and value and value.strip().isdigit():
        return datetime.fromtimestamp(int(value), UTC)
    return None


def is_rate_limited(exc: GithubException) -> bool:
    """Whether a failed answer is a primary or secondary rate limit (not a permission refusal)."""
    if isinstance(exc, RateLimitExceededException) or exc.status == 429:
        return True
    # After the last retry GithubRetry has consumed the body, so the headers are what is left.
    return exc.status == 403 and (
        _header(exc.headers, "x-ratelimit-remaining") == "0"
        or _header(exc.headers, "retry-after") is not None
    )


def translate(exc: BaseException, what: str, resource: str) -> GitHubError:
    """Turn a PyGithub/requests failure into the taskeval error a user can act on.

    ``what`` names the thing being read in the message; ``resource`` is a key of ``NEEDS``.
    Anything that is not a GitHub, network or payload-shape failure is re-raised unchanged.
    """
    if isinstance(exc, GitHubError):
        return exc
    if isinstance(exc, GithubException):
        return _from_answer(exc, what, resource)
    if isinstance(exc, requests.RequestException):
        return _from_network(exc, what, resource)
    if isinstance(exc, json.JSONDecodeError):
        return GitHubError(f"GitHub answered {what} with malformed JSON", resource=resource)
    if isinstance(exc, KeyError | TypeError | ValidationError):
        return GitHubError(f"GitHub's answer for {what} does not have the documented shape "
                           f"({type(exc).__name__})", resource=resource)
    raise exc


def _from_answer(exc: GithubException, what: str, resource: str) -> GitHubError:
    status = exc.status
    detail = message_of(exc)
    said = f"{status}: {detail}" if detail else str(status)
    if is_rate_limited(exc):
        reset = _reset_at(exc.headers)
        when = f"; it resets at {reset:%Y-%m-%d %H:%M:%S} UTC" if reset else ""
        return RateLimitError(
            f"GitHub rate limit reached while reading {what} ({said}){when}; try again later",
            status=status, resource=resource, reset_at=reset,
        )
    if status == 401:
        return AuthError(
            f"GitHub rejected the credentials ({said}); check GITHUB_TOKEN or the App key",
            status=status, resource=resource,
        )
    if status == 403:
        needs = NEEDS.get(resource, "")
        hint = f"; the token probably lacks {needs}" if needs else ""
        return AuthError(
            f"GitHub refused access to {what} ({said}){hint}", status=status, resource=resource
        )
    if status == 404:
        return NotFoundError(f"{what} not found, or the token cannot see it",
                             status=status, resource=resource)
    return GitHubError(f"GitHub answered {said} for {what}", status=status, resource=resource)


def _from_network(exc: requests.RequestException, what: str, resource: str) -> GitHubError:
    # urllib3 wraps a read timeout that outlived its retries in a ConnectionError.
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    timed_out = isinstance(
        reason, urllib3.exceptions.ReadTimeoutError | urllib3.exceptions.ConnectTimeoutError
    )
    if isinstance(reason, urllib3.exceptions.NewConnectionError):  # a refused connection, not a wait
        timed_out = False
    if isinstance(exc, requests.ReadTimeout) or timed_out:
        return GitHubError(f"GitHub did not answer in time for {what} (timed out)",
                           resource=resource)
    return GitHubError(f"could not reach GitHub for {what} ({type(exc).__name__})",
                       resource=resource)
