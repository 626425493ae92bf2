"""Reads shared by many pull requests of one repository, for backfill over GraphQL.

A single evaluation over GraphQL costs one query and two REST reads: the PR's issue object and
its branch's workflow runs, and a Copilot PR its timeline (docs/collection.md says why those are
REST). A
backfill reads hundreds of PRs of one repository, so it amortises what GitHub lets it:

* **The PRs themselves**: several per GraphQL query (``graphql.read_pulls``), sized by the cost
  GitHub reports (:class:`BatchSizer`).
* **Issue objects** (the App a PR was opened through, its assignees): one listing of the
  repository's issues, newest update first, 100 a page (:class:`IssueFeed`), read as far as the
  PRs being evaluated reach, instead of ``GET /issues/{n}`` per PR.
* **Workflow runs**: the repository's runs listed once per day range (:class:`RunIndex`),
  instead of one listing per PR's branch; each PR takes the runs of its branch and window from it.
* **Linked issues' labels** (the third source of a task type): from the issue listing above
  where it has reached the issue, else one GraphQL query for the whole batch's linked issues
  (:meth:`Shared.read_linked`), instead of one query per PR.

Each answers for a PR exactly what the PR's own request would have, or nothing: the PR's own
request is then sent. So the bundle is byte for byte the bundle of a single-PR collection
(``tests/test_backfill_batch.py`` checks it on the fixture PRs). A Copilot PR's REST timeline
stays one request of its own: GitHub has no repository-wide timeline listing.

``taskeval backfill --enqueue`` makes these reads in the enqueuing run and hands each job its
PR's part (:func:`handed`); the worker that claims a batch of such jobs answers from them
(:class:`Handed`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime, timedelta
from typing import Any, Final

from github.GithubException import GithubException
from github.Requester import Requester

from taskeval.evidence.vocabulary import issues_to_read
from taskeval.github import convert
from taskeval.github.client import PER_PAGE, pages, repo_path
from taskeval.github.collection import MAX_WORKFLOW_RUNS, RUN_LOOKBACK, Listed
from taskeval.github.errors import LinkFailure, link_failure
from taskeval.github.graphql.read import IssuesRead, read_issues
from taskeval.raw import RawLinkedIssue, RawPullRequest, RawWorkflowRun

# GitHub returns at most 1,000 workflow runs for a filtered listing (``created`` is a filter);
# a day range with that many is split, and a single day with that many is left to the PRs'
# own listings.
RUNS_RESULT_CAP: Final = 1000
# Batch sizing: a batch query should cost about this many points (GitHub's timeouts and node
# limit grow with the query; 10 points is about 18 typical PRs), within these bounds.
# Runs the index keeps in memory; past this, the days farthest from the range asked for last are
# dropped (and listed again should a later PR need them): a backfill of years stays bounded.
MAX_INDEXED_RUNS: Final = 100_000
TARGET_POINTS: Final = 10
FIRST_BATCH: Final = 10
MAX_BATCH: Final = 50


class BatchSizer:
    """How many PRs the next batch query reads: as many as keep it near ``TARGET_POINTS``,
    from what GitHub reported the previous batches cost per PR."""

    def __init__(self, target: int = TARGET_POINTS, first: int = FIRST_BATCH,
                 most: int = MAX_BATCH) -> None:
        self.target = target
        self.most = most
        self.size = max(1, min(first, most))
        self.per_pr: float | None = None  # points per PR, as last reported
        self._lock = threading.Lock()

    def expected(self, n: int) -> int:
        """Points a batch of ``n`` is expected to cost (what the budget takes before sending)."""
        per_pr = self.per_pr if self.per_pr is not None else 1.0
        return max(1, math.ceil(n * per_pr))

    def reported(self, n: int, cost: int) -> None:
        """A batch query of ``n`` PRs cost ``cost`` points: size the next one from it."""
        if n <= 0 or cost <= 0:
            return
        with self._lock:
            self.per_pr = cost / n
            self.size = max(1, min(self.most, int(self.target / self.per_pr)))


class IssueFeed:
    """The repository's issue objects from ``GET /repos/{o}/{r}/issues?state=all&sort=updated``
    (pull requests are issues there, with the same object ``GET /issues/{n}`` answers), read a
    page at a time as far back as the PRs asked about were last updated."""

    def __init__(self, requester: Requester, repository: str,
                 since: datetime | None = None) -> None:
        params: dict[str, Any] = {"state": "all", "sort": "updated", "direction": "desc"}
        if since is not None:
            params["since"] = since.isoformat().replace("+00:00", "Z")
        self._items: Iterator[dict[str, Any]] = pages(
            requester, f"{repo_path(repository)}/issues", params)
        self._seen: dict[int, Mapping[str, Any]] = {}
        self._oldest: str | None = None  # updated_at of the last item read
        self._done = False
        self._lock = threading.Lock()

    def read_until(self, updated_at: str) -> None:
        """Read the listing until it is past ``updated_at`` (newest first), or to its end."""
        with self._lock:
            while not self._done and (self._oldest is None or self._oldest >= updated_at):
                try:
                    item = next(self._items)
                except StopIteration:
                    self._done = True
                    break
                except GithubException:  # e.g. a token without issues: read; PRs ask themselves
                    self._done = True
                    break
                if isinstance(item.get("number"), int):
                    self._seen[int(item["number"])] = item
                self._oldest = str(item.get("updated_at") or "")

    def issue(self, number: int) -> Mapping[str, Any] | None:
        with self._lock:
            found = self._seen.get(number)
        # The listing is GitHub's issue object for a PR only when it says it is one.
        return found if found is not None and found.get("pull_request") else None

    def any_issue(self, number: int) -> Mapping[str, Any] | None:
        """The listing's object for ``number``, an issue or a PR (what ``GET /issues/{n}``
        answers), if the listing has reached it."""
        with self._lock:
            return self._seen.get(number)


class RunIndex:
    """The repository's workflow runs by day (``GET /repos/{o}/{r}/actions/runs?created=``),
    listed once per day range, newest first, as each PR's own listing would list them."""

    def __init__(self, requester: Requester, repository: str,
                 max_runs: int = MAX_INDEXED_RUNS) -> None:
        self.requester = requester
        self.max_runs = max_runs
        self._count = 0
        self.path = f"{repo_path(repository)}/actions/runs"
        self._days: dict[date, list[tuple[str | None, RawWorkflowRun]]] = {}
        self._uncertain: set[date] = set()  # days GitHub would not list in full
        self._failed = False
        self._lock = threading.Lock()
        self.requests = 0

    def ensure(self, first: date, last: date) -> None:
        """List every day of ``first..last`` not listed yet (a failure leaves the PRs to their
        own listings, which report it as they would)."""
        with self._lock:
            if self._failed:
                return
            missing = [first + timedelta(days=d) for d in range((last - first).days + 1)]
            missing = [d for d in missing if d not in self._days and d not in self._uncertain]
            try:
                for low, high in _ranges(missing):
                    self._list(low, high)
            except GithubException:
                self._failed = True
            self._trim(first, last)

    def _trim(self, first: date, last: date) -> None:
        def distance(day: date) -> int:
            return max((first - day).days, (day - last).days, 0)

        for day in sorted(self._days, key=distance, reverse=True):
            if self._count <= self.max_runs or distance(day) == 0:
                break
            self._count -= len(self._days.pop(day))

    def _list(self, low: date, high: date) -> None:
        params = {"created": f"{low.isoformat()}..{high.isoformat()}",
                  "exclude_pull_requests": "true", "per_page": PER_PAGE}
        runs: list[dict[str, Any]] = []
        page = 1
        while True:
            self.requests += 1
            _, data = self.requester.requestJsonAndCheck("GET", self.path,
                                                         parameters={**params, "page": page})
            total = int(data.get("total_count") or 0)
            if total >= RUNS_RESULT_CAP:
                if low == high:
                    self._uncertain.add(low)
                    return
                middle = low + timedelta(days=(high - low).days // 2)
                self._list(middle + timedelta(days=1), high)
                self._list(low, middle)
                return
            chunk = list(data.get("workflow_runs") or [])
            runs.extend(chunk)
            if len(chunk) < PER_PAGE or len(runs) >= total:
                break
            page += 1
        for day in (low + timedelta(days=d) for d in range((high - low).days + 1)):
            self._days.setdefault(day, [])
        for item in runs:  # newest first, as listed
            day = date.fromisoformat(str(item["created_at"])[:10])
            self._days.setdefault(day, []).append((item.get("head_branch"),
                                                   convert.workflow_run(item)))
            self._count += 1

    def workflow_runs(self, pull: RawPullRequest) -> Listed | None:
        """The runs the PR's own listing (``collection._run_query``) would give, or None when
        the index cannot say (an open PR, a day not listed or listed only in part, or so many
        runs that the PR's listing would be cut)."""
        return self.runs_of(pull.created_at, pull.merged_at or pull.closed_at, pull.head_ref)

    def runs_of(self, created_at: datetime, end_at: datetime | None, head_ref: str) -> Listed | None:
        """:meth:`workflow_runs` of a PR created at ``created_at``, ended (merged, else closed)
        at ``end_at``, from branch ``head_ref``: what a listing of PRs says of each."""
        if end_at is None:
            return None
        first = (created_at - RUN_LOOKBACK).date()
        last = (end_at + timedelta(days=1)).date()
        days = [last - timedelta(days=d) for d in range((last - first).days + 1)]  # newest first
        with self._lock:
            if self._failed or any(d not in self._days or d in self._uncertain for d in days):
                return None
            found = [run for d in days for branch, run in self._days[d] if branch == head_ref]
        if len(found) >= MAX_WORKFLOW_RUNS:
            return None
        return found, None


def _ranges(days: list[date]) -> Iterator[tuple[date, date]]:
    """Consecutive runs of ``days`` (sorted) as (first, last), newest range first."""
    out: list[tuple[date, date]] = []
    for day in sorted(days):
        if out and (day - out[-1][1]).days == 1:
            out[-1] = (out[-1][0], day)
        else:
            out.append((day, day))
    yield from reversed(out)


class Shared:
    """What a backfill's PRs share (``collection.Amortised``): the issue feed and the run
    index, each optional, and the linked issues a batch read (:meth:`read_linked`)."""

    def __init__(self, issues: IssueFeed | None, runs: RunIndex | None) -> None:
        self.issues = issues
        self.runs = runs
        self._linked: dict[int, RawLinkedIssue | LinkFailure] = {}
        self._lock = threading.Lock()

    def issue(self, number: int) -> Mapping[str, Any] | None:
        return self.issues.issue(number) if self.issues is not None else None

    def linked_issue(self, number: int) -> RawLinkedIssue | LinkFailure | None:
        """A linked issue's labels from the issue feed where it has reached the issue, else from
        the batch's query; None when neither has it (the PR's own query reads it)."""
        with self._lock:
            found = self._linked.get(number)
        if found is not None:
            return found
        item = self.issues.any_issue(number) if self.issues is not None else None
        if item is None:
            return None
        try:
            return convert.linked_issue(item, number)
        except convert.MalformedIssue:
            return None

    def read_linked(self, requester: Requester, repository: str,
                    pulls: Iterable[RawPullRequest]) -> IssuesRead | None:
        """Read the linked issues of a batch's PRs (``evidence.vocabulary.issues_to_read``) that
        the feed does not hold, with one query for them all; None when there were none."""
        return self.read_numbers(requester, repository, [
            n for pull in pulls for n in issues_to_read(pull.title, pull.body, pull.number, repository)])

    def read_numbers(self, requester: Requester, repository: str,
                     numbers: Iterable[int]) -> IssuesRead | None:
        """:meth:`read_linked` of the linked issues ``numbers``."""
        wanted = [n for n in numbers if self.linked_issue(n) is None]
        if not wanted:
            return None
        got = read_issues(requester, repository, list(dict.fromkeys(wanted)))
        with self._lock:
            self._linked.update(got.answers)
        return got

    def workflow_runs(self, pull: RawPullRequest) -> Listed | None:
        return self.runs.workflow_runs(pull) if self.runs is not None else None


def run_window(created: datetime, ended: datetime | None) -> tuple[date, date] | None:
    """The days a closed PR's run listing covers (``collection._run_query``); None if open."""
    if ended is None:
        return None
    return (created - RUN_LOOKBACK).date(), (ended + timedelta(days=1)).date()


# ------------------------------------------------------------------------- handed to workers

# The parts of an issue object collection reads (``collection._Reader.issue_side_of``).
_ISSUE_KEYS: Final = ("number", "user", "assignees", "performed_via_github_app", "pull_request")
_USER_KEYS: Final = ("login", "type")
_APP_KEYS: Final = ("slug", "name")


def _trimmed(issue: Mapping[str, Any]) -> dict[str, Any]:
    def user(value: Any) -> Any:
        return {k: value.get(k) for k in _USER_KEYS} if isinstance(value, Mapping) else value

    out = {k: issue[k] for k in _ISSUE_KEYS if k in issue}
    out["user"] = user(out.get("user"))
    if isinstance(out.get("assignees"), list):
        out["assignees"] = [user(a) for a in out["assignees"]]
    app = out.get("performed_via_github_app")
    if isinstance(app, Mapping):
        out["performed_via_github_app"] = {k: app.get(k) for k in _APP_KEYS}
    if isinstance(out.get("pull_request"), Mapping):
        out["pull_request"] = {}  # that it is one is what is read
    return out


def handed(shared: Shared, repository: str, number: int, created_at: datetime,
           end_at: datetime | None, head_ref: str, links: Iterable[int]) -> dict[str, Any]:
    """What ``shared`` (a backfill's repository-wide reads) answers for one PR, as JSON data a
    queued job carries to its worker (:class:`Handed`): the PR's issue object (the parts
    collection reads), its workflow runs, the labels of the linked issues ``links`` the issue
    listing or a query for them read (or why one could not be read); each absent where the
    reads cannot answer for it (the worker then reads it)."""
    issue = shared.issue(number)
    runs = shared.runs.runs_of(created_at, end_at, head_ref) if shared.runs is not None else None
    linked = {str(n): got.model_dump(mode="json") if isinstance(got, RawLinkedIssue)
              else {"failed": got.status}
              for n in links if (got := shared.linked_issue(n)) is not None}
    return {"issue": _trimmed(issue) if issue is not None else None,
            "runs": [r.model_dump(mode="json") for r in runs[0]] if runs is not None else None,
            "linked": linked}


class Handed(Shared):
    """The answers ``taskeval backfill --enqueue`` handed a batch of jobs (:func:`handed`, one
    per PR by number), as the repository-wide reads of a backfill: a worker reading the batch's
    PRs with one query sends none of the reads the enqueuer made for them."""

    def __init__(self, payloads: Mapping[int, Mapping[str, Any]]) -> None:
        super().__init__(None, None)
        self.payloads = dict(payloads)
        for payload in self.payloads.values():
            for number, found in (payload.get("linked") or {}).items():
                self._linked[int(number)] = (
                    link_failure(int(number), found["failed"]) if "failed" in found
                    else RawLinkedIssue.model_validate(found))

    def issue(self, number: int) -> Mapping[str, Any] | None:
        found = (self.payloads.get(number) or {}).get("issue")
        return found if isinstance(found, Mapping) else None

    def workflow_runs(self, pull: RawPullRequest) -> Listed | None:
        runs = (self.payloads.get(pull.number) or {}).get("runs")
        if not isinstance(runs, list):
            return None
        return [RawWorkflowRun.model_validate(r) for r in runs], None
