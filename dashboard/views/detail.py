"""The agent (or author) page: its figures, cycle times, costs to people, after-merge rates,
what pulled scores down and its PRs; each table read lazily so a CSV reads only its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from flask import (
    abort,
    request,
    url_for,
)
from markupsafe import Markup
from sqlalchemy import Connection

from dashboard import charts, queries, teamwork
from dashboard.queries import CATEGORY_TITLES, Filters
from dashboard.settings import config
from dashboard.views.common import (
    _KEY_RE,
    PAGE_SIZE,
    Column,
    T,
    Table,
    View,
    _csv_response,
    _csv_table_name,
    _day,
    _num,
    _pct,
    _round,
    _tables_or_page,
    _view,
    dashboard,
    group_table,
    page_number,
)
from taskeval.agent_table import agent_name
from taskeval.contract import PROVISIONAL_BELOW, is_provisional


@dashboard.get("/agent/<key>")
def agent(key: str) -> Any:
    return _detail("agent", key)


@dashboard.get("/author/<key>")
def author(key: str) -> Any:
    return _detail("author", key)


class _DetailReads:
    """What the agent (or author) page reads, each figure on first use: a CSV of one table reads
    only what that table shows, not every figure of the page (BENCHMARKS.md)."""

    def __init__(self, conn: Connection, view: View, by: str, total: int, page: int) -> None:
        self.conn, self.view, self.by, self.total, self.page = conn, view, by, total, page

    def _read(self, name: str, read: Callable[..., T], *args: Any) -> T:
        """``read(conn, filters, *args)`` through the aggregate cache, keyed by its name, the
        filters and ``args``."""
        f = self.view.filters
        return cast(T, queries.cached(self.conn, name, (f, *args), lambda: read(self.conn, f, *args)))

    @cached_property
    def histogram(self) -> list[tuple[str, int]]:
        return self._read("histogram", queries.histogram)

    @cached_property
    def pull_downs(self) -> list[Any]:
        return self._read("pull_downs", queries.pull_downs, self.total)

    @cached_property
    def prs(self) -> list[dict[str, Any]]:
        if request.args.get("format") == "csv" and request.args.get("table") == "prs":
            return queries.pr_list(self.conn, self.view.filters, limit=100_000, offset=0)  # the export: all
        return queries.pr_list(self.conn, self.view.filters, limit=PAGE_SIZE, offset=(self.page - 1) * PAGE_SIZE)

    @cached_property
    def cycle(self) -> teamwork.CycleTimes:
        return self._read("cycle_times", teamwork.cycle_times)

    @cached_property
    def costs(self) -> teamwork.Costs:
        return self._read("costs", teamwork.costs)

    @cached_property
    def recorded(self) -> dict[str, dict[str, tuple[int, int]]]:
        _order, recorded = self._read("outcome_counts", queries.outcome_counts, self.by)
        return recorded


@dataclass
class Section:
    """Tables of a page that rest on the same reads, built when the response shows one of them."""

    names: tuple[str, ...]
    build: Callable[[], list[Table]]


def _signals_table(downs: list[Any]) -> Table:
    return Table("signals", "Signals that pull the score down most often", [
        Column("Signal", lambda d: d.signal_id, lambda d: Markup("{}<br><code>{}</code>").format(
            d.name, d.signal_id), key="signal"),
        Column("Name", lambda d: d.name, key="name", csv_only=True),
        Column("Category", lambda d: d.category, lambda d: CATEGORY_TITLES.get(d.category, d.category),
               key="category"),
        Column("PRs pulled down", lambda d: d.count, numeric=True, key="prs"),
        Column("Share of PRs", lambda d: round(d.share, 4), lambda d: _pct(d.share), numeric=True,
               key="share"),
        Column("Mean signal score", lambda d: round(d.mean_score, 1), numeric=True, key="meanScore"),
        Column("Example PRs", lambda d: " ".join(f"{e['repo']}#{e['number']}" for e in d.examples),
               lambda d: Markup("<br>").join(
                   Markup('<a href="{}">{}#{}</a> <span class="muted">({}/100: {})</span>').format(
                       url_for("dashboard.pr", owner=e["repo"].split("/")[0], repo=e["repo"].split("/")[1],
                               number=e["number"]), e["repo"], e["number"], e["score"], e.get("reason", ""))
                   for e in d.examples), key="examples"),
    ], downs, note=f"A signal pulls a score down when it is conclusive, weighted, and scores under "
                   f"{queries.PULL_DOWN_BELOW}/100 (the comment's \"What pulled the score down\").")


def _detail(by: str, key: str) -> Any:
    if not _KEY_RE.match(key):
        abort(404)
    view = _view(agent=key, author=None) if by == "agent" else _view(author=key)
    cfg = config()
    page = page_number()
    stem = f"taskeval-{by}-{key}"
    with cfg.engine.connect() as conn:
        found = queries.cached(conn, "groups", (view.filters, by, view.exclude_provisional),
                               lambda: queries.groups(conn, view.filters, by,
                                                      exclude_provisional=view.exclude_provisional))
        everything = Filters(repos=view.filters.repos, agent=view.filters.agent, author=view.filters.author)
        if not found and not queries.count(conn, everything):
            abort(404, f"no stored evaluations for {by} {key}")
        group = found[0] if found else None
        total = group.count if group else 0
        reads = _DetailReads(conn, view, by, total, page)
        sections = [
            Section(("groups",), lambda: [group_table([group] if group else [], by, [], view, link=False)]),
            Section(("signals",), lambda: [_signals_table(reads.pull_downs)]),
            Section(("distribution",), lambda: [Table("distribution", "Overall score distribution", [
                Column("Score", lambda b: b[0], key="bucket"),
                Column("PRs", lambda b: b[1], numeric=True, key="prs"),
            ], reads.histogram)]),
            Section(("prs",), lambda: [Table("prs", "Pull requests", _pr_columns(), reads.prs,
                                             note="Newest activity first; each PR's latest evaluation.")]),
            Section(("cycle", "merge_trend"), lambda: cycle_tables(reads.cycle)),
            Section(("decisions", "rescue", "per_pr", "closure"), lambda: cost_tables(reads.costs)),
            Section(("after_merge",), lambda: [after_merge_table(reads.recorded.get(group.key, {}) if group else {})]),
        ]
        if request.args.get("format") == "csv":
            wanted = _csv_table_name([name for section in sections for name in section.names])
            built = next(s for s in sections if wanted in s.names).build()
            return _csv_response(next(t for t in built if t.name == wanted), stem)
        tables = [table for section in sections for table in section.build()]
        buckets = [(label, n, charts.BAND_COLOURS[_bucket_band(i)]) for i, (label, n) in enumerate(reads.histogram)]
        no_agent = by == "agent" and key == queries.NO_AGENT
        title = NO_AGENT_TITLE if no_agent else (group.name if group and by == "agent" else key)
        subject = ("PRs where no agent was found" if no_agent else
                   f"PRs by {key}" if by == "author" else None)
        context: dict[str, Any] = {
            "summary_sentence": teamwork.sentence(title, reads.costs, subject=subject, agent=by == "agent"
                                                  and not no_agent),
            "no_agent": no_agent,
            "costs": reads.costs,
            "merge_trend_svg": charts.line(reads.cycle.trend, unit="h", label="weekly median time to merge"),
            "choices": queries.choices(conn, view.filters),
        }
    pages = max(1, -(-total // PAGE_SIZE))
    return _tables_or_page(tables, stem, "dashboard/detail.html", **context, view=view, by=by,
                           key=key,
                           group=group, histogram_svg=charts.histogram(buckets, ticks=_band_ticks(), width=560),
                           trend_svg=charts.trend(group.trend if group else [], width=560, height=180,
                                                  axes=True),
                           page=page, pages=pages, title=title)


NO_AGENT_TITLE = "PRs where no agent was found"


def _hours(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f} h"


def _interval(low: float | None, high: float | None, fmt: Callable[[float | None], str]) -> Markup | str:
    """The 95 % interval under a figure; "to" between negative bounds, where a dash would read as
    a minus ("-7.3 %–-0.1 %")."""
    if low is None:
        return ""
    between = " to " if low < 0 or (high is not None and high < 0) else "–"
    return Markup(' <span class="ci" title="95 % interval">{}{}{}</span>').format(fmt(low), between, fmt(high))


def _quantile_cell(get: Callable[[teamwork.Figure], teamwork.Quantile]) -> Callable[[teamwork.Figure], Any]:
    def cell(fig: teamwork.Figure) -> Markup | str:
        q = get(fig)
        if q.value is None:
            return "—"
        return Markup('<span class="mean">{}</span>{}').format(_hours(q.value), _interval(q.low, q.high, _hours))
    return cell


def _share_cells(prefix: str, help_text: str) -> list[Column]:
    return [
        Column("PRs", lambda s: s.count, numeric=True, key=f"{prefix}prs"),
        Column("Of", lambda s: s.of, numeric=True, key=f"{prefix}of", help=help_text),
        Column("Share", lambda s: _round(s.share.mean, 4), lambda s: Markup("{}{}").format(
            _pct(s.share.mean), _interval(s.share.low, s.share.high, _pct)), numeric=True, key=f"{prefix}share"),
        Column("Share 95% low", lambda s: _round(s.share.low, 4), key=f"{prefix}shareLow", csv_only=True),
        Column("Share 95% high", lambda s: _round(s.share.high, 4), key=f"{prefix}shareHigh", csv_only=True),
    ]


def cycle_tables(cycle: teamwork.CycleTimes) -> list[Table]:
    """The agent page's cycle times and weekly median time to merge (docs/bot.md)."""
    return [
        Table("cycle", "Cycle time", [
            Column("Figure", lambda fig: fig.key, lambda fig: Markup('{}<br><span class="muted">{}</span>').format(
                fig.title, fig.rests_on), key="figure"),
            Column("PRs", lambda fig: fig.count, lambda fig: Markup("{}{}").format(fig.count, Markup(
                ' <span class="tag small">small sample</span>') if fig.small else ""), numeric=True,
                key="prs", help="How many PRs the figure rests on."),
            Column("Median", lambda fig: _round(fig.median.value), _quantile_cell(lambda fig: fig.median),
                   numeric=True, key="medianHours", help="Median hours; under it its 95 % bootstrap interval."),
            Column("Median 95% low", lambda fig: _round(fig.median.low), key="medianLow", csv_only=True),
            Column("Median 95% high", lambda fig: _round(fig.median.high), key="medianHigh", csv_only=True),
            Column("90th percentile", lambda fig: _round(fig.p90.value), _quantile_cell(lambda fig: fig.p90),
                   numeric=True, key="p90Hours", help="90th percentile hours, with its 95 % bootstrap interval."),
            Column("90th 95% low", lambda fig: _round(fig.p90.low), key="p90Low", csv_only=True),
            Column("90th 95% high", lambda fig: _round(fig.p90.high), key="p90High", csv_only=True),
        ], cycle.figures, note="Hours, each PR once. Quantiles interpolate linearly (a spreadsheet's "
                               "PERCENTILE.INC); intervals are 95 % percentile bootstraps, computed exactly "
                               "(no resampling). Draft time is apart: it is in neither turn."),
        Table("merge_trend", "Weekly median time to merge", [
            Column("Week", lambda p: p[0], key="week"),
            Column("Median hours", lambda p: _round(p[1]), numeric=True, key="medianHours"),
            Column("Merged PRs", lambda p: p[2], numeric=True, key="prs"),
        ], cycle.trend),
    ]


