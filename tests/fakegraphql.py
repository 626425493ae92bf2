"""GitHub's GraphQL API, executed against GitHub's published schema over REST-shaped facts.

``POST /graphql`` (``/api/graphql`` under a GHES root) is answered by parsing, validating and
executing the query with ``graphql-core`` against GitHub's own schema (``tests/schemas/
github.graphql``, vendored from npm ``@octokit/graphql-schema``). So a query the collector sends
that GitHub would reject (an unknown field, a missing argument, a wrong type) fails here the same
way.

The resolvers read a ``Facts`` source: what the same server's REST endpoints answer (their JSON,
404 as ``None``, 403 as ``Refused``). Two servers plug in: ``tests/fakegithub.py`` (its fixture
state, gated by the caller's token) and ``taskeval.corpus.replay`` (the AIDev-pop corpus, which
imports this module only when it and graphql-core are importable, i.e. from the source tree with
the test extra). So each server's two transports read one set of facts.

As GitHub does: connections need ``first`` or ``last`` (at most 100) and page by opaque cursors;
a query's cost is its connections' page requests divided by 100 (minimum 1), charged to a
``graphql`` budget of its own and reported by ``rateLimit``; a spent budget answers
``RATE_LIMITED``; field errors (``FORBIDDEN`` for what REST refuses, ``NOT_FOUND``) come in the
``errors`` array beside the partial ``data``, and an error on a non-null field nulls its nearest
nullable parent (GraphQL's rule, which GitHub follows); a Bot's login has no ``[bot]`` (and the
Copilot agent's REST ``Copilot`` is GraphQL's ``copilot-swe-agent``); a git author is linked to a
``User`` only. ``fake.graphql_max_page`` makes any query asking for a bigger page time out, as
GitHub does on heavy pages.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from graphql import (
    DocumentNode,
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
    from tests.fakegithub import FakeGitHub
    from tests.fakegithub_parts import Identity, _Pull, _Repo

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


@functools.lru_cache(maxsize=256)
def _document(query: str) -> DocumentNode:
    """A query parsed once: the collector sends a handful of texts many times, and parsing and
    validating them (not executing them) is most of a request's time."""
    return parse(query)


@functools.lru_cache(maxsize=256)
def _problems(query: str) -> tuple[GraphQLError, ...]:
    return tuple(validate(schema(), _document(query)))


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
    document = _document(query)
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
    document = _document(query)
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


def comment_node_id(repo: str, comment_id: int) -> str:
    """An ``IssueComment``'s node id (what ``updateIssueComment``/``deleteIssueComment`` take)."""
    return node_id("IssueComment", repo, comment_id)


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
        everything = list(_asked(lambda: items(**filters)))
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


# REST logins GraphQL spells differently: GitHub's Copilot coding agent is the Bot "Copilot" on
# REST's pull requests, comments and timelines (its user object links apps/copilot-swe-agent),
# and GraphQL names that Bot by its App, "copilot-swe-agent" (what `gh` shows as
# app/copilot-swe-agent); REST's reviews already name it "copilot-swe-agent[bot]".
GRAPHQL_LOGINS: Final = {"Copilot": "copilot-swe-agent"}


