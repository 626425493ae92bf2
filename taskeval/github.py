"""GitHub access: the client factory, collection of one pull request, and the evaluation comment.

PyGithub does the HTTP work here: authentication (token or GitHub App installation), base URL
(``GITHUB_API_URL``, which also serves GitHub Enterprise Server), ``Link`` pagination, retries and
rate-limit backoff (``GithubRetry``). Three things are added on top, each because PyGithub does not
do it for us:

* **Raw payloads, no lazy completion.** PyGithub objects complete themselves lazily: touching
  ``raw_data`` or a field missing from a list payload sends one more GET per object (an N+1 over
  commits, runs or files). Collection therefore reads list pages through PyGithub's
  ``PaginatedList`` with a content class that keeps the JSON as it came and never completes.
* **One requester per thread.** PyGithub's connection object keeps the verb and URL of a request
  in attributes between ``request()`` and ``getresponse()``, so two threads sharing one ``Github``
  can send each other's requests (PyGithub/PyGithub#2052, still open). Every call here works on its
  own clone of the caller's requester (``Requester.kwargs`` is PyGithub's documented recipe for
  that), and ``collect`` gives each worker thread its own clone.
* **Bounded, countable retries that never resend a write blindly.** ``_Retry`` extends
  ``GithubRetry``: a ``Retry-After`` longer than the allowed wait fails fast as a rate-limit error
  instead of sleeping for hours, every retry is counted, and a POST is retried only when GitHub
  said "rate limited" (the request was not processed), never after a 5xx or a lost connection where
  it may already have created a comment.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar
from urllib.parse import quote, urlsplit

import requests
import urllib3
from github import Auth, Github, GithubRetry
from github.GithubException import (
    GithubException,
    RateLimitExceededExceedsMaxWait,
    RateLimitExceededException,
)
from github.GithubObject import NonCompletableGithubObject
from github.PaginatedList import PaginatedList
from github.Requester import Requester
from pydantic import ValidationError
from urllib3.exceptions import ConnectTimeoutError, InvalidHeader

from taskeval import __version__
from taskeval.config import CONFIG_PATH
from taskeval.contract import COMMENT_MARKER
from taskeval.raw import (
    CollectionIssue,
    RawCheckRun,
    RawCollection,
    RawCommit,
    RawFile,
    RawIssueComment,
    RawPullRequest,
    RawReview,
    RawReviewComment,
    RawUser,
    RawWorkflowRun,
)
from taskeval.redact import redact, register_secret


def _adopt_pygithub_logger() -> None:
    """PyGithub attaches its own stderr handler at INFO to the ``github`` logger when imported,
    which bypasses every adapter's logging (the bot's JSON lines and redaction, the Action's
    annotations, the CLI's one-line errors). Make it an ordinary library logger instead: no
    handler of its own, level inherited from whatever the adapter configured."""
    library = logging.getLogger("github")
    for handler in list(library.handlers):
        library.removeHandler(handler)
    library.setLevel(logging.NOTSET)


_adopt_pygithub_logger()

DEFAULT_API_URL: Final = "https://api.github.com"
MARKER: Final = COMMENT_MARKER
PER_PAGE: Final = 100
USER_AGENT: Final = f"taskeval/{__version__}"
# GitHub lists at most this many commits of a pull request (documented limit of the endpoint).
PR_COMMIT_LIST_LIMIT: Final = 250
PR_FILE_LIST_LIMIT: Final = 3000
# Workflow runs are listed by branch name, newest first. A branch name can be shared with other
# work (a fork's `main`), so the listing is bounded in time and size: runs created more than this
# long before the PR opened, or more than a day after it closed, are not about the PR.
RUN_LOOKBACK: Final = timedelta(days=30)
MAX_WORKFLOW_RUNS: Final = 1000
# GitHub's guidance for secondary limits without Retry-After is "wait at least one minute".
SECONDARY_RATE_WAIT: Final = 60.0
REACTIONS: Final = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
PERMISSIONS: Final = ("admin", "maintain", "write", "triage", "read", "none")

_REPO_RE: Final = re.compile(
    r"(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/(?P<name>[A-Za-z0-9._-]{1,100})"
)
_LOGIN_RE: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_SHORT_REF_RE: Final = re.compile(rf"{_REPO_RE.pattern}(?:#|/pulls?/)(?P<number>[0-9]+)/?")
_URL_REF_RE: Final = re.compile(
    rf"https?://[^/\s]+/{_REPO_RE.pattern}/pulls?/(?P<number>[0-9]+)(?:[/?#].*)?"
)

# The permission a resource probably needs, named as GitHub names fine-grained permissions.
_NEEDS: Final[Mapping[str, str]] = {
    "repository": "read access to the repository (`metadata: read`)",
    "pull_request": "`pull-requests: read`",
    "commits": "`pull-requests: read`",
    "reviews": "`pull-requests: read`",
    "review_comments": "`pull-requests: read`",
    "issue_comments": "`issues: read` or `pull-requests: read`",
    "files": "`pull-requests: read`",
    "check_runs": "`checks: read`",
    "workflow_runs": "`actions: read`",
    "config": "`contents: read`",
    "user": "a user token (installation tokens cannot read `/user`)",
    "installation": "an installation of the App on this repository (check app id, key and "
                    "installation id)",
    "comment": "`pull-requests: write` (or `issues: write`)",
    "reaction": "`pull-requests: write` (or `issues: write`)",
    "collaborator": "`metadata: read` and push access to the repository",
}


# --------------------------------------------------------------------------------------- errors


class GitHubError(Exception):
    """A GitHub request failed in a way the caller must report; the message is one plain line."""

    def __init__(self, message: str, *, status: int | None = None, resource: str = "") -> None:
        super().__init__(_scrub(message))
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


def _changed_during_collection(pull: RawPullRequest, commits: list[RawCommit]) -> str | None:
    """Why the commit list disagrees with the PR, if it does: GitHub's listing cap, or a push
    that landed between reading the PR and listing its commits."""
    listed = len(commits)
    head_listed = any(c.sha == pull.head_sha for c in commits)
    if listed >= PR_COMMIT_LIST_LIMIT and pull.commits > listed:
        return (f"GitHub lists at most {PR_COMMIT_LIST_LIMIT} commits of a pull request; "
                f"{listed} of {pull.commits} were collected")
    if pull.commits != listed or (commits and not head_listed):
        return (f"the PR changed while it was read (it reported {pull.commits} commits ending at "
                f"{pull.head_sha[:7]}, the listing had {listed}); evaluate again for a consistent view")
    return None


def _scrub(text: str) -> str:
    return redact(text)


def _message_of(exc: GithubException) -> str:
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


def _is_rate_limited(exc: GithubException) -> bool:
    if isinstance(exc, RateLimitExceededException) or exc.status == 429:
        return True
    # After the last retry GithubRetry has consumed the body, so the headers are what is left.
    return exc.status == 403 and (
        _header(exc.headers, "x-ratelimit-remaining") == "0"
        or _header(exc.headers, "retry-after") is not None
    )


def _translate(exc: BaseException, what: str, resource: str) -> GitHubError:
    """Turn a PyGithub/requests failure into the taskeval error a user can act on."""
    if isinstance(exc, GitHubError):
        return exc
    if isinstance(exc, GithubException):
        status = exc.status
        detail = _message_of(exc)
        said = f"{status}: {detail}" if detail else str(status)
        if _is_rate_limited(exc):
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
            needs = _NEEDS.get(resource, "")
            hint = f"; the token probably lacks {needs}" if needs else ""
            return AuthError(
                f"GitHub refused access to {what} ({said}){hint}", status=status, resource=resource
            )
        if status == 404:
            return NotFoundError(f"{what} not found, or the token cannot see it",
                                 status=status, resource=resource)
        return GitHubError(f"GitHub answered {said} for {what}", status=status, resource=resource)
    if isinstance(exc, requests.RequestException):
        # urllib3 wraps a read timeout that outlived its retries in a ConnectionError.
        reason = getattr(exc.args[0], "reason", None) if exc.args else None
        timed_out = isinstance(reason, urllib3.exceptions.ReadTimeoutError | urllib3.exceptions.ConnectTimeoutError)
        if isinstance(reason, urllib3.exceptions.NewConnectionError):  # a refused connection, not a wait
            timed_out = False
        if isinstance(exc, requests.ReadTimeout) or timed_out:
            return GitHubError(f"GitHub did not answer in time for {what} (timed out)",
                               resource=resource)
        return GitHubError(f"could not reach GitHub for {what} ({type(exc).__name__})",
                           resource=resource)
    if isinstance(exc, json.JSONDecodeError):
        return GitHubError(f"GitHub answered {what} with malformed JSON", resource=resource)
    if isinstance(exc, KeyError | TypeError | ValidationError):
        return GitHubError(f"GitHub's answer for {what} does not have the documented shape "
                           f"({type(exc).__name__})", resource=resource)
    raise exc


# ------------------------------------------------------------------------------ client factory


def api_url(env: Mapping[str, str] | None = None) -> str:
    """The REST API root: ``GITHUB_API_URL`` (set by Actions, also on GHES) or github.com's."""
    source = os.environ if env is None else env
    value = (source.get("GITHUB_API_URL") or "").strip() or DEFAULT_API_URL
    return value.rstrip("/")


