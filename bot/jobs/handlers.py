"""Job handlers: small functions from a claimed job to an outcome, over a narrow ``Core`` port.

Handlers decide nothing about scores; they call the core (``taskeval.pipeline`` /
``taskeval.github``) through :class:`Core`, which the tests replace with a tiny recording fake
(python/bedevere style), and return what the queue stores in one transaction.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from sqlalchemy import Engine

from bot.jobs import events
from bot.jobs.backfill import TRIGGER as BACKFILL  # jobs queued by `taskeval backfill --enqueue`
from bot.jobs.queue import Job
from bot.settings import BotSettings
from taskeval import command
from taskeval.store.results import DbJudgeCache, comment_signature, previous_comment, record_from_result

log = logging.getLogger("bot.handlers")
# What the bot reads to name the account a token posts as (token mode; an App posts as its slug's
# bot), when GitHub will not say.
LOGIN_HINT = "set TASKEVAL_BOT_LOGIN to the login the token posts as, for a GitHub App '<app-slug>[bot]'"


class InvalidInput(ValueError):
    """The job's own data cannot be used (an odd login, a malformed name): a retry cannot help."""


@dataclass(frozen=True)
class GitHubContext:
    """A GitHub client for one job, and who "we" are on GitHub (for comment upserts)."""

    gh: Any
    own_login: str | None = None
    token: str | None = None  # token mode only: lets the judge fall back to GitHub Models
    budget_key: str | None = None  # the credential's shared request budget (taskeval.store.budget)


@dataclass(frozen=True)
class Evaluated:
    """One evaluation as the handlers use it: the result, its comment, and what a GraphQL
    collection already read for posting that comment (``taskeval.raw.CommentSeed``; None after a
    REST collection), so the comment needs no read of its own."""

    result: dict[str, Any]
    markdown: str
    comment_seed: Any = None


@dataclass(frozen=True)
class Outcome:
    note: str
    evaluation: dict[str, Any] | None = None  # an ``evaluations`` row to store
    follow_up: events.Evaluate | None = None  # an evaluation to queue
    error: str | None = None  # done, but something the operator should see


class Core(Protocol):
    def permission(self, ctx: GitHubContext, repo: str, login: str) -> str: ...

    def react(self, ctx: GitHubContext, repo: str, comment_id: int, content: str) -> None: ...

    def head_sha(self, ctx: GitHubContext, repo: str, number: int) -> str: ...

    def evaluate(self, ctx: GitHubContext, repo: str, number: int, trigger: str) -> Evaluated: ...

    def publish(self, ctx: GitHubContext, repo: str, number: int, evaluated: Evaluated) -> str: ...

    def is_permanent_publish_error(self, exc: Exception) -> bool: ...

    def previous_comment(self, repo: str, number: int, head_sha: str) -> tuple[str, str] | None: ...


@runtime_checkable
class BatchCore(Protocol):
    """A core that can read a batch of jobs' PRs at once (``PipelineCore.prefetch``)."""

    def prefetch(self, ctx: GitHubContext, jobs: list[Job], sizer: Any) -> list[int]: ...

    def forget(self, jobs: list[Job]) -> None: ...


def _react(core: Core, ctx: GitHubContext, job: Job, content: str) -> str | None:
    """Reactions are a courtesy: a failure is logged and reported, never retried."""
    if job.comment_id is None:
        return None
    try:
        core.react(ctx, job.repo, job.comment_id, content)
    except Exception as exc:  # see docstring
        log.warning("could not add the %s reaction: %s", content, exc)
        return f"could not add the {content} reaction: {exc}"
    return None


def handle_command(core: Core, ctx: GitHubContext, job: Job) -> Outcome:
    """``/evaluate``: answered as ``taskeval.command.answer`` says (👀 and an evaluation, or 😕)."""
    login = job.commenter or ""
    try:
        permission = core.permission(ctx, job.repo, login)
    except InvalidInput as exc:
        problem = _react(core, ctx, job, command.REFUSED_REACTION)
        return Outcome(note=f"refused: cannot check the permission of {login!r}: {exc}",
                       error=problem)
    answer = command.answer(login, permission, job.repo)
    problem = _react(core, ctx, job, answer.reaction)
    if not answer.accepted:
        return Outcome(note=f"refused: {answer.reason}", error=problem)
    sha = core.head_sha(ctx, job.repo, job.number)
    return Outcome(
        note=f"accepted: /evaluate by {login} ({permission}) at {sha[:7]}",
        follow_up=events.Evaluate(job.repo, job.number, sha, job.installation_id,
                                  trigger="issue_comment"),
        error=problem,
    )


