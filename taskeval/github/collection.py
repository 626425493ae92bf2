"""Collection of one pull request: every resource taskeval reads, concurrently, one page of 100
at a time, with no per-item requests.

The steps, in ``collect``: exchange an App's token once; read the repository and the PR together;
start the PR's listings (commits, reviews, review comments, conversation comments, timeline, files,
config) and its issue object (``performed_via_github_app``: the pull request object lacks it);
once the PR has answered, start the head SHA's check runs and the branch's workflow runs; gather
every listing; record what is incomplete as ``CollectionIssue``s; assemble the ``RawCollection``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta
from typing import Any, Final, Protocol, TypeVar

from github import Auth, Github
from github.GithubException import GithubException
from github.Requester import Requester
from pydantic import ValidationError

from taskeval.config import CONFIG_PATH
from taskeval.evidence.vocabulary import issues_to_read
from taskeval.github import convert
from taskeval.github.client import Meter, clone, pages, repo_path
from taskeval.github.errors import (
    NEEDS,
    RESOURCE_LABELS,
    GitHubError,
    LinkFailure,
    is_rate_limited,
    link_failure,
    linked_issue_gap,
    message_of,
    translate,
)
from taskeval.github.graphql.read import GraphQLUnavailable, IssuesRead, PullRead, read_issues, read_pull
from taskeval.github.graphql.timeline import rest_timeline_needed, timeline_logins
from taskeval.raw import (
    CollectionIssue,
    RawCollection,
    RawCommit,
    RawFile,
    RawLinkedIssue,
    RawPullRequest,
    RawTimelineEvent,
    RawUser,
)
from taskeval.redact import redact
from taskeval.transports import API_CHOICES, default_api

# GitHub lists at most this many commits of a pull request (documented limit of the endpoint).
PR_COMMIT_LIST_LIMIT: Final = 250
PR_FILE_LIST_LIMIT: Final = 3000
# Workflow runs are listed by branch name, newest first. A branch name can be shared with other
# work (a fork's `main`), so the listing is bounded in time and size: runs created more than this
# long before the PR opened, or more than a day after it closed, are not about the PR.
RUN_LOOKBACK: Final = timedelta(days=30)
MAX_WORKFLOW_RUNS: Final = 1000
# GitHub does not bound the issue timeline (one ``committed`` event per commit, even past the 250
# commits the PR listing shows), so collection keeps its first this-many events: ten pages, and a
# stored bundle that stays small on a 3,000-commit PR. A cut timeline is kept and recorded as a gap.
MAX_TIMELINE_EVENTS: Final = 1000

_LABELS: Final = RESOURCE_LABELS

# The order the REST path gathers its listings in (and so reports their gaps in).
_REST_ORDER: Final = ("issue", "commits", "reviews", "review_comments", "issue_comments",
                      "timeline", "files", "config", "check_runs", "workflow_runs",
                      "linked_issues")

T = TypeVar("T")
# What one listing yields: its items, and the gap that kept it short (if any).
Listed = tuple[Any, CollectionIssue | None]


# Servers that answered, in this process, that they have no GraphQL or refuse its token: their
# later collections go straight to REST (the fallback is said once per collection, every time).
_REST_ONLY: set[str] = set()
_REST_ONLY_LOCK = threading.Lock()


def collect(gh: Github, repository: str, number: int, *, max_workers: int = 8,
            meter: Meter | None = None, api: str | None = None) -> RawCollection:
    """Fetch everything taskeval reads about one PR, concurrently, with no per-item requests.

    ``api`` picks the transport (``taskeval.transports``: ``TASKEVAL_API``, else GraphQL):
    ``rest`` (below) or ``graphql`` (``_collect_graphql``: one
    GraphQL query for most of the evidence, REST for what GraphQL lacks); both give the same
    ``RawCollection``, so the same bundle. When the server has no GraphQL or refuses the token
    for it, ``graphql`` falls back to REST once, says so in ``notes``, and remembers it for the
    rest of the process.

    REST requests: the repository and the PR (together), then the PR's issue object (GitHub
    reports the App a PR was opened through, ``performed_via_github_app``, on the issue, never on
    the pull request object; a 403/404/410 or malformed answer there is a recorded gap and no
    App), commits, reviews, review comments, conversation comments, the issue timeline (a 403/404
    there is a recorded gap, never an empty timeline), files and the config (independent of the
    PR's payload) and, once the PR has answered, the head SHA's check runs (``filter=all``:
    re-runs stay visible; pick the latest per name when judging the state at merge) and the
    branch's workflow runs (filtered to the PR's commits). Each resource pages at 100.
    ``requests`` counts every HTTP request sent for the PR, retries included, by counting in the
    requester and in the retry policy; an App installation's token exchange (once an hour,
    PyGithub's own requester) is not counted.

    ``meter`` (optional) is told of every request before it is sent, retries included; a meter
    that blocks or raises there (a shared rate budget) gates the collection.

    Raises ``NotFoundError``/``AuthError`` when the repository or PR cannot be read,
    ``RateLimitError`` when a limit could not be waited out, ``GitHubError`` for 5xx after retries
    or malformed answers. A 403/404 on any other resource becomes a ``CollectionIssue``.
    """
    if number < 1:
        raise ValueError(f"a pull request number is positive, got {number}")
    api = api or default_api()
    if api not in API_CHOICES:
        raise ValueError(f"api is one of {', '.join(API_CHOICES)}, got {api!r}")
    reader = _Reader(gh, repository, number, meter)
    _exchange_installation_token(gh, repository)
    if api == "rest":
        return _collect_rest(reader, max_workers)
    server = gh.requester.graphql_url
    with _REST_ONLY_LOCK:
        refused_before = server in _REST_ONLY
    read: dict[str, Listed] = {}
    if not refused_before:
        try:
            return _collect_graphql(reader, max_workers)
        except _Refused as refused:
            with _REST_ONLY_LOCK:
                _REST_ONLY.add(server)
            note = (f"GraphQL was not available ({refused.cause}: the server has no GraphQL API or "
                    "refused the token for it); collected over REST, and this run keeps to REST")
            read = refused.read  # the issue object and the timeline: not asked for twice
        reader = _Reader(gh, repository, number, reader.meter)
    else:
        note = "GraphQL was refused earlier in this run; collected over REST"
    raw = _collect_rest(reader, max_workers, read)
    raw.notes.append(note)
    return raw


class _Refused(Exception):
    """GraphQL refused (``cause``), with what the REST reads started beside the query answered
    (``read``: the issue object and the timeline, as the REST path lists them), so the fallback
    to REST reads each of them once, not again."""

    def __init__(self, cause: GraphQLUnavailable, read: dict[str, Listed]) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.read = read


def _answered(futures: Mapping[str, Future[Listed]]) -> dict[str, Listed]:
    """The results of the reads in ``futures`` that completed (waiting for those in flight);
    one that failed or never started is left out, to be read again."""
    out: dict[str, Listed] = {}
    for key, future in futures.items():
        if future.cancelled():
            continue
        try:
            out[key] = future.result()
        except Exception:  # read again by the REST path, which reports it
            continue
    return out


def _collect_rest(reader: _Reader, max_workers: int,
                  read: Mapping[str, Listed] | None = None) -> RawCollection:
    """``read``: listings already answered (after a GraphQL refusal), used instead of asking."""
    pool = ThreadPoolExecutor(max_workers=max(1, max_workers), thread_name_prefix="taskeval-gh")
    try:
        repo, pull_data = _read_repo_and_pull(pool, reader)
        default_branch = repo.get("default_branch")
        futures = _start_pr_listings(pool, reader, default_branch, read or {})
        pull = _convert_pull(reader, pull_data)
        futures.update(_start_ci_listings(pool, reader, pull))
        numbers = _issue_numbers(pull, repo, reader.repository)
        futures["linked_issues"] = (pool.submit(reader.linked_issues, numbers) if numbers
                                    else _done(([], None)))
        results = _gather(reader, futures)
        pull = pull.model_copy(update={"performed_via_github_app": results["issue"][0]})
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        reader.close()
    return _assemble(reader, repo, pull, results, transport="rest")


class Amortised(Protocol):
    """Repository-wide reads shared by the PRs of a backfill (``taskeval.github.batch``):
    each answers for one PR exactly what the PR's own request would have, or None when it
    cannot be sure of that (then the PR's own request is sent)."""

    def issue(self, number: int) -> Mapping[str, Any] | None: ...

    def workflow_runs(self, pull: RawPullRequest) -> Listed | None: ...

    def linked_issue(self, number: int) -> RawLinkedIssue | LinkFailure | None: ...


def collect_read(gh: Github, repository: str, read: PullRead, *, max_workers: int = 8,
                 meter: Meter | None = None, shared: Amortised | None = None) -> RawCollection:
    """The GraphQL collection of a PR already read over GraphQL (``graphql.read_pulls``, several
    PRs a query): the REST reads GraphQL lacks, from ``shared`` where it has them, and the same
    ``RawCollection`` as ``collect(..., api="graphql")``."""
    reader = _Reader(gh, repository, read.pull.number, meter)
    _exchange_installation_token(gh, repository)
    return _collect_graphql(reader, max_workers, read=read, shared=shared)


def _done(value: T) -> Future[T]:
    future: Future[T] = Future()
    future.set_result(value)
    return future


def _collect_graphql(reader: _Reader, max_workers: int, *, read: PullRead | None = None,
                     shared: Amortised | None = None) -> RawCollection:
    """One GraphQL query (and its further pages) for the PR and most of its evidence; REST, in
    parallel, for the PR's issue object (its App and assignees), then for the timeline where GraphQL
    lacks its facts (``_rest_timeline``), the branch's workflow runs, and for changed files or
    check runs only when GraphQL lacks what REST has (a renamed file's previous path, a check run
    without ``databaseId``). ``read``: the GraphQL part, already
    read; ``shared``: repository-wide answers for the issue object and the workflow runs."""
    pool = ThreadPoolExecutor(max_workers=max(1, max_workers), thread_name_prefix="taskeval-gh")
    base, number = reader.base, reader.number
    try:
        read_f = (_done(read) if read is not None else
                  pool.submit(lambda: read_pull(reader.requester(), reader.repository, number)))
        issue = shared.issue(number) if shared is not None else None
        issue_f = (_done(reader.issue_side_of(issue)) if issue is not None
                   else pool.submit(reader.issue_side))
        try:
            read = read_f.result()
        except GraphQLUnavailable as exc:
            answered = _answered({"issue": issue_f})
            if "issue" in answered:  # REST's read of the issue object keeps only the App
                (app, _assignees, _author), gap = answered["issue"]
                answered["issue"] = (app, gap)
            raise _Refused(exc, answered) from exc
        except GitHubError:
            raise
        except Exception as exc:
            raise translate(exc, f"PR #{number} in {reader.repository}", "pull_request") from exc
        pull = read.pull
        futures: dict[str, Future[Listed]] = {"issue": issue_f}
        if _rest_timeline(read, issue_f):
            futures["timeline"] = pool.submit(
                reader.listing, "timeline", f"{base}/issues/{number}/timeline",
                convert.timeline_event, limit=MAX_TIMELINE_EVENTS, kept="first")
        runs = shared.workflow_runs(pull) if shared is not None else None
        futures["workflow_runs"] = _done(runs) if runs is not None else pool.submit(
            reader.listing, "workflow_runs", f"{base}/actions/runs", convert.workflow_run,
            _run_query(pull), "workflow_runs", MAX_WORKFLOW_RUNS,
        )
        if read.renamed and read.listed["files"][1] is None:
            futures["files"] = pool.submit(reader.listing, "files", f"{base}/pulls/{number}/files",
                                           convert.changed_file)
        if (read.checks_without_id or read.head_unread) and read.listed["check_runs"][1] is None:
            futures["check_runs"] = pool.submit(*_check_runs_listing(reader, pull))
        numbers = _issue_numbers(pull, read.repo, reader.repository)
        known = {n: got for n in numbers
                 if shared is not None and (got := shared.linked_issue(n)) is not None}
        missing = [n for n in numbers if n not in known]
        issues_f = pool.submit(lambda: read_issues(reader.requester(), reader.repository, missing)) \
            if missing else _done(IssuesRead())
        rest = _gather(reader, futures)
        try:
            issues_read = issues_f.result()
        except GitHubError:
            raise
        except Exception as exc:
            raise reader.failure(exc, "linked_issues") from exc
        rest["linked_issues"] = _linked_listed(numbers, {**known, **issues_read.answers})
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        reader.close()
    (app, assignees, author), issue_gap = rest["issue"]
    rest["issue"] = (app, issue_gap)
    update: dict[str, Any] = {"performed_via_github_app": app}
    if assignees is not None:
        update["assignees"] = assignees
    listed = {**read.listed, **{k: v for k, v in rest.items() if k in read.listed}}
    if author is not None:
        update["user"] = author
        listed["issue_comments"] = _as_rest_names(listed["issue_comments"], pull.user, author)
    pull = pull.model_copy(update=update)
    # The REST path's order, so that gaps are reported in the same order.
    results = {key: rest[key] if key in rest else listed[key] for key in _REST_ORDER}
    raw = _assemble(reader, read.repo, pull, results, transport="graphql")
    raw.graphql_points = read.cost + issues_read.cost
    raw.graphql_queries = read.queries + issues_read.queries
    remaining = issues_read.remaining if issues_read.queries else read.remaining
    raw.graphql_remaining = remaining
    raw.graphql_limit = issues_read.limit if issues_read.queries else read.limit
    if listed["issue_comments"][1] is None and read.comment_seed is not None:
        raw.comment_seed = read.comment_seed.model_copy(update={
            "rest_remaining": raw.rate_limit_remaining, "graphql_remaining": remaining,
            "rest_cost": reader.meter.requests - raw.graphql_queries,
            "graphql_cost": raw.graphql_points})
    return raw


def _rest_timeline(read: PullRead, issue_f: Future[Listed]) -> bool:
    """Whether the PR's timeline is read over REST (``graphql.timeline``): an agent account
    whose session events GraphQL lacks is its author, an assignee (the issue object's, which
    lists Bots, beside GraphQL's Users) or acts on its timeline; or GraphQL could not give an
    item of it. Waits for the issue object, read beside the query."""
    if read.timeline_unread:
        return True
    try:
        (_, assignees, author), _ = issue_f.result()
    except Exception:  # reported when the listings are gathered
        assignees, author = None, None
    events = read.listed["timeline"][0] or []
    return rest_timeline_needed([
        read.pull.user.login, author.login if author else None,
        *(a.login for a in (assignees or [])), *(a.login for a in read.pull.assignees),
        *timeline_logins(events)])


def _issue_numbers(pull: RawPullRequest, repo: Mapping[str, Any], repository: str) -> list[int]:
    """The linked issues to read for their labels (``evidence.vocabulary.issues_to_read``), of
    the repository as GitHub names it (the bundle's name)."""
    return issues_to_read(pull.title, pull.body, pull.number,
                          str(repo.get("full_name") or repository))


def _linked_listed(numbers: list[int],
                   answers: Mapping[int, RawLinkedIssue | LinkFailure]) -> Listed:
    """The linked issues read, in reading order, and one gap for those that could not be."""
    found = [got for n in numbers if isinstance(got := answers[n], RawLinkedIssue)]
    failed = [got for n in numbers if isinstance(got := answers[n], LinkFailure)]
    return found, linked_issue_gap(failed)


def _as_rest_names(comments: Listed, graphql_author: RawUser, rest_author: RawUser) -> Listed:
    """The conversation comments with the PR author named as REST names it. A Bot can have two
    logins: GitHub's Copilot agent is ``Copilot`` on REST's pull request, issue, comment and
    timeline endpoints and ``copilot-swe-agent`` in GraphQL (``copilot-swe-agent[bot]`` on REST's
    reviews, which is what the GraphQL login maps to); the PR's issue object, read over REST in
    either transport, says which REST name the author's comments carry."""
    items, gap = comments
    if graphql_author.login == rest_author.login or not items:
        return comments
    renamed = [c.model_copy(update={"user": rest_author})
               if c.user is not None and c.user.login == graphql_author.login else c
               for c in items]
    return renamed, gap


def _assemble(reader: _Reader, repo: Mapping[str, Any], pull: RawPullRequest,
              results: Mapping[str, Listed], *, transport: str) -> RawCollection:
    commits: list[RawCommit] = results["commits"][0]
    shas = _shas(pull, commits)
    remaining, limit = _rate_limit(reader.requesters)
    return RawCollection(
        repository=repo.get("full_name") or reader.repository,
        html_base=_html_base(repo, reader.repository),
        default_branch=repo.get("default_branch"),
        pull=pull,
        commits=commits,
        reviews=results["reviews"][0],
        review_comments=results["review_comments"][0],
        issue_comments=results["issue_comments"][0],
        # A timeline that could not be read is None (the gap is in ``issues``), never empty; one
        # cut at MAX_TIMELINE_EVENTS keeps what was read (the cut is in ``issues`` too).
        timeline=_timeline(results["timeline"]),
        files=results["files"][0],
        check_runs=results["check_runs"][0],
        workflow_runs=[run for run in results["workflow_runs"][0] if run.head_sha in shas],
        config_text=results["config"][0],
        linked_issues=results["linked_issues"][0],
        issues=_issues(results, pull),
        requests=reader.meter.requests,
        rate_limit_remaining=remaining,
        rate_limit_limit=limit,
        transport=transport,
    )


class _Reader:
    """Reads one PR's resources from several threads: each thread gets its own metered requester
    (see ``taskeval.github.client``), all of them count into one meter."""

    def __init__(self, gh: Github, repository: str, number: int,
                 meter: Meter | None = None) -> None:
        self.gh = gh
        self.repository = repository
        self.number = number
        self.base = repo_path(repository)
        self.meter = meter if meter is not None else Meter()
        self.requesters: list[Requester] = []
        self._local = threading.local()
        self._lock = threading.Lock()

    def requester(self) -> Requester:
        mine: Requester | None = getattr(self._local, "requester", None)
        if mine is None:
            with self._lock:
                mine = clone(self.gh, self.meter)
                self.requesters.append(mine)
            self._local.requester = mine
        return mine

    def close(self) -> None:
        for used in self.requesters:
            used.close()

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.requester().requestJsonAndCheck("GET", path, parameters=params)[1]

    def failure(self, exc: BaseException, resource: str) -> GitHubError:
        """The error for a listing that cannot be recorded as a gap."""
        return translate(exc, f"the {_LABELS[resource]} of {self.repository}#{self.number}",
                         resource)

    def listing(
        self, resource: str, path: str, convert_item: Callable[[Mapping[str, Any]], T],
        params: dict[str, Any] | None = None, list_item: str = "items", limit: int | None = None,
        kept: str = "newest",
    ) -> tuple[list[T], CollectionIssue | None]:
        """Every item of a listing, converted; a 403/404 becomes a gap, ``limit`` keeps the first
        ``limit`` items the listing yields (``kept`` says which those are, for the warning)."""
        try:
            out: list[T] = []
            for element in pages(self.requester(), path, params, list_item=list_item):
                if limit is not None and len(out) >= limit:
                    return out, CollectionIssue(
                        resource=resource,
                        message=f"more than {limit} {_LABELS[resource]} matched; the {kept} "
                                f"{limit} were kept",
                    )
                out.append(convert_item(element))
            return out, None
        except GithubException as exc:
            issue = _issue_for(resource, exc)
            if issue is None:
                raise self.failure(exc, resource) from exc
            return [], issue

    def issue_app(self) -> tuple[str | None, CollectionIssue | None]:
        """The slug of the App the PR was opened through, from the PR's issue object
        (``GET /repos/{o}/{r}/issues/{n}``); None when there is none or it could not be read, and
        then the gap says why (an App is never assumed)."""
        (app, _, _), issue = self.issue_side()
        return app, issue

    def issue_side(self) -> tuple[tuple[str | None, list[RawUser] | None, RawUser | None],
                                  CollectionIssue | None]:
        """The GraphQL path's read of the issue object: the App (as ``issue_app``), the
        assignees with their types (GraphQL's ``assignees`` lists Users only, never a Bot such
        as an assigned coding agent) and the author as REST names it (see ``_as_rest_names``);
        None for the assignees and the author when the object was unreadable."""
        try:
            data = self.get(f"{self.base}/issues/{self.number}")
        except GithubException as exc:
            issue = _issue_for("issue", exc)
            if issue is None:
                raise self.failure(exc, "issue") from exc
            return (None, None, None), issue
        return self.issue_side_of(data)

    def issue_side_of(
        self, data: Any
    ) -> tuple[tuple[str | None, list[RawUser] | None, RawUser | None], CollectionIssue | None]:
        """``issue_side`` from an issue object already read (one element of a listing)."""
        assignees = None
        author = None
        if isinstance(data, Mapping) and isinstance(data.get("assignees"), list):
            assignees = [u for a in data["assignees"] if isinstance(a, Mapping) and (u := convert.user(a))]
        if isinstance(data, Mapping) and isinstance(data.get("user"), Mapping):
            author = convert.user(data["user"])
        try:
            return (convert.issue_app(data, self.number), assignees, author), None
        except convert.MalformedIssue as exc:
            return (None, None, None), CollectionIssue(
                resource="issue",
                message=redact(f"{_LABELS['issue']} was malformed ({exc}); no App is assumed"),
            )

    def linked_issues(self, numbers: list[int]) -> Listed:
        """The labels of the linked issues ``numbers``, one ``GET /issues/{n}`` each (a PR's
        number answers with the PR's issue object; its labels count the same). A 403/404/410
        or a malformed answer is that issue's failure, recorded in one gap; a rate limit or a
        server error after retries fails the collection, as on every other read."""
        answers: dict[int, RawLinkedIssue | LinkFailure] = {}
        for number in numbers:
            try:
                data = self.get(f"{self.base}/issues/{number}")
            except GithubException as exc:
                if exc.status not in _ISSUE_GAPS or is_rate_limited(exc):
                    raise self.failure(exc, "linked_issues") from exc
                answers[number] = link_failure(number, exc.status)
                continue
            try:
                answers[number] = convert.linked_issue(data, number)
            except convert.MalformedIssue:
                answers[number] = link_failure(number, None)
        return _linked_listed(numbers, answers)

    def config(self, default_branch: str | None) -> tuple[str | None, CollectionIssue | None]:
        """The repository's config text from its default branch; absent is not a gap."""
        params = {"ref": default_branch} if default_branch else None
        try:
            return convert.config_text(self.get(f"{self.base}/contents/{CONFIG_PATH}", params)), None
        except GithubException as exc:
            if exc.status == 404:
                return None, None
            issue = _issue_for("config", exc)
            if issue is None:
                raise translate(exc, f"{CONFIG_PATH} of {self.repository}", "config") from exc
            return None, issue
        except convert.UnreadableConfig as exc:
            return None, CollectionIssue(resource="config", message=str(exc))


def _exchange_installation_token(gh: Github, repository: str) -> None:
    """Exchange an App's JWT for an installation token once, before threads race to do it."""
    auth = gh.requester.auth
    if isinstance(auth, Auth.AppInstallationAuth):
        try:
            _ = auth.token
        except Exception as exc:
            raise translate(exc, f"a GitHub App installation token for {repository}",
                            "installation") from exc


def _read_repo_and_pull(pool: ThreadPoolExecutor, reader: _Reader) -> tuple[Any, Any]:
    """The repository's and the PR's payloads, read together; either failing fails collection."""
    repository, number = reader.repository, reader.number
    repo_f = pool.submit(reader.get, reader.base)
    pull_f = pool.submit(reader.get, f"{reader.base}/pulls/{number}")
    try:
        repo = repo_f.result()
    except Exception as exc:
        raise translate(exc, f"repository {repository} or PR #{number}", "repository") from exc
    try:
        pull_data = pull_f.result()
    except Exception as exc:
        raise translate(exc, f"PR #{number} in {repository}", "pull_request") from exc
    return repo, pull_data


def _convert_pull(reader: _Reader, pull_data: Any) -> RawPullRequest:
    try:
        return convert.pull_request(pull_data)
    except (KeyError, TypeError, ValidationError) as exc:
        raise translate(exc, f"PR #{reader.number} in {reader.repository}",
                        "pull_request") from exc


def _timeline(listed: Listed) -> list[RawTimelineEvent] | None:
    events: list[RawTimelineEvent] = listed[0]
    issue = listed[1]
    if issue is not None and (issue.status is not None or not events):
        return None  # unreadable (403/404): the gap is recorded, never an empty timeline
    return events  # complete, or cut at MAX_TIMELINE_EVENTS (the cut is recorded as well)


def _start_pr_listings(
    pool: ThreadPoolExecutor, reader: _Reader, default_branch: str | None,
    read: Mapping[str, Listed],
) -> dict[str, Future[Listed]]:
    """The listings that need only the PR's number (and the config, the default branch); those
    in ``read`` were answered already and are not asked again."""
    pr = f"{reader.base}/pulls/{reader.number}"

    def start(key: str, fn: Callable[..., Listed], *args: Any, **kwargs: Any) -> Future[Listed]:
        return _done(read[key]) if key in read else pool.submit(fn, *args, **kwargs)

    return {
        "issue": start("issue", reader.issue_app),
        "commits": start("commits", reader.listing, "commits", f"{pr}/commits", convert.commit),
        "reviews": start("reviews", reader.listing, "reviews", f"{pr}/reviews", convert.review),
        "review_comments": start(
            "review_comments", reader.listing, "review_comments", f"{pr}/comments",
            convert.review_comment,
        ),
        "issue_comments": start(
            "issue_comments", reader.listing, "issue_comments",
            f"{reader.base}/issues/{reader.number}/comments", convert.issue_comment,
        ),
        "timeline": start(
            "timeline", reader.listing, "timeline", f"{reader.base}/issues/{reader.number}/timeline",
            convert.timeline_event, limit=MAX_TIMELINE_EVENTS, kept="first",
        ),
        "files": start("files", reader.listing, "files", f"{pr}/files", convert.changed_file),
        "config": start("config", reader.config, default_branch),
    }


def _start_ci_listings(
    pool: ThreadPoolExecutor, reader: _Reader, pull: RawPullRequest
) -> dict[str, Future[Listed]]:
    """The listings that need the PR's payload: its head SHA's checks and its branch's runs."""
    return {
        "check_runs": pool.submit(*_check_runs_listing(reader, pull)),
        "workflow_runs": pool.submit(
            reader.listing, "workflow_runs", f"{reader.base}/actions/runs", convert.workflow_run,
            _run_query(pull), "workflow_runs", MAX_WORKFLOW_RUNS,
        ),
    }


def _check_runs_listing(reader: _Reader, pull: RawPullRequest) -> tuple[Any, ...]:
    """The head SHA's check runs (``filter=all``), as a listing call's arguments."""
    return (reader.listing, "check_runs", f"{reader.base}/commits/{pull.head_sha}/check-runs",
            convert.check_run, {"filter": "all"}, "check_runs")


def _gather(reader: _Reader, futures: Mapping[str, Future[Listed]]) -> dict[str, Listed]:
    """Every listing's result, in submission order; the first failure is raised translated."""
    results: dict[str, Listed] = {}
    for key, future in futures.items():
        try:
            results[key] = future.result()
        except GitHubError:
            raise
        except Exception as exc:
            raise reader.failure(exc, key) from exc
    return results


def _issues(results: Mapping[str, Listed], pull: RawPullRequest) -> list[CollectionIssue]:
    """The gaps the listings reported, plus listings GitHub cut short or that a push overtook."""
    issues = [issue for _, issue in results.values() if issue is not None]
    resources = {i.resource for i in issues}
    if "commits" not in resources:
        changed = _changed_during_collection(pull, results["commits"][0])
        if changed:
            issues.append(CollectionIssue(resource="commits", message=changed))
    files: list[RawFile] = results["files"][0]
    if "files" not in resources and pull.changed_files > len(files):
        issues.append(CollectionIssue(
            resource="files",
            message=f"GitHub lists at most {PR_FILE_LIST_LIMIT} changed files of a pull request; "
                    f"{len(files)} of {pull.changed_files} were collected",
        ))
    return issues


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


# Resources read from the PR's issue endpoints (``/issues/{n}...``): a 410 there is GitHub's
# answer for an issue that is gone, and the PR is scored without them.
_ISSUE_ENDPOINTS: Final = frozenset({"issue", "issue_comments", "timeline"})
_ISSUE_GAPS: Final = frozenset({403, 404, 410})
_GAPS: Final = frozenset({403, 404})


def _issue_for(resource: str, exc: GithubException) -> CollectionIssue | None:
    """A 403/404 on evidence the PR can be scored without becomes a recorded gap, not a failure;
    so does a 410 on an issue endpoint. The message says what GitHub said; a 403/404 adds the
    permission the token probably lacks."""
    gaps = _ISSUE_GAPS if resource in _ISSUE_ENDPOINTS else _GAPS
    if exc.status not in gaps or is_rate_limited(exc):
        return None
    detail = message_of(exc) or {404: "Not Found", 410: "Gone"}.get(exc.status, "Forbidden")
    hint = "" if exc.status == 410 else f"; the token probably lacks {NEEDS[resource]}"
    return CollectionIssue(
        resource=resource,
        status=exc.status,
        message=redact(f"{_LABELS[resource]} could not be read ({exc.status}: {detail}){hint}"),
    )


def _shas(pull: RawPullRequest, commits: list[RawCommit]) -> set[str]:
    """The commits a workflow run must be about to count as the PR's."""
    return {c.sha for c in commits} | {pull.head_sha}


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
    """The lowest remaining REST quota seen by any thread: the most recent, as the quota only
    falls. REST answers only: a GraphQL answer's headers are the points budget's."""
    seen = [rate for r in requesters if (rate := getattr(r, "core_rate", None)) is not None]
    if not seen:
        return None, None
    remaining, limit = min(seen)
    return remaining, limit