def cost_tables(costs: teamwork.Costs) -> list[Table]:
    """The agent page's costs to people and decision counts (docs/bot.md)."""
    rate = costs.merge_rate
    decisions = [
        ("merged", "Merged", costs.merged), ("closed", "Closed unmerged (after marked ready)", costs.closed),
        ("decided", "Reached a decision (merged + closed): the merge rate's denominator", costs.decided),
        ("closed_drafts", "Closed while still a draft: never marked ready, left out", costs.closed_drafts),
        ("open", "Open: undecided, left out", costs.open),
    ]
    return [
        Table("decisions", "Decisions: the merge rate's denominators", [
            Column("PRs", lambda d: d[1], key="what"),
            Column("Count", lambda d: d[2], numeric=True, key="count"),
            Column("Key", lambda d: d[0], key="key", csv_only=True),
        ], decisions, note=(f"Merge rate {_pct(rate.mean)} (95 %: {_pct(rate.low)}–{_pct(rate.high)}) = "
                            f"{costs.merged} merged of {costs.decided} that reached a decision. Drafts closed "
                            f"without being marked ready ({costs.closed_drafts}) and open PRs ({costs.open}, "
                            f"{costs.open_drafts} of them drafts) are not in it.")),
        Table("rescue", "Merged PRs: did people have to finish them?", [
            Column("Rescue", lambda s: s.key, lambda s: s.title, key="rescue"),
            *_share_cells("", "Merged PRs with a rescue class."),
        ], costs.rescue_mix(), note=(
            f"People's commits per merged PR: {_num(costs.people_commits.mean, 2)} (95 %: "
            f"{_num(costs.people_commits.low, 2)}–{_num(costs.people_commits.high, 2)}); rounds (a person "
            f"sending the work back) per merged PR: {_num(costs.rounds.mean, 2)} (95 %: "
            f"{_num(costs.rounds.low, 2)}–{_num(costs.rounds.high, 2)}). Commits that did the PR's work only, "
            f"as agent.human_intervention counts them. Counted apart: {costs.rescue_unknown} merged PRs whose "
            f"commits' writers are unknown (rescue class unknown: no GitHub account and no git identity that "
            f"names anyone), in neither the shares nor people's commits per merged PR.")),
        Table("per_pr", "What each PR asked of people", [
            Column("Figure", lambda c: c[0], lambda c: Markup('{}<br><span class="muted">{}</span>').format(
                c[1], c[2]), key="figure"),
            Column("PRs", lambda c: c[4], numeric=True, key="prs", help="How many PRs the mean rests on."),
            Column("Mean", lambda c: _round(c[3].mean, 4), lambda c: Markup('<span class="mean">{}</span>{}').format(
                _num(c[3].mean, 2), _interval(c[3].low, c[3].high, lambda x: _num(x, 2))), numeric=True,
                key="mean", help="Mean per PR, with its 95 % t interval."),
            Column("Mean 95% low", lambda c: _round(c[3].low, 4), key="low", csv_only=True),
            Column("Mean 95% high", lambda c: _round(c[3].high, 4), key="high", csv_only=True),
        ], costs.per_pr(), note=("People's commits: commits that did the PR's work, as agent.human_intervention "
                                 "counts them. Rounds: a person sending the work back. Comments by people: "
                                 "conversation and review-thread comments by the operator, reviewers and other "
                                 "people (docs/turns.md), never the agent's, a bot's or CI's.")),
        Table("closure", "Closed PRs: why they ended", [
            Column("Closure", lambda s: s.key, lambda s: s.title, key="closure"),
            *_share_cells("", "Decided closed PRs with a closure class (drafts left out)."),
        ], costs.closure_groups() + costs.closure_classes(), note=(
            "First the three groups (the agent's failure; the project's reasons: superseded, duplicate, stale, "
            "declined; withdrawn or unknown), then each class. Only the agent's failure counts against it.")),
    ]


