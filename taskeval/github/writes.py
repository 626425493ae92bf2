"""Writes to GitHub, and the reads they need: the one evaluation comment (create or update, race
safe), our own login, a commenter's permission, and reactions on a command comment.

The comment is written over REST, or, when collection read the PR over GraphQL (a
``CommentSeed``), with GraphQL mutations (``addComment``, ``updateIssueComment``,
``deleteIssueComment``), whose points come from the GraphQL budget, not the REST one. After a
GraphQL read neither path needs a login: GitHub's ``viewerDidAuthor`` on each comment says
whether the credentials wrote it, whichever account they post as. Both paths give the same
result (the comment's URL, created or updated) and the same guarantees: a marker comment someone
else wrote is never touched, and two runs racing to create end with one comment. The mutations
are used when they leave the credentials' budgets more evaluations than REST would
(``comment_over_graphql``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

from github import Github
from github.GithubException import GithubException
from github.Requester import Requester

from taskeval.contract import COMMENT_MARKER
from taskeval.github.client import LOGIN_RE, Meter, MeteredRequester, clone, pages, repo_path
from taskeval.github.errors import (
    AuthError,
    GitHubError,
    NotFoundError,
    RateLimitError,
    _reset_at,
    is_rate_limited,
    translate,
)
from taskeval.github.graphql.read import GraphQLUnavailable, comment_seed
from taskeval.raw import CommentSeed
from taskeval.redact import redact

MARKER: Final = COMMENT_MARKER
REACTIONS: Final = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
PERMISSIONS: Final = ("admin", "maintain", "write", "triage", "read", "none")


def authenticated_login(requester: Requester, hint: str | None = None) -> str:
    """The login the credentials post as: ``GET /user``, or ``github-actions[bot]`` inside
    Actions, whose installation token cannot read ``/user``. When GitHub will not say, an
    ``AuthError`` ending in ``hint``: how the calling adapter lets its user name the account
    (each reads its own setting; the core names none)."""
    try:
        _, data = requester.requestJsonAndCheck("GET", "/user")
        return str(data["login"])
    except GithubException as exc:
        if exc.status == 403 and not is_rate_limited(exc):
            if os.environ.get("GITHUB_ACTIONS") == "true":
                return "github-actions[bot]"
            raise AuthError(
                "cannot tell which account posts the comment: GET /user is refused for App and "
                "installation tokens" + (f"; {hint}" if hint else ""),
                status=403, resource="user",
            ) from exc
        raise translate(exc, "the authenticated user", "user") from exc


def comment_login(gh: Github, hint: str | None = None) -> str:
    """The login ``gh``'s credentials post comments as (see :func:`authenticated_login`); an
    ``AuthError`` ending in ``hint`` when GitHub will not say."""
    requester = clone(gh)
    try:
        return authenticated_login(requester, hint)
    except Exception as exc:
        raise translate(exc, "the authenticated user", "user") from exc
    finally:
        requester.close()


def upsert_comment(
    gh: Github, repository: str, number: int, body: str, *, own_login: str | None = None,
    seed: CommentSeed | None = None, meter: Meter | None = None, login_hint: str | None = None,
) -> tuple[str, bool]:
    """Create or update the one taskeval comment on a PR; returns (comment URL, created?).
    ``login_hint``: how the adapter names its account, for when GitHub will not say
    (:func:`authenticated_login`).

    The comment is ours when it starts with ``MARKER`` and is written by our own account, so a
    marker pasted by someone else is never overwritten. The marker is prepended when ``body`` lacks
    it, so the next run finds the comment again.

    ``seed`` (from a GraphQL collection) writes with GraphQL mutations and finds our comment in
    what the collection read; when the server refuses GraphQL, REST writes it as without one.
    ``meter`` counts (and, for a shared budget, takes from it) the writes' requests and points.
    """
    base = repo_path(repository)
    text = body if body.startswith(MARKER) else f"{MARKER}\n{body}"
    what = f"the comments of PR #{number} in {repository}"
    if seed is not None and comment_over_graphql(seed):
        try:
            return _GraphQLComment(gh, repository, number, what, meter).upsert(text, seed)
        except GraphQLUnavailable:
            seed = None  # REST below, from a listing: it finds whatever the mutations did
    requester = clone(gh, meter)
    try:
        if seed is not None:
            return _rest_from_seed(requester, base, number, text, seed)
        login = own_login or authenticated_login(requester, login_hint)
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
        raise translate(exc, what, "comment") from exc
    finally:
        requester.close()


def _rest_from_seed(
    requester: Any, base: str, number: int, text: str, seed: CommentSeed
) -> tuple[str, bool]:
    """The comment over REST when a GraphQL read already found ours (``viewerDidAuthor``): no
    ``GET /user`` and no listing before the write. An update is the PATCH alone; a create is the
    POST, whose answer names the account it posted as, then the race's listing."""
    for own in seed.own:
        try:
            _, data = requester.requestJsonAndCheck(
                "PATCH", f"{base}/issues/comments/{own.id}", input={"body": text}
            )
            return str(data["html_url"]), False
        except GithubException as exc:
            if exc.status != 404:
                raise
            # deleted since it was read (another run's convergence): the next, or a new one
    _, data = requester.requestJsonAndCheck(
        "POST", f"{base}/issues/{number}/comments", input={"body": text}
    )
    login = str((data.get("user") or {}).get("login") or "")
    if not login:
        raise GitHubError("GitHub's answer to the new comment names no author", resource="comment")
    return _converge(requester, base, number, login, text, data)


