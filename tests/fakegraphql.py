"""GitHub's GraphQL API, executed against GitHub's published schema over REST-shaped facts.

``POST /graphql`` (``/api/graphql`` under a GHES root) is answered by parsing, validating and
executing the query with ``graphql-core`` against GitHub's own schema (``tests/schemas/
github.graphql``, vendored from npm ``@octokit/graphql-schema``). So a query the collector sends
that GitHub would reject (an unknown field, a missing argument, a wrong type) fails here the same
way.

The resolvers (``tests/fakegraphql_resolver.py``) read a ``Facts`` source: what the same server's
REST endpoints answer (their JSON, 404 as ``None``, 403 as ``Refused``). Two servers plug in:
``tests/fakegithub.py`` (its fixture state, gated by the caller's token) and
``taskeval.corpus.replay`` (the AIDev-pop corpus, which imports this module only when it and
graphql-core are importable, i.e. from the source tree with the test extra). So each server's two
transports read one set of facts.

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

import functools
import json
from collections.abc import Mapping, Sequence
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

# Relative: taskeval.corpus.replay loads this module and its siblings from the source tree as a
# private package, where ``tests`` need not be importable.
from .fakegraphql_resolver import Absent, Facts, Refused, Resolver

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


# -------------------------------------------------------------------------------- answering


def _field(parent: Any, info: GraphQLResolveInfo, **args: Any) -> Any:
    """Every field: a key of the parent dict, or a callable there that takes the arguments."""
    value = parent.get(info.field_name) if isinstance(parent, Mapping) else None
    return value(info, **args) if callable(value) else value


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

    def timeline(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        return self.fake._timeline(self._need(repo, "issues", "pull_requests"), number)

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
