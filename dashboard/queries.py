"""The dashboard's reads: every aggregate is a SQL ``GROUP BY`` over ``evaluations`` (and
``signals``); Python only turns a handful of aggregated rows into display values.

Each PR counts once, with its newest evaluation (``is_latest``). Time ranges and weekly trends use
``activity_at``/``week`` (when the PR's work ended), not the evaluation time: backfill evaluates old
PRs today. Every query takes :class:`Filters`, whose ``repos`` is the set of repositories the viewer
may read (``None``: all, for a loopback dashboard or the API token); a repository outside it never
reaches a row, a count or a CSV line.

Every mean also counts the PRs whose grade in it was provisional (coverage under
``taskeval.contract.PROVISIONAL_BELOW``), and ``exclude_provisional`` leaves them out of it
(docs/bot.md, "Provisional grades").

The 95 % interval of a mean is ``mean ± t(n-1) · s / √n`` with the sample variance taken from
``AVG(x·x) - AVG(x)²`` and ``COUNT`` in the same query (Student's t, so small groups get the wide
interval they deserve).
"""

from __future__ import annotations

import json
import math
import re
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    case,
    false,
    func,
    literal,
    select,
    text,
    true,
)

from taskeval.agent_table import agent_name
from taskeval.config import HUMAN_ID, UNKNOWN_BOT_ID
from taskeval.contract import BAND_NAMES
from taskeval.store.db import PULLS_DOWN, evaluations, rollup_agent, rollup_author, rollup_signals, signals

# The ranking rule and its statistics live in the store (one rule for the API and the dashboard);
# the views and tests read these names from here.
from taskeval.store.ranking import SMALL_SAMPLE as SMALL_SAMPLE
from taskeval.store.ranking import Mean as Mean
from taskeval.store.ranking import Standing
from taskeval.store.ranking import mean_ci as mean_ci
from taskeval.store.ranking import rank as rank_standings
from taskeval.store.ranking import t95 as t95
from taskeval.store.results import provisional_sql, week_of

E = evaluations.c
CATEGORY_COLUMNS = {
    "agentPerformance": E.agent_performance,
    "taskOutcomeQuality": E.task_outcome_quality,
    "processCompliance": E.process_compliance,
}
# Each mean's coverage column: under PROVISIONAL_BELOW its grade was provisional (the overall's is
# the categories' coverages weighted by their contract weights, taskeval.store.export.overall_coverage).
COVERAGE_COLUMNS = {
    "overall": E.overall_coverage,
    "agentPerformance": E.agent_performance_coverage,
    "taskOutcomeQuality": E.task_outcome_quality_coverage,
    "processCompliance": E.process_compliance_coverage,
}
MEASURES = tuple(COVERAGE_COLUMNS)  # "overall" and the three categories
CATEGORY_TITLES = {
    "agentPerformance": "Agent performance",
    "taskOutcomeQuality": "Task outcome quality",
    "processCompliance": "Process compliance",
}
BANDS = BAND_NAMES  # failing .. excellent
UNATTRIBUTED = "unattributed"  # the agent filter value for results stored before attribution
# PRs where attribution found no agent's mark: "Human" (a person's account), "Unknown bot" (a bot
# account no rule names) and results stored before attribution. Many are agent PRs whose marks the
# evidence lacks, so they are one row of their own in the overview, never ranked among the agents.
NO_AGENT = "no-agent"
NO_AGENT_NAME = "No agent found"
NO_AGENT_IDS = (HUMAN_ID, UNKNOWN_BOT_ID)
PULL_DOWN_BELOW = 60  # a conclusive, weighted signal scoring under this "pulled the score down"
# taskeval.store.db.PULLS_DOWN with qualified names, verbatim, so SQLite proves the partial index applies.
DOWN = text(" AND ".join(f"signals.{term}" for term in PULLS_DOWN.split(" AND ")))
TREND_WEEKS = 26
TASK_TYPES = ("feature", "fix", "docs", "refactor", "test", "chore", "ci", "deps", "unknown")

@dataclass(frozen=True)
class Filters:
    """What a view shows; built from the URL query string (see :mod:`dashboard.views`)."""

    repos: frozenset[str] | None = None  # visibility: the repositories the viewer may read
    repo: str | None = None
    agent: str | None = None
    author: str | None = None
    band: str | None = None
    since: float | None = None  # epoch seconds, inclusive
    until: float | None = None  # epoch seconds, exclusive
    task_type: str | None = None  # taskeval.tasktypes' type (``unknown`` included)


