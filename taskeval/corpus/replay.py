"""Serve the AIDev-pop PRs through the GitHub REST shape that ``taskeval`` collection reads.

    python -m taskeval.corpus.replay --data ../shared/data/aidev-pop-v1 --port 8765
    GITHUB_API_URL=http://127.0.0.1:8765 taskeval evaluate OWNER/REPO#N --no-ai --output x.json

Why a hand-written server: nothing off the shelf serves an arbitrary dataset as GitHub's REST API.
``responses``-style mocks only reach the process that installed them (the CLI runs in a
subprocess), and a general mock server would still need every payload written by hand. The read
endpoints collection uses are few and small, so this is the standard library's
``ThreadingHTTPServer`` and one router, with GitHub's pagination (``per_page``, ``page``,
``Link: rel="next"``) and GitHub-shaped error bodies. It has no dependency beyond taskeval.

What it serves is what the dataset holds, shaped as GitHub serves it:

* the repository (``full_name``, ``html_url``; no default branch: the data has none);
* the PR: number, title, body, state, author (``type`` ``Bot`` for ``…[bot]`` logins and for
  ``Copilot``, whose PRs come from GitHub's bot account), created/closed/merged times, ``merged``,
  ``commits`` (the listed count) and ``head.sha`` (the last listed commit). Derived from the
  timeline where it has one: ``merged_by`` and ``merge_commit_sha`` (the ``merged`` event),
  ``assignees`` and ``labels`` (assigned/unassigned, labeled/unlabeled events, in order) and
  ``draft`` for an open PR whose last draft event is ``convert_to_draft``. Branch names are not in
  the data: ``head.ref`` and ``base.ref`` are empty strings;
* commits (message, ``author.login``, ``committer.login``; no dates, names, parents or
  signatures), reviews, conversation comments, the timeline (``/issues/{n}/timeline``), the PR's
  own issue object (``/issues/{n}``, with ``pull_request``; ``performed_via_github_app`` is always
  null, since the data does not record the App a PR was opened through) and the issues the PR
  links (``/issues/{n}`` and their timelines; GraphQL's ``issueOrPullRequest``). A linked issue's
  ``labels`` are derived, since ``issues.csv`` has no label column: the ``labeled`` events of
  ``issue_timelines.csv`` not undone by a later ``unlabeled``, in time order, over the whole
  timeline (the collection's "now" is when the dataset was collected; see ``issue_labels``).
  An issue the data does not hold answers 404, whatever GitHub would have answered.

What the data lacks is answered ``403`` with a GitHub-shaped body whose message names the gap, so
an evaluation records partial evidence instead of reading "no CI" from an empty list: check runs,
check suites, statuses, workflow runs, changed files, review comments, commit details, and the
tables an agent's folder lacks (conversation comments for Devin and Codex, timelines for Devin).
A PR that lists no commits answers its commit listing the same way (its head SHA is then forty
zeros). ``.github/taskeval.yml`` answers 404, as for a repository without one: defaults apply.
Every write is refused (403): the replay is read-only. Timeline events carry a synthetic ``id``
and global ``node_id`` (the data keeps none), stable across runs, the same through both
transports; a cross-reference none, as GitHub's REST timeline gives it none.

GraphQL (``POST /graphql``) is answered over the same facts: ``ReplayFacts`` hands the REST
payloads above to the schema-executing resolver of ``tests/fakegraphql.py``, and each 403 of the
REST routes becomes a ``FORBIDDEN`` field error with the same message, which is how GitHub
answers a permission the token lacks (on a non-null connection such as ``comments`` that nulls
the PR, by GraphQL's rule; the collector then asks again without it). So an evaluation through
either transport records the same evidence and the same partial-evidence gaps. Why the resolver
is borrowed from the source tree and not shipped: executing a query faithfully needs GitHub's
schema (1.2 MB) and graphql-core, neither of which a user of the package needs; a source
checkout with the test extra has both. Without them ``/graphql`` answers 404, as a GitHub
Enterprise Server without GraphQL does, and a GraphQL evaluation falls back to REST and says
so; the start-up line says which (``--no-graphql`` forces the 404). GraphQL points are reported
as GitHub reports them and never spent. The timeline is served as ``timelineItems`` from the same
events; a cross-reference whose source the data does not hold (GraphQL's schema requires one) is
answered as an error on that item, and the collector then reads that PR's timeline over REST.
"""