class _Meter:
    """Counts HTTP requests (first tries and retries) across the threads of one collection."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0

    def add(self) -> None:
        with self._lock:
            self.requests += 1


class _Retry(GithubRetry):
    """GithubRetry made bounded, countable, and safe for POST (see the module docstring)."""

    def __init__(self, *args: Any, meter: _Meter | None = None, **kwargs: Any) -> None:
        self.meter = meter
        super().__init__(*args, **kwargs)

    def new(self, **kw: Any) -> _Retry:
        kw.setdefault("meter", self.meter)
        return super().new(**kw)  # type: ignore[return-value]

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        # A 5xx answer to a POST may come after the comment was created; resending could post twice.
        if method.upper() == "POST" and status_code not in (403, 429):
            return False
        return super().is_retry(method, status_code, has_retry_after)

    def increment(  # type: ignore[override]
        self,
        method: str | None = None,
        url: str | None = None,
        response: Any = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> _Retry:
        if error is not None and (method or "").upper() == "POST" and not isinstance(
            error, ConnectTimeoutError
        ):
            raise error  # the request may have reached GitHub
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        if response is not None and self.max_rate_limit_wait is not None:
            try:
                wait = self.get_retry_after(response)
            except InvalidHeader:
                wait = None
            if wait is not None and wait > self.max_rate_limit_wait:
                raise RateLimitExceededExceedsMaxWait(
                    response.status, None, dict(response.headers), wait=wait
                )
        if self.meter is not None:
            self.meter.add()
        return retry  # type: ignore[return-value]


class _MeteredRequester(Requester):
    """A Requester that counts each request it sends (retries are counted by ``_Retry``)."""

    def __init__(self, meter: _Meter | None, **kwargs: Any) -> None:
        self._meter = meter
        super().__init__(**kwargs)

    def requestJson(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any], str]:
        if self._meter is not None:
            self._meter.add()
        return super().requestJson(*args, **kwargs)


def make_client(
    token: str | None = None,
    *,
    base_url: str | None = None,
    app_id: str | None = None,
    private_key: str | None = None,
    installation_id: int | None = None,
    timeout: float = 15,
    retries: int = 5,
    backoff_factor: float = 0.5,
    max_wait: float = 60.0,
) -> Github:
    """A PyGithub client for a token, a GitHub App installation, or nobody (public repos only).

    ``retries`` bounds the tries after the first on 5xx, secondary rate limits and lost
    connections; ``max_wait`` bounds any single wait (``Retry-After``, a primary limit's reset,
    exponential backoff): a limit that needs longer raises ``RateLimitError`` at once. With
    ``app_id``/``private_key`` but no ``installation_id`` the client authenticates as the App
    itself (JWT), which only reaches ``/app`` endpoints. PyGithub's 0.25 s gap between requests is
    turned off: it would serialise concurrent collection, and rate limits are handled by retries.
    """
    url = (base_url or api_url()).strip().rstrip("/")
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        raise ValueError(f"GitHub API URL must be an http(s) URL, got {url!r}")
    auth: Auth.Auth | None
    register_secret(token, private_key)
    if app_id is not None or private_key is not None:
        if not app_id or not private_key:
            raise ValueError("GitHub App authentication needs both app_id and private_key")
        if token:
            raise ValueError("give either a token or GitHub App credentials, not both")
        app = Auth.AppAuth(app_id, private_key)
        auth = app if installation_id is None else app.get_installation_auth(int(installation_id))
    elif token and token.strip():
        auth = Auth.Token(token.strip())
    else:
        auth = None
    retry = _Retry(
        total=retries,
        backoff_factor=backoff_factor,
        backoff_max=max_wait,
        secondary_rate_wait=min(SECONDARY_RATE_WAIT, max_wait),
        max_rate_limit_wait=max_wait,
        raise_on_status=False,  # hand the last answer to PyGithub so it raises a GithubException
    )
    return Github(
        auth=auth,
        base_url=url,
        timeout=timeout,  # type: ignore[arg-type]  # requests takes float seconds
        user_agent=USER_AGENT,
        per_page=PER_PAGE,
        retry=retry,
        seconds_between_requests=None,
        seconds_between_writes=None,
    )


def _clone(gh: Github, meter: _Meter | None = None) -> _MeteredRequester:
    """A private requester with the caller's settings (one per thread; see the module docstring)."""
    kwargs = gh.requester.kwargs
    kwargs["per_page"] = PER_PAGE
    retry = kwargs.get("retry")
    if isinstance(retry, _Retry):
        kwargs["retry"] = retry.new(meter=meter)
    return _MeteredRequester(meter, **kwargs)