AFTER_MERGE = (("reverted", "Revert rate"), ("follow_up_fix", "Follow-up-fix rate"))


def after_merge_table(counts: dict[str, tuple[int, int]]) -> Table:
    """The agent's revert and follow-up-fix rates with their Wilson intervals, over the PRs where
    the outcome is recorded; "not recorded" where it is recorded for none."""
    rows = [(key, title, *counts.get(key, (0, 0))) for key, title in AFTER_MERGE]

    def share_cell(r: tuple[str, str, int, int]) -> Markup | str:
        if not r[2]:
            return Markup('<span class="muted" data-recorded="no">not recorded</span>')
        m = queries.wilson(r[3], r[2])
        return Markup("{}{}").format(_pct(m.mean), _interval(m.low, m.high, _pct))

    def part(r: tuple[str, str, int, int], name: str) -> float | None:
        return _round(getattr(queries.wilson(r[3], r[2]), name), 4) if r[2] else None

    return Table("after_merge", "After merge: reverts and follow-up fixes", [
        Column("Outcome", lambda r: r[0], lambda r: r[1], key="outcome",
               help="Reverted: merged, then reverted on the base branch. Follow-up fix: merged, then a later "
                    "merged PR fixed it (references it with fix words)."),
        Column("Recorded for", lambda r: r[2], numeric=True, key="recorded",
               help="PRs where the outcome is recorded (true or false): the rate's denominator."),
        Column("PRs with it", lambda r: r[3], numeric=True, key="prs"),
        Column("Rate", lambda r: part(r, "mean"), share_cell, numeric=True, key="rate",
               help="Share of the PRs where it is recorded, with its 95 % Wilson interval."),
        Column("Rate 95% low", lambda r: part(r, "low"), key="rateLow", csv_only=True),
        Column("Rate 95% high", lambda r: part(r, "high"), key="rateHigh", csv_only=True),
    ], rows, note=("From the outcomes store (taskeval outcomes --write-store, or the bot's push and pull_request "
                   "events); \"not recorded\" where no PR in view has the outcome recorded either way."))


