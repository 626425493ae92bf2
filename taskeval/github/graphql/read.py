"""Sending the queries and paging every connection to its end, through ``node(id:)`` on the
object that owns it; errors, timeouts and refusals as the REST path words them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from github.GithubException import GithubException
from github.Requester import Requester

from taskeval.config import CONFIG_PATH
from taskeval.contract import COMMENT_MARKER
from taskeval.github.client import MeteredRequester
from taskeval.github.errors import (
    NEEDS,
    GitHubError,
    LinkFailure,
    NotFoundError,
    RateLimitError,
    _reset_at,
    is_rate_limited,
    link_failure,
    translate,
)
from taskeval.github.graphql.convert import _convert, _id
from taskeval.github.graphql.queries import (
    _SUITES,
    BATCH_SIZES,
    FIRST_SIZES,
    LABEL_CONNECTIONS,
    LABELS,
    MIN_PAGE,
    NEXT_PAGE,
    NEXT_SIZES,
    PULL_CONNECTIONS,
    TIMELINE_LIMIT,
    TIMEOUT_RETRIES,
    Conn,
    alias,
    flag,
    issue_alias,
    issues_query,
    page_query,
    pull_query,
    pulls_query,
)
from taskeval.github.graphql.timeline import agent_pull, events
from taskeval.raw import (
    CollectionIssue,
    CommentSeed,
    OwnComment,
    RawLinkedIssue,
    RawPullRequest,
)
from taskeval.redact import redact


class GraphQLUnavailable(Exception):
    """The server has no GraphQL endpoint or refuses the token for it: collect over REST."""


class _TimedOut(Exception):
    """GitHub gave up on the query (a timeout in the ``errors`` array, or a 502/504)."""


# ------------------------------------------------------------------------------ the queries
@dataclass
class PullRead:
    """What the GraphQL reading yields for ``collection`` to assemble."""

    repo: dict[str, Any]
    pull: RawPullRequest
    listed: dict[str, tuple[Any, CollectionIssue | None]]
    renamed: bool  # a file was renamed or copied: its previous path is REST-only
    checks_without_id: bool  # a check run GraphQL gave no databaseId: REST lists them instead
    # The PR's commits were refused, so its head commit (and its checks) was never read: REST
    # lists the head SHA's check runs instead, which gives REST's own answer for them.
    head_unread: bool = False
    cost: int = 0
    remaining: int | None = None
    limit: int | None = None
    queries: int = 0
    # For the comment: the PR's node id and our marker comments; None when the conversation
    # comments could not all be read (then the comment is written over REST).
    comment_seed: CommentSeed | None = None
    # GitHub answered an item of the timeline with an error: REST reads the timeline instead.
    timeline_unread: bool = False


@dataclass
class _Session:
    requester: Requester
    repository: str
    number: int
    cost: int = 0
    queries: int = 0
    remaining: int | None = None
    limit: int | None = None
    gaps: dict[str, CollectionIssue] = field(default_factory=dict)
    # The PR's connections a FORBIDDEN refused (by field); see ``read_pull``.
    refused: set[str] = field(default_factory=set)
    # Connections cut at their ``limit`` (by resource), and whether GitHub answered an item of
    # the timeline with an error (its facts unknown: the PR's timeline is then read over REST).
    cut: set[str] = field(default_factory=set)
    timeline_unread: bool = False

    def send(self, query: str, variables: dict[str, Any], where: list[str]) -> dict[str, Any]:
        """``data`` of one query, its page size halved while GitHub times out on it. Errors
        on evidence the PR can be scored without become gaps (``where`` maps an error's path to
        a resource); the rest raise."""
        sizes = {k: int(v) for k, v in variables.items() if k in FIRST_SIZES and f"${k}" in query}
        page = sizes.get("page", NEXT_PAGE)
        for attempt in range(TIMEOUT_RETRIES + 1):
            try:
                return self._once(query, {**variables, **sizes}, where)
            except _TimedOut:
                if attempt == TIMEOUT_RETRIES or page <= MIN_PAGE:
                    break
                sizes = {k: max(MIN_PAGE if k == "page" else 1, v // 2) for k, v in sizes.items()}
                page = sizes.get("page", NEXT_PAGE)
        raise GitHubError(
            f"GitHub timed out on the GraphQL query for {self.repository}#{self.number} even at "
            f"{page} items a page; evaluate again later or use --api rest", resource="pull_request")

    def raw(self, query: str, variables: dict[str, Any],
            points: int = 1) -> tuple[dict[str, Any], Mapping[str, Any]]:
        """(body, headers) of one query, metered; its ``errors`` are the caller's to read, but
        a timeout (``_TimedOut``) or a rate limit raises here."""
        self.queries += 1
        try:
            if isinstance(self.requester, MeteredRequester):  # the budget takes `points` first
                headers, body = self.requester.graphql_query(query, variables, points=points)
            else:
                headers, body = self.requester.graphql_query(query, variables)
        except GithubException as exc:
            body = exc.data if isinstance(exc.data, dict) else {}
            headers = exc.headers or {}
            if "errors" not in body or exc.status not in (400, 404):
                raise self._http_failure(exc) from exc
        self._meter(body)
        for error in (e for e in body.get("errors") or [] if isinstance(e, Mapping)):
            message = _message(error)
            if str(error.get("type") or "") == "RATE_LIMITED" or "timeout" in message.lower() \
                    or "timed out" in message.lower():
                self._error(error, headers, [])
        return body, headers

    def _once(self, query: str, variables: dict[str, Any], where: list[str],
              points: int = 1) -> dict[str, Any]:
        body, headers = self.raw(query, variables, points)
        errors = [e for e in body.get("errors") or [] if isinstance(e, Mapping)]
        for error in errors:
            self._error(error, headers, where)
        data = body.get("data")
        if not isinstance(data, dict):
            if errors:
                raise GitHubError(redact(
                    f"GitHub's GraphQL API answered {self.repository}#{self.number} with errors "
                    f"and no data ({_message(errors[0])})"), resource="pull_request")
            raise GitHubError(f"GitHub's GraphQL answer for {self.repository}#{self.number} "
                              "has no data", resource="pull_request")
        return data

    def _http_failure(self, exc: GithubException) -> Exception:
        if exc.status in (502, 504):
            return _TimedOut()
        if exc.status == 404 or (exc.status in (401, 403) and not is_rate_limited(exc)):
            return GraphQLUnavailable(f"{exc.status}")
        return translate(exc, f"PR #{self.number} in {self.repository} (GraphQL)", "pull_request")

    def _meter(self, body: Mapping[str, Any]) -> None:
        data = body.get("data")
        rate = data.get("rateLimit") if isinstance(data, Mapping) else None
        if isinstance(rate, Mapping):
            self.cost += int(rate.get("cost") or 0)
            if isinstance(self.requester, MeteredRequester):
                self.requester.charged(int(rate.get("cost") or 0))
            self.remaining = rate.get("remaining")
            self.limit = rate.get("limit")

    def _error(self, error: Mapping[str, Any], headers: Mapping[str, Any],
               where: list[str]) -> None:
        kind = str(error.get("type") or "")
        message = _message(error)
        path = [str(p) for p in error.get("path") or []]
        if kind == "RATE_LIMITED":
            reset = _reset_at(headers)
            when = f"; it resets at {reset:%Y-%m-%d %H:%M:%S} UTC" if reset else ""
            raise RateLimitError(
                redact(f"GitHub's GraphQL rate limit reached while reading PR #{self.number} in "
                       f"{self.repository} ({message}){when}; try again later"),
                status=403, resource="pull_request", reset_at=reset)
        if "timeout" in message.lower() or "timed out" in message.lower():
            raise _TimedOut()  # GitHub: "... This may be the result of a timeout ..."
        if "timelineItems" in path and "nodes" in path[path.index("timelineItems"):]:
            self.timeline_unread = True  # one item, not the timeline: REST reads it whole
            return
        resource = _resource_of(path, where)
        if kind == "NOT_FOUND" and resource in ("repository", "pull_request"):
            what = (f"repository {self.repository} or PR #{self.number}" if resource == "repository"
                    else f"PR #{self.number} in {self.repository}")
            raise NotFoundError(f"{what} not found, or the token cannot see it",
                                status=404, resource=resource)
        if kind == "FORBIDDEN" and resource not in ("repository", "pull_request"):
            if path[:2] == ["repository", "pullRequest"] and len(path) >= 3:
                self.refused.add("commits" if path[2] == "headCommit" else path[2])
            self.gaps.setdefault(resource, CollectionIssue(
                resource=resource, status=403,
                message=redact(f"{LABELS[resource]} could not be read (403: {message}); the token "
                               f"probably lacks {NEEDS[resource]}"),
            ))
            return
        if kind == "FORBIDDEN":
            raise translate(GithubException(403, {"message": message}, None),
                            f"PR #{self.number} in {self.repository}", resource)
        raise GitHubError(redact(f"GitHub's GraphQL API failed on {'.'.join(path) or 'the query'} "
                                 f"for {self.repository}#{self.number} ({message})"),
                          resource=resource)

    # ------------------------------------------------------------------------------ paging

    def complete(self, conn: Conn, page: Mapping[str, Any] | None, owner_id: str | None) -> list[Any]:
        """Every node of a connection, its next pages read through ``node(id: owner_id)``, and
        every connection nested in its nodes completed the same way."""
        if page is None:
            return []
        nodes = [n for n in page.get("nodes") or [] if n is not None]
        info = page.get("pageInfo") or {}
        limit = conn.limit
        while info.get("hasNextPage") and owner_id and conn.resource not in self.gaps \
                and (limit is None or len(nodes) < limit):
            data = self.send(page_query(conn), {"id": owner_id, **NEXT_SIZES,
                                                "after": info.get("endCursor")}, [conn.resource])
            nxt = (data.get("node") or {}).get(conn.field)
            if not isinstance(nxt, Mapping):
                break
            nodes.extend(n for n in nxt.get("nodes") or [] if n is not None)
            info = nxt.get("pageInfo") or {}
        if limit is not None and (len(nodes) > limit or (len(nodes) == limit
                                                          and info.get("hasNextPage"))):
            nodes = nodes[:limit]
            self.cut.add(conn.resource)
        for node in nodes:
            for holder, child in conn.children:
                owner = node.get(holder) if holder else node
                if isinstance(owner, dict) and child.field in owner:
                    owner[child.field] = {"nodes": self.complete(child, owner[child.field],
                                                                 owner.get("id"))}
        return nodes


def _message(error: Mapping[str, Any]) -> str:
    return " ".join(str(error.get("message") or "no message").split())


# Where an error's path points, from the first field naming a resource.
_PATH_RESOURCES: Final[Mapping[str, str]] = {
    "config": "config", "headCommit": "check_runs", "checkSuites": "check_runs",
    "checkRuns": "check_runs", "commits": "commits", "parents": "commits", "reviews": "reviews",
    "reviewThreads": "review_comments", "comments": "issue_comments", "files": "files",
    "pullRequest": "pull_request", "repository": "repository", "timelineItems": "timeline",
}


def _resource_of(path: list[str], where: list[str]) -> str:
    if path and path[-1] == "headCommit":
        return "commits"  # the listing itself (``commits(last: 1)``), not the head's checks
    for part in reversed(path):
        if part in _PATH_RESOURCES and part not in ("pullRequest", "repository"):
            if part == "comments" and "reviewThreads" in path:
                return "review_comments"
            if part == "commits" and "headCommit" in path:
                return "check_runs"
            return _PATH_RESOURCES[part]
    if where:
        return where[0]
    return "pull_request" if "pullRequest" in path else "repository"


def read_pull(requester: Requester, repository: str, number: int) -> PullRead:
    """Read the PR over GraphQL, every connection to its end (see the module docstring).

    Raises ``GraphQLUnavailable`` when the server has no GraphQL or refuses the token for it,
    ``NotFoundError`` for a missing repository or PR, ``RateLimitError`` for ``RATE_LIMITED``,
    ``GitHubError`` otherwise; a ``FORBIDDEN`` on one resource is a gap in ``listed``."""
    owner, name = repository.split("/", 1)
    session = _Session(requester, repository, number)
    variables = {"owner": owner, "name": name, "number": number, **FIRST_SIZES,
                 "config": f"HEAD:{CONFIG_PATH}"}
    skipped: set[str] = set()
    # A FORBIDDEN on a non-null connection (commits, review threads, comments, assignees) nulls
    # the whole PR: GraphQL's null propagation, which GitHub follows. The refused connections
    # are then gaps (as REST's 403 on their listing), and the query is asked again without them.
    for _ in range(len(PULL_CONNECTIONS) + 1):
        data = session.send(pull_query(), {**variables, **{flag(f): False for f in skipped}}, [])
        repo = data.get("repository")
        if isinstance(repo, Mapping) and isinstance(repo.get("pullRequest"), Mapping):
            break
        if not session.refused - skipped:
            raise NotFoundError(f"PR #{number} in {repository} not found, or the token cannot "
                                "see it", status=404, resource="pull_request")
        skipped |= session.refused
    else:  # pragma: no cover - each round skips one more of a finite set
        raise NotFoundError(f"PR #{number} in {repository} not found, or the token cannot see it",
                            status=404, resource="pull_request")
    assert isinstance(repo, Mapping)
    return _finish(session, repo, dict(repo["pullRequest"]), head_unread="commits" in skipped)


def _finish(session: _Session, repo: Mapping[str, Any], pr: dict[str, Any], *,
            head_unread: bool = False) -> PullRead:
    """A PR's first page of everything, completed to the end of every connection, converted.
    ``head_unread``: the commit listing was refused, so the head's checks were not read."""
    repository, number = session.repository, session.number
    pr_id = pr.get("id")
    nodes: dict[str, list[Any]] = {}
    agent = agent_pull(pr)
    for conn in PULL_CONNECTIONS:
        page = pr.get(conn.field)
        if conn.field == "timelineItems" and agent and isinstance(page, Mapping):
            page = {**page, "pageInfo": {}}  # REST reads this timeline: no further pages
        nodes[conn.field] = session.complete(conn, page, pr_id)
    suites, head_oid = _head_suites(session, pr)
    try:
        converted = _convert(repo, pr, nodes, suites, head_oid)
    except (KeyError, TypeError, ValueError) as exc:
        raise translate(exc if not isinstance(exc, ValueError) else TypeError(str(exc)),
                        f"PR #{number} in {repository} (GraphQL)", "pull_request") from exc
    pull, listed, renamed, without_id = converted
    listed["timeline"] = (events(nodes["timelineItems"], nodes["reviews"], nodes["reviewThreads"]),
                          _cut("timeline", TIMELINE_LIMIT) if "timeline" in session.cut else None)
    for resource, gap in session.gaps.items():
        if resource in listed:
            listed[resource] = ([] if resource != "config" else None, gap)
    seed = None
    if pr_id and "issue_comments" not in session.gaps and "comments" not in session.refused:
        seed = comment_seed(str(pr_id), nodes["comments"])
    return PullRead(
        repo={"full_name": repo.get("nameWithOwner"), "html_url": repo.get("url"),
              "default_branch": (repo.get("defaultBranchRef") or {}).get("name")},
        pull=pull, listed=listed, renamed=renamed, checks_without_id=without_id,
        head_unread=head_unread,
        cost=session.cost, remaining=session.remaining, limit=session.limit,
        queries=session.queries, comment_seed=seed, timeline_unread=session.timeline_unread,
    )


