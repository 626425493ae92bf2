"""``taskeval backfill OWNER/REPO``: evaluate a repository's past pull requests into the bot's store.

It lists the PRs with GitHub's list endpoint (``GET /repos/{o}/{r}/pulls``, sorted by last update,
newest first, 100 a page), keeps those whose work ended in the window (``--since``/``--until`` on
the merge time, else the close time, else the creation time: the ``activity_at`` the dashboard
groups by), and evaluates each through the same pipeline as ``taskeval evaluate`` and the bot, a
few PRs at a time (``--parallel``), storing each result in one transaction.

* **Restartable.** A PR already stored at the same head SHA and scorer version is skipped before
  any request about it: the listing carries the head SHA. Each result is stored in its own
  transaction, so a run killed at any point (Ctrl-C, SIGKILL) leaves whole rows only, and the next
  run picks up where it stopped; a concurrent writer of the same PR is settled by the store's
  unique index (one newest row per PR), so nothing is stored twice.
* **Within the rate budget.** Every request, the listing's included, takes a slot from the
  credential's shared budget in the database (``taskeval.store.budget``), which keeps ``--reserve`` requests
  for the credential's other users; when it is spent the run waits for the reset with a countdown,
  or stops with ``--no-wait``. A secondary limit (``Retry-After``) pauses the run for as long as
  GitHub asks and the PR is tried again.
* **Quiet by default.** No comment is posted unless ``--comment``.
* ``--enqueue`` lists the same PRs but puts them on the bot's durable queue (trigger ``backfill``)
  for ``taskeval worker`` processes, which share the same budget through the database.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal, TextIO

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError

from bot.settings import DEFAULT_RESERVE
from taskeval.evidence.vocabulary import issues_to_read
from taskeval.github.batch import BatchSizer
from taskeval.github.errors import GitHubError, RateLimitError, translate
from taskeval.store.budget import Budget, BudgetExhausted, GateMeter, budget_key, rate_limit_now
from taskeval.store.db import default_store, evaluations, init_schema, make_engine, write
from taskeval.store.results import record_from_result, store_evaluation
from taskeval.transports import Api, default_api

State = Literal["merged", "closed", "all"]
DEFAULT_PARALLEL = 4
MAX_TRIES = 3  # per PR, for secondary rate limits
TRIGGER = "backfill"
# What backfill reads to name the account its token posts as, when GitHub will not say.
LOGIN_HINT = "set TASKEVAL_COMMENT_AS to the login the token posts as, for a GitHub App '<app-slug>[bot]'"
ENQUEUE_CHUNK = 100  # PRs whose repository-wide reads --enqueue makes before queueing them


@dataclass(frozen=True)
class Options:
    repository: str
    since: datetime | None = None
    until: datetime | None = None
    state: State = "merged"
    limit: int | None = None
    store_url: str = field(default_factory=default_store)
    enqueue: bool = False
    comment: bool = False
    wait: bool = True
    reserve: int = DEFAULT_RESERVE
    graphql_reserve: int = DEFAULT_RESERVE
    parallel: int = DEFAULT_PARALLEL
    ai: Literal["auto", "on", "off"] = "auto"
    config_path: Path | None = None
    api: Api = field(default_factory=default_api)  # TASKEVAL_API, else GraphQL


@dataclass(frozen=True)
class Candidate:
    number: int
    head_sha: str
    activity_at: str
    created_at: str | None = None  # as listed (GitHub's ISO 8601): what batching plans by
    updated_at: str | None = None
    ended_at: str | None = None  # merged, else closed; None while open
    head_ref: str = ""
    links: tuple[int, ...] = ()  # the linked issues its text names (``issues_to_read``)


@dataclass
class Summary:
    listed: int = 0
    evaluated: int = 0
    skipped: int = 0
    enqueued: int = 0
    failed: dict[int, str] = field(default_factory=dict)
    requests: int = 0
    points: int = 0  # GraphQL points GitHub reported
    stopped: str | None = None  # why the run ended early
    seconds: float = 0.0

    def exit_code(self) -> int:
        if self.stopped:
            return 3
        return 1 if self.failed else 0

    def lines(self) -> list[str]:
        out = [f"backfill: {self.listed} PRs in the window; evaluated {self.evaluated}, "
               f"skipped {self.skipped} (already stored at this head and scorer version)"
               + (f", enqueued {self.enqueued}" if self.enqueued else "")
               + f", failed {len(self.failed)}; {self.requests} GitHub request{'' if self.requests == 1 else 's'}"
               + (f" ({self.points} GraphQL point{'' if self.points == 1 else 's'})"
                  if self.points else "")
               + f" in {self.seconds:.1f} s"]
        reasons = Counter(self.failed.values())
        for reason, count in reasons.most_common():
            numbers = [n for n, r in self.failed.items() if r == reason][:10]
            out.append(f"  failed x{count}: {reason} (PRs {', '.join(f'#{n}' for n in numbers)}"
                       f"{', ...' if count > len(numbers) else ''})")
        if self.stopped:
            out.append(f"  stopped early: {self.stopped}; run the same command again to go on")
        return out


def parse_day(text: str) -> datetime:
    """``YYYY-MM-DD`` or a full ISO 8601 time; a bare date is midnight UTC."""
    value = text.strip()
    try:
        if len(value) == 10:
            return datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"expected a date as YYYY-MM-DD (or ISO 8601), got {text!r}") from exc
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _iso(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def select_pulls(items: Iterator[dict[str, Any]], opts: Options) -> Iterator[Candidate]:
    """The listed PRs (newest update first) that the options keep, stopping as soon as the rest
    can only be older than ``since``: a PR's update time is never before its close or merge."""
    taken = 0
    for item in items:
        updated = _iso(item.get("updated_at"))
        if opts.since is not None and updated is not None and updated < opts.since:
            return
        merged = _iso(item.get("merged_at"))
        closed = _iso(item.get("closed_at"))
        if opts.state == "merged" and merged is None:
            continue
        if opts.state == "closed" and closed is None:
            continue
        when = merged or closed or _iso(item.get("created_at"))
        if when is None:
            continue
        if opts.since is not None and when < opts.since:
            continue
        if opts.until is not None and when > opts.until:
            continue
        head = (item.get("head") or {}).get("sha")
        if not isinstance(head, str) or not isinstance(item.get("number"), int):
            continue
        number = int(item["number"])
        yield Candidate(number, head, when.isoformat(),
                        created_at=item.get("created_at"), updated_at=item.get("updated_at"),
                        ended_at=item.get("merged_at") or item.get("closed_at"),
                        head_ref=str((item.get("head") or {}).get("ref") or ""),
                        links=tuple(issues_to_read(str(item.get("title") or ""),
                                                   str(item.get("body") or ""), number,
                                                   opts.repository)))
        taken += 1
        if opts.limit is not None and taken >= opts.limit:
            return