@dataclass
class Group:
    """One overview row: an agent (or an author) and its aggregates."""

    key: str
    name: str
    count: int
    overall: Mean
    categories: dict[str, Mean]
    bands: dict[str, int]
    merged: int
    closed: int
    open: int
    trend: list[tuple[str, float, int]] = field(default_factory=list)
    outcomes: dict[str, Mean] = field(default_factory=dict)
    rank: int | None = None
    tied: bool = False  # shares its rank: the intervals do not separate it from another group
    # Per measure ("overall" and each category): how many of the PRs had a provisional grade in it
    # (coverage under PROVISIONAL_BELOW), and whether the means left them out.
    provisional: dict[str, int] = field(default_factory=dict)
    excluded: bool = False
    closed_drafts: int = 0  # closed while still a draft (never marked ready): no decision

    def rests_on(self, measure: str) -> int:
        """How many PRs the measure's mean rests on: all, or those not provisional in it."""
        return self.count - self.provisional.get(measure, 0) if self.excluded else self.count

    @property
    def small(self) -> bool:
        """Fewer than :data:`SMALL_SAMPLE` PRs under the overall mean (what the rank rests on)."""
        return self.rests_on("overall") < SMALL_SAMPLE

    @property
    def no_agent(self) -> bool:
        """The PRs where no agent was found (:data:`NO_AGENT`): shown, never ranked."""
        return self.key == NO_AGENT

    @property
    def rankable(self) -> bool:
        return self.rank is not None

    @property
    def merged_share(self) -> float:
        """Merged of every PR in view (open ones and closed drafts count): the CSV's mergedShare."""
        return self.merged / self.count if self.count else 0.0

    @property
    def decided(self) -> int:
        """PRs that reached a decision: the merge rate's denominator (:func:`decided_sql`)."""
        return self.merged + self.closed - self.closed_drafts

    @property
    def merge_rate(self) -> Mean:
        """Merged of the PRs that reached a decision, with its Wilson interval: the one merge rate
        every page shows (overview, agent page, comparison)."""
        return wilson(self.merged, self.decided)

    @property
    def rejected_share(self) -> float:
        return self.closed / self.count if self.count else 0.0


def where(f: Filters, *, latest: bool = True) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    if latest:
        conds.append(E.is_latest == true())
    if f.repos is not None:
        conds.append(E.repo.in_(sorted(f.repos)) if f.repos else false())
    if f.repo:
        conds.append(E.repo == f.repo)
    if f.agent == NO_AGENT:
        conds.append(E.agent_id.is_(None) | E.agent_id.in_(NO_AGENT_IDS))
    elif f.agent:
        conds.append(E.agent_id.is_(None) if f.agent == UNATTRIBUTED else E.agent_id == f.agent)
    if f.author:
        conds.append(E.author == f.author)
    if f.band:
        conds.append(E.overall_band == f.band)
    if f.since is not None:
        conds.append(E.activity_at >= f.since)
    if f.until is not None:
        conds.append(E.activity_at < f.until)
    if f.task_type:
        conds.append(E.task_type == f.task_type)
    return conds


def _key_column(by: str) -> Any:
    """The grouping column, bare so the covering index's order serves the GROUP BY (a NULL agent,
    a result stored before attribution, becomes :data:`UNATTRIBUTED` in Python)."""
    return E.author if by == "author" else E.agent_id


def _whole_week(epoch: float) -> str | None:
    """The week (``YYYY-MM-DD`` Monday) starting exactly at ``epoch`` (00:00 UTC), else None."""
    moment = datetime.fromtimestamp(epoch, UTC)
    if moment.weekday() or moment.hour or moment.minute or moment.second or moment.microsecond:
        return None
    return week_of(epoch)


def _rollup(by: str) -> Any:
    return rollup_author if by == "author" else rollup_agent


def rollup_where(f: Filters, by: str = "agent", table: Any = None) -> list[ColumnElement[bool]] | None:
    """The filters as conditions on the ``by`` rollup (``dashboard_rollup_agent``/``_author``), or
    None when it cannot answer them: a time range whose ends are not both Mondays 00:00 UTC
    (``activity_at >= since`` equals ``week >= week_of(since)`` only at a week's start), an author
    filter on the agent rollup or an agent filter on the author rollup. ``table``: another rollup
    with the ``by`` rollup's key columns (``dashboard_rollup_signals``)."""
    if f.task_type:
        return None  # the rollups have no task type
    R = (table if table is not None else _rollup(by)).c
    conds: list[ColumnElement[bool]] = []
    for bound, op in ((f.since, "ge"), (f.until, "lt")):
        if bound is None:
            continue
        week = _whole_week(bound)
        if week is None:
            return None
        conds.append(R.week >= week if op == "ge" else R.week < week)
        conds.append(R.week != "")
    if f.repos is not None:
        conds.append(R.repo.in_(sorted(f.repos)) if f.repos else false())
    if f.repo:
        conds.append(R.repo == f.repo)
    if f.agent:
        if by == "author":
            return None
        if f.agent == NO_AGENT:
            conds.append(R.agent_id.in_(("", *NO_AGENT_IDS)))
        else:
            conds.append(R.agent_id == ("" if f.agent == UNATTRIBUTED else f.agent))
    if f.author:
        if by != "author":
            return None
        conds.append(R.author == f.author)
    if f.band:
        conds.append(R.overall_band == f.band)
    return conds


