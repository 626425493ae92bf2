"""Read API (``/api/...``, bearer token) and ``/healthz`` (open, for load balancers).

The API serves stored results, so it is off unless ``TASKEVAL_API_TOKEN`` is set; the token is
compared in constant time and never echoed.
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from flask import Blueprint, Response, jsonify, request
from sqlalchemy import text

from bot import logs
from bot.web.state import state
from taskeval.store import results
from taskeval.store.db import integer_out_of_range

log = logging.getLogger("bot.api")
api = Blueprint("api", __name__)
health = Blueprint("health", __name__)

_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_REPO_RE = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
F = TypeVar("F", bound=Callable[..., Any])


def _error(code: int, message: str, **headers: str) -> tuple[Response, int, dict[str, str]]:
    return jsonify(error=message), code, headers


@api.before_request
def authorise() -> Any:
    """The API's bearer-token check (also guards /metrics): 404 while no token is configured,
    401 for a missing or wrong one."""
    token = state().settings.api_token
    if token is None:
        return _error(404, "API disabled: set TASKEVAL_API_TOKEN to enable it")
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        given.strip().encode("utf-8", "replace"), token.encode()
    ):
        return _error(401, "missing or wrong bearer token",
                      **{"WWW-Authenticate": 'Bearer realm="taskeval"'})
    return None


@api.before_request
def in_range() -> Any:
    """A number in the path beyond what any store holds (a PR number or id of 20 digits) is bad
    input: 400 naming it, not a query that overflows in the database."""
    problem = integer_out_of_range(request.view_args)
    return _error(400, problem) if problem else None


def _json_errors(view: F) -> F:
    """A database fault answers 503 with a reason instead of an HTML 500 page."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return view(*args, **kwargs)
        except Exception as exc:  # report, never leak a traceback
            log.exception("API request failed")
            return _error(503, f"storage unavailable: {type(exc).__name__}")

    return wrapper  # type: ignore[return-value]


@api.get("/evaluations/<owner>/<repo>/<int:number>")
@_json_errors
def evaluation(owner: str, repo: str, number: int) -> Any:
    if not (_NAME_RE.match(owner) and _NAME_RE.match(repo)):
        return _error(400, "owner and repo must be GitHub names")
    full = f"{owner}/{repo}"
    with logs.context(repo=full, pr=number):
        engine = state().engine
        if request.args.get("all") in ("1", "true", "yes"):
            items = results.history(engine, full, number)
            if not items:
                return _error(404, f"no evaluation stored for {full}#{number}")
            return jsonify(repository=full, pullRequest=number, count=len(items),
                           evaluations=items)
        result = results.latest(engine, full, number)
        if result is None:
            return _error(404, f"no evaluation stored for {full}#{number}")
        return jsonify(result)


@api.get("/leaderboard")
@_json_errors
def leaderboard() -> Any:
    repo = request.args.get("repo") or None
    if repo is not None and not _REPO_RE.match(repo):
        return _error(400, "repo must be OWNER/NAME")
    by = request.args.get("by") or "agent"
    if by not in ("agent", "author"):
        return _error(400, "by must be agent or author")
    provisional = request.args.get("provisional") or "include"
    if provisional not in ("include", "exclude"):
        return _error(400, "provisional must be include or exclude")
    entries = results.leaderboard(state().engine, repo, by=cast(results.LeaderboardBy, by),
                                  exclude_provisional=provisional == "exclude")
    return jsonify(repository=repo, by=by, provisional=provisional, entries=entries)


@api.get("/export")
@_json_errors
def export_rows() -> Any:
    """The store as CSV or NDJSON, one row per PR (taskeval/store/export.py; what ``taskeval export``
    writes), streamed as it is read."""
    from taskeval.store import export

    fmt = request.args.get("format") or "csv"
    if fmt not in export.FORMATS:
        return _error(400, "format must be csv or ndjson")
    repo = request.args.get("repo") or None
    if repo is not None and not _REPO_RE.match(repo):
        return _error(400, "repo must be OWNER/NAME")
    chunks = export.chunks(state().engine, fmt, repo)
    first = next(chunks, "")  # a database fault answers 503 here, before the 200 is sent
    name = f"taskeval-export.{fmt}"

    def body() -> Any:
        yield first
        yield from chunks

    return Response(body(), content_type=export.MEDIA_TYPES[fmt],
                    headers={"Content-Disposition": f'attachment; filename="{name}"',
                             "Cache-Control": "no-store"})


@api.get("/jobs/<int:job_id>")
@_json_errors
def job(job_id: int) -> Any:
    row = state().queue.job(job_id)
    if row is None:
        return _error(404, f"no job {job_id}")
    keys = ("id", "kind", "repo", "number", "head_sha", "trigger", "status", "attempts",
            "max_attempts", "triggers", "last_error", "note", "parent_id", "created_at",
            "finished_at")
    return jsonify({k: row[k] for k in keys})


def _database_down(exc: Exception) -> Any:
    reason = logs.redact(str(exc).splitlines()[0] if str(exc) else "")
    return jsonify(status="error", database=f"unreachable: {type(exc).__name__}: {reason}"), 503


@health.get("/healthz")
def healthz() -> Any:
    """200 when the database answers (this node can accept and store deliveries), with the queue
    depth and whether any queue worker is alive; 503 with the reason when the database does not
    answer. Workers being down does not fail it: the web node must keep storing deliveries, since
    GitHub does not redeliver by itself; /healthz/workers is the check for that."""
    bot = state()
    try:
        with bot.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        depth = bot.queue.depth()
        presence = bot.queue.presence(bot.queue.worker_stale_seconds)
    except Exception as exc:  # health reports, it does not raise
        return _database_down(exc)
    return jsonify(status="ok", database="ok", dialect=bot.engine.dialect.name, queue=depth,
                   workers=presence)


@health.get("/healthz/workers")
def healthz_workers() -> Any:
    """For monitoring: 200 when at least one queue worker sent a heartbeat recently, 503 when
    none did (deliveries are still stored, but nothing runs them)."""
    bot = state()
    try:
        presence = bot.queue.presence(bot.queue.worker_stale_seconds)
    except Exception as exc:  # health reports, it does not raise
        return _database_down(exc)
    if presence["alive"] == 0:
        return jsonify(status="error", reason="no queue worker is alive", **presence), 503
    return jsonify(status="ok", **presence)