class Progress:
    """A one-line bar on a terminal; plain log lines otherwise."""

    def __init__(self, total: int, stream: TextIO, tty: bool | None = None) -> None:
        self.total = total
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.done = 0
        self.counts: Counter[str] = Counter()
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._last_wait = 0.0

    def _bar(self) -> str:
        width = 30
        filled = int(width * self.done / self.total) if self.total else width
        rate = self.done / max(1e-6, time.monotonic() - self.started)
        return (f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"evaluated {self.counts['evaluated']} skipped {self.counts['skipped']} "
                f"failed {self.counts['failed']} | {rate:.1f} PR/s ")

    def step(self, number: int, what: str, detail: str = "") -> None:
        with self._lock:
            self.done += 1
            self.counts[what] += 1
            if self.tty:
                self.stream.write(self._bar())
            else:
                self.stream.write(f"backfill: [{self.done}/{self.total}] #{number} {what}"
                                  f"{': ' + detail if detail else ''}\n")
            self.stream.flush()

    def waiting(self, seconds_left: float, why: str) -> None:
        with self._lock:
            if self.tty:
                minutes, seconds = divmod(int(seconds_left + 0.999), 60)
                self.stream.write(f"\r{why}: waiting {minutes:d}:{seconds:02d} for the reset "
                                  f"(Ctrl-C stops; the next run resumes)   ")
            elif time.monotonic() - self._last_wait >= 30 or self._last_wait == 0.0:
                self._last_wait = time.monotonic()
                self.stream.write(f"backfill: {why}: waiting {seconds_left:.0f} s for the reset\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def stored_heads(engine: Engine, repository: str, scorer_version: str) -> set[tuple[int, str]]:
    """(number, head SHA) of every PR of the repository stored at this scorer version."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(evaluations.c.number, evaluations.c.head_sha)
            .where(evaluations.c.repo == repository,
                   evaluations.c.scorer_version == scorer_version)
        ).all()
    return {(int(r.number), str(r.head_sha)) for r in rows}


def _store(engine: Engine, record: dict[str, Any]) -> bool:
    """Store one result unless the same PR, head and scorer version is there already (another
    run got there first); False when it was."""
    for _ in range(5):
        try:
            with write(engine) as conn:
                there = conn.execute(
                    select(evaluations.c.id).where(
                        evaluations.c.repo == record["repo"],
                        evaluations.c.number == record["number"],
                        evaluations.c.head_sha == record["head_sha"],
                        evaluations.c.scorer_version == record["scorer_version"]).limit(1)
                ).first()
                if there is not None:
                    return False
                store_evaluation(conn, {**record, "stored_at": time.time()})
                return True
        except IntegrityError:  # a concurrent writer of the same PR: look again
            continue
    raise RuntimeError(f"could not store {record['repo']}#{record['number']}")


class Backfill:
    def __init__(self, opts: Options, gh: Any, engine: Engine, *, token: str | None,
                 api_url: str, stream: TextIO = sys.stderr, tty: bool | None = None,
                 evaluate: Callable[..., Any] | None = None,
                 installation_id: int | None = None) -> None:
        self.opts = opts
        self.gh = gh
        self.engine = engine
        self.token = token
        self.stream = stream
        self.tty = tty
        self.summary = Summary()
        self.progress: Progress | None = None
        # An App installation's budgets are the installation's, whichever token it holds now.
        key = budget_key(api_url, token=token, installation_id=installation_id)
        self.budget = Budget(engine, key, reserve=opts.reserve,
                             wait=opts.wait, on_wait=self._on_wait, refresh=self._refresh)
        self.graphql_budget = Budget(engine, key, resource="graphql",
                                     reserve=opts.graphql_reserve, wait=opts.wait,
                                     on_wait=self._on_wait,
                                     refresh=lambda: self._refresh("graphql"))
        self._evaluate = evaluate
        # --api graphql: several PRs per query (taskeval.github.batch); the reads wait here for
        # their PR's turn, and the repository-wide REST reads are shared by every PR.
        self.batching = opts.api == "graphql" and evaluate is None
        self.sizer = BatchSizer()
        self.batches: list[int] = []  # PRs per batch query sent, in order
        self._reads: dict[int, Any] = {}  # number -> PullRead, or the error reading it
        self._batched: set[int] = set()  # PRs a batch read was tried for
        self._shared: Any = None  # taskeval.github.batch.Shared, made on first use (_shared_for)
        self._shared_meter: GateMeter | None = None
        self._shared_requester: Any = None
        self._pause_until = 0.0
        self._stop = threading.Event()
        self._own_login: str | None = None
        self._login_lock = threading.Lock()
        self._login_error: Exception | None = None  # GET /user's refusal, asked once
        self._count = threading.Lock()

    # ------------------------------------------------------------------ GitHub

    def _on_wait(self, left: float) -> None:
        if self.progress is not None:
            self.progress.waiting(left, "rate budget spent")
        else:
            self.stream.write(f"backfill: rate budget spent: waiting {left:.0f} s for the reset\n")

    def meter(self) -> GateMeter:
        """A meter on both of the credential's budgets (REST requests, GraphQL points)."""
        return GateMeter(self.budget, graphql=self.graphql_budget)

    def _refresh(self, resource: str = "core") -> tuple[int, int, float] | None:
        """The quota now (first use, after a wait), from ``GET /rate_limit``, which GitHub does
        not charge for. GitHub out of reach ends the run here (a GitHubError), rather than after
        the listing has spent its own retries on the same dead address."""
        import requests

        try:
            return rate_limit_now(self.gh, unreachable_raises=True, resource=resource)
        except requests.RequestException as exc:
            raise translate(exc, f"repository {self.opts.repository}", "repository") from exc

    @contextmanager
    def _metered(self) -> Iterator[Any]:
        """A requester of its own on the run's budget; what it sent is added to the summary."""
        from taskeval.github.client import clone

        meter = self.meter()
        requester = clone(self.gh, meter)
        try:
            yield requester
        finally:
            meter.close()
            requester.close()
            with self._count:
                self.summary.requests += meter.requests
                self.summary.points += meter.points

    def _list(self) -> list[Candidate]:
        from taskeval.github.client import pages, repo_path

        params = {"state": "all" if self.opts.state == "all" else "closed",
                  "sort": "updated", "direction": "desc"}
        with self._metered() as requester:
            try:
                items = pages(requester, f"{repo_path(self.opts.repository)}/pulls", params)
                return list(select_pulls(items, self.opts))
            except GitHubError:  # already one plain line (the budget, the first rate-limit call)
                raise
            except Exception as exc:  # a 404 is a repository that does not exist: bad input
                raise translate(exc, f"repository {self.opts.repository}", "repository") from exc

    # ------------------------------------------------------------------ one PR

    def evaluate_one(self, pr: Candidate) -> tuple[str, str]:
        from taskeval.pipeline import Options as PipelineOptions
        from taskeval.pipeline import evaluate_pull_request, publish_comment
        from taskeval.store.results import comment_signature

        options = PipelineOptions(ai=self.opts.ai, config_path=self.opts.config_path,
                                  trigger=TRIGGER, env=dict(os.environ), github_token=self.token,
                                  api=self.opts.api)
        meter = self.meter()
        read = self._reads.pop(pr.number, None)
        try:
            if read is not None:
                evaluation = self._evaluate_read(read, options, meter)
            else:
                run = self._evaluate or evaluate_pull_request
                evaluation = run(self.gh, self.opts.repository, pr.number, options, meter=meter)
            url = None
            if self.opts.comment:
                login = None if evaluation.comment_seed else self._login_or_stop()
                if evaluation.comment_seed or login:
                    url, _ = publish_comment(self.gh, self.opts.repository, pr.number,
                                             evaluation.markdown, seed=evaluation.comment_seed,
                                             meter=meter, own_login=login, login_hint=LOGIN_HINT)
        finally:
            meter.close()
            with self._count:
                self.summary.requests += meter.requests
                self.summary.points += meter.points
        result = json.loads(evaluation.result.to_json())
        record = record_from_result(
            result, comment_url=url,
            signature=comment_signature(evaluation.markdown) if url else None)
        if not _store(self.engine, record):
            return "skipped", "stored meanwhile by another run"
        return "evaluated", f"{result['overallScore']} ({result['overallBand']}), " \
                            f"{meter.requests} requests"

    def _evaluate_read(self, read: Any, options: Any, meter: GateMeter) -> Any:
        """Evaluate a PR its batch query read: the REST reads GraphQL lacks (shared where the
        repository-wide reads have them), then the same pipeline. A PR the batch could not read
        raises what kept it (its reason is recorded)."""
        from taskeval.github.collection import collect_read
        from taskeval.pipeline import evaluate_collection

        if isinstance(read, Exception):
            raise read
        raw = collect_read(self.gh, self.opts.repository, read, meter=meter, shared=self._shared)
        return evaluate_collection(raw, options)

    def _prefetch(self, prs: list[Candidate]) -> None:
        """Read ``prs`` with one GraphQL query (halved while GitHub times out on it), after the
        shared REST reads they need: the issue feed as far back as they were updated, the run
        index over their windows. A batch that fails as a whole leaves its PRs to be read one by
        one (each with its own reason if that fails too)."""
        from taskeval.github.graphql.read import GraphQLUnavailable, read_pulls

        self._batched.update(pr.number for pr in prs)
        self._shared_for(prs)
        numbers = [pr.number for pr in prs]
        with self._metered() as requester:
            try:
                batch = read_pulls(requester, self.opts.repository, numbers,
                                   points=self.sizer.expected(len(numbers)))
            except GraphQLUnavailable:
                self.batching = False  # each PR's own collection falls back to REST, and says so
                return
            except GitHubError as exc:
                if isinstance(exc, RateLimitError):
                    raise
                return  # read one by one
        if batch.sizes == [len(numbers)]:
            self.sizer.reported(len(numbers), batch.cost)
        self.batches.extend(batch.sizes)
        self._read_linked([read.pull for read in batch.reads.values()
                           if not isinstance(read, Exception)])
        self._reads.update(batch.reads)

    def _read_linked(self, pulls: list[Any]) -> None:
        """The batch's linked issues in one query (``Shared.read_linked``); one that fails
        leaves each PR to read its own, which reports the failure as a single read would."""
        from taskeval.github.graphql.read import GraphQLUnavailable

        if self._shared is None or not pulls:
            return
        with self._metered() as requester:
            try:
                self._shared.read_linked(requester, self.opts.repository, pulls)
            except (GitHubError, GraphQLUnavailable) as exc:
                if isinstance(exc, RateLimitError):
                    raise

    def _close_shared(self) -> None:
        if self._shared_meter is not None:
            self._shared_meter.close()
            self._shared_requester.close()
            self.summary.requests += self._shared_meter.requests
            self._shared_meter = None

    # ------------------------------------------------------------------ the run

    def run(self) -> Summary:
        from taskeval import SCORER_VERSION

        started = time.monotonic()
        try:
            try:
                listed = self._list()
            except BudgetExhausted as exc:
                self.summary.stopped = str(exc)
                return self.summary
            self.summary.listed = len(listed)
            done = stored_heads(self.engine, self.opts.repository, SCORER_VERSION)
            todo = [pr for pr in listed if (pr.number, pr.head_sha) not in done]
            self.summary.skipped = len(listed) - len(todo)
            if self.opts.enqueue:
                try:
                    self._enqueue(todo)
                except (BudgetExhausted, RateLimitError) as exc:  # its reads: go on next run
                    self.summary.stopped = str(exc)
                return self.summary
            self.progress = Progress(len(listed), self.stream, self.tty)
            self.progress.done = self.progress.counts["skipped"] = self.summary.skipped
            if self.opts.comment and self.opts.api == "rest":
                self._comment_login()  # before any work: who posts decides which comment is ours
            try:
                self._work(todo)
            finally:
                self._close_shared()
            return self.summary
        finally:
            if self.progress is not None:
                self.progress.close()
            self.summary.seconds = time.monotonic() - started

    def _comment_login(self) -> str:
        """The login the comment is posted as, asked once (``GET /user``) and only where a REST
        collection needs it to find our comment: after a GraphQL read ``viewerDidAuthor`` did."""
        from taskeval.github import comment_login

        with self._login_lock:
            if self._login_error is not None:
                raise self._login_error
            if self._own_login is None:
                try:
                    self._own_login = (os.environ.get("TASKEVAL_COMMENT_AS")
                                       or comment_login(self.gh, LOGIN_HINT))
                except Exception as exc:
                    self._login_error = exc
                    raise
            return self._own_login

    def _login_or_stop(self) -> str | None:
        """The login, for a PR that fell back to REST; None when GitHub will not name the
        account. Then the PR's result is stored without a comment and the run stops once the
        PRs in flight are stored, saying why, rather than failing every PR the same way."""
        from taskeval.github import AuthError

        try:
            return self._comment_login()
        except AuthError as exc:
            with self._count:
                if self.summary.stopped is None:
                    self.summary.stopped = (f"comments not posted: {exc} (the PRs stored "
                                            "meanwhile have none: `taskeval evaluate "
                                            "OWNER/REPO#N --comment` posts one)")
            self._stop.set()
            return None

    def _work(self, todo: list[Candidate]) -> None:
        from taskeval.github import AuthError, GitHubError, NotFoundError, RateLimitError

        assert self.progress is not None
        tries: Counter[int] = Counter()
        queue = list(reversed(todo))  # pop() takes the newest first, as listed
        running: dict[Future[tuple[str, str]], Candidate] = {}
        pool = ThreadPoolExecutor(max_workers=max(1, self.opts.parallel),
                                  thread_name_prefix="backfill")
        try:
            while queue or running:
                while queue and len(running) < max(1, self.opts.parallel) \
                        and not self._stop.is_set() and time.time() >= self._pause_until:
                    if self.batching and queue[-1].number not in self._batched:
                        if not self._next_batch(queue):
                            break
                        continue
                    pr = queue.pop()
                    tries[pr.number] += 1
                    running[pool.submit(self.evaluate_one, pr)] = pr
                if not running:
                    if self._stop.is_set():
                        break
                    self._sleep_pause()
                    continue
                finished, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in finished:
                    pr = running.pop(future)
                    try:
                        what, detail = future.result()
                        with self._count:
                            if what == "evaluated":
                                self.summary.evaluated += 1
                            else:
                                self.summary.skipped += 1
                        self.progress.step(pr.number, what, detail)
                    except BudgetExhausted as exc:
                        self.summary.stopped = str(exc)
                        self._stop.set()
                        queue.append(pr)
                    except RateLimitError as exc:  # a secondary limit outlasting the retries
                        reset = exc.reset_at.timestamp() if exc.reset_at else time.time() + 60
                        if not self.opts.wait:
                            self.summary.stopped = str(exc)
                            self._stop.set()
                        elif tries[pr.number] < MAX_TRIES:
                            self._pause_until = max(self._pause_until, reset)
                            queue.append(pr)
                        else:
                            self._failed(pr, f"rate limited {MAX_TRIES} times: {exc}")
                    except (NotFoundError, AuthError, GitHubError) as exc:
                        self._failed(pr, str(exc))
                    except Exception as exc:  # reported, never a traceback
                        self._failed(pr, f"{type(exc).__name__}: {exc}")
                if self._stop.is_set() and not running:
                    break
        except KeyboardInterrupt:
            self._stop.set()
            self.summary.stopped = (f"interrupted; {len(running)} PRs in progress were left "
                                    "unstored")
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _next_batch(self, queue: list[Candidate]) -> bool:
        """Read the next batch of the queue (its newest PRs); False when the run must stop or
        pause first (the budget, a rate limit)."""
        prs = [pr for pr in reversed(queue[-self.sizer.size:]) if pr.number not in self._batched]
        try:
            self._prefetch(prs)
        except BudgetExhausted as exc:
            self.summary.stopped = str(exc)
            self._stop.set()
            self._batched.difference_update(pr.number for pr in prs)
            return False
        except RateLimitError as exc:
            self._batched.difference_update(pr.number for pr in prs)
            if not self.opts.wait:
                self.summary.stopped = str(exc)
                self._stop.set()
            else:
                reset = exc.reset_at.timestamp() if exc.reset_at else time.time() + 60
                self._pause_until = max(self._pause_until, reset)
            return False
        return True

    def _sleep_pause(self) -> None:
        left = self._pause_until - time.time()
        if left > 0:
            assert self.progress is not None
            self.progress.waiting(left, "secondary rate limit")
            time.sleep(min(1.0, left))

    def _failed(self, pr: Candidate, reason: str) -> None:
        from taskeval.redact import redact

        reason = redact(" ".join(reason.split()))[:300]
        with self._count:
            self.summary.failed[pr.number] = reason
        assert self.progress is not None
        self.progress.step(pr.number, "failed", reason)

    def _enqueue(self, todo: list[Candidate]) -> None:
        """Queue the PRs for ``taskeval worker``. Over GraphQL each job carries what this run
        read for it (``taskeval.github.batch.handed``): the repository-wide reads a single
        process shares among its PRs (the issue listing, the workflow runs by day) are made
        here, once, a chunk of PRs at a time, and workers claim the jobs in batches that one
        GraphQL query reads (``Queue.claim_batch``), so spread over workers the backfill
        spends per PR what one process does."""
        from bot.jobs import events
        from bot.jobs.queue import Queue

        queue = Queue(self.engine)
        trigger = "backfill-comment" if self.opts.comment else TRIGGER
        try:
            for start in range(0, len(todo), ENQUEUE_CHUNK):
                chunk = todo[start:start + ENQUEUE_CHUNK]
                payloads = self._handed(chunk) if self.batching else {}
                for pr in chunk:
                    payload = payloads.get(pr.number)
                    _, created = queue.enqueue(
                        events.Evaluate(self.opts.repository, pr.number, pr.head_sha, None, trigger),
                        payload=json.dumps(payload, separators=(",", ":")) if payload else None)
                    if created:
                        self.summary.enqueued += 1
                    else:
                        self.summary.skipped += 1
        finally:
            self._close_shared()
        self.stream.write(f"backfill: {self.summary.enqueued} jobs queued for taskeval worker\n")

    def _shared_for(self, prs: list[Candidate]) -> Any:
        """The repository-wide reads (issue listing, workflow runs by window), opened once per
        run and read as far as ``prs`` need: what a batch and an enqueued job's payload share."""
        from taskeval.github.batch import IssueFeed, RunIndex, Shared, run_window
        from taskeval.github.client import clone

        if self._shared is None:
            self._shared_meter = self.meter()
            self._shared_requester = clone(self.gh, self._shared_meter)
            self._shared = Shared(IssueFeed(self._shared_requester, self.opts.repository,
                                            self.opts.since),
                                  RunIndex(self._shared_requester, self.opts.repository))
        updated = [pr.updated_at for pr in prs if pr.updated_at]
        if updated:
            self._shared.issues.read_until(min(updated))
        windows = [w for pr in prs if pr.created_at and (w := run_window(
            _iso(pr.created_at) or datetime.now(UTC), _iso(pr.ended_at))) is not None]
        if windows:
            self._shared.runs.ensure(min(w[0] for w in windows), max(w[1] for w in windows))
        return self._shared

    def _handed(self, prs: list[Candidate]) -> dict[int, dict[str, Any]]:
        """What the repository-wide reads answer for each of ``prs`` (a job's payload), read as
        far as these PRs need, as :meth:`_prefetch` reads them for a batch."""
        from taskeval.github.batch import handed
        from taskeval.github.graphql.read import GraphQLUnavailable

        shared = self._shared_for(prs)
        with self._metered() as requester:  # the linked issues the listing has not reached
            try:
                shared.read_numbers(requester, self.opts.repository,
                                          [n for pr in prs for n in pr.links])
            except (GitHubError, GraphQLUnavailable) as exc:  # each worker reads its own
                if isinstance(exc, RateLimitError):
                    raise
        return {pr.number: handed(shared, self.opts.repository, pr.number,
                                  _iso(pr.created_at) or datetime.now(UTC), _iso(pr.ended_at),
                                  pr.head_ref, pr.links)
                for pr in prs}


def installation_of(app_id: str, private_key: str, api_url: str, repository: str) -> int:
    """The App's installation on ``repository`` (``GET /repos/{o}/{r}/installation`` with the
    App's JWT); a failure is one line saying what to fix."""
    from github import Auth, GithubIntegration

    owner, name = repository.split("/", 1)
    try:
        integration = GithubIntegration(auth=Auth.AppAuth(int(app_id), private_key),
                                        base_url=api_url)
        return int(integration.get_repo_installation(owner, name).id)
    except Exception as exc:
        raise translate(exc, f"the installation of GitHub App {app_id} on {repository} "
                             "(install the App there, or set GITHUB_TOKEN)", "installation") from exc


def new_store_file(url: str) -> Path | None:
    """The SQLite file opening the store at ``url`` will create, or None (it exists, or the store
    is no SQLite file)."""
    from taskeval.store.access import sqlite_path
    from taskeval.store.db import normalise_database_url

    path = sqlite_path(normalise_database_url(url))
    return path if path is not None and not path.exists() else None


def remove_unused_store(engine: Engine, path: Path) -> bool:
    """Remove the SQLite store ``path`` this run created, when the run failed before storing or
    queueing anything in it (GitHub did not answer, the repository does not exist): a failed
    first run leaves no empty store behind. True when removed."""
    from taskeval.store.db import jobs

    try:
        with engine.connect() as conn:
            used = any(conn.execute(select(table.c.id).limit(1)).first() is not None
                       for table in (evaluations, jobs))
    except Exception:  # cannot tell: keep it
        return False
    if used:
        return False
    engine.dispose()
    for suffix in ("", "-wal", "-shm", "-journal", "-writelock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return True


def open_store(url: str) -> Engine:
    from taskeval.store.db import normalise_database_url

    engine = make_engine(normalise_database_url(url))
    init_schema(engine)
    return engine