# ----------------------------------------------------------------------------------- references


def parse_pr_ref(ref: str) -> tuple[str, int]:
    """``owner/repo#N``, ``owner/repo/pull/N`` or a PR URL (github.com or GHES) -> (repo, N)."""
    text = ref.strip()
    match = _SHORT_REF_RE.fullmatch(text) or _URL_REF_RE.fullmatch(text)
    if match is None or int(match["number"]) < 1:
        raise ValueError(
            f"expected OWNER/REPO#N, OWNER/REPO/pull/N or a pull request URL, got {ref!r}"
        )
    return f"{match['owner']}/{match['name']}", int(match["number"])


def _split_repo(repository: str) -> tuple[str, str]:
    match = _REPO_RE.fullmatch(repository.strip())
    if match is None or match["name"] in (".", ".."):
        raise ValueError(f"expected a repository as OWNER/NAME, got {repository!r}")
    return match["owner"], match["name"]


def _repo_path(repository: str) -> str:
    owner, name = _split_repo(repository)
    return f"/repos/{quote(owner)}/{quote(name)}"


# ------------------------------------------------------------------------------------ collection


class _Json(NonCompletableGithubObject):
    """A list element kept as GitHub sent it: no typed attributes, so nothing to complete lazily."""

    def _initAttributes(self) -> None:
        pass

    def _useAttributes(self, attributes: dict[str, Any]) -> None:
        pass


