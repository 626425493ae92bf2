"""``GET /metrics``: the bot's state in Prometheus text format (prometheus-client), protected like
the API (``Authorization: Bearer $TASKEVAL_API_TOKEN``; 404 while the token is unset).

Every figure is read from the database at scrape time, not counted in process: gunicorn runs
several processes and many nodes share one database, so the database is the one place that knows
the whole queue. Figures over something the bot prunes (finished jobs) are gauges over a stated
window, never counters, so a prune cannot look like a counter reset. Names follow OpenTelemetry's
VCS semantic conventions where one exists (``vcs.change.count`` -> ``vcs_change_count``,
``vcs.change.time_to_merge`` -> ``vcs_change_time_to_merge_seconds``, attributes with ``.`` as
``_``); the rest are ``taskeval_*``. docs/bot.md lists them.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from flask import Blueprint, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Engine, func, select

from bot.web.api import authorise
from bot.web.state import state
from taskeval.store.db import evaluations, jobs, rate_budgets

metrics = Blueprint("metrics", __name__)
metrics.before_request(authorise)

LATENCY_WINDOW_SECONDS: Final = 3600.0  # job latency quantiles: jobs finished in the last hour
QUANTILES: Final = (0.5, 0.9, 0.99)
JOB_STATUSES: Final = ("queued", "running", "done", "dead")
# OpenTelemetry's vcs.change.state values for a PR state the store records.
CHANGE_STATES: Final = {"open": "open", "closed": "closed", "merged": "merged"}
UNATTRIBUTED: Final = "unattributed"


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted ``values`` (linear between neighbours, as numpy's default)."""
    if not values:
        return math.nan
    pos = (len(values) - 1) * q
    low = math.floor(pos)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (pos - low)