def actor(user: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A REST user as GraphQL's ``Actor``: a Bot's login without REST's ``[bot]`` suffix."""
    if not user:
        return None
    kind = {"Bot": "Bot", "Organization": "Organization", "Mannequin": "Mannequin"}.get(
        str(user.get("type")), "User")
    login = str(user["login"])
    if kind == "Bot":
        login = GRAPHQL_LOGINS.get(login, login.removesuffix("[bot]"))
    return {"__typename": kind, "login": login, "id": node_id(kind, login),
            "url": user.get("html_url"), "databaseId": user.get("id")}


_CHANGE: Final = {"added": "ADDED", "removed": "DELETED", "modified": "MODIFIED",
                  "renamed": "RENAMED", "copied": "COPIED", "changed": "CHANGED",
                  "unchanged": "CHANGED"}
_SIGNATURE: Final = {"malformed_signature": "MALFORMED_SIG",
                     "unknown_signature_type": "UNKNOWN_SIG_TYPE"}
_NOREPLY: Final = "users.noreply.github.com"


# ------------------------------------------------------------------------- the facts served


class Refused(Exception):
    """What a source will not give: answered ``FORBIDDEN`` with this message, as GitHub answers
    a permission the token lacks (and as the corpus replay answers what its data does not hold)."""


class Absent(Exception):
    """What a source does not have: answered ``NOT_FOUND`` with this message."""


class Facts(Protocol):
    """REST-shaped facts the resolver serves over GraphQL: each method returns what the REST
    endpoint of the same name answers (its JSON), ``None`` where REST answers 404, and raises
    ``Refused`` where REST answers 403 (or ``Absent`` for a 404 GitHub's GraphQL reports as
    ``NOT_FOUND``). ``tests.fakegithub`` and ``taskeval.corpus.replay`` implement it, so the two
    transports of each server read one set of facts."""

    def repository(self, full_name: str) -> tuple[str, Mapping[str, Any]] | None:
        """``GET /repos/{o}/{r}``: the stored name and the payload (matched case-insensitively)."""

    def pull(self, repo: str, number: int) -> Mapping[str, Any] | None:
        """``GET /repos/{o}/{r}/pulls/{n}``."""

    def commits(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        """``GET .../pulls/{n}/commits``, every page (GitHub lists at most 250)."""

    def reviews(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]: ...

    def review_comments(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]: ...

    def issue_comments(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]: ...

    def files(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]: ...

    def check_runs(self, repo: str, sha: str) -> Sequence[Mapping[str, Any]]:
        """``GET .../commits/{sha}/check-runs?filter=all``, every page."""

    def content(self, repo: str, ref: str | None, path: str) -> str | None:
        """The text of ``path`` at ``ref`` (None: the default branch); None where REST has none."""

    def commit(self, repo: str, sha: str) -> Mapping[str, Any] | None:
        """A commit of one of the repository's PRs, in the PR commit listing's shape."""

    def issue(self, repo: str, number: int) -> Mapping[str, Any] | None:
        """``GET /repos/{o}/{r}/issues/{n}``: an issue, or a PR's issue object (with
        ``pull_request``)."""


class Resolver:
    """One request's view of a ``Facts`` source, shaped as GitHub's GraphQL objects."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    # ------------------------------------------------------------------------------- roots

    def root(self, rate: Mapping[str, Any]) -> dict[str, Any]:
        def rate_limit(info: GraphQLResolveInfo, dryRun: bool = False) -> Mapping[str, Any]:
            return rate

        return {"rateLimit": rate_limit, "repository": self.repository, "node": self.node,
                "addComment": self.add_comment, "updateIssueComment": self.update_issue_comment,
                "deleteIssueComment": self.delete_issue_comment}

    def repository(self, info: GraphQLResolveInfo, owner: str, name: str,
                   followRenames: bool = True) -> dict[str, Any]:
        full = f"{owner}/{name}"
        found = _asked(lambda: self.facts.repository(full))
        if found is None:
            raise _error(f"Could not resolve to a Repository with the name '{full}'.", "NOT_FOUND")
        return self._repo(*found)

    def node(self, info: GraphQLResolveInfo, id: str) -> dict[str, Any] | None:
        try:
            kind, repo_name, *rest = json.loads(base64.b64decode(id))
        except ValueError as exc:
            raise _error(f"Could not resolve to a node with the global id of '{id}'",
                         "NOT_FOUND") from exc
        found: Any = None
        if kind == "PullRequest":
            data = _asked(lambda: self.facts.pull(repo_name, int(rest[0])))
            found = self._pull(repo_name, data) if data is not None else None
        elif kind == "Issue":
            data = _asked(lambda: self.facts.issue(repo_name, int(rest[0])))
            found = self._issue(repo_name, data) if data is not None else None
        elif kind == "Commit":
            found = self._commit_by_sha(repo_name, rest[0])
        elif kind == "PullRequestReviewThread":
            found = next((t for t in self._threads(repo_name, int(rest[0])) if t["id"] == id), None)
        elif kind == "CheckSuite":
            found = next((s for s in self._suites(repo_name, rest[0]) if s["id"] == id), None)
        if found is None:
            raise _error(f"Could not resolve to a node with the global id of '{id}'", "NOT_FOUND")
        return dict(found)

    # ------------------------------------------------------------------------------ objects

    def _repo(self, name: str, data: Mapping[str, Any]) -> dict[str, Any]:
        facts = self.facts

        def pull_request(info: GraphQLResolveInfo, number: int) -> dict[str, Any]:
            pull = _asked(lambda: facts.pull(name, number))
            if pull is None:
                raise _error(f"Could not resolve to a PullRequest with the number of {number}.",
                             "NOT_FOUND")
            return self._pull(name, pull)

        def git_object(info: GraphQLResolveInfo, expression: str | None = None,
                       oid: str | None = None) -> dict[str, Any] | None:
            if oid is not None:
                return self._commit_by_sha(name, oid)
            ref, _, path = (expression or "").partition(":")
            text = _asked(lambda: facts.content(name, None if ref in ("", "HEAD") else ref, path))
            if text is None:
                return None
            return {"__typename": "Blob", "id": node_id("Blob", name, ref, path), "text": text,
                    "isBinary": False, "isTruncated": False, "byteSize": len(text.encode())}

        def issue_or_pull_request(info: GraphQLResolveInfo, number: int) -> dict[str, Any]:
            found = _asked(lambda: facts.issue(name, number))
            if found is None:
                raise _error(f"Could not resolve to an issue or pull request with the number of "
                             f"{number}.", "NOT_FOUND")
            if found.get("pull_request"):
                pull = _asked(lambda: facts.pull(name, number))
                if pull is not None:
                    return self._pull(name, pull)
            return self._issue(name, found)

        def issue(info: GraphQLResolveInfo, number: int) -> dict[str, Any]:
            found = _asked(lambda: facts.issue(name, number))
            if found is None or found.get("pull_request"):
                raise _error(f"Could not resolve to an Issue with the number of {number}.",
                             "NOT_FOUND")
            return self._issue(name, found)

        default = data.get("default_branch")
        return {
            "__typename": "Repository", "id": node_id("Repository", name),
            "databaseId": data.get("id"), "nameWithOwner": data["full_name"],
            "url": data["html_url"],
            "defaultBranchRef": {"name": default, "prefix": "refs/heads/"} if default else None,
            "pullRequest": pull_request, "object": git_object,
            "issueOrPullRequest": issue_or_pull_request, "issue": issue,
        }

    @staticmethod
    def _issue(name: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """An ``Issue`` from its REST object: what the collector reads of one (its labels)."""
        number = data["number"]
        return {
            "__typename": "Issue", "id": node_id("Issue", name, number),
            "databaseId": data.get("id"), "number": number, "title": data.get("title") or "",
            "body": data.get("body") or "", "state": str(data.get("state") or "open").upper(),
            "url": data.get("html_url"), "createdAt": data.get("created_at"),
            "author": actor(data.get("user")),
            "labels": connection(lambda **_: [{"name": lb["name"]}
                                              for lb in data.get("labels") or []]),
        }

    def _pull(self, name: str, data: Mapping[str, Any]) -> dict[str, Any]:
        facts = self.facts
        number = data["number"]
        merged = bool(data.get("merged"))
        head_repo = data["head"].get("repo")
        return {
            "__typename": "PullRequest", "id": node_id("PullRequest", name, number),
            "fullDatabaseId": str(data["id"]), "databaseId": data["id"], "number": number,
            "title": data["title"], "body": data.get("body") or "",
            "state": "MERGED" if merged else str(data["state"]).upper(),
            "isDraft": bool(data.get("draft")), "merged": merged, "author": actor(data.get("user")),
            "authorAssociation": data.get("author_association") or "NONE",
            "createdAt": data["created_at"],
            "updatedAt": data.get("updated_at"), "closedAt": data.get("closed_at"),
            "mergedAt": data.get("merged_at"), "mergedBy": actor(data.get("merged_by")),
            "mergeCommit": ({"oid": data["merge_commit_sha"]}
                            if merged and data.get("merge_commit_sha") else None),
            "potentialMergeCommit": ({"oid": data["merge_commit_sha"]}
                                     if not merged and data["state"] == "open"
                                     and data.get("merge_commit_sha") else None),
            "headRefOid": data["head"]["sha"], "headRefName": data["head"]["ref"],
            "headRepository": {"nameWithOwner": head_repo["full_name"]} if head_repo else None,
            "baseRefName": data["base"]["ref"], "additions": data.get("additions") or 0,
            "deletions": data.get("deletions") or 0,
            "changedFiles": data.get("changed_files") or 0,
            "url": data["html_url"],
            "labels": connection(lambda **_: [{"name": lb["name"]}
                                              for lb in data.get("labels") or []]),
            # A UserConnection: a Bot assignee (an assigned coding agent) is not in it.
            "assignees": connection(lambda **_: [actor(u) for u in data.get("assignees") or []
                                                 if u.get("type") == "User"]),
            "reviewRequests": connection(lambda **_: [
                {"requestedReviewer": actor(u)} for u in data.get("requested_reviewers") or []]),
            "commits": connection(
                lambda **_: [{"commit": self._commit(name, c)} for c in facts.commits(name, number)],
                total=data.get("commits")),
            "reviews": connection(lambda **_: [self._review(r) for r in facts.reviews(name, number)]),
            "reviewThreads": connection(lambda **_: self._threads(name, number)),
            "comments": connection(lambda **_: [
                self._issue_comment(name, c) for c in facts.issue_comments(name, number)]),
            "files": connection(lambda **_: [self._file(f) for f in facts.files(name, number)]),
        }

    def _commit_by_sha(self, name: str, sha: str) -> dict[str, Any] | None:
        found = _asked(lambda: self.facts.commit(name, sha))
        return self._commit(name, found) if found is not None else None

    def _commit(self, name: str, c: Mapping[str, Any]) -> dict[str, Any]:
        git = c.get("commit") or {}
        verification = git.get("verification") or {}
        reason = str(verification.get("reason") or "unsigned")
        signature = None if reason == "unsigned" else {
            "__typename": "GpgSignature", "state": _SIGNATURE.get(reason, reason.upper()),
            "isValid": bool(verification.get("verified"))}
        sha = c["sha"]
        return {
            "__typename": "Commit", "id": node_id("Commit", name, sha), "oid": sha,
            "message": git.get("message") or "", "url": c["html_url"],
            "author": self._git_actor(git.get("author"), c.get("author")),
            "committer": self._git_actor(git.get("committer"), c.get("committer")),
            "signature": signature,
            "parents": connection(lambda **_: [{"oid": p["sha"]} for p in c.get("parents") or []]),
            "checkSuites": connection(lambda **_: self._suites(name, sha)),
        }

    @staticmethod
    def _git_actor(person: Mapping[str, Any] | None,
                   account: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A commit's ``GitActor``. Its ``user`` is a ``User`` only (never a Bot). A commit that
        names an account but no git identity (the corpus keeps logins only) gets the account's
        no-reply address, which is how GitHub links a commit to an account."""
        if person is None and not account:
            return None
        person = person or {}
        email = person.get("email")
        if email is None and account and account.get("login"):
            login = str(account["login"])
            ident = account.get("id") or int(hashlib.sha1(login.encode()).hexdigest()[:7], 16)
            email = f"{ident}+{login}@{_NOREPLY}"
        linked = account if account and account.get("type") == "User" else None
        return {"name": person.get("name"), "email": email,
                "date": person.get("date"), "user": {"login": linked["login"]} if linked else None}

    def _suites(self, name: str, sha: str) -> list[dict[str, Any]]:
        runs = _asked(lambda: self.facts.check_runs(name, sha))
        suites: dict[int, list[Mapping[str, Any]]] = {}
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
    def _check_runs(members: list[Mapping[str, Any]], filterBy: Mapping[str, Any] | None = None,
                    **_: Any) -> list[dict[str, Any]]:
        chosen = members
        if (filterBy or {}).get("checkType", "LATEST") == "LATEST":
            latest: dict[str, Mapping[str, Any]] = {}
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

    def _threads(self, name: str, number: int) -> list[dict[str, Any]]:
        threads: dict[int, list[Mapping[str, Any]]] = {}
        for c in self.facts.review_comments(name, number):
            threads.setdefault(int(c.get("in_reply_to_id") or c["id"]), []).append(c)
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

    def _issue_comment(self, name: str, c: Mapping[str, Any]) -> dict[str, Any]:
        """An ``IssueComment``: its ``url`` is REST's ``html_url``; ``viewerDidAuthor`` compares
        the REST author with the caller's account (false where the source has no caller)."""
        viewer = getattr(self.facts, "viewer_login", lambda: None)()
        author = str((c.get("user") or {}).get("login") or "")
        return {"__typename": "IssueComment", "id": comment_node_id(name, c["id"]),
                "fullDatabaseId": str(c["id"]), "databaseId": c["id"],
                "author": actor(c.get("user")),
                "body": c.get("body") or "", "createdAt": c.get("created_at"),
                "authorAssociation": c.get("author_association") or "NONE", "url": c.get("html_url"),
                "viewerDidAuthor": bool(viewer) and author.lower() == str(viewer).lower()}

    # ---------------------------------------------------------------------------- mutations

    def _writer(self) -> Any:
        writer = getattr(self.facts, "write_comment", None)
        if writer is None:
            raise _error("Resource not accessible by integration", "FORBIDDEN")
        return writer

    def _comment_target(self, id: str, kind: str) -> tuple[str, int]:
        try:
            found, repo_name, *rest = json.loads(base64.b64decode(id))
            if found != kind:
                raise ValueError(found)
            return str(repo_name), int(rest[0])
        except (ValueError, IndexError, TypeError) as exc:
            raise _error(f"Could not resolve to a node with the global id of '{id}'",
                         "NOT_FOUND") from exc

    def add_comment(self, info: GraphQLResolveInfo, input: Mapping[str, Any]) -> dict[str, Any]:
        """``addComment`` on a pull request: its payload's ``subject`` is read after the write."""
        repo_name, number = self._comment_target(str(input["subjectId"]), "PullRequest")
        made = _asked(lambda: self._writer()("create", repo_name, number, str(input["body"])))
        if made is None:
            raise _error(f"Could not resolve to a node with the global id of "
                         f"'{input['subjectId']}'", "NOT_FOUND")
        node = self._issue_comment(repo_name, made)
        data = _asked(lambda: self.facts.pull(repo_name, number))
        return {"clientMutationId": input.get("clientMutationId"),
                "commentEdge": {"cursor": _cursor(0), "node": node},
                "subject": self._pull(repo_name, data) if data is not None else None}

    def update_issue_comment(self, info: GraphQLResolveInfo,
                             input: Mapping[str, Any]) -> dict[str, Any]:
        repo_name, cid = self._comment_target(str(input["id"]), "IssueComment")
        made = _asked(lambda: self._writer()("update", repo_name, cid, str(input["body"])))
        if made is None:
            raise _error(f"Could not resolve to a node with the global id of '{input['id']}'",
                         "NOT_FOUND")
        return {"clientMutationId": input.get("clientMutationId"),
                "issueComment": self._issue_comment(repo_name, made)}

    def delete_issue_comment(self, info: GraphQLResolveInfo,
                             input: Mapping[str, Any]) -> dict[str, Any]:
        repo_name, cid = self._comment_target(str(input["id"]), "IssueComment")
        if _asked(lambda: self._writer()("delete", repo_name, cid, "")) is None:
            raise _error(f"Could not resolve to a node with the global id of '{input['id']}'",
                         "NOT_FOUND")
        return {"clientMutationId": input.get("clientMutationId")}

    @staticmethod
    def _file(f: Mapping[str, Any]) -> dict[str, Any]:
        return {"path": f["filename"], "additions": f.get("additions") or 0,
                "deletions": f.get("deletions") or 0,
                "changeType": _CHANGE.get(str(f.get("status")), "MODIFIED")}


def _asked(read: Callable[[], Any]) -> Any:
    """A source's answer; its refusals as GitHub's field errors."""
    try:
        return read()
    except Refused as exc:
        raise _error(str(exc), "FORBIDDEN") from exc
    except Absent as exc:
        raise _error(str(exc), "NOT_FOUND") from exc


# -------------------------------------------------------------------------------- answering


def reset_at(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Budget(Protocol):
    """A server's GraphQL points: ``charge`` takes a query's cost and returns what ``rateLimit``
    reports and the headers to send, or None when the budget cannot pay (``RATE_LIMITED``)."""

    def charge(self, cost: int, nodes: int) -> tuple[dict[str, Any], dict[str, str]] | None: ...


def execute_request(facts: Facts, body: bytes | str | None, budget: Budget, *,
                    log: list[tuple[str, dict[str, Any]]] | None = None,
                    max_page: int | None = None) -> tuple[int, Any, dict[str, str]]:
    """One ``POST /graphql`` over ``facts``: (status, payload, headers), as GitHub answers a
    request it has authenticated: a body that is not JSON is a 400, a query GitHub's schema
    rejects is answered with its validation errors, a spent budget ``RATE_LIMITED``, field
    errors come beside the partial ``data``."""
    try:
        request = json.loads(body or b"{}")
        query = str(request["query"])
        variables = dict(request.get("variables") or {})
    except (ValueError, KeyError, TypeError):
        return 400, {"message": "Problems parsing JSON",
                     "documentation_url": "https://docs.github.com/graphql"}, {}
    try:
        document = _document(query)
    except GraphQLError as exc:
        return 200, {"errors": [{"message": exc.message}]}, {}
    problems = _problems(query)
    if problems:
        return 200, {"errors": [{"message": e.message, "locations": _locations(e)}
                                for e in problems]}, {}
    if log is not None:
        log.append((query, variables))
    if max_page and _max_page(query, variables) > max_page:
        return 200, {"data": None, "errors": [{"message": TIMEOUT_MESSAGE}]}, {}
    cost, nodes = query_cost(query, variables)
    charged = budget.charge(cost, nodes)
    if charged is None:
        return 200, {"errors": [{"type": "RATE_LIMITED", "message":
                                 "API rate limit already exceeded for user ID 1."}]}, {}
    rate, headers = charged
    result = execute(schema(), document, root_value=Resolver(facts).root(rate),
                     variable_values=variables, field_resolver=_field)
    payload: dict[str, Any] = {}
    if result.errors:
        payload["errors"] = [_github_error(e) for e in result.errors]
    payload["data"] = result.data
    return 200, payload, headers


class _FakeFacts:
    """``tests.fakegithub``'s state as ``Facts``, gated by the caller's identity as its REST
    routes gate it (a fine-grained token's permissions; a private repository unseen)."""

    def __init__(self, fake: FakeGitHub, identity: Identity | None) -> None:
        self.fake = fake
        self.identity = identity

    def _need(self, repo: str, *scopes: str) -> _Repo:
        state = self.fake.repos[repo]
        if state.data["private"] and self.identity is None:
            raise Absent("Could not resolve to a Repository.")
        granted = self.identity.permissions if self.identity is not None else None
        if granted is not None and scopes \
                and not any(granted.get(s) in ("read", "write") for s in scopes):
            raise Refused("Resource not accessible by integration")
        return state

    def _pull(self, repo: str, number: int) -> _Pull:
        return self._need(repo, "pull_requests").pulls[number]

    def repository(self, full_name: str) -> tuple[str, Mapping[str, Any]] | None:
        for key in self.fake.repos:
            if key.lower() == full_name.lower():
                return key, self._need(key, "metadata").data
        return None

    def pull(self, repo: str, number: int) -> Mapping[str, Any] | None:
        pull = self._need(repo, "pull_requests").pulls.get(number)
        return pull.data if pull is not None else None

    def commits(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        return self._pull(repo, number).commits[:250]

    def reviews(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        return self._pull(repo, number).reviews

    def review_comments(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        return self._pull(repo, number).review_comments

    def issue_comments(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        return self._need(repo, "issues", "pull_requests").issue_comments.get(number, [])

    def files(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        return self._pull(repo, number).files[:3000]

    def check_runs(self, repo: str, sha: str) -> Sequence[Mapping[str, Any]]:
        return self._need(repo, "checks").check_runs.get(sha, [])

    def content(self, repo: str, ref: str | None, path: str) -> str | None:
        state = self._need(repo, "contents")
        return state.contents.get((ref or state.data["default_branch"], path))

    def commit(self, repo: str, sha: str) -> Mapping[str, Any] | None:
        state = self._need(repo)
        return next((c for pull in state.pulls.values() for c in pull.commits if c["sha"] == sha),
                    None)

    def issue(self, repo: str, number: int) -> Mapping[str, Any] | None:
        self._need(repo, "issues", "pull_requests")
        return self.fake.issue_object(repo, number)

    def viewer_login(self) -> str | None:
        return self.identity.login if self.identity is not None else None

    def write_comment(self, action: str, repo: str, target: int,
                      body: str) -> Mapping[str, Any] | None:
        """The REST routes' comment writes (``target``: the PR number to create on, else the
        comment id), with their permission (``issues: write`` or ``pull_requests: write``);
        None when the PR or comment does not exist."""
        granted = self.identity.permissions if self.identity is not None else None
        if self.identity is None or (granted is not None and not any(
                granted.get(s) == "write" for s in ("issues", "pull_requests"))):
            raise Refused("Resource not accessible by integration")
        return self.fake.write_comment(action, repo, target, body, self.identity)


class _FakeBudget:
    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake

    def charge(self, cost: int, nodes: int) -> tuple[dict[str, Any], dict[str, str]] | None:
        fake = self.fake
        with fake._lock:
            fake._roll_rate_window()
            if fake.graphql_remaining < cost:
                return None
            fake.graphql_remaining -= cost
            fake.graphql_points += cost
            remaining = fake.graphql_remaining
        rate = {"cost": cost, "limit": fake.graphql_limit, "nodeCount": nodes,
                "remaining": remaining, "used": fake.graphql_limit - remaining,
                "resetAt": reset_at(fake.rate_reset)}
        return rate, _rate_headers(fake, remaining)


def answer(fake: FakeGitHub, identity: Identity | None,
           body: bytes | str | None) -> tuple[int, Any, dict[str, str]]:
    """``POST /graphql`` on the fake: (status, payload, headers), as GitHub answers."""
    if identity is None:
        return 401, {"message": "This endpoint requires you to be authenticated.",
                     "documentation_url": "https://docs.github.com/graphql/guides/"
                                          "forming-calls-with-graphql"}, {}
    if not fake.graphql_enabled:
        return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, {}
    status, payload, headers = execute_request(
        _FakeFacts(fake, identity), body, _FakeBudget(fake), log=fake.graphql_queries,
        max_page=fake.graphql_max_page)
    if isinstance(payload, Mapping) and any(
            e.get("type") == "RATE_LIMITED" for e in payload.get("errors") or []):
        headers = _rate_headers(fake, 0)
    return status, payload, headers


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