def _bucket_band(index: int) -> str:
    """The band of a histogram bucket: its lowest score's, which is every score's in it."""
    from taskeval.contract import band

    return band(queries.histogram_buckets()[index][0])


def _band_ticks() -> dict[int, str]:
    """The histogram's axis: a tick where each band begins (0, 40, 60, 75, 90)."""
    from taskeval.contract import BANDS

    floors = {floor for floor, _name in BANDS}
    return {i: str(low) for i, (low, _high) in enumerate(queries.histogram_buckets()) if low in floors}


def _pr_link(r: dict[str, Any]) -> Markup:
    owner, name = r["repo"].split("/", 1)
    return Markup('<a href="{}">{}#{}</a>').format(
        url_for("dashboard.pr", owner=owner, repo=name, number=r["number"]), r["repo"], r["number"])


def _band_cell(r: dict[str, Any]) -> Markup:
    """The overall band, marked provisional when the overall rests on less than the contract's
    threshold of its signal weight (taskeval.contract.overall_coverage), as the comment marks it."""
    cell = Markup('<span class="band {0}">{0}</span>').format(r["overall_band"])
    if is_provisional(r.get("overall_coverage")):
        cell += Markup(' <span class="tag provisional" title="the overall rests on {} % of its signal '
                       'weight, under {} %: its band may move">provisional</span>').format(
            round(float(r["overall_coverage"]) * 100), round(PROVISIONAL_BELOW * 100))
    return cell


