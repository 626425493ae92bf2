"""The GraphQL side of ``tests/fakegithub.py``: GitHub's published schema, executed.

``POST /graphql`` (``/api/graphql`` under a GHES root) is answered by parsing, validating and
executing the query with ``graphql-core`` against GitHub's own schema (``tests/schemas/
github.graphql``, vendored from npm ``@octokit/graphql-schema``), with resolvers over the same
fixture data the REST side serves. So a query the collector sends that GitHub would reject
(an unknown field, a missing argument, a wrong type) fails here the same way, and both
transports read one set of facts.

As GitHub does: connections need ``first`` or ``last`` (at most 100) and page by opaque cursors;
a query's cost is its connections' page requests divided by 100 (minimum 1), charged to a
``graphql`` budget of its own and reported by ``rateLimit``; a spent budget answers
``RATE_LIMITED``; field errors (``FORBIDDEN`` for a permission the token lacks, ``NOT_FOUND``)
come in the ``errors`` array beside the partial ``data``; a Bot's login has no ``[bot]``; a
git author is linked to a ``User`` only. ``fake.graphql_max_page`` makes any query asking for
a bigger page time out, as GitHub does on heavy pages.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLResolveInfo,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    build_schema,
    execute,
    parse,
    validate,
    value_from_ast_untyped,
)

if TYPE_CHECKING:
    from tests.fakegithub import FakeGitHub, Identity, _Pull, _Repo

SCHEMA_PATH: Final = Path(__file__).parent / "schemas" / "github.graphql"
GRAPHQL_LIMIT: Final = 5000
TIMEOUT_MESSAGE: Final = (
    "Something went wrong while executing your query. This may be the result of a timeout, or "
    "it could be a GitHub bug. Please include `FAKE:0001` when reporting this issue."
)


@functools.cache
def schema() -> GraphQLSchema:
    """GitHub's schema. ``assume_valid_sdl``: the published SDL defines two fields of
    ``EnterpriseOwnerInfo`` twice, which GitHub's own server tolerates."""
    return build_schema(SCHEMA_PATH.read_text(encoding="utf-8"), assume_valid_sdl=True)


def validation_errors(query: str) -> list[str]:
    """What GitHub's schema says is wrong with ``query`` (empty: valid)."""
    try:
        document = parse(query)
    except GraphQLError as exc:
        return [exc.message]
    return [e.message for e in validate(schema(), document)]


# ------------------------------------------------------------------------------------ cost