def _own_comments(requester: Any, base: str, number: int, login: str) -> list[Mapping[str, Any]]:
    """Our marker comments on the PR, oldest first."""
    found = [
        c for c in pages(requester, f"{base}/issues/{number}/comments")
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


# What writing the comment costs on each path after a GraphQL read, which found ours: over REST
# the PATCH, or the POST and the listing after it; over GraphQL one mutation (its answer lists the
# comments). (After a REST read, REST also asks ``GET /user`` and lists the comments first.)
REST_UPDATE_REQUESTS: Final = 1
REST_CREATE_REQUESTS: Final = 2
GRAPHQL_COMMENT_POINTS: Final = 1


def rest_comment_requests(seed: CommentSeed) -> int:
    """REST requests the comment takes after a GraphQL read (``_rest_from_seed``)."""
    return REST_UPDATE_REQUESTS if seed.own else REST_CREATE_REQUESTS


def comment_over_graphql(seed: CommentSeed) -> bool:
    """Whether the comment is written with GraphQL mutations: when that leaves the credentials
    budget for as many evaluations like this one as REST would, or more. Both budgets are
    GitHub's word after the collection; the scarcer decides, as it decides a run's throughput.
    An Actions token (1,000 requests and 1,000 points an hour) writes over GraphQL; on GitHub
    Enterprise Cloud (15,000 requests, 1,000 points) over REST. Unknown budgets: GraphQL."""
    rest, points = seed.rest_remaining, seed.graphql_remaining
    if rest is None or points is None:
        return True

    def evaluations(requests: int, cost: int) -> float:
        return min(rest / max(1, requests), points / max(1, cost))

    over_graphql = evaluations(seed.rest_cost, seed.graphql_cost + GRAPHQL_COMMENT_POINTS)
    over_rest = evaluations(seed.rest_cost + rest_comment_requests(seed), seed.graphql_cost)
    return over_graphql >= over_rest


_COMMENT: Final = "id fullDatabaseId body url viewerDidAuthor"
_PAGE: Final = 100
ADD_COMMENT: Final = (
    "mutation TaskevalAddComment($subject: ID!, $body: String!, $page: Int!) { "
    "addComment(input: {subjectId: $subject, body: $body}) { "
    f"commentEdge {{ node {{ {_COMMENT} }} }} "
    "subject { ... on PullRequest { comments(first: $page) { "
    f"pageInfo {{ hasNextPage endCursor }} nodes {{ {_COMMENT} }} }} }} }} }} }}"
)
UPDATE_COMMENT: Final = (
    "mutation TaskevalUpdateComment($id: ID!, $body: String!) { "
    f"updateIssueComment(input: {{id: $id, body: $body}}) {{ issueComment {{ {_COMMENT} }} }} }}"
)
DELETE_COMMENT: Final = (
    "mutation TaskevalDeleteComment($id: ID!) { "
    "deleteIssueComment(input: {id: $id}) { clientMutationId } }"
)
COMMENTS_PAGE: Final = (
    "query TaskevalComments($id: ID!, $page: Int!, $after: String!) { "
    "node(id: $id) { ... on PullRequest { comments(first: $page, after: $after) { "
    f"pageInfo {{ hasNextPage endCursor }} nodes {{ {_COMMENT} }} }} }} }} }}"
)
COMMENT_MUTATIONS: Final = (ADD_COMMENT, UPDATE_COMMENT, DELETE_COMMENT, COMMENTS_PAGE)


class _Gone(Exception):
    """The comment a mutation named no longer exists (``NOT_FOUND``)."""


class _GraphQLComment:
    """The evaluation comment written with GraphQL mutations (see the module docstring)."""

    def __init__(self, gh: Github, repository: str, number: int, what: str,
                 meter: Meter | None = None) -> None:
        self.gh = gh
        self.meter = meter
        self.repository = repository
        self.number = number
        self.what = what

    def upsert(self, text: str, seed: CommentSeed) -> tuple[str, bool]:
        requester = clone(self.gh, self.meter)
        try:
            for own in seed.own:
                try:
                    return self._update(requester, own.node_id, text), False
                except _Gone:
                    continue  # deleted since it was read (another run's convergence): the next
            return self._create(requester, seed.pull_node_id, text)
        except (GitHubError, GraphQLUnavailable):
            raise
        except Exception as exc:
            raise translate(exc, self.what, "comment") from exc
        finally:
            requester.close()

    def _create(self, requester: Any, pull_id: str, text: str) -> tuple[str, bool]:
        """``addComment``, then the same convergence as the REST path's ``_converge``, from the
        PR's comments as the mutation's own answer lists them (read after the write, so the
        later of two racing runs sees both comments)."""
        data = self._send(requester, ADD_COMMENT, {"subject": pull_id, "body": text,
                                                   "page": _PAGE})
        payload = data.get("addComment") or {}
        created = ((payload.get("commentEdge") or {}).get("node")) or {}
        if not created.get("url"):
            raise GitHubError(f"GitHub's answer to the comment on {self.what} has no comment",
                              resource="comment")
        listing = (payload.get("subject") or {}).get("comments")
        nodes = self._every_comment(requester, pull_id, listing)
        ours = comment_seed(pull_id, nodes).own
        if len(ours) <= 1:
            return str(created["url"]), True
        keep, *extra = ours
        for comment in extra:
            with contextlib.suppress(_Gone):  # the other run deleted it first
                self._send(requester, DELETE_COMMENT, {"id": comment.node_id})
        if keep.node_id != created.get("id"):
            return self._update(requester, keep.node_id, text), False
        return str(created["url"]), True

    def _every_comment(self, requester: Any, pull_id: str, page: Any) -> list[Any]:
        if not isinstance(page, Mapping):
            raise GitHubError(f"GitHub's answer to the comment on {self.what} lists no comments",
                              resource="comment")
        nodes = [n for n in page.get("nodes") or [] if n is not None]
        info = page.get("pageInfo") or {}
        while info.get("hasNextPage"):
            data = self._send(requester, COMMENTS_PAGE, {"id": pull_id, "page": _PAGE,
                                                         "after": info.get("endCursor")})
            nxt = (data.get("node") or {}).get("comments") or {}
            nodes.extend(n for n in nxt.get("nodes") or [] if n is not None)
            info = nxt.get("pageInfo") or {}
        return nodes

    def _update(self, requester: Any, node_id: str, text: str) -> str:
        data = self._send(requester, UPDATE_COMMENT, {"id": node_id, "body": text})
        comment = (data.get("updateIssueComment") or {}).get("issueComment") or {}
        if not comment.get("url"):
            raise _Gone()
        return str(comment["url"])

    def _send(self, requester: Any, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        """``data`` of one mutation or query (1 point, taken from the GraphQL budget first);
        ``_Gone`` for a ``NOT_FOUND``, the REST path's errors for the rest."""
        try:
            if isinstance(requester, MeteredRequester):
                headers, body = requester.graphql_query(query, variables, points=1)
            else:
                headers, body = requester.graphql_query(query, variables)
        except GithubException as exc:
            body = exc.data if isinstance(exc.data, dict) else {}
            headers = exc.headers or {}
            if "errors" not in body or exc.status not in (400, 404):
                if exc.status == 404 or (exc.status in (401, 403) and not is_rate_limited(exc)):
                    raise GraphQLUnavailable(f"{exc.status}") from exc
                raise translate(exc, self.what, "comment") from exc
        errors = [e for e in body.get("errors") or [] if isinstance(e, Mapping)]
        for error in errors:
            kind = str(error.get("type") or "")
            message = " ".join(str(error.get("message") or "no message").split())
            if kind == "RATE_LIMITED":
                reset = _reset_at(headers)
                when = f"; it resets at {reset:%Y-%m-%d %H:%M:%S} UTC" if reset else ""
                raise RateLimitError(redact(f"GitHub's GraphQL rate limit reached while writing "
                                            f"{self.what} ({message}){when}; try again later"),
                                     status=403, resource="comment", reset_at=reset)
            if kind == "NOT_FOUND" and query != ADD_COMMENT:
                raise _Gone()
            if kind == "NOT_FOUND":
                raise NotFoundError(f"PR #{self.number} in {self.repository} not found, or the "
                                    "token cannot see it", status=404, resource="comment")
            if kind == "FORBIDDEN":
                raise translate(GithubException(403, {"message": message}, None), self.what,
                                "comment")
            raise GitHubError(redact(f"GitHub's GraphQL API failed on {self.what} ({message})"),
                              resource="comment")
        data = body.get("data")
        if not isinstance(data, dict):
            raise GitHubError(f"GitHub's GraphQL answer for {self.what} has no data",
                              resource="comment")
        return data


def collaborator_permission(gh: Github, repository: str, login: str) -> str:
    """``login``'s permission on the repository: admin, maintain, write, triage, read or none."""
    if not LOGIN_RE.fullmatch(login):
        raise ValueError(f"not a GitHub login: {login!r}")
    requester = clone(gh)
    try:
        _, data = requester.requestJsonAndCheck(
            "GET", f"{repo_path(repository)}/collaborators/{quote(login)}/permission"
        )
    except GithubException as exc:
        if exc.status == 404:
            return "none"
        raise translate(exc, f"the permission of {login} on {repository}",
                        "collaborator") from exc
    except Exception as exc:
        raise translate(exc, f"the permission of {login} on {repository}",
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
    requester = clone(gh)
    what = f"a reaction on comment {comment_id} in {repository}"
    try:
        requester.requestJsonAndCheck(
            "POST", f"{repo_path(repository)}/issues/comments/{int(comment_id)}/reactions",
            input={"content": content},
        )
    except Exception as exc:
        raise translate(exc, what, "reaction") from exc
    finally:
        requester.close()