def _rollup_query(conds: list[ColumnElement[bool]], by: str) -> Any:
    """The overview's (key, week) sums read from the ``by`` rollup, named like the scan's."""
    R = _rollup(by).c
    key_col = R.author if by == "author" else R.agent_id
    key = case((key_col == "", None), else_=key_col).label("key")
    week = case((R.week == "", None), else_=R.week).label("week")
    name = (func.max(case((R.agent_name == "", None), else_=R.agent_name)) if by != "author"
            else func.max(R.author))
    sums: list[Any] = [func.sum(R.n).label("n"), name.label("name")]
    for label, column in (("overall", "overall"), *((c, CATEGORY_COLUMNS[c].name) for c in CATEGORY_COLUMNS)):
        for kind in ("s", "q", "v", "vs", "vq"):
            sums.append(func.sum(R[f"{kind}_{column}"]).label(f"{kind}_{label}"))
    for band in BANDS:
        sums.append(func.sum(case((R.overall_band == band, R.n), else_=0)).label(f"b_{band}"))
    for state in ("merged", "closed", "open"):
        sums.append(func.sum(R[f"p_{state}"]).label(f"p_{state}"))
    return (select(key, week, *sums).where(R.n > 0, *conds)
            .group_by(key_col, R.week).order_by(key_col, R.week))


def _key(value: Any) -> str:
    return UNATTRIBUTED if value is None else str(value)


def is_draft_sql() -> Any:
    """The PR was still a draft when it ended (NULL, unknown, is not)."""
    return func.coalesce(E.draft_at_end, false())


def decided_sql() -> Any:
    """1 for a PR that reached a decision, else 0: merged, or closed after being marked ready. A
    draft closed without ever being marked ready is no failure and no decision, and an open PR is
    undecided. The one denominator of the merge rate and of the Rejected share, on every page."""
    return case((E.pr_state == "merged", 1), ((E.pr_state == "closed") & ~is_draft_sql(), 1), else_=0)


def _turns_key(by: str) -> Any:
    """The grouping column as an expression (``author || ''``): a bare column lets SQLite group by
    walking ``ix_evaluations_author_time`` and read every row's ``draft_at_end`` from the table
    (60 ms over 30,000 PRs); the expression lets it scan the covering ``ix_evaluations_turns``,
    which holds the state, the draft flag and every filter column (4 ms). NULL stays NULL."""
    return _key_column(by).op("||")(literal(""))


def closed_drafts(conn: Connection, f: Filters, by: str) -> dict[str, int]:
    """Per row key, the PRs closed while still a draft (left out of the merge rate)."""
    key = _turns_key(by).label("key")
    query = (select(key, func.count().label("n"))
             .where(*where(f), E.pr_state == "closed", is_draft_sql()).group_by(key))
    out: dict[str, int] = {}
    for row in conn.execute(query).mappings():
        key = group_key(row["key"], by)
        out[key] = out.get(key, 0) + int(row["n"])
    return out


def group_key(value: Any, by: str) -> str:
    """The overview row a stored key belongs to: PRs without a found agent share one."""
    key = _key(value)
    if by == "agent" and (key == UNATTRIBUTED or key in NO_AGENT_IDS):
        return NO_AGENT
    return key


def rank(groups: list[Group]) -> list[Group]:
    """Rank where the intervals separate, by the one rule the read API's leaderboard also follows
    (:mod:`taskeval.store.ranking`): a group's rank is one more than the number of groups whose
    whole 95 % interval of the mean overall lies above its own, so groups that the data cannot
    tell apart share a rank (shown as "=2"). Small samples and the no-agent row get none.
    Returns the groups in display order: ranked by rank then mean, then small samples, then the
    no-agent row."""
    standings = rank_standings([Standing(key=g.key, overall=g.overall, rests_on=g.rests_on("overall"),
                                         count=g.count, no_agent=g.no_agent, item=g) for g in groups])
    for s in standings:
        s.item.rank, s.item.tied = s.rank, s.tied
    return [s.item for s in standings]