def _score_columns() -> list[Column]:
    """Overall, band and the three categories of one stored evaluation row (PR lists, history)."""
    return [
        Column("Overall", lambda r: r["overall_score"], numeric=True, key="overall"),
        Column("Band", lambda r: r["overall_band"], _band_cell, key="band"),
        Column("Overall provisional", lambda r: is_provisional(r.get("overall_coverage")), key="overallProvisional",
               csv_only=True),
        Column("AP", lambda r: r["agent_performance"], numeric=True, key="agentPerformance"),
        Column("TOQ", lambda r: r["task_outcome_quality"], numeric=True, key="taskOutcomeQuality"),
        Column("PC", lambda r: r["process_compliance"], numeric=True, key="processCompliance"),
    ]


def _pr_columns() -> list[Column]:
    return [
        Column("PR", lambda r: f"{r['repo']}#{r['number']}", _pr_link, key="pr"),
        Column("Author", lambda r: r["author"], key="author"),
        Column("Agent", lambda r: r["agent_id"], lambda r: agent_name(r["agent_id"], r["agent_name"], own_pr=True),
               key="agent"),
        Column("State", lambda r: r["pr_state"], key="state"),
        *_score_columns(),
        Column("Activity", lambda r: _day(r["activity_at"]), key="activity"),
    ]


# --- comparison -----------------------------------------------------------------------------------

