"""The PyGithub client: factory, API root, per-thread metered requesters, retries, pagination and
references (``owner/repo#N``, PR URLs).

PyGithub does the HTTP work: authentication (token or GitHub App installation), base URL
(``GITHUB_API_URL``, which also serves GitHub Enterprise Server), ``Link`` pagination, retries and
rate-limit backoff (``GithubRetry``). Three things are added on top, each because PyGithub does not
do it for us:

* **Raw payloads, no lazy completion.** PyGithub objects complete themselves lazily: touching
  ``raw_data`` or a field missing from a list payload sends one more GET per object (an N+1 over
  commits, runs or files). Listings are therefore read through PyGithub's ``PaginatedList`` with a
  content class that keeps the JSON as it came and never completes (``pages``).
* **One requester per thread.** PyGithub's connection object keeps the verb and URL of a request
  in attributes between ``request()`` and ``getresponse()``, so two threads sharing one ``Github``
  can send each other's requests (PyGithub/PyGithub#2052, still open). Every call works on its own
  clone of the caller's requester (``clone``; ``Requester.kwargs`` is PyGithub's documented recipe
  for that), and collection gives each worker thread its own clone.
* **Bounded, countable retries that never resend a write blindly.** ``_Retry`` extends
  ``GithubRetry``: a ``Retry-After`` longer than the allowed wait fails fast as a rate-limit error
  instead of sleeping for hours, every retry is counted, and a POST is retried only when GitHub
  said "rate limited" (the request was not processed), never after a 5xx or a lost connection where
  it may already have created a comment.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Final, cast
from urllib.parse import quote, urlsplit

from github import Auth, Github, GithubRetry
from github.GithubException import RateLimitExceededExceedsMaxWait
from github.GithubObject import NonCompletableGithubObject
from github.PaginatedList import PaginatedList
from github.Requester import Requester
from urllib3.exceptions import ConnectTimeoutError, InvalidHeader

from taskeval import __version__
from taskeval.github.etags import Cached, ETagCache, cache_key, credential_of, kept_headers, shared_cache
from taskeval.redact import register_secret


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
PER_PAGE: Final = 100
USER_AGENT: Final = f"taskeval/{__version__}"
# GitHub's guidance for secondary limits without Retry-After is "wait at least one minute".
SECONDARY_RATE_WAIT: Final = 60.0

_REPO_RE: Final = re.compile(
    r"(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/(?P<name>[A-Za-z0-9._-]{1,100})"
)
LOGIN_RE: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_SHORT_REF_RE: Final = re.compile(rf"{_REPO_RE.pattern}(?:#|/pulls?/)(?P<number>[0-9]+)/?")
_URL_REF_RE: Final = re.compile(
    rf"https?://[^/\s]+/{_REPO_RE.pattern}/pulls?/(?P<number>[0-9]+)(?:[/?#].*)?"
)


def api_url(env: Mapping[str, str] | None = None) -> str:
    """The REST API root: ``GITHUB_API_URL`` (set by Actions, also on GHES) or github.com's."""
    source = os.environ if env is None else env
    value = (source.get("GITHUB_API_URL") or "").strip() or DEFAULT_API_URL
    return value.rstrip("/")


TOKEN_VARIABLES: Final = ("GITHUB_TOKEN", "GH_TOKEN")


def env_token(env: Mapping[str, str] | None = None) -> str | None:
    """The token from the environment: ``GITHUB_TOKEN``, else ``GH_TOKEN`` (the GitHub CLI's
    name); a variable that is unset, empty or only white space counts as absent."""
    source = os.environ if env is None else env
    for name in TOKEN_VARIABLES:
        value = (source.get(name) or "").strip()
        if value:
            return value
    return None


CORE: Final = "core"
GRAPHQL: Final = "graphql"


def resource_of(method: str | None, url: str | None) -> str:
    """The rate-limit resource a request is charged to (GitHub's ``X-RateLimit-Resource``):
    ``graphql`` for a POST to the GraphQL endpoint, ``core`` for the REST calls taskeval makes."""
    path = urlsplit(url or "").path.rstrip("/")
    return GRAPHQL if (method or "").upper() == "POST" and path.endswith("/graphql") else CORE


class Meter:
    """Counts HTTP requests (first tries and retries) across the threads of one collection, and
    the GraphQL points GitHub reported charging for them.

    ``add`` runs before each request is sent, with the resource it is charged to and the points
    it is expected to cost (1 for a REST request; a GraphQL query's estimate), ``seen`` with each
    answer's headers and ``charged`` with a GraphQL answer's ``rateLimit { cost }``: a subclass
    can gate requests on a shared rate budget per resource there (``taskeval.store.budget``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.graphql_queries = 0
        self.points = 0  # GraphQL points GitHub reported (rateLimit { cost })
        self.not_modified = 0  # 304s: answered from the ETag cache, not charged by GitHub

    def add(self, resource: str = CORE, points: int = 1) -> None:
        with self._lock:
            self.requests += 1
            if resource == GRAPHQL:
                self.graphql_queries += 1

    def seen(self, headers: Mapping[str, Any]) -> None:
        """An answer's headers (rate-limit headers included); nothing to do here."""

    def charged(self, resource: str, points: int) -> None:
        """What GitHub says a GraphQL query cost (``rateLimit { cost }``)."""
        with self._lock:
            self.points += max(0, points)

    def free(self) -> None:
        """The request just counted was answered ``304 Not Modified``: GitHub did not charge it."""
        with self._lock:
            self.not_modified += 1


