"""Queue workers: claim a job, keep its lease alive, run its handler, record the outcome.

``python -m bot.jobs.worker`` runs one worker loop (one job at a time). SIGTERM or SIGINT asks it to
stop: an idle worker exits at once; a busy one finishes its job within the grace period, and a
job still running after that (or after a second signal) is released back to the queue without
counting the attempt. A worker killed outright loses nothing either: its lease expires and another
worker takes the job.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from bot import logs
from bot.jobs.handlers import HANDLERS, BatchCore, Core, GitHubContext, InvalidInput, PipelineCore
from bot.jobs.presence import presence_interval
from bot.jobs.queue import Job, LeaseLost, Queue
from bot.settings import BotSettings, SettingsError
from taskeval.store.budget import BudgetExhausted, budget_key

log = logging.getLogger("bot.worker")
T = TypeVar("T")
PRUNE_INTERVAL = 3600.0  # seconds between deletions of expired delivery ids
OVERRAN_EXIT = 75  # EX_TEMPFAIL: a job ran past its deadline; the supervisor starts a new worker


def classify(exc: BaseException) -> tuple[bool, float | None]:
    """(transient, retry_at): GitHub 5xx/429/rate limits, network and database faults are
    transient; a missing PR, a missing permission or another 4xx is not. Unknown errors are
    retried too, within the attempt budget, because a lost evaluation is worse than a late one."""
    from github import GithubException
    from requests import RequestException

    from taskeval.github import AuthError, GitHubError, NotFoundError, RateLimitError

    if isinstance(exc, RateLimitError):
        return True, exc.reset_at.timestamp() if exc.reset_at is not None else None
    if isinstance(exc, NotFoundError | AuthError | InvalidInput):
        return False, None
    status = getattr(exc, "status", None)
    if isinstance(exc, GitHubError | GithubException) and isinstance(status, int):
        return status >= 500 or status == 429, None
    if isinstance(exc, RequestException | DBAPIError | ConnectionError | TimeoutError):
        return True, None
    return True, None


def expected(exc: BaseException) -> bool:
    """Faults of GitHub, the network or the database: logged in one line, without a traceback."""
    from github import GithubException
    from requests import RequestException

    from taskeval.github import GitHubError

    return isinstance(exc, GitHubError | GithubException | RequestException | DBAPIError
                      | ConnectionError | TimeoutError)


def describe(exc: BaseException) -> str:
    text = str(exc).strip() or "(no message)"
    return f"{type(exc).__name__}: {text}"


class Clients:
    """GitHub clients per job: one token client, or one client per App installation.

    In App mode PyGithub's ``AppInstallationAuth`` mints the installation token from a JWT signed
    with the App key and reuses it until shortly before it expires, so caching the client per
    installation is caching the token.
    """

    def __init__(self, settings: BotSettings,
                 make_client: Callable[..., Any] | None = None) -> None:
        self.settings = settings
        self._make = make_client
        self._clients: dict[int, Any] = {}
        self._token_client: Any = None
        self._own_login: str | None = None
        self._lock = threading.Lock()

    def _factory(self) -> Callable[..., Any]:
        if self._make is None:
            from taskeval.github import make_client

            self._make = make_client
        return self._make

    def _integration(self) -> Any:
        from github import Auth, GithubIntegration

        return GithubIntegration(
            auth=Auth.AppAuth(int(self.settings.app_id or 0), self.settings.private_key or ""),
            base_url=self.settings.api_url,
        )

    def for_job(self, job: Job) -> GitHubContext:
        with self._lock:
            if self.settings.auth_mode == "token":
                if self._token_client is None:
                    self._token_client = self._factory()(
                        self.settings.github_token, base_url=self.settings.api_url)
                return GitHubContext(self._token_client,
                                     self.settings.env.get("TASKEVAL_BOT_LOGIN"),
                                     self.settings.github_token,
                                     budget_key(self.settings.api_url,
                                                token=self.settings.github_token))
            installation = job.installation_id
            if installation is None:  # a repository webhook pointed at an App-mode bot
                installation = self._installation_of(job.repo)
            client = self._clients.get(installation)
            if client is None:
                client = self._factory()(
                    app_id=self.settings.app_id, private_key=self.settings.private_key,
                    installation_id=installation, base_url=self.settings.api_url)
                self._clients[installation] = client
            if self._own_login is None:
                self._own_login = f"{self.settings.app_slug or self._app_slug()}[bot]"
            return GitHubContext(client, self._own_login, None,
                                 budget_key(self.settings.api_url, installation_id=installation))

    def _app_slug(self) -> str:
        """The App's slug from ``GET /app`` (authenticated with the App's JWT), as GitHub
        documents; a failure says which call failed and what to set."""
        try:
            return str(self._integration().get_app().slug)
        except Exception as exc:
            raise _app_call_failed(
                exc, "GET /app (the App's own record, with its JWT)",
                "check GITHUB_APP_ID, the private key and GITHUB_API_URL (GitHub Enterprise "
                "Server: https://HOST/api/v3), or set GITHUB_APP_SLUG to the App's slug (the "
                "last part of https://github.com/apps/<slug>)") from exc

    def _installation_of(self, repo: str) -> int:
        owner, name = repo.split("/", 1)
        try:
            return int(self._integration().get_repo_installation(owner, name).id)
        except Exception as exc:
            raise _app_call_failed(
                exc, f"GET /repos/{repo}/installation (with the App's JWT)",
                f"install the App on {repo}, or point the repository's webhook at a bot for "
                "the App that is installed there") from exc


def _app_call_failed(exc: BaseException, call: str, advice: str) -> Exception:
    """A failed App-level call as one line naming the call and the fix. 5xx, rate limits and
    network faults stay transient (the job is retried); anything else is a setup problem."""
    from github import GithubException

    from taskeval.github import AuthError
    from taskeval.github.errors import is_rate_limited, message_of, translate

    if isinstance(exc, GithubException) and not is_rate_limited(exc) and exc.status < 500:
        said = f"{exc.status} {message_of(exc)}".strip()
        return AuthError(f"{call} failed ({said}): {advice}", status=exc.status, resource="app")
    try:
        return translate(exc, call, "app")  # transient: 5xx, rate limit, network
    except Exception:  # not a GitHub or network fault: keep the original
        return exc if isinstance(exc, Exception) else RuntimeError(str(exc))


class Worker:
    def __init__(
        self,
        settings: BotSettings,
        engine: Engine,
        *,
        core: Core | None = None,
        clients: Clients | None = None,
        queue: Queue | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.core = core or PipelineCore(settings, engine)
        self.clients = clients or Clients(settings)
        self.queue = queue or Queue.for_settings(engine, settings)
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"
        self.current_job: int | None = None
        self.overran: int | None = None  # the job that ran past its deadline: the worker stops
        from taskeval.github.batch import BatchSizer

        # How many PRs a batch of backfill jobs holds: as many as one GraphQL query of about
        # ten points reads, from what GitHub reported the last batches cost.
        self.sizer = BatchSizer()

    # ------------------------------------------------------------------ one job

    def run_one(self, job: Job) -> str:
        """Run a claimed job to its end; returns the job's new status."""
        self.current_job = job.id
        try:
            return self._run_one(job)
        finally:
            self.current_job = None

    def _run_one(self, job: Job) -> str:
        with logs.context(job=job.id, repo=job.repo, pr=job.number):
            lost = threading.Event()
            done = threading.Event()
            beat = threading.Thread(target=self._heartbeat, args=(job, done, lost),
                                    name=f"lease-{job.id}", daemon=True)
            beat.start()
            started = time.monotonic()
            try:
                return self._execute(job, lost)
            finally:
                done.set()
                beat.join(timeout=5)
                log.info("job finished", extra={"fields": {
                    "kind": job.kind, "attempt": job.attempts,
                    "seconds": round(time.monotonic() - started, 3)}})

    def _execute(self, job: Job, lost: threading.Event) -> str:
        handler = HANDLERS.get(job.kind)
        if handler is None:
            return self.queue.fail(job.id, self.id, f"unknown job kind {job.kind!r}",
                                   transient=False)
        log.info("job started", extra={"fields": {"kind": job.kind, "attempt": job.attempts}})
        try:
            ctx = self.clients.for_job(job)
            outcome = handler(self.core, ctx, job)
        except BudgetExhausted as exc:  # the shared budget is spent: wait for it, lose nothing
            reset = exc.reset_at.timestamp() if exc.reset_at else self.queue.clock() + 60
            reason = f"deferred to the rate-limit reset: {exc}"
            try:
                self._record("deferral", lost, lambda: self.queue.defer(
                    job.id, self.id, reset, reason))
            except (OperationalError, InterfaceError) as db_exc:
                return self._unrecorded("deferral", db_exc)
            log.info("job deferred: %s", exc)
            return "queued"
        except Exception as exc:  # every failure is recorded on the job
            transient, retry_at = classify(exc)
            error = describe(exc)
            try:
                status = self._record("failure", lost, lambda: self.queue.fail(
                    job.id, self.id, error, transient=transient, retry_at=retry_at))
            except (OperationalError, InterfaceError) as db_exc:
                return self._unrecorded("failure", db_exc)
            level = logging.ERROR if status == "dead" else logging.WARNING
            log.log(level, "job failed (%s): %s", status, error,
                    exc_info=not expected(exc), extra={"fields": {"transient": transient}})
            return status
        if lost.is_set():
            log.warning("lease lost mid-job; another worker owns it now")
        try:
            follow = self._record("outcome", lost, lambda: self.queue.complete(
                job.id, self.id, note=outcome.note, error=outcome.error,
                evaluation=outcome.evaluation, follow_up=outcome.follow_up))
        except LeaseLost:
            log.warning("lease lost before completion; outcome discarded (the new owner redoes it)")
            return "lost"
        except (OperationalError, InterfaceError) as db_exc:
            return self._unrecorded("outcome", db_exc)
        fields: dict[str, Any] = {"note": outcome.note}
        if follow is not None:
            fields["follow_up_job"] = follow
        if outcome.error:
            log.error("job done with a problem: %s", outcome.error, extra={"fields": fields})
        else:
            log.info("job done", extra={"fields": fields})
        return "done"

    def _record(self, what: str, lost: threading.Event, store: Callable[[], T]) -> T:
        """Store a finished job's outcome, waiting out a database that is briefly locked or
        restarting: the work (and its comment) is done, and redoing it after the lease expires
        would cost a full evaluation. Retries back off exponentially within half a lease, so
        the lease (renewed meanwhile) is still ours when the database answers again."""
        delay = 0.25
        deadline = time.monotonic() + self.settings.lease_seconds / 2
        while True:
            try:
                return store()
            except (OperationalError, InterfaceError) as exc:
                if lost.is_set() or time.monotonic() + delay > deadline:
                    raise
                log.warning("could not record the job's %s, retrying in %.2f s: %s", what, delay,
                            describe(exc).splitlines()[0])
                time.sleep(delay)
                delay = min(delay * 2, 8.0)

    def _unrecorded(self, what: str, exc: BaseException) -> str:
        log.error("could not record the job's %s; the job runs again once its lease expires: %s",
                  what, describe(exc).splitlines()[0])
        return "unrecorded"

    def _heartbeat(self, job: Job, done: threading.Event, lost: threading.Event) -> None:
        interval = max(0.05, self.settings.lease_seconds / 3)
        with logs.context(job=job.id, repo=job.repo, pr=job.number):
            while not done.wait(interval):
                try:
                    if not self.queue.heartbeat(job.id, self.id, job.deadline):
                        lost.set()
                        return
                except Exception as exc:  # a missed beat is retried next interval
                    log.warning("lease heartbeat failed: %s", describe(exc))

    # ------------------------------------------------------------------ the loop

    def run(self, stop: threading.Event, hurry: threading.Event | None = None, *,
            parent_pid: int | None = None, max_jobs: int | None = None) -> int:
        """Claim and run jobs until ``stop``; returns how many jobs were run."""
        hurry = hurry or threading.Event()
        count = 0
        log.info("worker started", extra={"fields": {"worker": self.id}})
        gone = threading.Event()
        presence = threading.Thread(target=self._presence, args=(gone,), name="presence",
                                    daemon=True)
        presence.start()
        try:
            count = self._loop(stop, hurry, parent_pid, max_jobs)
        finally:
            gone.set()
            presence.join(timeout=5)
        log.info("worker stopped", extra={"fields": {"worker": self.id, "jobs": count}})
        return count

    def _presence(self, gone: threading.Event) -> None:
        """Heartbeat the worker's row while it runs, idle or busy; remove it on a clean stop."""
        started, host = time.time(), socket.gethostname()
        interval = presence_interval(self.settings.lease_seconds,
                                     self.settings.worker_stale_seconds)
        while True:
            try:
                self.queue.beat(self.id, host=host, pid=os.getpid(), started_at=started,
                                job_id=self.current_job)
            except Exception as exc:  # a missed beat is retried next interval
                log.warning("presence heartbeat failed: %s", describe(exc).splitlines()[0])
            if gone.wait(interval):
                break
        try:
            self.queue.leave(self.id)
        except Exception as exc:  # the row goes stale instead
            log.warning("could not remove the worker's presence row: %s",
                        describe(exc).splitlines()[0])

    def _loop(self, stop: threading.Event, hurry: threading.Event, parent_pid: int | None,
              max_jobs: int | None) -> int:
        count = 0
        next_prune = 0.0
        while not stop.is_set():
            if parent_pid is not None and os.getppid() != parent_pid:
                log.warning("parent process went away; stopping")
                break
            if time.monotonic() >= next_prune:
                next_prune = time.monotonic() + PRUNE_INTERVAL
                self._prune()
            try:
                job = self.queue.claim(self.id)
            except Exception as exc:  # the database may be restarting
                log.warning("could not claim a job: %s", describe(exc))
                stop.wait(min(5.0, self.settings.poll_seconds * 5))
                continue
            if job is None:
                stop.wait(self.settings.poll_seconds)
                continue
            batch = self._batch(job, None if max_jobs is None else max_jobs - count)
            if batch:
                self._run_batch(batch, stop, hurry)
            else:
                self._run_until_stopped(job, stop, hurry)
            count += len(batch) or 1
            if self.overran is not None:
                break  # its thread cannot be stopped: the process ends, and is replaced
            if max_jobs is not None and count >= max_jobs:
                break
        return count

    # ------------------------------------------------------------------ batches

    def _batch(self, job: Job, most: int | None) -> list[Job]:
        """``job`` and the ready jobs its batch query can read with it: ``taskeval backfill
        --enqueue`` jobs (they carry what the enqueuer read for them) of the same repository,
        when collection is over GraphQL and the core can read batches; [] for a job that is
        run on its own."""
        if job.payload is None or job.kind != "evaluate" or self.settings.api != "graphql" \
                or not isinstance(self.core, BatchCore):
            return []
        room = self.sizer.size - 1 if most is None else min(self.sizer.size, most) - 1
        try:
            return [job, *self.queue.claim_batch(self.id, job, room)]
        except Exception as exc:  # the database may be restarting: a batch of one
            log.warning("could not claim a batch: %s", describe(exc))
            return [job]

    def _run_batch(self, batch: list[Job], stop: threading.Event, hurry: threading.Event) -> None:
        """Read the batch's PRs with one GraphQL query (``PipelineCore.prefetch``), then run its
        jobs one by one as any job runs, each completed, failed or deferred on its own. The
        leases of the jobs not started yet are kept alive meanwhile. A spent budget or a rate
        limit defers the whole batch to the reset; any other failure of the batch read leaves
        each job to read its own PR."""
        from taskeval.github import RateLimitError

        core = self.core
        assert isinstance(core, BatchCore)
        waiting = {job.id: job for job in batch}
        lost: set[int] = set()
        done = threading.Event()
        keeper = threading.Thread(target=self._keep_leases, args=(waiting, lost, done),
                                  name="batch-leases", daemon=True)
        keeper.start()
        try:
            try:
                ctx = self.clients.for_job(batch[0])
                sizes = core.prefetch(ctx, batch, self.sizer)
                log.info("batch read", extra={"fields": {"jobs": len(batch), "queries": sizes}})
            except (BudgetExhausted, RateLimitError) as exc:
                reset = exc.reset_at.timestamp() if exc.reset_at else self.queue.clock() + 60
                for job in batch:
                    self.queue.defer(job.id, self.id, reset, f"deferred to the rate-limit reset: {exc}")
                waiting.clear()
                log.info("batch of %d jobs deferred: %s", len(batch), exc)
                return
            except Exception as exc:  # each job reads its own PR and reports what fails
                log.warning("batch read failed; each job reads its own PR: %s", describe(exc))
            for job in batch:
                waiting.pop(job.id, None)
                if job.id in lost:
                    continue
                if stop.is_set() or self.overran is not None:
                    self.queue.release(job.id, self.id)
                    continue
                # Each job's deadline runs from its own start, not from the batch's claim.
                job = dataclasses.replace(job, deadline=self.queue.clock() + self.queue.job_timeout_seconds)
                self._run_until_stopped(job, stop, hurry)
        finally:
            done.set()
            keeper.join(timeout=5)
            core.forget(batch)

    def _keep_leases(self, waiting: dict[int, Job], lost: set[int], done: threading.Event) -> None:
        interval = max(0.05, self.settings.lease_seconds / 3)
        while not done.wait(interval):
            for job_id in list(waiting):
                try:
                    if not self.queue.heartbeat(job_id, self.id):
                        lost.add(job_id)
                except Exception as exc:  # a missed beat is retried next interval
                    log.warning("lease heartbeat failed: %s", describe(exc))

    def _prune(self) -> None:
        try:
            removed = self.queue.prune(self.settings.delivery_retention_days * 86400)
            self.queue.prune_workers()
        except Exception as exc:  # housekeeping never stops the worker
            log.warning("could not prune old delivery ids: %s", describe(exc))
            return
        if removed:
            log.info("pruned %d delivery ids older than %g days", removed,
                     self.settings.delivery_retention_days)

    def _run_until_stopped(self, job: Job, stop: threading.Event, hurry: threading.Event) -> None:
        """Run the job in a thread so a shutdown can wait a bounded time and then release it."""
        runner = threading.Thread(target=self.run_one, args=(job,), name=f"job-{job.id}",
                                  daemon=True)
        runner.start()
        deadline: float | None = None
        while runner.is_alive():
            runner.join(0.1)
            if runner.is_alive() and job.deadline is not None and self.queue.clock() >= job.deadline:
                self._overrun(job)
                return
            if stop.is_set() and deadline is None:
                deadline = time.monotonic() + self.settings.shutdown_grace_seconds
                with logs.context(job=job.id, repo=job.repo, pr=job.number):
                    log.info("shutdown requested; finishing the current job",
                             extra={"fields": {"grace_seconds":
                                               self.settings.shutdown_grace_seconds}})
            if deadline is not None and runner.is_alive() and (
                hurry.is_set() or time.monotonic() >= deadline
            ):
                released = self.queue.release(job.id, self.id)
                with logs.context(job=job.id, repo=job.repo, pr=job.number):
                    log.warning("job %s to the queue at shutdown",
                                "released" if released else "could not be released")
                return


    def _overrun(self, job: Job) -> None:
        """The job ran past its deadline: record that (requeued with backoff, or dead on its last
        attempt) and mark the worker for replacement. A Python thread cannot be stopped, so the
        process ends and its supervisor starts a fresh one; whatever the thread was doing dies
        with it, and the next attempt starts over (the comment is found and updated, not
        posted twice)."""
        timeout = self.queue.job_timeout_seconds
        reason = (f"ran past its deadline of {timeout:g} s (TASKEVAL_JOB_TIMEOUT_SECONDS); its worker "
                  "gave it up and was replaced")
        self.overran = job.id
        with logs.context(job=job.id, repo=job.repo, pr=job.number):
            try:
                status = self.queue.fail(job.id, self.id, reason, transient=True)
            except Exception as exc:  # the lease runs out at the deadline: the next claim takes it
                log.error("job ran past its deadline and could not be recorded: %s",
                          describe(exc).splitlines()[0])
                return
            log.error("job ran past its deadline of %g s; %s; this worker stops to be replaced",
                      timeout, "requeued" if status == "queued" else status)