def _pages(
    requester: Requester,
    path: str,
    params: dict[str, Any] | None = None,
    *,
    list_item: str = "items",
) -> Iterator[dict[str, Any]]:
    """Every element of a paginated listing, 100 per page, following ``Link: rel="next"``."""
    first = {"per_page": PER_PAGE, **(params or {})}
    for element in PaginatedList(_Json, requester, path, first, list_item=list_item):
        yield element.raw_data


T = TypeVar("T")


def _user(data: Mapping[str, Any] | None) -> RawUser | None:
    if not data or not data.get("login"):
        return None
    return RawUser(login=data["login"], type=data.get("type") or "User")


def _pull(data: Mapping[str, Any]) -> RawPullRequest:
    head = data["head"]
    return RawPullRequest(
        number=data["number"],
        title=data.get("title") or "",
        body=data.get("body") or "",
        state=data["state"],
        draft=bool(data.get("draft")),
        merged=bool(data.get("merged") or data.get("merged_at")),
        # GitHub shows a deleted account as "ghost"; the payload may carry null instead.
        user=_user(data.get("user")) or RawUser(login="ghost"),
        author_association=data.get("author_association") or "NONE",
        labels=[label["name"] for label in data.get("labels") or [] if label.get("name")],
        created_at=data["created_at"],
        updated_at=data.get("updated_at"),
        closed_at=data.get("closed_at"),
        merged_at=data.get("merged_at"),
        merged_by=_user(data.get("merged_by")),
        merge_commit_sha=data.get("merge_commit_sha"),
        head_sha=head["sha"],
        head_ref=head["ref"],
        head_repo=(head.get("repo") or {}).get("full_name"),
        base_ref=data["base"]["ref"],
        additions=data.get("additions") or 0,
        deletions=data.get("deletions") or 0,
        changed_files=data.get("changed_files") or 0,
        commits=data.get("commits") or 0,
        comments=data.get("comments") or 0,
        review_comments=data.get("review_comments") or 0,
        html_url=data["html_url"],
    )


def _commit(data: Mapping[str, Any]) -> RawCommit:
    git = data.get("commit") or {}
    author = data.get("author") or {}
    committer = data.get("committer") or {}
    verification = git.get("verification") or {}
    return RawCommit(
        sha=data["sha"],
        message=git.get("message") or "",
        author_login=author.get("login"),
        author_type=author.get("type"),
        author_name=(git.get("author") or {}).get("name"),
        authored_at=(git.get("author") or {}).get("date"),
        committer_login=committer.get("login"),
        committer_name=(git.get("committer") or {}).get("name"),
        committed_at=(git.get("committer") or {}).get("date"),
        verified=bool(verification.get("verified")),
        verification_reason=verification.get("reason"),
        parents=[p["sha"] for p in data.get("parents") or [] if p.get("sha")],
        html_url=data.get("html_url"),
    )