class _Retry(GithubRetry):
    """GithubRetry made bounded, countable, and safe for POST (see the module docstring)."""

    def __init__(self, *args: Any, meter: Meter | None = None, **kwargs: Any) -> None:
        self.meter = meter
        super().__init__(*args, **kwargs)

    def new(self, **kw: Any) -> _Retry:
        kw.setdefault("meter", self.meter)
        return super().new(**kw)

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        # A 5xx answer to a POST may come after the comment was created; resending could post twice.
        if method.upper() == "POST" and status_code not in (403, 429):
            return False
        return super().is_retry(method, status_code, has_retry_after)

    def increment(
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
            self.meter.add(resource_of(method, url))
        # urllib3 builds the next policy with self.new(), which returns a _Retry (see new above).
        return cast(_Retry, retry)


def _rate_of(headers: Mapping[str, Any]) -> tuple[int, int] | None:
    """(remaining, limit) from an answer's rate-limit headers, when it has both."""
    lower = {str(k).lower(): v for k, v in headers.items()}
    try:
        return int(lower["x-ratelimit-remaining"]), int(lower["x-ratelimit-limit"])
    except (KeyError, TypeError, ValueError):
        return None


class MeteredRequester(Requester):
    """A Requester that counts each request it sends (retries are counted by ``_Retry``), with
    the rate-limit resource it is charged to, and makes every GET conditional on the answer it
    last had for it (``etags``): a ``304`` is that answer, and GitHub does not charge for it."""

    def __init__(self, meter: Meter | None, etag_cache: ETagCache | None = None,
                 **kwargs: Any) -> None:
        self._meter = meter
        self._etags = etag_cache
        self._points = threading.local()
        # (remaining, limit) of the REST budget as the last REST answer said it. PyGithub's own
        # ``rate_limiting`` takes any answer's headers, a GraphQL query's (the points budget) too.
        self.core_rate: tuple[int, int] | None = None
        super().__init__(**kwargs)

    def requestJson(
        self, verb: str, url: str, parameters: dict[str, Any] | None = None,
        headers: dict[str, Any] | None = None, input: Any | None = None, cnx: Any = None,
        follow_302_redirect: bool = False,
    ) -> tuple[int, dict[str, Any], str]:
        resource = resource_of(verb, url)
        if self._meter is not None:
            points = getattr(self._points, "next", 1) if resource == GRAPHQL else 1
            self._meter.add(resource, points)
        key = cached = None
        if self._etags is not None and verb.upper() == "GET" and input is None:
            key = cache_key(credential_of(self.auth), url, parameters,
                            (headers or {}).get("Accept"))
            cached = self._etags.get(key)
            if cached is not None:
                headers = {**(headers or {}), "If-None-Match": cached.etag}
        status, answer, output = super().requestJson(
            verb, url, parameters, headers, input, cnx, follow_302_redirect=follow_302_redirect)
        if self._meter is not None:
            self._meter.seen(answer)
        if resource != GRAPHQL:
            self.core_rate = _rate_of(answer) or self.core_rate
        if key is not None and self._etags is not None:
            if status == 304 and cached is not None:
                self._etags.hit()
                if self._meter is not None:
                    self._meter.free()
                return 200, {**cached.headers, **answer}, cached.body
            etag = next((str(v) for k, v in answer.items() if k.lower() == "etag"), None)
            if status == 200 and etag and isinstance(output, str):
                self._etags.put(key, Cached(etag, kept_headers(answer), output))
        return status, answer, output

    def graphql_query(self, query: str, variables: dict[str, Any], *,
                      points: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
        """PyGithub's ``graphql_query``; ``points`` is what the query is expected to cost, taken
        from the GraphQL budget before it is sent (``charged`` reports what it did cost)."""
        self._points.next = max(1, points)
        try:
            return super().graphql_query(query, variables)
        finally:
            self._points.next = 1

    def charged(self, points: int) -> None:
        """Tell the meter what GitHub said a GraphQL query cost (``rateLimit { cost }``)."""
        if self._meter is not None:
            self._meter.charged(GRAPHQL, points)


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
        raise ValueError(f"GitHub API URL (GITHUB_API_URL) must be an http(s) URL such as "
                         f"https://ghes.example.com/api/v3, got {url!r}")
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


def clone(gh: Github, meter: Meter | None = None, *, conditional: bool = True,
          etags: ETagCache | None = None) -> MeteredRequester:
    """A private requester with the caller's settings (one per thread; see the module docstring);
    its GETs are conditional on ``etags``, by default the process's ETag cache, unless
    ``conditional`` is False or the cache is turned off (``etags``)."""
    kwargs = gh.requester.kwargs
    kwargs["per_page"] = PER_PAGE
    retry = kwargs.get("retry")
    if isinstance(retry, _Retry):
        kwargs["retry"] = retry.new(meter=meter)
    cache = (etags if etags is not None else shared_cache()) if conditional else None
    return MeteredRequester(meter, cache, **kwargs)


class _Json(NonCompletableGithubObject):
    """A list element kept as GitHub sent it: no typed attributes, so nothing to complete lazily."""

    def _initAttributes(self) -> None:
        pass

    def _useAttributes(self, attributes: dict[str, Any]) -> None:
        pass


def pages(
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


def repo_path(repository: str) -> str:
    """``/repos/OWNER/NAME`` for ``OWNER/NAME``; a ValueError for anything else."""
    owner, name = _split_repo(repository)
    return f"/repos/{quote(owner)}/{quote(name)}"