def _measure_mean(acc: dict[str, Any], m: str, exclude_provisional: bool) -> Mean:
    """One measure's mean from a group's sums: of every PR, or of those not provisional in it."""
    n = int(acc["n"])
    if not exclude_provisional:
        return mean_ci(n, acc[f"s_{m}"], acc[f"q_{m}"])
    return mean_ci(n - int(acc[f"v_{m}"]), acc[f"s_{m}"] - acc[f"vs_{m}"], acc[f"q_{m}"] - acc[f"vq_{m}"])


def groups(conn: Connection, f: Filters, by: str = "agent", *, use_rollup: bool = True,
           exclude_provisional: bool = False) -> list[Group]:
    """One row per agent (``by="agent"``) or author, ranked where the intervals separate
    (:func:`rank`).

    Each mean (overall, per category) also counts the PRs whose grade in it was provisional
    (coverage under ``PROVISIONAL_BELOW``; :attr:`Group.provisional`); with
    ``exclude_provisional`` the means, intervals, weekly trend and ranks leave those PRs out (the
    PR count, bands and states still count every PR in view).

    One scan: the query groups by (key, week) with counts, sums and sums of squares, which add up;
    Python merges the weeks of each key (a few hundred aggregated rows) into the totals and the
    weekly trend, and the keys without a found agent into one row (:data:`NO_AGENT`). Groups
    below :data:`SMALL_SAMPLE` PRs and the no-agent row come last and get no rank.

    When the filters are made of rollup columns and whole weeks (:func:`rollup_where`), the same
    sums come from ``dashboard_rollup`` (a few thousand rows, whatever the number of PRs); the
    result is identical. ``use_rollup=False`` forces the scan of ``evaluations``.
    """
    rolled = rollup_where(f, by) if use_rollup else None
    if rolled is not None:
        query = _rollup_query(rolled, by)
    else:
        key = _key_column(by).label("key")
        sums: list[Any] = [func.count().label("n"), func.max(E.agent_name).label("name")]
        for name, column in {"overall": E.overall_score, **CATEGORY_COLUMNS}.items():
            sums.append(func.sum(column).label(f"s_{name}"))
            sums.append(func.sum(column * column).label(f"q_{name}"))
            flag = case((provisional_sql(COVERAGE_COLUMNS[name]), 1), else_=0)
            sums.append(func.sum(flag).label(f"v_{name}"))
            sums.append(func.sum(flag * column).label(f"vs_{name}"))
            sums.append(func.sum(flag * column * column).label(f"vq_{name}"))
        for band in BANDS:
            sums.append(func.sum(case((E.overall_band == band, 1), else_=0)).label(f"b_{band}"))
        for state in ("merged", "closed", "open"):
            sums.append(func.sum(case((E.pr_state == state, 1), else_=0)).label(f"p_{state}"))
        query = (select(key, E.week.label("week"), *sums).where(*where(f))
                 .group_by(key, E.week).order_by(key, E.week))
    merged: dict[str, dict[str, Any]] = {}
    for row in conn.execute(query).mappings():
        key_value = group_key(row["key"], by)
        acc = merged.setdefault(key_value, {"name": None, "weeks": {}})
        n = int(row["n"])
        if key_value == NO_AGENT:
            acc["name"] = NO_AGENT_NAME
        elif by != "author":  # a built-in agent by its own name; a repository's own by its id
            acc["name"] = agent_name(key_value, row["name"], own_pr=False)
        elif row["name"] and not acc["name"]:
            acc["name"] = row["name"]
        for column, value in row.items():
            if column == "n" or column.split("_", 1)[0] in ("s", "q", "b", "p", "v", "vs", "vq"):
                acc[column] = acc.get(column, 0) + (float(value) if value is not None else 0)
        if row["week"] is not None:
            week = acc["weeks"].setdefault(str(row["week"]), [0.0, 0])
            left = exclude_provisional
            week[0] += float(row["s_overall"] or 0) - (float(row["vs_overall"] or 0) if left else 0.0)
            week[1] += n - (int(row["v_overall"] or 0) if left else 0)
    out: list[Group] = []
    for key_value, acc in merged.items():
        n = int(acc["n"])
        provisional = {m: int(acc[f"v_{m}"]) for m in MEASURES}
        weeks = [(w, total / count, count) for w, (total, count) in sorted(acc["weeks"].items()) if count]
        out.append(Group(
            key=key_value,
            name=str(acc["name"] or key_value) if by == "agent" else key_value,
            count=n,
            overall=_measure_mean(acc, "overall", exclude_provisional),
            categories={c: _measure_mean(acc, c, exclude_provisional) for c in CATEGORY_COLUMNS},
            bands={b: int(acc[f"b_{b}"]) for b in BANDS},
            merged=int(acc["p_merged"]), closed=int(acc["p_closed"]), open=int(acc["p_open"]),
            trend=weeks[-TREND_WEEKS:],
            provisional=provisional,
            excluded=exclude_provisional,
        ))
    drafts = closed_drafts(conn, f, by)
    for g in out:
        g.closed_drafts = drafts.get(g.key, 0)
    return rank(out)