def _review(data: Mapping[str, Any]) -> RawReview:
    return RawReview(
        id=data["id"],
        user=_user(data.get("user")),
        state=data["state"],
        body=data.get("body") or "",
        submitted_at=data.get("submitted_at"),
        commit_id=data.get("commit_id"),
        author_association=data.get("author_association") or "NONE",
        html_url=data.get("html_url"),
    )


def _review_comment(data: Mapping[str, Any]) -> RawReviewComment:
    return RawReviewComment(
        id=data["id"],
        user=_user(data.get("user")),
        body=data.get("body") or "",
        path=data.get("path"),
        created_at=data.get("created_at"),
        in_reply_to_id=data.get("in_reply_to_id"),
        html_url=data.get("html_url"),
    )


def _issue_comment(data: Mapping[str, Any]) -> RawIssueComment:
    return RawIssueComment(
        id=data["id"],
        user=_user(data.get("user")),
        body=data.get("body") or "",
        created_at=data.get("created_at"),
        author_association=data.get("author_association") or "NONE",
        html_url=data.get("html_url"),
    )


def _file(data: Mapping[str, Any]) -> RawFile:
    # The patch is deliberately dropped: diffs are never evidence (design: no raw blobs).
    return RawFile(
        filename=data["filename"],
        status=data.get("status") or "modified",
        additions=data.get("additions") or 0,
        deletions=data.get("deletions") or 0,
        changes=data.get("changes") or 0,
        previous_filename=data.get("previous_filename"),
    )


def _check_run(data: Mapping[str, Any]) -> RawCheckRun:
    output = data.get("output") or {}
    return RawCheckRun(
        id=data["id"],
        name=data["name"],
        status=data.get("status") or "completed",
        conclusion=data.get("conclusion"),
        head_sha=data["head_sha"],
        started_at=data.get("started_at"),
        completed_at=data.get("completed_at"),
        app_slug=(data.get("app") or {}).get("slug"),
        output_title=output.get("title"),
        output_summary=output.get("summary"),
        output_text=output.get("text"),
        html_url=data.get("html_url"),
    )


def _workflow_run(data: Mapping[str, Any]) -> RawWorkflowRun:
    return RawWorkflowRun(
        id=data["id"],
        name=data.get("name"),
        workflow_id=data.get("workflow_id"),
        head_sha=data["head_sha"],
        head_branch=data.get("head_branch"),
        event=data.get("event"),
        status=data.get("status"),
        conclusion=data.get("conclusion"),
        run_attempt=data.get("run_attempt") or 1,
        run_number=data.get("run_number"),
        created_at=data.get("created_at"),
        run_started_at=data.get("run_started_at"),
        updated_at=data.get("updated_at"),
        actor=(data.get("actor") or {}).get("login"),
        triggering_actor=(data.get("triggering_actor") or {}).get("login"),
        html_url=data.get("html_url"),
    )


class _UnreadableConfig(Exception):
    """The config path exists but is not a readable text file (a directory, >1 MB, binary)."""


def _config_text(data: Any) -> str | None:
    if not isinstance(data, dict) or data.get("type") != "file":
        raise _UnreadableConfig(f"{CONFIG_PATH} is not a file")
    if data.get("encoding") != "base64":
        raise _UnreadableConfig(f"{CONFIG_PATH} is too large for the contents API")
    try:
        return base64.b64decode(data.get("content") or "").decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise _UnreadableConfig(f"{CONFIG_PATH} is not UTF-8 text") from exc


_LABELS: Final[Mapping[str, str]] = {
    "commits": "commits",
    "reviews": "reviews",
    "review_comments": "review comments",
    "issue_comments": "conversation comments",
    "files": "changed files",
    "check_runs": "check runs",
    "workflow_runs": "workflow runs",
    "config": CONFIG_PATH,
}


def _issue_for(resource: str, exc: GithubException) -> CollectionIssue | None:
    """A 403/404 on evidence the PR can be scored without becomes a recorded gap, not a failure."""
    if exc.status not in (403, 404) or _is_rate_limited(exc):
        return None
    detail = _message_of(exc) or ("Not Found" if exc.status == 404 else "Forbidden")
    return CollectionIssue(
        resource=resource,
        status=exc.status,
        message=_scrub(
            f"{_LABELS[resource]} could not be read ({exc.status}: {detail}); "
            f"the token probably lacks {_NEEDS[resource]}"
        ),
    )