def query_cost(query: str, variables: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """(points, nodes) by GitHub's published formula: every connection (a field with ``first``
    or ``last``) needs one request per node of the connections around it; the sum divided by
    100, rounded, at least 1. ``nodes`` is the most nodes the query could return."""
    document = parse(query)
    fragments = {d.name.value: d for d in document.definitions
                 if isinstance(d, FragmentDefinitionNode)}
    ops = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    requests = 0
    nodes = 0

    def size(field: FieldNode) -> int | None:
        for arg in field.arguments:
            if arg.name.value in ("first", "last"):
                if isinstance(arg.value, VariableNode):
                    return int((variables or {}).get(arg.value.name.value) or 0)
                return int(value_from_ast_untyped(arg.value))
        return None

    def walk(selections: SelectionSetNode | None, multiplier: int) -> None:
        nonlocal requests, nodes
        if selections is None:
            return
        for sel in selections.selections:
            if isinstance(sel, FieldNode):
                if sel.name.value == "rateLimit":
                    continue
                n = size(sel)
                if n is None:
                    walk(sel.selection_set, multiplier)
                else:
                    requests += multiplier
                    nodes += multiplier * n
                    walk(sel.selection_set, multiplier * n)
            elif isinstance(sel, InlineFragmentNode):
                walk(sel.selection_set, multiplier)
            elif isinstance(sel, FragmentSpreadNode):
                walk(fragments[sel.name.value].selection_set, multiplier)

    for op in ops:
        walk(op.selection_set, 1)
    return max(1, int(requests / 100 + 0.5)), nodes


def _max_page(query: str, variables: Mapping[str, Any]) -> int:
    document = parse(query)
    biggest = 0

    def walk(selections: SelectionSetNode | None) -> None:
        nonlocal biggest
        if selections is None:
            return
        for sel in selections.selections:
            if isinstance(sel, FieldNode):
                for arg in sel.arguments:
                    if arg.name.value in ("first", "last"):
                        value = (variables.get(arg.value.name.value)
                                 if isinstance(arg.value, VariableNode)
                                 else value_from_ast_untyped(arg.value))
                        biggest = max(biggest, int(value or 0))
            if isinstance(sel, FieldNode | InlineFragmentNode):
                walk(sel.selection_set)

    for d in document.definitions:
        if isinstance(d, OperationDefinitionNode):
            walk(d.selection_set)
    return biggest


# ------------------------------------------------------------------------------ resolving


def _field(parent: Any, info: GraphQLResolveInfo, **args: Any) -> Any:
    """Every field: a key of the parent dict, or a callable there that takes the arguments."""
    value = parent.get(info.field_name) if isinstance(parent, Mapping) else None
    return value(info, **args) if callable(value) else value


def _error(message: str, kind: str) -> GraphQLError:
    return GraphQLError(message, extensions={"type": kind})


def node_id(*parts: object) -> str:
    return base64.b64encode(json.dumps([str(p) for p in parts]).encode()).decode()


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _uncursor(cursor: str) -> int:
    try:
        return int(base64.b64decode(cursor).decode().rsplit(":", 1)[1])
    except (ValueError, IndexError) as exc:
        raise _error(f"`{cursor}` does not appear to be a valid cursor.", "INVALID_CURSOR_ARGUMENTS") from exc


def connection(items: Callable[..., Sequence[Any]], total: int | None = None) -> Callable[..., Any]:
    """A connection resolver over ``items(**filters)``, paged as GitHub pages."""

    def resolve(info: GraphQLResolveInfo, first: int | None = None, after: str | None = None,
                last: int | None = None, before: str | None = None, **filters: Any) -> Any:
        name = info.field_name
        if first is None and last is None:
            raise _error(f"You must provide a `first` or `last` value to properly paginate the "
                         f"`{name}` connection.", "MISSING_PAGINATION_BOUNDARIES")
        for arg, value in (("first", first), ("last", last)):
            if value is not None and not 0 <= value <= 100:
                raise _error(f"Requesting {value} records on the `{name}` connection exceeds the "
                             f"`{arg}` limit of 100 records.", "EXCESSIVE_PAGINATION")
        everything = list(items(**filters))
        start = _uncursor(after) + 1 if after else 0
        end = _uncursor(before) if before else len(everything)
        window = list(range(start, max(start, end)))
        if first is not None:
            window = window[:first]
        if last is not None:
            window = window[-last:] if last else []
        chosen = [everything[i] for i in window]
        return {
            "totalCount": len(everything) if total is None else total,
            "pageInfo": {
                "hasNextPage": bool(window) and window[-1] + 1 < end,
                "hasPreviousPage": bool(window) and window[0] > 0,
                "startCursor": _cursor(window[0]) if window else None,
                "endCursor": _cursor(window[-1]) if window else None,
            },
            "nodes": chosen,
            "edges": [{"cursor": _cursor(i), "node": n} for i, n in zip(window, chosen, strict=True)],
        }

    return resolve


def actor(user: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A REST user as GraphQL's ``Actor``: a Bot's login without REST's ``[bot]`` suffix."""
    if not user:
        return None
    kind = {"Bot": "Bot", "Organization": "Organization", "Mannequin": "Mannequin"}.get(
        str(user.get("type")), "User")
    login = str(user["login"])
    if kind == "Bot":
        login = login.removesuffix("[bot]")
    return {"__typename": kind, "login": login, "id": node_id(kind, login),
            "url": user.get("html_url"), "databaseId": user.get("id")}


_CHANGE: Final = {"added": "ADDED", "removed": "DELETED", "modified": "MODIFIED",
                  "renamed": "RENAMED", "copied": "COPIED", "changed": "CHANGED",
                  "unchanged": "CHANGED"}
_SIGNATURE: Final = {"malformed_signature": "MALFORMED_SIG",
                     "unknown_signature_type": "UNKNOWN_SIG_TYPE"}


class Resolver:
    """One request's view of the fake: the caller's identity gates what it may read."""

    def __init__(self, fake: FakeGitHub, identity: Identity | None) -> None:
        self.fake = fake
        self.identity = identity

    def need(self, scopes: tuple[str, ...], repo: _Repo) -> None:
        if repo.data["private"] and self.identity is None:
            raise _error("Could not resolve to a Repository.", "NOT_FOUND")
        granted = self.identity.permissions if self.identity is not None else None
        if granted is None:
            return
        if not any(granted.get(s) in ("read", "write") for s in scopes):
            raise _error("Resource not accessible by integration", "FORBIDDEN")

    # ------------------------------------------------------------------------------- roots

    def root(self, cost: int, nodes: int) -> dict[str, Any]:
        fake = self.fake

        def rate_limit(info: GraphQLResolveInfo, dryRun: bool = False) -> dict[str, Any]:
            return {"cost": cost, "limit": fake.graphql_limit, "nodeCount": nodes,
                    "remaining": fake.graphql_remaining, "used": fake.graphql_limit - fake.graphql_remaining,
                    "resetAt": datetime.fromtimestamp(fake.rate_reset, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}

        return {"rateLimit": rate_limit, "repository": self.repository, "node": self.node}

    def repository(self, info: GraphQLResolveInfo, owner: str, name: str,
                   followRenames: bool = True) -> dict[str, Any]:
        full = f"{owner}/{name}"
        for key, repo in self.fake.repos.items():
            if key.lower() == full.lower():
                self.need(("metadata",), repo)
                return self._repo(key, repo)
        raise _error(f"Could not resolve to a Repository with the name '{full}'.", "NOT_FOUND")

    def node(self, info: GraphQLResolveInfo, id: str) -> dict[str, Any] | None:
        try:
            kind, repo_name, *rest = json.loads(base64.b64decode(id))
            repo = self.fake.repos[repo_name]
        except (ValueError, KeyError) as exc:
            raise _error(f"Could not resolve to a node with the global id of '{id}'",
                         "NOT_FOUND") from exc
        if kind == "PullRequest":
            return self._pull(repo_name, repo, repo.pulls[int(rest[0])])
        if kind == "Commit":
            return self._commit_by_sha(repo_name, repo, rest[0])
        if kind == "PullRequestReviewThread":
            pull = repo.pulls[int(rest[0])]
            return next(t for t in self._threads(repo_name, repo, pull) if t["id"] == id)
        if kind == "CheckSuite":
            return next(s for s in self._suites(repo_name, repo, rest[0]) if s["id"] == id)
        raise _error(f"Could not resolve to a node with the global id of '{id}'", "NOT_FOUND")

    # ------------------------------------------------------------------------------ objects

    def _repo(self, name: str, repo: _Repo) -> dict[str, Any]:
        data = repo.data

        def pull_request(info: GraphQLResolveInfo, number: int) -> dict[str, Any]:
            self.need(("pull_requests",), repo)
            pull = repo.pulls.get(number)
            if pull is None:
                raise _error(f"Could not resolve to a PullRequest with the number of {number}.",
                             "NOT_FOUND")
            return self._pull(name, repo, pull)

        def git_object(info: GraphQLResolveInfo, expression: str | None = None,
                       oid: str | None = None) -> dict[str, Any] | None:
            self.need(("contents",), repo)
            if oid is not None:
                return self._commit_by_sha(name, repo, oid)
            ref, _, path = (expression or "").partition(":")
            ref = data["default_branch"] if ref in ("", "HEAD") else ref
            text = repo.contents.get((ref, path))
            if text is None:
                return None
            return {"__typename": "Blob", "id": node_id("Blob", name, ref, path), "text": text,
                    "isBinary": False, "isTruncated": False, "byteSize": len(text.encode())}

        return {
            "__typename": "Repository", "id": node_id("Repository", name),
            "databaseId": data["id"], "nameWithOwner": data["full_name"], "url": data["html_url"],
            "defaultBranchRef": {"name": data["default_branch"], "prefix": "refs/heads/"},
            "pullRequest": pull_request, "object": git_object,
        }

    def _pull(self, name: str, repo: _Repo, pull: _Pull) -> dict[str, Any]:
        data = pull.data
        number = data["number"]
        merged = bool(data.get("merged"))
        head_repo = data["head"].get("repo")

        def issue_side(make: Callable[[], Sequence[Any]]) -> Callable[..., Any]:
            def items(**_: Any) -> Sequence[Any]:
                self.need(("issues", "pull_requests"), repo)
                return make()
            return items

        return {
            "__typename": "PullRequest", "id": node_id("PullRequest", name, number),
            "fullDatabaseId": str(data["id"]), "databaseId": data["id"], "number": number,
            "title": data["title"], "body": data["body"] or "",
            "state": "MERGED" if merged else str(data["state"]).upper(),
            "isDraft": bool(data["draft"]), "merged": merged, "author": actor(data["user"]),
            "authorAssociation": data["author_association"], "createdAt": data["created_at"],
            "updatedAt": data["updated_at"], "closedAt": data["closed_at"],
            "mergedAt": data["merged_at"], "mergedBy": actor(data.get("merged_by")),
            "mergeCommit": ({"oid": data["merge_commit_sha"]}
                            if merged and data.get("merge_commit_sha") else None),
            "potentialMergeCommit": ({"oid": data["merge_commit_sha"]}
                                     if not merged and data["state"] == "open"
                                     and data.get("merge_commit_sha") else None),
            "headRefOid": data["head"]["sha"], "headRefName": data["head"]["ref"],
            "headRepository": {"nameWithOwner": head_repo["full_name"]} if head_repo else None,
            "baseRefName": data["base"]["ref"], "additions": data["additions"],
            "deletions": data["deletions"], "changedFiles": data["changed_files"],
            "url": data["html_url"],
            "labels": connection(lambda **_: [{"name": lb["name"]} for lb in data["labels"]]),
            # A UserConnection: a Bot assignee (an assigned coding agent) is not in it.
            "assignees": connection(lambda **_: [actor(u) for u in data["assignees"]
                                                 if u.get("type") == "User"]),
            "reviewRequests": connection(lambda **_: [
                {"requestedReviewer": actor(u)} for u in data["requested_reviewers"]]),
            "commits": connection(
                lambda **_: [{"commit": self._commit(name, repo, c)} for c in pull.commits[:250]],
                total=data["commits"]),
            "reviews": connection(lambda **_: [self._review(r) for r in pull.reviews]),
            "reviewThreads": connection(lambda **_: self._threads(name, repo, pull)),
            "comments": connection(issue_side(lambda: [
                self._issue_comment(c) for c in repo.issue_comments.get(number, [])])),
            "files": connection(lambda **_: [self._file(f) for f in pull.files[:3000]]),
        }

    def _commit_by_sha(self, name: str, repo: _Repo, sha: str) -> dict[str, Any] | None:
        for pull in repo.pulls.values():
            for c in pull.commits:
                if c["sha"] == sha:
                    return self._commit(name, repo, c)
        return None

    def _commit(self, name: str, repo: _Repo, c: Mapping[str, Any]) -> dict[str, Any]:
        git = c["commit"]
        verification = git.get("verification") or {}
        reason = str(verification.get("reason") or "unsigned")
        signature = None if reason == "unsigned" else {
            "__typename": "GpgSignature", "state": _SIGNATURE.get(reason, reason.upper()),
            "isValid": bool(verification.get("verified"))}
        sha = c["sha"]
        return {
            "__typename": "Commit", "id": node_id("Commit", name, sha), "oid": sha,
            "message": git["message"], "url": c["html_url"],
            "author": self._git_actor(git.get("author"), c.get("author")),
            "committer": self._git_actor(git.get("committer"), c.get("committer")),
            "signature": signature,
            "parents": connection(lambda **_: [{"oid": p["sha"]} for p in c["parents"]]),
            "checkSuites": connection(lambda **_: self._suites(name, repo, sha)),
        }

    @staticmethod
    def _git_actor(person: Mapping[str, Any] | None,
                   account: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if person is None:
            return None
        linked = account if account and account.get("type") == "User" else None
        return {"name": person.get("name"), "email": person.get("email"),
                "date": person.get("date"), "user": {"login": linked["login"]} if linked else None}

    def _suites(self, name: str, repo: _Repo, sha: str) -> list[dict[str, Any]]:
        self.need(("checks",), repo)
        runs = repo.check_runs.get(sha, [])
        suites: dict[int, list[dict[str, Any]]] = {}
        for run in runs:
            suites.setdefault(int((run.get("check_suite") or {}).get("id") or 0), []).append(run)
        out = []
        for suite_id, members in suites.items():
            out.append({
                "__typename": "CheckSuite", "id": node_id("CheckSuite", name, sha, suite_id),
                "databaseId": suite_id, "commit": {"oid": sha},
                "app": {"slug": (members[0].get("app") or {}).get("slug")},
                "checkRuns": connection(functools.partial(self._check_runs, members)),
            })
        return out

    @staticmethod
    def _check_runs(members: list[dict[str, Any]], filterBy: Mapping[str, Any] | None = None,
                    **_: Any) -> list[dict[str, Any]]:
        chosen = members
        if (filterBy or {}).get("checkType", "LATEST") == "LATEST":
            latest: dict[str, dict[str, Any]] = {}
            for run in members:
                if run["name"] not in latest or run["id"] > latest[run["name"]]["id"]:
                    latest[run["name"]] = run
            chosen = [r for r in members if latest[r["name"]] is r]
        out = []
        for run in chosen:
            output = run.get("output") or {}
            out.append({
                "databaseId": run["id"], "name": run["name"], "status": str(run["status"]).upper(),
                "conclusion": str(run["conclusion"]).upper() if run.get("conclusion") else None,
                "startedAt": run.get("started_at"), "completedAt": run.get("completed_at"),
                "title": output.get("title"), "summary": output.get("summary"),
                "text": output.get("text"), "url": run.get("html_url"),
            })
        return out

    @staticmethod
    def _review(r: Mapping[str, Any]) -> dict[str, Any]:
        return {"fullDatabaseId": str(r["id"]), "author": actor(r.get("user")), "state": r["state"],
                "body": r.get("body") or "", "submittedAt": r.get("submitted_at"),
                "commit": {"oid": r["commit_id"]} if r.get("commit_id") else None,
                "authorAssociation": r.get("author_association") or "NONE", "url": r.get("html_url")}

    def _threads(self, name: str, repo: _Repo, pull: _Pull) -> list[dict[str, Any]]:
        threads: dict[int, list[Mapping[str, Any]]] = {}
        for c in pull.review_comments:
            threads.setdefault(int(c.get("in_reply_to_id") or c["id"]), []).append(c)
        number = pull.data["number"]
        return [{
            "__typename": "PullRequestReviewThread",
            "id": node_id("PullRequestReviewThread", name, number, root),
            "comments": connection(functools.partial(lambda cs, **_: [self._review_comment(c) for c in cs],
                                                     comments)),
        } for root, comments in threads.items()]

    @staticmethod
    def _review_comment(c: Mapping[str, Any]) -> dict[str, Any]:
        return {"fullDatabaseId": str(c["id"]), "author": actor(c.get("user")),
                "body": c.get("body") or "", "path": c.get("path"), "createdAt": c.get("created_at"),
                "replyTo": ({"fullDatabaseId": str(c["in_reply_to_id"])}
                            if c.get("in_reply_to_id") else None), "url": c.get("html_url")}

    @staticmethod
    def _issue_comment(c: Mapping[str, Any]) -> dict[str, Any]:
        return {"fullDatabaseId": str(c["id"]), "author": actor(c.get("user")),
                "body": c.get("body") or "", "createdAt": c.get("created_at"),
                "authorAssociation": c.get("author_association") or "NONE", "url": c.get("html_url")}

    @staticmethod
    def _file(f: Mapping[str, Any]) -> dict[str, Any]:
        return {"path": f["filename"], "additions": f.get("additions") or 0,
                "deletions": f.get("deletions") or 0,
                "changeType": _CHANGE.get(str(f.get("status")), "MODIFIED")}


# -------------------------------------------------------------------------------- answering


def answer(fake: FakeGitHub, identity: Identity | None,
           body: bytes | str | None) -> tuple[int, Any, dict[str, str]]:
    """``POST /graphql``: (status, payload, headers), as GitHub answers."""
    if identity is None:
        return 401, {"message": "This endpoint requires you to be authenticated.",
                     "documentation_url": "https://docs.github.com/graphql/guides/"
                                          "forming-calls-with-graphql"}, {}
    if not fake.graphql_enabled:
        return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, {}
    try:
        request = json.loads(body or b"{}")
        query = str(request["query"])
        variables = dict(request.get("variables") or {})
    except (ValueError, KeyError, TypeError):
        return 400, {"message": "Problems parsing JSON",
                     "documentation_url": "https://docs.github.com/graphql"}, {}
    try:
        document = parse(query)
    except GraphQLError as exc:
        return 200, {"errors": [{"message": exc.message}]}, {}
    problems = validate(schema(), document)
    if problems:
        return 200, {"errors": [{"message": e.message, "locations": _locations(e)}
                                for e in problems]}, {}
    fake.graphql_queries.append((query, variables))
    if fake.graphql_max_page and _max_page(query, variables) > fake.graphql_max_page:
        return 200, {"data": None, "errors": [{"message": TIMEOUT_MESSAGE}]}, {}
    cost, nodes = query_cost(query, variables)
    with fake._lock:
        fake._roll_rate_window()
        if fake.graphql_remaining < cost:
            return 200, {"errors": [{"type": "RATE_LIMITED", "message":
                                     "API rate limit already exceeded for user ID 1."}]}, \
                _rate_headers(fake, 0)
        fake.graphql_remaining -= cost
        fake.graphql_points += cost
        remaining = fake.graphql_remaining
    resolver = Resolver(fake, identity)
    result = execute(schema(), document, root_value=resolver.root(cost, nodes),
                     variable_values=variables, field_resolver=_field)
    payload: dict[str, Any] = {}
    if result.errors:
        payload["errors"] = [_github_error(e) for e in result.errors]
    payload["data"] = result.data
    return 200, payload, _rate_headers(fake, remaining)


def _rate_headers(fake: FakeGitHub, remaining: int) -> dict[str, str]:
    return {"X-RateLimit-Limit": str(fake.graphql_limit), "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Used": str(fake.graphql_limit - remaining),
            "X-RateLimit-Reset": str(fake.rate_reset), "X-RateLimit-Resource": "graphql"}


def _locations(error: GraphQLError) -> list[dict[str, int]]:
    return [{"line": loc.line, "column": loc.column} for loc in error.locations or []]


def _github_error(error: GraphQLError) -> dict[str, Any]:
    """GitHub's error shape: ``type`` beside ``path``, ``locations`` and ``message``."""
    out: dict[str, Any] = {}
    kind = (error.extensions or {}).get("type")
    if kind:
        out["type"] = kind
    out.update({"path": list(error.path or []), "locations": _locations(error),
                "message": error.message})
    return out