# --- outcomes (what happened after evaluation) ---------------------------------------------------

OUTCOME_ORDER = ("rejected", "reverted", "follow_up_fix", "reopened_task", "changes_requested",
                 "force_pushed", "reopened", "agent_failure", "post_pr_issue", "agent_failed")


def outcome_key(label: str) -> str:
    """One key per outcome however it was written: ``Rejected``, ``rejected`` and
    ``follow-up fix`` are ``rejected`` and ``follow_up_fix``."""
    return re.sub(r"[\s-]+", "_", label.strip().lower())


def outcome_definition(key: str) -> str:
    """What the column counts, for its tooltip."""
    from taskeval.outcomes import OUTCOMES

    if key == "rejected":
        return ("Rejected: closed without merging after being marked ready. Share of the PRs that "
                "reached a decision, the merge rate's denominator (open PRs and drafts closed "
                "without being marked ready left out), from the outcomes store where it has a "
                "record, else from the PR's state when it was evaluated.")
    found = OUTCOMES.get(key)
    what = found if found else "a label recorded in the outcomes store"
    return (f"{key.replace('_', ' ').capitalize()}: {what}. Share of the PRs where it was "
            f"recorded (taskeval outcomes --write-store, or the bot's push and pull_request events).")


def outcome_rates(conn: Connection, f: Filters, by: str) -> tuple[list[str], dict[str, dict[str, Mean]]]:
    """Per row key and outcome, the share of PRs with that outcome among the PRs where it is
    known, with its 95 % Wilson interval (:func:`outcome_counts`' counts)."""
    order, counts = outcome_counts(conn, f, by)
    return order, {k: {o: wilson(hits, n) for o, (n, hits) in per_key.items()} for k, per_key in counts.items()}


def outcome_counts(conn: Connection, f: Filters,
                   by: str) -> tuple[list[str], dict[str, dict[str, tuple[int, int]]]]:
    """Per row key and outcome: (PRs where it is known, PRs with it).

    Outcome labels are folded to one key (:func:`outcome_key`), so ``Rejected`` from one source and
    ``rejected`` from another are one column, each PR counted once. ``rejected`` is always known
    for a merged or closed PR: a PR without a stored ``rejected`` record counts by its state.
    Returns (the outcome keys, known ones in :data:`OUTCOME_ORDER` first; ``{key: {outcome: (n, hits)}}``).
    """
    from taskeval.store.db import outcomes

    oc = outcomes.c
    counts: dict[str, dict[str, list[int]]] = {}

    def add(key_value: Any, outcome: str, n: int, hits: int) -> None:
        cell = counts.setdefault(group_key(key_value, by), {}).setdefault(outcome, [0, 0])
        cell[0] += n
        cell[1] += hits

    key = _key_column(by).label("key")
    norm = func.lower(func.replace(func.replace(func.trim(oc.outcome), " ", "_"), "-", "_"))
    # rejected by the PR's state where no record says otherwise: every decided PR, less those with
    # a "rejected" record (a subtraction, not a NOT EXISTS per PR: that probe cost 200 ms over
    # 90,000 PRs even with no outcome recorded)
    # closed drafts and open PRs are no decision (decided_sql), written so an index on the state serves it
    decided = [*where(f), E.pr_state.in_(("merged", "closed")), ~((E.pr_state == "closed") & is_draft_sql())]
    closed = func.sum(case((E.pr_state == "closed", 1), else_=0)).label("hits")
    derived: dict[Any, list[int]] = {}
    turns_key = _turns_key(by).label("key")  # index-only with the draft flag, as closed_drafts
    for row in conn.execute(select(turns_key, func.count().label("n"), closed)
                            .where(*decided).group_by(turns_key)).mappings():
        derived[row["key"]] = [int(row["n"]), int(row["hits"] or 0)]
    any_outcome = conn.execute(select(oc.id).limit(1)).first() is not None
    if any_outcome:
        rejected = (select(oc.repo, oc.number).where(norm == "rejected")
                    .group_by(oc.repo, oc.number).subquery())
        recorded_prs = (select(key, func.count().label("n"), closed)
                        .select_from(evaluations.join(rejected, (rejected.c.repo == E.repo)
                                                      & (rejected.c.number == E.number)))
                        .where(*decided).group_by(key))
        for row in conn.execute(recorded_prs).mappings():
            cell = derived.setdefault(row["key"], [0, 0])
            cell[0] -= int(row["n"])
            cell[1] -= int(row["hits"] or 0)
    for key_value, (n, hits) in derived.items():
        if n > 0:
            add(key_value, "rejected", n, hits)
    if any_outcome:
        per_pr = (select(oc.repo, oc.number, norm.label("outcome"),
                         func.max(case((oc.value == true(), 1), else_=0)).label("hit"))
                  .group_by(oc.repo, oc.number, norm).subquery())
        recorded = (select(key, per_pr.c.outcome, func.count().label("n"),
                           func.sum(per_pr.c.hit).label("hits"))
                    .select_from(evaluations.join(per_pr, (per_pr.c.repo == E.repo)
                                                  & (per_pr.c.number == E.number)))
                    .where(*where(f)).group_by(key, per_pr.c.outcome))
        for row in conn.execute(recorded).mappings():
            add(row["key"], str(row["outcome"]), int(row["n"]), int(row["hits"] or 0))
    kinds = {outcome for per_key in counts.values() for outcome in per_key}
    order = [k for k in OUTCOME_ORDER if k in kinds] + sorted(kinds - set(OUTCOME_ORDER))
    return order, {k: {o: (n, hits) for o, (n, hits) in per_key.items()} for k, per_key in counts.items()}


