"""Agents by task type: a matrix of PRs, merge rate and mean agentPerformance with intervals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import (
    url_for,
)
from markupsafe import Markup

from dashboard import queries, teamwork
from dashboard.settings import config
from dashboard.views.common import (
    Column,
    Table,
    _pct,
    _round,
    _tables_or_page,
    _view,
    dashboard,
    nothing_stored,
    viewer,
)
from dashboard.views.compare import _points
from dashboard.views.detail import _interval


def _task_cell(c: teamwork.TaskCell | None) -> Markup | str:
    if c is None:
        return "—"
    if c.too_few:
        return Markup('{} <span class="tag small" title="fewer than {} PRs: no rate or mean">too few PRs'
                      '</span>').format("1 PR" if c.prs == 1 else f"{c.prs} PRs", queries.SMALL_SAMPLE)
    rate = c.merge_rate
    return Markup('<span class="prs">{} PRs</span><br><span class="rate" title="merged of the {} decided">'
                  'merged {}</span>{}<br><span class="mean">agentPerformance {}</span>{}').format(
        c.prs, c.decided, _pct(rate.mean), _interval(rate.low, rate.high, _pct),
        _points(c.agent_performance.mean),
        _interval(c.agent_performance.low, c.agent_performance.high, _points))


def _task_columns(kind: str) -> list[Column]:
    def get(r: tuple[str, str, dict[str, teamwork.TaskCell]]) -> teamwork.TaskCell | None:
        return r[2].get(kind)

    def part(f: Callable[[teamwork.TaskCell], Any]) -> Callable[[Any], Any]:
        return lambda r: None if (c := get(r)) is None or c.too_few else f(c)

    return [
        Column(kind, lambda r: c.prs if (c := get(r)) else 0, lambda r: _task_cell(get(r)), numeric=True,
               key=f"{kind}Prs", help=f"{kind} PRs: how many, the merge rate over those that reached a "
               "decision, and the mean agentPerformance, each with its 95 % interval"),
        Column(f"{kind} decided", lambda r: c.decided if (c := get(r)) else 0, key=f"{kind}Decided",
               csv_only=True),
        *(Column(f"{kind} {name}", part(f), key=f"{kind}{name}", csv_only=True) for name, f in (
            ("MergeRate", lambda c: _round(c.merge_rate.mean, 4)),
            ("MergeRateLow", lambda c: _round(c.merge_rate.low, 4)),
            ("MergeRateHigh", lambda c: _round(c.merge_rate.high, 4)),
            ("MeanAgentPerformance", lambda c: _round(c.agent_performance.mean, 2)),
            ("MeanAgentPerformanceLow", lambda c: _round(c.agent_performance.low, 2)),
            ("MeanAgentPerformanceHigh", lambda c: _round(c.agent_performance.high, 2)),
            ("Provisional", lambda c: c.provisional))),
    ]


@dashboard.get("/tasks")
def tasks() -> Any:
    """The agent × task-type matrix: which agent does which kind of work, and how it ends."""
    view = _view()
    cfg = config()
    with cfg.engine.connect() as conn:
        choices = queries.choices(conn, view.filters)
        matrix = queries.cached(conn, "tasks", (view.filters, view.exclude_provisional),
                                lambda: teamwork.task_matrix(conn, view.filters,
                                                             exclude_provisional=view.exclude_provisional))
        empty = nothing_stored(conn, viewer()) if not matrix else None
    names = dict(choices["agents"])
    by_agent: dict[str, dict[str, teamwork.TaskCell]] = {}
    for (agent_key, kind), cell in matrix.items():
        by_agent.setdefault(agent_key, {})[kind] = cell
    rows = sorted(((k, queries.NO_AGENT_NAME if k == queries.NO_AGENT else names.get(k, k), cells)
                   for k, cells in by_agent.items()), key=lambda r: (r[0] == queries.NO_AGENT, r[1].lower()))
    kinds = [t for t in queries.TASK_TYPES if any(t in r[2] for r in rows)]
    args: dict[str, Any] = dict(view.args)  # the filters, kept in each agent's link
    table = Table("tasks", "Agents by task type", [
        Column("Agent", lambda r: r[0], lambda r: r[1] if r[0] == queries.NO_AGENT else Markup(
            '<a href="{}">{}</a>').format(url_for("dashboard.agent", key=r[0], **args), r[1]), key="agent"),
        *(col for kind in kinds for col in _task_columns(kind)),
    ], rows, note=("Each cell: the agent's PRs of that task type (docs/tasktypes.md); the merge rate over the "
                   "PRs that reached a decision (merged, or closed after being marked ready), with its Wilson "
                   "interval; the mean agentPerformance with its t interval"
                   + (", provisional grades left out" if view.exclude_provisional else "")
                   + f". Under {queries.SMALL_SAMPLE} PRs a cell says so instead of a number."))
    if empty:
        table.empty = empty
    return _tables_or_page([table], "taskeval-tasks", "dashboard/tasks.html", view=view, choices=choices,
                           title="Task types")


# --- one PR ---------------------------------------------------------------------------------------