def collect(gh: Github, repository: str, number: int, *, max_workers: int = 8) -> RawCollection:
    """Fetch everything taskeval reads about one PR, concurrently, with no per-item requests.

    Requests: the repository and the PR (together), then commits, reviews, review comments,
    conversation comments, files and the config (independent of the PR's payload) and, once the PR
    has answered, the head SHA's check runs (``filter=all``: re-runs stay visible; pick the latest
    per name when judging the state at merge) and the branch's workflow runs (filtered to the PR's
    commits). Each resource pages at 100. ``requests`` counts every HTTP request sent for the PR,
    retries included, by counting in the requester and in the retry policy; an App installation's
    token exchange (once an hour, PyGithub's own requester) is not counted.

    Raises ``NotFoundError``/``AuthError`` when the repository or PR cannot be read,
    ``RateLimitError`` when a limit could not be waited out, ``GitHubError`` for 5xx after retries
    or malformed answers. A 403/404 on any other resource becomes a ``CollectionIssue``.
    """
    if number < 1:
        raise ValueError(f"a pull request number is positive, got {number}")
    base = _repo_path(repository)
    what_pr = f"repository {repository} or PR #{number}"
    meter = _Meter()
    local = threading.local()
    created: list[Requester] = []
    lock = threading.Lock()

    def requester() -> Requester:
        mine: Requester | None = getattr(local, "requester", None)
        if mine is None:
            with lock:
                mine = _clone(gh, meter)
                created.append(mine)
            local.requester = mine
        return mine

    def get(path: str, params: dict[str, Any] | None = None) -> Any:
        return requester().requestJsonAndCheck("GET", path, parameters=params)[1]

    def listing(
        resource: str, path: str, convert: Callable[[Mapping[str, Any]], T],
        params: dict[str, Any] | None = None, list_item: str = "items", limit: int | None = None,
    ) -> tuple[list[T], CollectionIssue | None]:
        try:
            out: list[T] = []
            for element in _pages(requester(), path, params, list_item=list_item):
                if limit is not None and len(out) >= limit:
                    return out, CollectionIssue(
                        resource=resource,
                        message=f"more than {limit} {_LABELS[resource]} matched; the newest "
                                f"{limit} were kept",
                    )
                out.append(convert(element))
            return out, None
        except GithubException as exc:
            issue = _issue_for(resource, exc)
            if issue is None:
                raise _translate(exc, f"the {_LABELS[resource]} of {repository}#{number}",
                                 resource) from exc
            return [], issue

    def config(default_branch: str | None) -> tuple[str | None, CollectionIssue | None]:
        params = {"ref": default_branch} if default_branch else None
        try:
            return _config_text(get(f"{base}/contents/{CONFIG_PATH}", params)), None
        except GithubException as exc:
            if exc.status == 404:
                return None, None
            issue = _issue_for("config", exc)
            if issue is None:
                raise _translate(exc, f"{CONFIG_PATH} of {repository}", "config") from exc
            return None, issue
        except _UnreadableConfig as exc:
            return None, CollectionIssue(resource="config", message=str(exc))

    auth = gh.requester.auth
    if isinstance(auth, Auth.AppInstallationAuth):
        # Exchange the App's JWT for an installation token once, before threads race to do it.
        try:
            _ = auth.token
        except Exception as exc:
            raise _translate(exc, f"a GitHub App installation token for {repository}",
                             "installation") from exc
    pool = ThreadPoolExecutor(max_workers=max(1, max_workers), thread_name_prefix="taskeval-gh")
    try:
        repo_f = pool.submit(get, base)
        pull_f = pool.submit(get, f"{base}/pulls/{number}")
        try:
            repo = repo_f.result()
        except Exception as exc:
            raise _translate(exc, what_pr, "repository") from exc
        try:
            pull_data = pull_f.result()
        except Exception as exc:
            raise _translate(exc, f"PR #{number} in {repository}", "pull_request") from exc
        default_branch = repo.get("default_branch")
        futures: dict[str, Future[Any]] = {
            "commits": pool.submit(listing, "commits", f"{base}/pulls/{number}/commits", _commit),
            "reviews": pool.submit(listing, "reviews", f"{base}/pulls/{number}/reviews", _review),
            "review_comments": pool.submit(
                listing, "review_comments", f"{base}/pulls/{number}/comments", _review_comment
            ),
            "issue_comments": pool.submit(
                listing, "issue_comments", f"{base}/issues/{number}/comments", _issue_comment
            ),
            "files": pool.submit(listing, "files", f"{base}/pulls/{number}/files", _file),
            "config": pool.submit(config, default_branch),
        }
        try:
            pull = _pull(pull_data)
        except (KeyError, TypeError, ValidationError) as exc:
            raise _translate(exc, f"PR #{number} in {repository}", "pull_request") from exc
        futures["check_runs"] = pool.submit(
            listing, "check_runs", f"{base}/commits/{pull.head_sha}/check-runs", _check_run,
            {"filter": "all"}, "check_runs",
        )
        futures["workflow_runs"] = pool.submit(
            listing, "workflow_runs", f"{base}/actions/runs", _workflow_run,
            _run_query(pull), "workflow_runs", MAX_WORKFLOW_RUNS,
        )
        results: dict[str, Any] = {}
        for key, future in futures.items():
            try:
                results[key] = future.result()
            except GitHubError:
                raise
            except Exception as exc:
                raise _translate(exc, f"the {_LABELS[key]} of {repository}#{number}", key) from exc
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        for used in created:
            used.close()

    issues = [issue for _, issue in results.values() if issue is not None]
    commits: list[RawCommit] = results["commits"][0]
    if "commits" not in {i.resource for i in issues}:
        changed = _changed_during_collection(pull, commits)
        if changed:
            issues.append(CollectionIssue(resource="commits", message=changed))
    files: list[RawFile] = results["files"][0]
    if "files" not in {i.resource for i in issues} and pull.changed_files > len(files):
        issues.append(CollectionIssue(
            resource="files",
            message=f"GitHub lists at most {PR_FILE_LIST_LIMIT} changed files of a pull request; "
                    f"{len(files)} of {pull.changed_files} were collected",
        ))
    shas = {c.sha for c in commits} | {pull.head_sha}
    runs = [run for run in results["workflow_runs"][0] if run.head_sha in shas]
    remaining, limit = _rate_limit(created)
    return RawCollection(
        repository=repo.get("full_name") or repository,
        html_base=_html_base(repo, repository),
        default_branch=default_branch,
        pull=pull,
        commits=commits,
        reviews=results["reviews"][0],
        review_comments=results["review_comments"][0],
        issue_comments=results["issue_comments"][0],
        files=results["files"][0],
        check_runs=results["check_runs"][0],
        workflow_runs=runs,
        config_text=results["config"][0],
        issues=issues,
        requests=meter.requests,
        rate_limit_remaining=remaining,
        rate_limit_limit=limit,
    )