def wilson(hits: int, n: int) -> Mean:
    """A share with its 95 % Wilson score interval (sound for small n and shares near 0 or 1)."""
    if n <= 0:
        return Mean(None)
    p, z = hits / n, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Mean(p, max(0.0, centre - half), min(1.0, centre + half))


# --- one agent (or author) ----------------------------------------------------------------------

HISTOGRAM_STEP = 5  # every band edge (40, 60, 75, 90) is a multiple: no bar spans two bands


def histogram_buckets() -> list[tuple[int, int]]:
    """The overall score's buckets, (low, high) inclusive: 0–4 … 90–94, 95–100."""
    top = 100 // HISTOGRAM_STEP - 1
    return [(b * HISTOGRAM_STEP, 100 if b == top else b * HISTOGRAM_STEP + HISTOGRAM_STEP - 1)
            for b in range(top + 1)]


def histogram(conn: Connection, f: Filters) -> list[tuple[str, int]]:
    """PR counts per :data:`HISTOGRAM_STEP`-point bucket of the overall score (95–100 is one)."""
    buckets = histogram_buckets()
    last = len(buckets) - 1
    bucket = case((E.overall_score >= buckets[last][0], last),
                  else_=E.overall_score // HISTOGRAM_STEP).label("bucket")
    rows = conn.execute(select(bucket, func.count()).where(*where(f)).group_by(bucket)).all()
    counts = {int(b): int(n) for b, n in rows}
    return [(f"{low}–{high}", counts.get(b, 0)) for b, (low, high) in enumerate(buckets)]


@dataclass
class PullDown:
    signal_id: str
    category: str
    name: str
    count: int  # PRs where it pulled the score down
    share: float  # of the PRs in view
    mean_score: float
    examples: list[dict[str, Any]]


def pull_downs(conn: Connection, f: Filters, total: int, limit: int = 10,
               per_signal: int = 3, *, use_rollup: bool = True) -> list[PullDown]:
    """The signals that most often pulled this selection's scores down, with example PRs.

    "Pulled down": conclusive, weighted, and scored under :data:`PULL_DOWN_BELOW` — the same rule
    as the comment's "What pulled the score down" (``taskeval.store.db.PULLS_DOWN``, whose partial index
    holds just those rows). The counts come from ``dashboard_rollup_signals`` when the filters are
    its columns and whole weeks (:func:`rollup_where`), else from joining the PRs' signals; the
    result is identical (``use_rollup=False`` forces the join). The examples are the most recent
    such PRs: one small query per signal that walks the selection newest first and stops at
    ``per_signal``.
    """
    S = signals.c
    rolled = rollup_where(f, "agent", rollup_signals) if use_rollup else None
    if rolled is not None:  # the same counts from dashboard_rollup_signals (taskeval.store.results keeps it)
        R = rollup_signals.c
        n = func.sum(R.n).label("n")
        top_query = (select(R.signal_id, func.max(R.category).label("category"), n,
                            (func.sum(R.s_score) * 1.0 / func.sum(R.n)).label("mean"))
                     .where(R.n > 0, *rolled).group_by(R.signal_id).order_by(n.desc(), R.signal_id).limit(limit))
    else:
        n = func.count().label("n")
        top_query = (select(S.signal_id, func.max(S.category).label("category"), n,
                            func.avg(S.score).label("mean"))
                     .select_from(evaluations.join(signals, (S.evaluation_id == E.id) & DOWN))
                     .where(*where(f))
                     .group_by(S.signal_id)
                     .order_by(n.desc(), S.signal_id)
                     .limit(limit))
    top = conn.execute(top_query).all()
    if not top:
        return []
    examples: dict[str, list[dict[str, Any]]] = {}
    for r in top:
        query = (select(E.id, E.repo, E.number, E.author, E.overall_score, S.score)
                 .select_from(evaluations.join(signals, (S.evaluation_id == E.id)
                                               & (S.signal_id == r.signal_id) & DOWN))
                 .where(*where(f))
                 .order_by(E.activity_at.desc(), E.id.desc())
                 .limit(per_signal))
        examples[r.signal_id] = [dict(x) for x in conn.execute(query).mappings()]
    texts = _signal_texts(conn, {(sid, item["id"]) for sid, items in examples.items() for item in items})
    out = []
    for r in top:
        items = examples.get(r.signal_id, [])
        for item in items:
            item["reason"] = texts.get((r.signal_id, item["id"]), ("", ""))[1]
        name = next((texts[(r.signal_id, i["id"])][0] for i in items if (r.signal_id, i["id"]) in texts), "")
        out.append(PullDown(signal_id=r.signal_id, category=str(r.category), name=name or r.signal_id,
                            count=int(r.n), share=int(r.n) / total if total else 0.0,
                            mean_score=float(r.mean), examples=items))
    return out


def _signal_texts(conn: Connection, wanted: set[tuple[str, int]]) -> dict[tuple[str, int], tuple[str, str]]:
    """(signal, evaluation) -> (plain-English name, reason) read from the examples' stored results.

    The signals table keeps numbers only; the words come from the example PRs' stored results
    (at most ``limit * per_signal`` documents per page; never an aggregation input).
    """
    if not wanted:
        return {}
    rows = conn.execute(select(E.id, E.result_json).where(E.id.in_({eid for _s, eid in wanted}))).all()
    out: dict[tuple[str, int], tuple[str, str]] = {}
    for eid, stored in rows:
        try:
            result = json.loads(stored)
        except (TypeError, ValueError):
            continue
        for s in result.get("signals") or []:
            if isinstance(s, dict) and (s.get("id"), eid) in wanted:
                out[(str(s["id"]), eid)] = (str(s.get("name") or ""), str(s.get("reason") or ""))
    return out


PR_COLUMNS = (E.id, E.repo, E.number, E.author, E.agent_id, E.agent_name, E.pr_state, E.overall_score,
              E.overall_band, E.overall_coverage, E.agent_performance, E.task_outcome_quality,
              E.process_compliance, E.activity_at, E.evaluated_at)


def pr_list(conn: Connection, f: Filters, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    """The PRs in view, newest activity first (each PR once, its latest evaluation)."""
    query = (select(*PR_COLUMNS).where(*where(f))
             .order_by(E.activity_at.desc(), E.id.desc()).limit(limit).offset(offset))
    return [dict(r) for r in conn.execute(query).mappings()]


def count(conn: Connection, f: Filters) -> int:
    return int(conn.execute(select(func.count()).select_from(evaluations).where(*where(f))).scalar() or 0)


# --- one PR ---------------------------------------------------------------------------------------

def pr_history(conn: Connection, f: Filters, repo: str, number: int) -> list[dict[str, Any]]:
    """Every stored evaluation of one PR, newest first; empty when the viewer may not read it."""
    if f.repos is not None and repo not in f.repos:
        return []
    query = (select(*PR_COLUMNS, E.head_sha, E.scorer_version, E.trigger, E.judge_status,
                    E.comment_url, E.is_latest)
             .where(E.repo == repo, E.number == number).order_by(E.id.desc()))
    return [dict(r) for r in conn.execute(query).mappings()]


def result_json(conn: Connection, f: Filters, evaluation_id: int) -> tuple[str, str, int] | None:
    """(repo, result JSON, PR number) of one stored evaluation the viewer may read."""
    row = conn.execute(select(E.repo, E.result_json, E.number).where(E.id == evaluation_id)).first()
    if row is None or (f.repos is not None and row.repo not in f.repos):
        return None
    return str(row.repo), str(row.result_json), int(row.number)


# --- the aggregate cache ---------------------------------------------------------------------------

_CACHE: dict[tuple[Any, ...], tuple[float, Any]] = {}
CACHE_TTL = 300.0
CACHE_SIZE = 256
ENABLED = True  # the benchmark switches it off to time every query cold


def data_version(conn: Connection) -> tuple[Any, ...]:
    """Changes whenever an evaluation is stored (it gets a new, higher id and flips ``is_latest``
    in the same transaction) or an outcome is recorded (a new id): two index probes. An outcome
    updated in place shows after :data:`CACHE_TTL` at the latest."""
    from taskeval.store.db import outcomes

    return (conn.execute(select(func.max(E.id))).scalar(),
            conn.execute(select(func.max(outcomes.c.id))).scalar())


# The data version each open connection saw first: a page asks :func:`cached` for several
# aggregates, and probing the store's version once per page is enough.
_VERSIONS: weakref.WeakKeyDictionary[Connection, tuple[Any, ...]] = weakref.WeakKeyDictionary()


def _version(conn: Connection) -> tuple[Any, ...]:
    found = _VERSIONS.get(conn)
    if found is None:
        found = _VERSIONS[conn] = data_version(conn)
    return found


def cached(conn: Connection, name: str, args: tuple[Any, ...], compute: Any) -> Any:
    """``compute()``, remembered per process until the data changes (:func:`data_version`) or
    :data:`CACHE_TTL` seconds pass. An aggregate over 100,000 PRs costs a few hundred ms of SQL;
    between two stored evaluations every viewer gets the same answer, so only the first pays."""
    if not ENABLED:
        return compute()
    version = _version(conn)
    key = (conn.engine.url.render_as_string(hide_password=True), name, args, version)
    now = time.monotonic()
    hit = _CACHE.get(key)
    if hit is not None and now - hit[0] < CACHE_TTL:
        return hit[1]
    value = compute()
    if len(_CACHE) >= CACHE_SIZE:
        _CACHE.clear()
    _CACHE[key] = (now, value)
    return value


def clear_cache() -> None:
    _CACHE.clear()


# --- filter choices -------------------------------------------------------------------------------

def repositories(conn: Connection, f: Filters) -> list[str]:
    """The repositories with latest evaluations the viewer may read (from the agent rollup, which
    holds exactly those)."""
    R = rollup_agent.c
    conds = rollup_where(Filters(repos=f.repos)) or []
    query = select(R.repo).where(R.n > 0, *conds).group_by(R.repo).order_by(R.repo)
    return [str(r) for r in conn.execute(query).scalars()]


def agents(conn: Connection, f: Filters) -> list[tuple[str, str]]:
    R = rollup_agent.c
    conds = rollup_where(Filters(repos=f.repos)) or []
    agent = case((R.agent_id == "", None), else_=R.agent_id)
    name = func.max(case((R.agent_name == "", None), else_=R.agent_name))
    query = select(agent, name).where(R.n > 0, *conds).group_by(R.agent_id)
    found: dict[str, str] = {}
    for k, n in conn.execute(query).all():
        key = group_key(k, "agent")  # the no-agent ids are one choice, as they are one row
        found[key] = NO_AGENT_NAME if key == NO_AGENT else str(agent_name(key, n, own_pr=False) or key)
    return sorted(found.items())


def choices(conn: Connection, f: Filters) -> dict[str, Any]:
    """The filter form's repositories and agents (cached like every aggregate, see :func:`cached`)."""
    return dict(cached(conn, "choices", (f.repos,), lambda: {
        "repositories": repositories(conn, f), "agents": agents(conn, f), "bands": BANDS,
        "task_types": TASK_TYPES}))


def stored_repositories(conn: Connection, candidates: Iterable[str]) -> list[str]:
    """Which of ``candidates`` (a user's readable repositories) have stored evaluations, matched
    case-insensitively as GitHub names are, returned with the store's spelling."""
    wanted = {c.lower() for c in candidates}
    if not wanted:
        return []
    rows = conn.execute(select(E.repo).group_by(E.repo)).scalars()
    return sorted(str(r) for r in rows if str(r).lower() in wanted)


def day_start(value: str) -> float:
    """``YYYY-MM-DD`` -> epoch seconds at 00:00 UTC; ValueError otherwise."""
    return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()