class StoreCollector(Collector):
    """What one scrape reads from the database."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        now = self.clock()
        with self.engine.connect() as conn:
            job_counts = conn.execute(
                select(jobs.c.kind, jobs.c.status, func.count()).group_by(jobs.c.kind, jobs.c.status)).all()
            oldest = conn.execute(select(func.min(jobs.c.created_at)).where(jobs.c.status == "queued")).scalar()
            ready = conn.execute(select(func.count()).select_from(jobs).where(
                jobs.c.status == "queued", jobs.c.run_after <= now)).scalar_one()
            latencies = sorted(float(v) for v, in conn.execute(
                select(jobs.c.finished_at - jobs.c.created_at).where(
                    jobs.c.status.in_(("done", "dead")), jobs.c.finished_at >= now - LATENCY_WINDOW_SECONDS)))
            judged = conn.execute(select(evaluations.c.judge_status, func.count())
                                  .group_by(evaluations.c.judge_status)).all()
            changes = conn.execute(
                select(evaluations.c.repo, evaluations.c.agent_id, evaluations.c.pr_state, func.count())
                .where(evaluations.c.is_latest.is_(True))
                .group_by(evaluations.c.repo, evaluations.c.agent_id, evaluations.c.pr_state)).all()
            merges = conn.execute(
                select(evaluations.c.agent_id, evaluations.c.merged_at - evaluations.c.pr_created_at)
                .where(evaluations.c.is_latest.is_(True), evaluations.c.pr_state == "merged",
                       evaluations.c.merged_at.is_not(None), evaluations.c.pr_created_at.is_not(None))).all()
            budgets = conn.execute(select(rate_budgets)).all()
        yield from self._queue(job_counts, oldest, ready, latencies, now)
        yield from self._evaluations(judged, changes, merges)
        yield from self._budgets(budgets, now)

    def _queue(self, job_counts: Sequence[Any], oldest: float | None, ready: int, latencies: list[float],
               now: float) -> Iterator[Metric]:
        by_status: dict[str, int] = dict.fromkeys(JOB_STATUSES, 0)
        per_kind = GaugeMetricFamily("taskeval_jobs", "Jobs in the queue table by kind and status "
                                     "(done and dead jobs are kept until pruned).", labels=["kind", "status"])
        for kind, status, count in job_counts:
            per_kind.add_metric([kind, status], int(count))
            by_status[status] = by_status.get(status, 0) + int(count)
        yield per_kind
        depth = GaugeMetricFamily("taskeval_queue_depth", "Jobs waiting (queued, including those "
                                  "deferred to a later time) or running.", labels=["status"])
        for status in ("queued", "running"):
            depth.add_metric([status], by_status[status])
        yield depth
        yield GaugeMetricFamily("taskeval_queue_ready_jobs", "Queued jobs whose time to run has come.",
                                value=int(ready))
        yield GaugeMetricFamily(
            "taskeval_queue_oldest_job_age_seconds",
            "Age of the oldest queued job (since it was enqueued); 0 when none waits.",
            value=max(0.0, now - oldest) if oldest is not None else 0.0)
        latency = GaugeMetricFamily(
            "taskeval_job_latency_seconds",
            "Enqueue-to-finish time of the jobs finished (done or dead) in the last hour, by quantile "
            "(NaN when none finished).", labels=["quantile"])
        for q in QUANTILES:
            latency.add_metric([str(q)], quantile(latencies, q))
        yield latency
        yield GaugeMetricFamily("taskeval_job_latency_window_jobs",
                                "Jobs finished in the last hour: what the latency quantiles rest on.",
                                value=len(latencies))

    def _evaluations(self, judged: Sequence[Any], changes: Sequence[Any],
                     merges: Sequence[Any]) -> Iterator[Metric]:
        stored = GaugeMetricFamily("taskeval_evaluations", "Stored evaluations (every one kept) by the "
                                   "AI judge's status: ok, off, error, rejected, partial, withheld.",
                                   labels=["judge_status"])
        for status, count in judged:
            stored.add_metric([status or "unknown"], int(count))
        yield stored
        count = GaugeMetricFamily(
            "vcs_change_count", "Evaluated pull requests (their latest evaluation) by state, repository "
            "and agent (OpenTelemetry vcs.change.count).",
            labels=["vcs_change_state", "vcs_owner_name", "vcs_repository_name", "vcs_provider_name",
                    "taskeval_agent_id"])
        for repo, agent, pr_state, n in changes:
            owner, _, name = str(repo).partition("/")
            count.add_metric([CHANGE_STATES.get(pr_state or "", "unknown"), owner, name, "github",
                              agent or UNATTRIBUTED], int(n))
        yield count
        by_agent: dict[str, list[float]] = defaultdict(list)
        for agent, seconds in merges:
            if seconds is not None and seconds >= 0:
                by_agent[agent or UNATTRIBUTED].append(float(seconds))
        merge = GaugeMetricFamily(
            "vcs_change_time_to_merge_seconds",
            "Time from opening to merge of the evaluated merged pull requests, per agent, by quantile "
            "(OpenTelemetry vcs.change.time_to_merge, aggregated: one series per PR would be unbounded).",
            labels=["taskeval_agent_id", "quantile"])
        merged = GaugeMetricFamily("taskeval_merged_changes", "Merged pull requests the time-to-merge "
                                   "quantiles rest on, per agent.", labels=["taskeval_agent_id"])
        for agent in sorted(by_agent):
            values = sorted(by_agent[agent])
            for q in QUANTILES:
                merge.add_metric([agent, str(q)], quantile(values, q))
            merged.add_metric([agent], len(values))
        yield merge
        yield merged

    def _budgets(self, budgets: Sequence[Any], now: float) -> Iterator[Metric]:
        remaining = GaugeMetricFamily(
            "taskeval_github_rate_limit_remaining",
            "GitHub requests (resource core) or GraphQL points (resource graphql) left in the current "
            "rate-limit window per credential budget (the full limit once the window has reset); the "
            "budget names the API host and the credential, a token only by a hash prefix.",
            labels=["budget", "resource"])
        limit = GaugeMetricFamily("taskeval_github_rate_limit_limit", "GitHub's limit per window.",
                                  labels=["budget", "resource"])
        reset = GaugeMetricFamily("taskeval_github_rate_limit_reset_timestamp_seconds",
                                  "When the current window resets (Unix time).",
                                  labels=["budget", "resource"])
        for b in budgets:
            m = b._mapping
            over = float(m["reset_at"]) <= now
            labels = [m["key"], m["resource"]]
            remaining.add_metric(labels, int(m["limit"]) if over else int(m["remaining"]))
            limit.add_metric(labels, int(m["limit"]))
            reset.add_metric(labels, float(m["reset_at"]))
        yield remaining
        yield limit
        yield reset


def render(engine: Engine, clock: Callable[[], float] = time.time) -> bytes:
    """The exposition text of one scrape."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(engine, clock))
    return generate_latest(registry)


@metrics.get("/metrics")
def scrape() -> Any:
    try:
        body = render(state().engine)
    except Exception as exc:  # a database fault: one line, not a traceback or a half page
        return Response(f"# metrics unavailable: storage error {type(exc).__name__}\n", status=503,
                        content_type="text/plain; charset=utf-8")
    return Response(body, content_type=CONTENT_TYPE_LATEST)