def install_signals(stop: threading.Event, hurry: threading.Event) -> None:
    """First SIGTERM/SIGINT: stop after the current job; second: release it and stop now."""

    def handler(signum: int, _frame: Any) -> None:
        if stop.is_set():
            hurry.set()
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.jobs.worker",
                                     description="Run one taskeval queue worker.")
    parser.add_argument("--log-level", default=os.environ.get("TASKEVAL_LOG_LEVEL", "info"),
                        choices=["debug", "info", "warning", "error"])
    parser.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logs.setup(args.log_level)
    try:
        settings = BotSettings.from_env(receives_webhooks=False)
        settings.require_github_auth()
    except SettingsError as exc:
        log.error("cannot start the worker: %s", exc)
        print(f"taskeval worker: {exc}", file=sys.stderr)
        return 2
    logs.register_secrets(settings.secrets())
    from taskeval.store.db import init_schema, make_engine

    engine = make_engine(settings.database_url)
    init_schema(engine)
    stop, hurry = threading.Event(), threading.Event()
    install_signals(stop, hurry)
    worker = Worker(settings, engine)
    worker.run(stop, hurry, parent_pid=args.parent_pid)
    if worker.overran is not None:
        # A thread still runs the job it gave up: end the process without waiting for it.
        logging.shutdown()
        os._exit(OVERRAN_EXIT)
    engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