def _cut(resource: str, limit: int) -> CollectionIssue:
    """The gap of a connection read to its ``limit``, worded as REST's cut listing is."""
    return CollectionIssue(resource=resource, message=f"more than {limit} {LABELS[resource]} "
                                                      f"matched; the first {limit} were kept")


def comment_seed(pull_node_id: str, comments: list[Any]) -> CommentSeed:
    """The comment's starting point from ``IssueComment`` nodes: those that start with the
    marker and that GitHub says the credentials wrote (``viewerDidAuthor``, whatever login the
    token posts as: a PAT's user, ``github-actions[bot]``, an App's bot), oldest first."""
    own = [OwnComment(node_id=str(n["id"]), id=_id(n.get("fullDatabaseId")))
           for n in comments
           if isinstance(n, Mapping) and n.get("viewerDidAuthor") is True and n.get("id")
           and str(n.get("body") or "").startswith(COMMENT_MARKER)]
    return CommentSeed(pull_node_id=pull_node_id, own=sorted(own, key=lambda c: c.id))


@dataclass
class IssuesRead:
    """The linked issues one query read: each number's labels or why it could not be read, and
    what the query cost."""

    answers: dict[int, RawLinkedIssue | LinkFailure] = field(default_factory=dict)
    cost: int = 0
    queries: int = 0
    remaining: int | None = None
    limit: int | None = None