def _run_query(pull: RawPullRequest) -> dict[str, Any]:
    """Runs of the PR's branch (a fork's branch name for fork PRs) in the PR's lifetime."""
    start = (pull.created_at - RUN_LOOKBACK).date().isoformat()
    end_at = pull.merged_at or pull.closed_at
    created = f">={start}" if end_at is None else f"{start}..{(end_at + timedelta(days=1)).date()}"
    return {"branch": pull.head_ref, "created": created, "exclude_pull_requests": "true"}


def _html_base(repo: Mapping[str, Any], repository: str) -> str:
    html_url = str(repo.get("html_url") or "")
    full_name = str(repo.get("full_name") or repository)
    suffix = f"/{full_name}"
    if html_url.lower().endswith(suffix.lower()):
        return html_url[: -len(suffix)]
    return "https://github.com"


def _rate_limit(requesters: list[Requester]) -> tuple[int | None, int | None]:
    """The lowest remaining quota seen by any thread: the most recent, as the quota only falls."""
    seen = [r.rate_limiting for r in requesters if r.rate_limiting[0] >= 0]
    if not seen:
        return None, None
    remaining, limit = min(seen)
    return remaining, limit


# -------------------------------------------------------------------------------------- writes


def _own_login(requester: Requester) -> str:
    try:
        _, data = requester.requestJsonAndCheck("GET", "/user")
        return str(data["login"])
    except GithubException as exc:
        if exc.status == 403 and not _is_rate_limited(exc):
            if os.environ.get("GITHUB_ACTIONS") == "true":
                return "github-actions[bot]"
            raise AuthError(
                "cannot tell which account posts the comment: GET /user is refused for "
                "installation tokens, so pass own_login (an App's is '<app-slug>[bot]')",
                status=403, resource="user",
            ) from exc
        raise _translate(exc, "the authenticated user", "user") from exc