from __future__ import annotations

import argparse
import base64
import importlib.machinery
import importlib.util
import json
import math
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from taskeval.corpus.aidev import (
    Comment,
    Commit,
    Corpus,
    Issue,
    PullRecord,
    Review,
    TimelineEvent,
    default_data_dir,
    is_corpus_dir,
    load,
)

DOCS: Final = "https://docs.github.com/rest"
HTML_BASE: Final = "https://github.com"
NO_SHA: Final = "0" * 40
REPLAY_NOTE: Final = "AIDev-pop replay"

Answer = tuple[int, dict[str, str], Any]


def paginate(items: Sequence[Any], query: Mapping[str, str], url: str) -> tuple[list[Any], dict[str, str]]:
    """One page of ``items`` as GitHub serves it: ``per_page`` (default 30, max 100), ``page``,
    and a ``Link`` header with prev/next/last/first as applicable. ``ValueError`` for a
    non-numeric ``per_page`` or ``page``. Shared with the tests' fake GitHub, so both servers
    paginate exactly alike."""
    per_page = min(100, max(1, int(query.get("per_page", 30))))
    page = max(1, int(query.get("page", 1)))
    last = max(1, math.ceil(len(items) / per_page))
    chunk = list(items[(page - 1) * per_page: page * per_page])

    def link(target: int, rel: str) -> str:
        params = {**query, "per_page": str(per_page), "page": str(target)}
        return f'<{url}?{urlencode(params)}>; rel="{rel}"'

    links = []
    if page > 1:
        links.append(link(page - 1, "prev"))
    if page < last:
        links += [link(page + 1, "next"), link(last, "last")]
    if page > 1:
        links.append(link(1, "first"))
    return chunk, ({"Link": ", ".join(links)} if links else {})