_ERROR_STATUS: Final[Mapping[str, int]] = {"NOT_FOUND": 404, "FORBIDDEN": 403}


def read_issues(requester: Requester, repository: str, numbers: list[int]) -> IssuesRead:
    """The labels of ``numbers`` (issues or PRs of ``repository``) with one query
    (``issues_query``), asked again while GitHub times out on it. ``NOT_FOUND`` on one is a
    404 and ``FORBIDDEN`` a 403 for that issue alone, as REST answers ``GET /issues/{n}``; a
    rate limit raises ``RateLimitError``, and any other error ``GitHubError``."""
    out = IssuesRead()
    wanted = list(dict.fromkeys(numbers))
    if not wanted:
        return out
    owner, name = repository.split("/", 1)
    session = _Session(requester, repository, wanted[0])
    try:
        _read_issues(session, owner, name, wanted, out)
    finally:
        out.cost, out.queries = session.cost, session.queries
        out.remaining, out.limit = session.remaining, session.limit
    return out


def _read_issues(session: _Session, owner: str, name: str, wanted: list[int],
                 out: IssuesRead) -> None:
    repository = session.repository
    body: dict[str, Any] = {}
    size = NEXT_PAGE
    for attempt in range(TIMEOUT_RETRIES + 1):
        try:
            body, _ = session.raw(issues_query(wanted), {"owner": owner, "name": name,
                                                         "labels": size})
            break
        except _TimedOut:
            if attempt == TIMEOUT_RETRIES or size <= MIN_PAGE:
                raise GitHubError(f"GitHub timed out on the GraphQL query for the linked issues "
                                  f"of {repository}; evaluate again later or use --api rest",
                                  resource="linked_issues") from None
            size = max(MIN_PAGE, size // 2)
    aliases = {issue_alias(k): n for k, n in enumerate(wanted)}
    for error in (e for e in body.get("errors") or [] if isinstance(e, Mapping)):
        path = [str(p) for p in error.get("path") or []]
        number = aliases.get(path[1]) if len(path) > 1 else None
        status = _ERROR_STATUS.get(str(error.get("type") or ""))
        if number is None or status is None:
            raise GitHubError(redact(f"GitHub's GraphQL API failed on the linked issues of "
                                     f"{repository} ({_message(error)})"), resource="linked_issues")
        out.answers.setdefault(number, link_failure(number, status))
    data = body.get("data")
    repo = data.get("repository") if isinstance(data, Mapping) else None
    if not isinstance(repo, Mapping):
        raise GitHubError(f"GitHub's GraphQL answer for the linked issues of {repository} has "
                          "no repository", resource="linked_issues")
    for key, number in aliases.items():
        node = repo.get(key)
        if number in out.answers:
            continue
        if not isinstance(node, Mapping):
            out.answers[number] = link_failure(number, 404)
            continue
        kind = str(node.get("__typename") or "Issue")
        conn = LABEL_CONNECTIONS.get(kind, LABEL_CONNECTIONS["Issue"])
        nodes = session.complete(conn, node.get("labels"), node.get("id"))
        names = [str(n["name"]) for n in nodes if isinstance(n, Mapping) and n.get("name")]
        out.answers[number] = RawLinkedIssue(number=number, labels=sorted(names),
                                             is_pull=kind == "PullRequest")


@dataclass
class BatchRead:
    """What one batch read yields: each PR's read or the error that kept it from being read,
    and what the batch queries cost (their first query shared by every PR of the batch)."""

    reads: dict[int, PullRead | Exception]
    cost: int = 0  # points of the batch queries (not of the PRs' further pages)
    queries: int = 0
    sizes: list[int] = field(default_factory=list)  # PRs per batch query sent, in order


def read_pulls(requester: Requester, repository: str, numbers: list[int],
               points: int = 1) -> BatchRead:
    """Read several PRs of one repository with one GraphQL query (``pulls_query``), then page
    each PR's connections to their end as ``read_pull`` does. A batch GitHub times out on is
    asked again as two halves, down to single PRs read with ``read_pull`` (which halves its page
    sizes); an error about one PR is that PR's entry, never the batch's. ``points`` is the
    expected cost of the query, taken from the GraphQL budget before it is sent.

    Raises ``GraphQLUnavailable``, ``RateLimitError`` and errors about the repository for the
    whole batch."""
    batch = BatchRead(reads={})
    _read_batch(requester, repository, list(dict.fromkeys(numbers)), points, batch)
    return batch


def _read_alone(requester: Requester, repository: str, number: int) -> PullRead | Exception:
    """One PR of a batch read by itself: its read, or the error about it alone (an unavailable
    GraphQL or a spent budget is the whole batch's, so it is raised)."""
    try:
        return read_pull(requester, repository, number)
    except (GraphQLUnavailable, RateLimitError):
        raise
    except GitHubError as exc:
        return exc


def _read_batch(requester: Requester, repository: str, numbers: list[int], points: int,
                batch: BatchRead) -> None:
    if len(numbers) == 1:
        batch.sizes.append(1)
        batch.reads[numbers[0]] = _read_alone(requester, repository, numbers[0])
        return
    owner, name = repository.split("/", 1)
    shared = _Session(requester, repository, numbers[0])
    try:
        body, headers = shared.raw(pulls_query(numbers), {
            "owner": owner, "name": name, **BATCH_SIZES, "config": f"HEAD:{CONFIG_PATH}"},
            points)
    except _TimedOut:
        half = len(numbers) // 2
        for part in (numbers[:half], numbers[half:]):
            _read_batch(requester, repository, part, max(1, points // 2), batch)
        return
    finally:
        batch.cost += shared.cost
        batch.queries += shared.queries
    batch.sizes.append(len(numbers))
    sessions = {n: _Session(requester, repository, n, remaining=shared.remaining,
                            limit=shared.limit) for n in numbers}
    failed: dict[int, Exception] = {}
    for error in (e for e in body.get("errors") or [] if isinstance(e, Mapping)):
        path = [str(p) for p in error.get("path") or []]
        which = next((n for n in numbers if len(path) > 1 and path[1] == alias(n)), None)
        if which is None:  # about the repository or the config: every PR's
            shared._error(error, headers, [])
            continue
        own = {**error, "path": ["repository", "pullRequest", *path[2:]]}
        try:
            sessions[which]._error(own, headers, [])
        except (RateLimitError, GraphQLUnavailable):
            raise
        except GitHubError as exc:
            failed.setdefault(which, exc)
    data = body.get("data")
    repo = data.get("repository") if isinstance(data, Mapping) else None
    if not isinstance(repo, Mapping):
        raise NotFoundError(f"repository {repository} not found, or the token cannot see it",
                            status=404, resource="repository")
    for number in numbers:
        session = sessions[number]
        session.gaps.update(shared.gaps)  # the config's
        pr = repo.get(alias(number))
        if number in failed:
            batch.reads[number] = failed[number]
        elif not isinstance(pr, Mapping) and session.refused:
            # A refused non-null connection nulled the PR (see ``read_pull``): read it alone,
            # which asks again without the refused connections and records them as gaps.
            batch.reads[number] = _read_alone(requester, repository, number)
        elif not isinstance(pr, Mapping):
            batch.reads[number] = NotFoundError(
                f"PR #{number} in {repository} not found, or the token cannot see it",
                status=404, resource="pull_request")
        else:
            try:
                batch.reads[number] = _finish(session, repo, dict(pr))
            except (GraphQLUnavailable, RateLimitError):
                raise
            except GitHubError as exc:
                batch.reads[number] = exc


def _head_suites(session: _Session, pr: Mapping[str, Any]) -> tuple[list[Any], str | None]:
    """The check suites of the PR's head commit (the last listed commit is the head; if a push
    raced the query, the suites are those of the commit the listing ended at, and collection
    reports the race from the commit count)."""
    head = ((pr.get("headCommit") or {}).get("nodes") or [None])[-1]
    commit = (head or {}).get("commit") if isinstance(head, Mapping) else None
    if not isinstance(commit, Mapping):
        return [], None
    return session.complete(_SUITES, commit.get("checkSuites"), commit.get("id")), commit.get("oid")


# -------------------------------------------------------------------------------- converting