def handle_evaluate(core: Core, ctx: GitHubContext, job: Job) -> Outcome:
    """Evaluate, upsert the one PR comment, and hand the result to the queue to store.

    The comment goes first and the result is stored with the job's completion: if the worker dies
    in between, the retry upserts the same comment and stores the result once. When the comment
    already posted for this PR and head SHA has the same content (signature), it is not edited
    again, unless a person asked with ``/evaluate``.
    """
    evaluated = core.evaluate(ctx, job.repo, job.number, job.trigger)
    result, markdown = evaluated.result, evaluated.markdown
    summary = f"{result['overallScore']} ({result['overallBand']})"
    if job.trigger == BACKFILL:  # history: stored, never commented (unless backfill-comment)
        return Outcome(note=f"evaluated: {summary}; no comment (backfill)",
                       evaluation=record_from_result(result))
    signature = comment_signature(markdown)
    previous = core.previous_comment(job.repo, job.number, result["headSha"])
    if previous is not None and previous[0] == signature and job.trigger != "issue_comment":
        return Outcome(note=f"evaluated: {summary}; comment unchanged {previous[1]}",
                       evaluation=record_from_result(result, comment_url=previous[1],
                                                     signature=signature))
    try:
        url = core.publish(ctx, job.repo, job.number, evaluated)
    except Exception as exc:
        if not core.is_permanent_publish_error(exc):
            raise
        # Missing permission: retrying cannot help; keep the result, surface the problem.
        return Outcome(note=f"evaluated: {summary}; comment not posted",
                       evaluation=record_from_result(result), error=f"comment not posted: {exc}")
    return Outcome(note=f"evaluated: {summary}; comment {url}",
                   evaluation=record_from_result(result, comment_url=url, signature=signature))


HANDLERS = {"command": handle_command, "evaluate": handle_evaluate}


