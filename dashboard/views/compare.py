"""The comparison of two agents (or two sides of a filter), stratum by stratum."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from flask import (
    Response,
    render_template,
    request,
)
from markupsafe import Markup

from dashboard import queries, teamwork
from dashboard.queries import Filters
from dashboard.settings import config
from dashboard.views.common import (
    _DATE_RE,
    _KEY_RE,
    Column,
    Table,
    View,
    _day,
    _round,
    _tables_or_page,
    _valid_day,
    _view,
    dashboard,
)
from dashboard.views.detail import _interval


def _side(view: View, side: str, names: dict[str, str]) -> tuple[Filters, str]:
    """One side of the comparison: its agent (``a``/``b``, else ``agent``) and its period
    (``a_since``/``a_until``, else the shared ``since``/``until``)."""
    args, f = request.args, view.filters
    agent_key = (args.get(side) or args.get("agent") or "").strip() or None
    if agent_key is not None and not _KEY_RE.match(agent_key):
        view.problems.append(f"ignored {side}={agent_key[:60]!r}")
        agent_key = None
    bounds: list[float | None] = [f.since, f.until]
    for i, name in enumerate((f"{side}_since", f"{side}_until")):
        value = (args.get(name) or "").strip()
        if value and _DATE_RE.match(value) and _valid_day(value):
            bounds[i] = queries.day_start(value) + (86400 if i else 0)
        elif value:
            view.problems.append(f"ignored {name}={value[:60]!r}")
    chosen = replace(f, agent=agent_key, since=bounds[0], until=bounds[1])
    last = _day(bounds[1] - 86400) if bounds[1] is not None else None
    period = "" if bounds == [f.since, f.until] else f" {_day(bounds[0]) or '…'} to {last or '…'}"
    return chosen, f"{names.get(agent_key, agent_key) if agent_key else 'all agents'}{period}"


def provisional_text(d: teamwork.Difference, exclude: bool) -> str:
    """"A 212 PRs, 40 provisional · B …": what each side's mean of grades rests on."""
    def side(n: int, v: int | None) -> str:
        if exclude:
            return f"{n} PRs, {v} provisional left out" if v else f"{n} PRs"
        return f"{n} PRs, {v} provisional"
    return f"A {side(d.a_n, d.a_provisional)} · B {side(d.b_n, d.b_provisional)}"


def _difference(get: Callable[[teamwork.Stratum], teamwork.Difference], fmt: Callable[[float | None], str],
                what: str, exclude: bool = False) -> list[Column]:
    def cell(st: teamwork.Stratum) -> Markup | str:
        d = get(st)
        if d.strata == 0:
            return Markup('<span class="muted">no stratum both worked in</span>')
        if d.too_few:
            return Markup('<span class="tag small" title="A rests on {}, B on {} PRs">too few PRs</span>').format(
                d.a_n, d.b_n)
        if d.diff is None:
            return "—"
        cell = Markup('<span class="mean">{}{}</span>{}<br><span class="muted">A {} · B {}</span>').format(
            "+" if d.diff > 0 else "", fmt(d.diff), _interval(d.low, d.high, fmt), fmt(d.a), fmt(d.b))
        if d.strata is not None:
            cell += Markup('<br><span class="rests">within {} strata both worked in</span>').format(d.strata)
        if d.a_provisional is not None:
            cell += Markup('<br><span class="rests">{}</span>').format(provisional_text(d, exclude))
        return cell

    def value(st: teamwork.Stratum, part: str) -> Any:
        d = get(st)
        return None if d.too_few else _round(getattr(d, part), 4)

    key = what.replace(" ", "_")
    counts = [
        Column(f"{what} A provisional", lambda st: get(st).a_provisional, key=f"{key}AProvisional", csv_only=True),
        Column(f"{what} B provisional", lambda st: get(st).b_provisional, key=f"{key}BProvisional", csv_only=True),
    ] if what.startswith("mean") else []
    return [
        Column(what[0].upper() + what[1:] + " (A − B)", lambda st: value(st, "diff"), cell, numeric=True,
               key=f"{key}Diff",
               help=f"Difference of the {what}, A minus B, with its 95 % interval; a cell where either side "
                    f"rests on under {queries.SMALL_SAMPLE} PRs says so instead."),
        Column(f"{what} low", lambda st: value(st, "low"), key=f"{key}Low", csv_only=True),
        Column(f"{what} high", lambda st: value(st, "high"), key=f"{key}High", csv_only=True),
        Column(f"{what} A", lambda st: _round(get(st).a, 4), key=f"{key}A", csv_only=True),
        Column(f"{what} B", lambda st: _round(get(st).b, 4), key=f"{key}B", csv_only=True),
        Column(f"{what} A PRs", lambda st: get(st).a_n, key=f"{key}APrs", csv_only=True),
        Column(f"{what} B PRs", lambda st: get(st).b_n, key=f"{key}BPrs", csv_only=True),
        Column(f"{what} strata", lambda st: get(st).strata, key=f"{key}Strata", csv_only=True),
        *counts,
    ]


def _points(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f}"


def _pp(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


@dashboard.get("/compare")
def compare() -> Any:
    view = _view()
    cfg = config()
    with cfg.engine.connect() as conn:
        choices = queries.choices(conn, view.filters)
        names = dict(choices["agents"])
        fa, label_a = _side(view, "a", names)
        fb, label_b = _side(view, "b", names)
        exclude = view.exclude_provisional
        if fa == fb:  # "all agents" against "all agents": every difference would be a zero
            same = (f"A and B are the same PRs ({label_a}): choose two agents, or one agent in two "
                    "periods, to compare.")
            if request.args.get("format") in ("csv", "json"):
                return Response(same + "\n", 400, mimetype="text/plain")
            return render_template("dashboard/compare.html", view=view, choices=choices, tables={},
                                   same=same, title="Compare")
        strata = queries.cached(conn, "compare", (fa, fb, exclude),
                                lambda: teamwork.compare(conn, fa, fb, exclude_provisional=exclude))
    table = Table("compare", f"A: {label_a} − B: {label_b}", [
        Column("Within", lambda st: st.kind, key="kind"),
        Column("Stratum", lambda st: st.name, key="stratum"),
        *_difference(lambda st: st.merge_rate, _pp, "merge rate"),
        *_difference(lambda st: st.rescue_rate, _pp, "rescue rate"),
        *_difference(lambda st: st.agent_performance, _points, "mean agentPerformance", exclude),
    ], strata, note=("Merge rate: merged of the PRs that reached a decision (merged or closed; drafts never "
                     "marked ready and open PRs left out). Rescue rate: merged PRs taken over by people (they "
                     "pushed commits doing the PR's work) of the merged PRs with a known rescue class (a PR whose "
                     "commits' writers are unknown, rescue class unknown, is left out of both). Mean "
                     "agentPerformance: every PR, with how many had a provisional grade "
                     + ("(left out of the mean). " if exclude else "(counted; the switch above leaves them out). ")
                     + "Intervals: Newcombe's for shares, Welch's t for means. \"Task mix adjusted\": the "
                     "differences within each task type (then each task type and repository) both sides "
                     "worked on, weighted by the stratum's PRs (both sides), its interval from the strata's "
                     "variances: what the difference would be on the same task mix. Then the same within "
                     "each task type and repository both sides worked on."))
    return _tables_or_page([table], "taskeval-compare", "dashboard/compare.html", view=view, choices=choices,
                           label_a=label_a, label_b=label_b, title="Compare")


# --- agents by task type ---------------------------------------------------------------------------