def upsert_comment(
    gh: Github, repository: str, number: int, body: str, *, own_login: str | None = None
) -> tuple[str, bool]:
    """Create or update the one taskeval comment on a PR; returns (comment URL, created?).

    The comment is ours when it starts with ``MARKER`` and is written by our own account, so a
    marker pasted by someone else is never overwritten. The marker is prepended when ``body`` lacks
    it, so the next run finds the comment again.
    """
    base = _repo_path(repository)
    text = body if body.startswith(MARKER) else f"{MARKER}\n{body}"
    what = f"the comments of PR #{number} in {repository}"
    requester = _clone(gh)
    try:
        login = own_login or _own_login(requester)
        ours = _own_comments(requester, base, number, login)
        if ours:
            _, data = requester.requestJsonAndCheck(
                "PATCH", f"{base}/issues/comments/{int(ours[0]['id'])}", input={"body": text}
            )
            return str(data["html_url"]), False
        _, data = requester.requestJsonAndCheck(
            "POST", f"{base}/issues/{number}/comments", input={"body": text}
        )
        return _converge(requester, base, number, login, text, data)
    except Exception as exc:
        raise _translate(exc, what, "comment") from exc
    finally:
        requester.close()


def _own_comments(requester: Any, base: str, number: int, login: str) -> list[Mapping[str, Any]]:
    """Our marker comments on the PR, oldest first."""
    found = [
        c for c in _pages(requester, f"{base}/issues/{number}/comments")
        if (c.get("body") or "").startswith(MARKER)
        and ((c.get("user") or {}).get("login") or "").lower() == login.lower()
    ]
    return sorted(found, key=lambda c: int(c["id"]))


def _converge(
    requester: Any, base: str, number: int, login: str, text: str, created: Mapping[str, Any]
) -> tuple[str, bool]:
    """After a create, make a race with another run end in one comment.

    GitHub has no atomic create-if-absent, so two runs that both found no comment both create one.
    Each then re-lists and keeps the oldest of ours, deleting the rest: both runs pick the same
    survivor, so the PR converges to a single comment (one extra listing, on creation only).
    """
    ours = _own_comments(requester, base, number, login)
    if len(ours) <= 1:
        return str(created["html_url"]), True
    keep, *extra = ours
    for comment in extra:
        try:
            requester.requestJsonAndCheck("DELETE", f"{base}/issues/comments/{int(comment['id'])}")
        except GithubException as exc:
            if exc.status != 404:  # the other run deleted it first
                raise
    if int(keep["id"]) != int(created["id"]):
        _, data = requester.requestJsonAndCheck(
            "PATCH", f"{base}/issues/comments/{int(keep['id'])}", input={"body": text}
        )
        return str(data["html_url"]), False
    return str(created["html_url"]), True


def collaborator_permission(gh: Github, repository: str, login: str) -> str:
    """``login``'s permission on the repository: admin, maintain, write, triage, read or none."""
    if not _LOGIN_RE.fullmatch(login):
        raise ValueError(f"not a GitHub login: {login!r}")
    requester = _clone(gh)
    try:
        _, data = requester.requestJsonAndCheck(
            "GET", f"{_repo_path(repository)}/collaborators/{quote(login)}/permission"
        )
    except GithubException as exc:
        if exc.status == 404:
            return "none"
        raise _translate(exc, f"the permission of {login} on {repository}",
                         "collaborator") from exc
    except Exception as exc:
        raise _translate(exc, f"the permission of {login} on {repository}",
                         "collaborator") from exc
    finally:
        requester.close()
    # role_name distinguishes maintain/triage, which `permission` folds into write/read; custom
    # roles have their own names, so they fall back to the base permission.
    for value in (data.get("role_name"), data.get("permission")):
        if value in PERMISSIONS:
            return str(value)
    return "none"


def add_reaction(gh: Github, repository: str, comment_id: int, content: str) -> None:
    """React to an issue/PR conversation comment (e.g. ``eyes`` on an ``/evaluate`` request)."""
    if content not in REACTIONS:
        raise ValueError(f"reaction must be one of {sorted(REACTIONS)}, got {content!r}")
    requester = _clone(gh)
    what = f"a reaction on comment {comment_id} in {repository}"
    try:
        requester.requestJsonAndCheck(
            "POST", f"{_repo_path(repository)}/issues/comments/{int(comment_id)}/reactions",
            input={"content": content},
        )
    except Exception as exc:
        raise _translate(exc, what, "reaction") from exc
    finally:
        requester.close()