class PipelineCore:
    """The real :class:`Core`: thin calls into ``taskeval.github`` and ``taskeval.pipeline``."""

    def __init__(self, settings: BotSettings, engine: Engine) -> None:
        self.settings = settings
        self.engine = engine
        self.cache = DbJudgeCache(engine)
        # PRs a batch read already (``prefetch``): (repo, number) -> (its read or the error
        # reading it, what the batch's enqueuer handed it)
        self._prepared: dict[tuple[str, int], tuple[Any, Any]] = {}

    def previous_comment(self, repo: str, number: int, head_sha: str) -> tuple[str, str] | None:
        return previous_comment(self.engine, repo, number, head_sha)

    def permission(self, ctx: GitHubContext, repo: str, login: str) -> str:
        from taskeval.github import collaborator_permission

        try:
            return collaborator_permission(ctx.gh, repo, login)
        except ValueError as exc:  # the core refuses a login or name before asking GitHub
            raise InvalidInput(str(exc)) from exc

    def react(self, ctx: GitHubContext, repo: str, comment_id: int, content: str) -> None:
        from taskeval.github import add_reaction

        add_reaction(ctx.gh, repo, comment_id, content)

    def head_sha(self, ctx: GitHubContext, repo: str, number: int) -> str:
        return str(ctx.gh.get_repo(repo).get_pull(number).head.sha)

    def evaluate(self, ctx: GitHubContext, repo: str, number: int, trigger: str) -> Evaluated:
        from taskeval.github.collection import collect_read
        from taskeval.pipeline import Options, evaluate_collection, evaluate_pull_request

        options = Options(ai=self.settings.ai, trigger=trigger, env=dict(self.settings.env),
                          github_token=ctx.token, cache=self.cache, api=self.settings.api)
        prepared = self._prepared.pop((repo, number), None)
        with self._meter(ctx) as meter:
            if prepared is None:
                evaluation = evaluate_pull_request(ctx.gh, repo, number, options, meter=meter)
            else:  # read by its batch: the REST reads GraphQL lacks, then the same pipeline
                read, shared = prepared
                if isinstance(read, Exception):
                    raise read
                raw = collect_read(ctx.gh, repo, read, meter=meter, shared=shared)
                evaluation = evaluate_collection(raw, options)
        return Evaluated(json.loads(evaluation.result.to_json()), evaluation.markdown,
                         evaluation.comment_seed)

    def prefetch(self, ctx: GitHubContext, jobs: list[Job], sizer: Any) -> list[int]:
        """Read the PRs of a batch of jobs ``backfill --enqueue`` queued with one GraphQL query
        (halved while GitHub times out on it), and their linked issues the payloads do not hold
        with one more, so that :meth:`evaluate` of each needs only what GraphQL lacks and its
        payload does not hold. ``sizer`` (``taskeval.github.batch.BatchSizer``) says what the
        query is expected to cost and learns what it did. Returns the batch query's sizes.
        Raises what reading the batch raised (a spent budget, GraphQL unavailable...): each job
        then reads its own PR."""
        from taskeval.github import GitHubError, RateLimitError
        from taskeval.github.batch import Handed
        from taskeval.github.client import clone
        from taskeval.github.graphql.read import GraphQLUnavailable, read_pulls

        repo = jobs[0].repo
        numbers = [job.number for job in jobs]
        shared = Handed({job.number: json.loads(job.payload) for job in jobs if job.payload})
        with self._meter(ctx) as meter:
            requester = clone(ctx.gh, meter)
            try:
                batch = read_pulls(requester, repo, numbers, points=sizer.expected(len(numbers)))
                if batch.sizes == [len(numbers)]:
                    sizer.reported(len(numbers), batch.cost)
                try:
                    shared.read_linked(requester, repo, [read.pull for read in batch.reads.values()
                                                         if not isinstance(read, Exception)])
                except (GitHubError, GraphQLUnavailable) as exc:  # each PR reads its own
                    if isinstance(exc, RateLimitError):
                        raise
            finally:
                requester.close()
        for number, read in batch.reads.items():
            self._prepared[(repo, number)] = (read, shared)
        return batch.sizes

    def forget(self, jobs: list[Job]) -> None:
        """Drop what a batch read for jobs that did not use it (released, lost)."""
        for job in jobs:
            self._prepared.pop((job.repo, job.number), None)

    def publish(self, ctx: GitHubContext, repo: str, number: int, evaluated: Evaluated) -> str:
        from taskeval.pipeline import publish_comment

        with self._meter(ctx) as meter:
            url, _created = publish_comment(ctx.gh, repo, number, evaluated.markdown,
                                            own_login=ctx.own_login, seed=evaluated.comment_seed,
                                            meter=meter, login_hint=LOGIN_HINT)
        return url

    @contextmanager
    def _meter(self, ctx: GitHubContext) -> Iterator[Any]:
        """The credential's shared budgets, when it has them: every worker on every node takes
        its requests from them (REST requests and GraphQL points apart), writes as well as
        reads; when either is spent down to its reserve the job is deferred to the reset
        (``BudgetExhausted``), not failed."""
        if ctx.budget_key is None:
            yield None
            return
        from taskeval.store.budget import Budget, GateMeter, rate_limit_now

        meter = GateMeter(
            Budget(self.engine, ctx.budget_key, reserve=self.settings.rate_reserve,
                   wait=False, refresh=lambda: rate_limit_now(ctx.gh)),
            graphql=Budget(self.engine, ctx.budget_key, resource="graphql",
                           reserve=self.settings.graphql_reserve, wait=False,
                           refresh=lambda: rate_limit_now(ctx.gh, resource="graphql")))
        try:
            yield meter
        finally:
            meter.close()

    def is_permanent_publish_error(self, exc: Exception) -> bool:
        from taskeval.github import AuthError

        return isinstance(exc, AuthError)