class _Refusal(Exception):
    def __init__(self, status: int, message: str, doc: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = {"message": message, "documentation_url": f"{DOCS}{doc}",
                     "status": str(status)}


def _missing(what: str) -> _Refusal:
    return _Refusal(403, f"Not available in the {REPLAY_NOTE}: the dataset holds no {what}")


def _not_found() -> _Refusal:
    return _Refusal(404, "Not Found")


def user(login: str | None) -> dict[str, Any] | None:
    """A GitHub user object for a login; ``None`` when the data has no account."""
    if not login:
        return None
    bot = login.endswith("[bot]") or login == "Copilot"
    return {"login": login, "type": "Bot" if bot else "User",
            "html_url": f"{HTML_BASE}/{login.removesuffix('[bot]')}"}


def _net(events: Sequence[TimelineEvent], add: str, remove: str,
         value: Callable[[TimelineEvent], str | None]) -> list[str]:
    current: list[str] = []
    for e in events:
        item = value(e)
        if not item:
            continue
        if e.event == add and item not in current:
            current.append(item)
        elif e.event == remove and item in current:
            current.remove(item)
    return current


def pull_payload(pr: PullRecord) -> dict[str, Any]:
    """``GET /repos/{o}/{r}/pulls/{n}`` for one record."""
    head = pr.commits[-1].sha if pr.commits else NO_SHA
    timeline = pr.timeline or []
    merged_event = next((e for e in reversed(timeline) if e.event == "merged"), None)
    draft_events = [e.event for e in timeline if e.event in ("convert_to_draft", "ready_for_review")]
    draft = pr.state == "open" and bool(draft_events) and draft_events[-1] == "convert_to_draft"
    owner, name = pr.repository.split("/", 1)
    repo = {"full_name": pr.repository, "name": name, "owner": user(owner),
            "html_url": f"{HTML_BASE}/{pr.repository}"}
    data: dict[str, Any] = {
        "id": pr.id,
        "number": pr.number,
        "html_url": pr.html_url,
        "state": pr.state,
        "title": pr.title,
        "body": pr.body,
        "user": user(pr.user),
        "created_at": pr.created_at,
        "updated_at": pr.closed_at or pr.created_at,
        "closed_at": pr.closed_at,
        "merged_at": pr.merged_at,
        "merged": pr.merged,
        "draft": draft,
        "merged_by": user(merged_event.actor) if merged_event else None,
        "merge_commit_sha": merged_event.commit_id if merged_event else None,
        "head": {"ref": "", "sha": head, "label": "", "repo": repo},
        "base": {"ref": "", "label": "", "repo": repo},
        "commits": len(pr.commits),
        "comments": len(pr.comments or []),
    }
    if pr.timeline is not None:
        data["assignees"] = [user(a) for a in _net(timeline, "assigned", "unassigned",
                                                   lambda e: e.assignee)]
        data["assignee"] = data["assignees"][0] if data["assignees"] else None
        data["labels"] = [{"name": n} for n in _net(timeline, "labeled", "unlabeled",
                                                    lambda e: e.label)]
    return data


def repo_payload(repository: str) -> dict[str, Any]:
    """``GET /repos/{o}/{r}``: the name and URL (the data has no default branch)."""
    owner, name = repository.split("/", 1)
    return {"full_name": repository, "name": name, "owner": user(owner),
            "html_url": f"{HTML_BASE}/{repository}", "private": False, "default_branch": None}


def commit_payload(commit: Commit, repository: str) -> dict[str, Any]:
    return {
        "sha": commit.sha,
        "html_url": f"{HTML_BASE}/{repository}/commit/{commit.sha}",
        "commit": {"message": commit.message},
        "author": user(commit.author),
        "committer": user(commit.committer),
    }


def review_payload(pr: PullRecord, review: Review) -> dict[str, Any]:
    return {
        "id": review.id,
        "user": user(review.user),
        "state": review.state,
        "body": review.body,
        "submitted_at": review.submitted_at,
        "html_url": f"{pr.html_url}#pullrequestreview-{review.id}",
    }


def comment_payload(html_url: str, comment: Comment) -> dict[str, Any]:
    return {
        "id": comment.id,
        "user": user(comment.user),
        "body": comment.body,
        "created_at": comment.created_at,
        "updated_at": comment.created_at,
        "html_url": f"{html_url}#issuecomment-{comment.id}",
    }


def event_node_id(ident: int) -> str:
    """A synthetic event's global node id (the data keeps none): opaque, stable across runs, and
    the same through REST (``node_id``) and GraphQL (``id``), as GitHub's are."""
    return "TE_" + base64.urlsafe_b64encode(f"replay:{ident}".encode()).decode().rstrip("=")


def event_payload(owner_id: int, index: int, event: TimelineEvent) -> dict[str, Any]:
    """One timeline event shaped as GitHub's: ``committed`` events carry ``sha`` and ``message``
    and no actor; the others ``actor``, ``created_at``, and ``commit_id``/``assignee``/``label``
    where the event has them, and a synthetic ``id`` and ``node_id`` (none on a cross-reference,
    which GitHub's REST timeline gives no node id)."""
    if event.event == "committed":
        return {"event": "committed", "sha": event.commit_id, "message": event.message or ""}
    ident = owner_id * 1000 + index
    data: dict[str, Any] = {
        "id": ident,
        **({} if event.event == "cross-referenced" else {"node_id": event_node_id(ident)}),
        "event": event.event,
        "actor": user(event.actor),
        "created_at": event.created_at,
        "commit_id": event.commit_id,
    }
    if event.event in ("commented", "reviewed"):
        data["user"] = user(event.actor)
    if event.event == "reviewed":
        data["submitted_at"] = event.created_at
    if event.assignee:
        data["assignee"] = user(event.assignee)
    if event.label:
        data["label"] = {"name": event.label}
    return data


def issue_labels(issue: Issue) -> list[str]:
    """The labels an issue carries now, as the data lets them be known: ``issues.csv`` has no
    label column, so they are the issue timeline's ``labeled`` events not undone by a later
    ``unlabeled`` one, in time order (the timeline up to when the dataset was collected, which
    stands for the present a collection sees). A label put on before the timeline begins, or
    one the timeline dropped, is not known; an issue without label events carries none."""
    events = sorted(issue.timeline, key=lambda e: e.created_at or "")
    return _net(events, "labeled", "unlabeled", lambda e: e.label)


def issue_payload(repository: str, issue: Issue) -> dict[str, Any]:
    """``GET /repos/{o}/{r}/issues/{n}`` for a linked issue; its ``labels`` from
    :func:`issue_labels`."""
    return {
        "id": issue.id,
        "number": issue.number,
        "title": issue.title,
        "user": user(issue.user),
        "state": issue.state,
        "created_at": issue.created_at,
        "closed_at": issue.closed_at,
        "html_url": issue.html_url,
        "body": issue.body,
        "repository_url": f"{HTML_BASE}/{repository}",
        "labels": [{"name": n} for n in issue_labels(issue)],
    }


def pr_as_issue(pr: PullRecord) -> dict[str, Any]:
    data = pull_payload(pr)
    return {
        key: data[key] for key in ("id", "number", "title", "user", "state", "created_at",
                                   "closed_at", "html_url", "body", "comments")
    } | {"pull_request": {"html_url": pr.html_url, "merged_at": pr.merged_at},
         "labels": data.get("labels", []), "assignees": data.get("assignees", []),
         # GitHub's issue object names the App a PR was opened through; the data does not.
         "performed_via_github_app": None}


_SEG = r"[^/]+"
_REPO = rf"/repos/(?P<owner>{_SEG})/(?P<repo>{_SEG})"
_ROUTES: Final[tuple[tuple[str, str], ...]] = (
    ("rate_limit", r"/rate_limit"),
    ("user", r"/user"),
    ("repo", rf"{_REPO}"),
    ("pulls.list", rf"{_REPO}/pulls"),
    ("pull", rf"{_REPO}/pulls/(?P<n>\d+)"),
    ("pull.commits", rf"{_REPO}/pulls/(?P<n>\d+)/commits"),
    ("pull.reviews", rf"{_REPO}/pulls/(?P<n>\d+)/reviews"),
    ("pull.review_comments", rf"{_REPO}/pulls/(?P<n>\d+)/comments"),
    ("pull.files", rf"{_REPO}/pulls/(?P<n>\d+)/files"),
    ("issue", rf"{_REPO}/issues/(?P<n>\d+)"),
    ("issue.comments", rf"{_REPO}/issues/(?P<n>\d+)/comments"),
    ("issue.timeline", rf"{_REPO}/issues/(?P<n>\d+)/timeline"),
    ("issue.events", rf"{_REPO}/issues/(?P<n>\d+)/events"),
    ("check_runs", rf"{_REPO}/commits/{_SEG}/check-runs"),
    ("check_suites", rf"{_REPO}/commits/{_SEG}/check-suites"),
    ("statuses", rf"{_REPO}/commits/{_SEG}/status(?:es)?"),
    ("statuses", rf"{_REPO}/statuses/{_SEG}"),
    ("commit", rf"{_REPO}/commits/{_SEG}"),
    ("commits", rf"{_REPO}/commits"),
    ("workflow_runs", rf"{_REPO}/actions/runs(?:/.*)?"),
    ("contents", rf"{_REPO}/contents/(?P<path>.+)"),
)
_COMPILED: Final = [(name, re.compile(pattern)) for name, pattern in _ROUTES]
_LACKS: Final[Mapping[str, str]] = {
    "pull.review_comments": "review comments",
    "pull.files": "changed files",
    "check_runs": "check runs",
    "check_suites": "check suites",
    "statuses": "commit statuses",
    "workflow_runs": "workflow runs",
    "commit": "commit details (dates, files, parents)",
    "commits": "branch history",
    "issue.events": "issue events (see the timeline)",
}


class Replay:
    """The router: ``handle(method, path, query)`` -> ``(status, headers, JSON value)``.

    ``url`` is the API root the server is reachable at; ``Link`` headers point there."""

    def __init__(self, corpus: Corpus, url: str = "http://127.0.0.1", *,
                 graphql: bool | None = None) -> None:
        self.corpus = corpus
        self.url = url.rstrip("/")
        self._repos = {p.repository.lower(): p.repository for p in corpus.prs}
        self._lock = threading.Lock()
        self.requests = 0
        # None: serve GraphQL when the engine is importable; False: never (a GHES without it).
        self._engine = graphql_engine() if graphql is not False else None
        if graphql and self._engine is None:
            raise RuntimeError(f"the replay cannot serve GraphQL: {GRAPHQL_NEEDS}")
        self.graphql = self._engine is not None

    def handle(self, method: str, path: str,
               query: Mapping[str, str | Sequence[str]] | None = None,
               body: bytes | None = None) -> Answer:
        flat = {k: str(v[0] if isinstance(v, list | tuple) else v)
                for k, v in (query or {}).items()}
        clean = "/" + unquote(path).strip("/")
        with self._lock:
            self.requests += 1
        try:
            if clean == "/graphql" and method.upper() == "POST":
                return self._graphql(body)
            if method.upper() not in ("GET", "HEAD"):
                raise _Refusal(403, f"The {REPLAY_NOTE} is read-only")
            route, match = next(((name, m) for name, rx in _COMPILED
                                 if (m := rx.fullmatch(clean))), ("unknown", None))
            return self._route(route, match, clean, flat)
        except _Refusal as refusal:
            return refusal.status, {}, refusal.body

    def _route(self, route: str, match: re.Match[str] | None, path: str,
               query: dict[str, str]) -> Answer:
        if route == "unknown" or match is None:
            raise _not_found()
        if route == "rate_limit":
            core = {"limit": 5000, "remaining": 5000, "reset": 0, "used": 0}
            return 200, {}, {"resources": {"core": core}, "rate": core}
        if route == "user":
            raise _Refusal(403, f"The {REPLAY_NOTE} has no authenticated user")
        repository = self._repos.get(f"{match['owner']}/{match['repo']}".lower())
        if repository is None:
            raise _not_found()
        if route in _LACKS:
            raise _missing(_LACKS[route])
        if route == "repo":
            return 200, {}, repo_payload(repository)
        if route == "contents":
            raise _Refusal(404, "Not Found", "/repos/contents#get-repository-content")
        if route == "pulls.list":
            return self._page(self._list_pulls(repository, query), query, path)
        number = int(match["n"])
        pr = self.corpus.pull(repository, number)
        if route == "issue":
            if pr is not None:
                return 200, {}, pr_as_issue(pr)
            issue = self.corpus.issue(repository, number)
            if issue is None:
                raise _not_found()
            return 200, {}, issue_payload(repository, issue)
        if route == "issue.timeline" and pr is None:
            issue = self.corpus.issue(repository, number)
            if issue is None:
                raise _not_found()
            return self._page([event_payload(issue.id, i, e)
                               for i, e in enumerate(issue.timeline)], query, path)
        if pr is None:
            raise _not_found()
        if route == "pull":
            return 200, {}, pull_payload(pr)
        if route == "pull.commits":
            if not pr.commits:
                raise _missing("commits for this PR")
            return self._page([commit_payload(c, repository) for c in pr.commits], query, path)
        if route == "pull.reviews":
            return self._page([review_payload(pr, r) for r in pr.reviews], query, path)
        if route == "issue.comments":
            if pr.comments is None:
                raise _missing(f"conversation comments for {pr.agent} PRs")
            return self._page([comment_payload(pr.html_url, c) for c in pr.comments], query, path)
        if route == "issue.timeline":
            if pr.timeline is None:
                raise _missing(f"timelines for {pr.agent} PRs")
            return self._page([event_payload(pr.id, i, e) for i, e in enumerate(pr.timeline)],
                              query, path)
        raise _not_found()  # pragma: no cover - every route is handled above

    def _graphql(self, body: bytes | None) -> Answer:
        """``POST /graphql``: GitHub's schema executed over this replay's facts, or 404 (as a
        GitHub Enterprise Server without GraphQL) when the engine is not importable."""
        if self._engine is None:
            raise _Refusal(404, "Not Found", "")
        status, payload, headers = self._engine.execute_request(
            ReplayFacts(self, self._engine), body, _UNMETERED)
        return status, headers, payload

    def _list_pulls(self, repository: str, query: Mapping[str, str]) -> list[dict[str, Any]]:
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            raise _Refusal(422, "Validation Failed")
        prs = [p for p in self.corpus.prs if p.repository == repository
               and (state == "all" or p.state == state)]
        key = "created_at" if query.get("sort", "created") == "created" else "closed_at"
        prs.sort(key=lambda p: (getattr(p, key) or p.created_at, p.number),
                 reverse=query.get("direction", "desc") == "desc")
        return [pull_payload(p) for p in prs]

    def _page(self, items: Sequence[Any], query: Mapping[str, str], path: str) -> Answer:
        try:
            chunk, headers = paginate(items, query, f"{self.url}{path}")
        except ValueError as exc:
            raise _Refusal(422, "Invalid pagination parameter") from exc
        return 200, headers, chunk


# ------------------------------------------------------------------------------ GraphQL

GRAPHQL_NEEDS: Final = ("graphql-core and the source tree's tests/fakegraphql.py and "
                        "tests/schemas/github.graphql (a checkout with the test extra)")
_SOURCE_ROOT: Final = Path(__file__).resolve().parents[2]


def graphql_engine() -> ModuleType | None:
    """The schema-executing resolver (``tests/fakegraphql.py``), or None when it or graphql-core
    is not importable: the package never ships GitHub's 1.2 MB schema nor depends on
    graphql-core, so an installed replay serves REST only."""
    source = _SOURCE_ROOT / "tests" / "fakegraphql.py"
    schema = _SOURCE_ROOT / "tests" / "schemas" / "github.graphql"
    if not (source.is_file() and schema.is_file()) or importlib.util.find_spec("graphql") is None:
        return None
    loaded = sys.modules.get("tests.fakegraphql")
    if loaded is not None and Path(str(loaded.__file__)).resolve() == source:
        return loaded
    # Loaded as a module of a private package over the source tree's tests/, so that its own
    # (relative) imports of its sibling modules work where ``tests`` is not importable.
    package = "_taskeval_replay_tests"
    if package not in sys.modules:
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        spec.submodule_search_locations = [str(source.parent)]
        sys.modules[package] = importlib.util.module_from_spec(spec)
    try:
        return importlib.import_module(f"{package}.fakegraphql")
    except ImportError:
        return None


class _Unmetered:
    """The replay's GraphQL points: reported as GitHub reports them, never spent (it is a local
    stand-in, and a benchmark of 6,658 PRs would otherwise run out)."""

    def charge(self, cost: int, nodes: int) -> tuple[dict[str, Any], dict[str, str]]:
        rate = {"cost": cost, "limit": 5000, "nodeCount": nodes, "remaining": 5000, "used": 0,
                "resetAt": "1970-01-01T00:00:00Z"}
        headers = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "5000",
                   "X-RateLimit-Used": "0", "X-RateLimit-Reset": "0",
                   "X-RateLimit-Resource": "graphql"}
        return rate, headers


