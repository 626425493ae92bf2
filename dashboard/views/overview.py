"""The overview page: every agent (or author) in one table, with bands and outcomes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dashboard import queries
from dashboard.settings import config
from dashboard.views.common import (
    _tables_or_page,
    _view,
    dashboard,
    group_table,
    nothing_stored,
    outcome_table,
    viewer,
)


@dashboard.get("/")
def overview() -> Any:
    view = _view()
    cfg = config()
    with cfg.engine.connect() as conn:
        groups = [replace(gr) for gr in queries.cached(
            conn, "groups", (view.filters, view.by, view.exclude_provisional),
            lambda: queries.groups(conn, view.filters, view.by, exclude_provisional=view.exclude_provisional))]
        outcome_cols, rates = queries.cached(conn, "outcomes", (view.filters, view.by),
                                             lambda: queries.outcome_rates(conn, view.filters, view.by))
        for gr in groups:
            gr.outcomes = rates.get(gr.key, {})
        choices = queries.choices(conn, view.filters)
        empty = nothing_stored(conn, viewer()) if not groups else None
    tables = [group_table(groups, view.by, outcome_cols, view)]
    if empty:
        tables[0].empty = empty
    if any(col != "rejected" for col in outcome_cols):
        tables.append(outcome_table(groups, view.by, outcome_cols, view))
    total = sum(gr.count for gr in groups)
    return _tables_or_page(tables, f"taskeval-{view.by}s", "dashboard/overview.html",
                           view=view, choices=choices, total=total,
                           title="Overview")


# --- one agent or author --------------------------------------------------------------------------