_UNMETERED: Final = _Unmetered()


class ReplayFacts:
    """The replay's REST answers as the GraphQL resolver's ``Facts``: the same payloads, and
    each 403 of the REST routes (what the data lacks) raised as the engine's ``Refused`` with
    the same message, so GraphQL answers it ``FORBIDDEN`` and the collector records the same
    gap."""

    def __init__(self, replay: Replay, engine: ModuleType) -> None:
        self.replay = replay
        self.refused: type[Exception] = engine.Refused

    def _refuse(self, what: str) -> Exception:
        return self.refused(_missing(what).body["message"])

    def _pr(self, repo: str, number: int) -> PullRecord:
        pr = self.replay.corpus.pull(repo, number)
        if pr is None:  # pragma: no cover - the resolver asks only for PRs it has read
            raise self._refuse("such pull request")
        return pr

    def repository(self, full_name: str) -> tuple[str, Mapping[str, Any]] | None:
        repository = self.replay._repos.get(full_name.lower())
        return (repository, repo_payload(repository)) if repository else None

    def pull(self, repo: str, number: int) -> Mapping[str, Any] | None:
        pr = self.replay.corpus.pull(repo, number)
        return pull_payload(pr) if pr is not None else None

    def commits(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        pr = self._pr(repo, number)
        if not pr.commits:
            raise self._refuse("commits for this PR")
        return [commit_payload(c, repo) for c in pr.commits]

    def reviews(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        pr = self._pr(repo, number)
        return [review_payload(pr, r) for r in pr.reviews]

    def review_comments(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        raise self._refuse(_LACKS["pull.review_comments"])

    def issue_comments(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        pr = self._pr(repo, number)
        if pr.comments is None:
            raise self._refuse(f"conversation comments for {pr.agent} PRs")
        return [comment_payload(pr.html_url, c) for c in pr.comments]

    def files(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        raise self._refuse(_LACKS["pull.files"])

    def check_runs(self, repo: str, sha: str) -> Sequence[Mapping[str, Any]]:
        raise self._refuse(_LACKS["check_runs"])

    def content(self, repo: str, ref: str | None, path: str) -> str | None:
        return None  # REST answers 404: no config, defaults apply

    def issue(self, repo: str, number: int) -> Mapping[str, Any] | None:
        """``GET /issues/{n}``: a PR's issue object or a linked issue (its labels derived from
        its timeline); None (404) for a number the data does not hold."""
        pr = self.replay.corpus.pull(repo, number)
        if pr is not None:
            return pr_as_issue(pr)
        issue = self.replay.corpus.issue(repo, number)
        return issue_payload(repo, issue) if issue is not None else None

    def timeline(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        pr = self._pr(repo, number)
        if pr.timeline is None:
            raise self._refuse(f"timelines for {pr.agent} PRs")
        return [event_payload(pr.id, i, e) for i, e in enumerate(pr.timeline)]

    def commit(self, repo: str, sha: str) -> Mapping[str, Any] | None:
        for pr in self.replay.corpus.prs:
            if pr.repository == repo:
                for c in pr.commits:
                    if c.sha == sha:
                        return commit_payload(c, repo)
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    replay: Replay

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _answer(self) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        status, headers, payload = self.server.replay.handle(
            self.command, parts.path, parse_qs(parts.query), body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


def make_server(corpus: Corpus, host: str = "127.0.0.1", port: int = 0, *,
                graphql: bool | None = None) -> _Server:
    """A bound, not yet serving, server; ``server.replay.url`` is its API root. ``graphql``:
    None serves GraphQL when it can, False never, True or a ``RuntimeError``."""
    server = _Server((host, port), _Handler)
    bound_host, bound_port = server.server_address[:2]
    shown = bound_host if isinstance(bound_host, str) else host
    try:
        server.replay = Replay(corpus, f"http://{shown}:{bound_port}", graphql=graphql)
    except RuntimeError:
        server.server_close()
        raise
    return server


@contextmanager
def serving(corpus: Corpus, host: str = "127.0.0.1", port: int = 0, *,
            graphql: bool | None = None) -> Iterator[Replay]:
    """Serve ``corpus`` from a background thread; yields the replay (``.url`` is the API root)."""
    server = make_server(corpus, host, port, graphql=graphql)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="aidev-replay", daemon=True)
    thread.start()
    try:
        yield server.replay
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m taskeval.corpus.replay",
        description="Serve the AIDev-pop PRs as a read-only GitHub REST API "
                    "(point GITHUB_API_URL at it).")
    parser.add_argument("--data", type=Path, default=None,
                        help="the aidev-pop-v1 folder (default: $TASKEVAL_CORPUS_DIR or "
                             "../shared/data/aidev-pop-v1 beside the checkout)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--no-graphql", action="store_true",
                        help="answer 404 at /graphql, as a GitHub Enterprise Server without it")
    args = parser.parse_args(argv)
    data = args.data or default_data_dir()
    if not is_corpus_dir(data):
        print(f"replay: {data} is not an AIDev-pop folder (expected "
              "Claude_Code/, Copilot/, Cursor/, Devin/, OpenAI_Codex/ with prs.csv)",
              file=sys.stderr)
        return 2
    corpus = load(data)
    server = make_server(corpus, args.host, args.port, graphql=False if args.no_graphql else None)
    print(f"replay: {len(corpus)} PRs from {data} at {server.replay.url} "
          f"(GITHUB_API_URL={server.replay.url})", flush=True)
    if server.replay.graphql:
        print(f"replay: GraphQL at {server.replay.url}/graphql (GitHub's schema, executed over "
              "the same facts as REST)", flush=True)
    else:
        why = "--no-graphql" if args.no_graphql else f"it needs {GRAPHQL_NEEDS}"
        print(f"replay: no GraphQL ({why}); /graphql answers 404 and a GraphQL evaluation "
              "falls back to REST, saying so", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
