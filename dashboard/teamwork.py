"""What an agent's PRs cost people and how long they take, with fair denominators, and the
comparison of two agents (or two periods): the agent page's cycle times, rescue mix and closure
classes, and the comparison view (docs/bot.md defines every figure).

Every value is an ``evaluations`` column written from the result's export row (``taskeval.store.export.STORED``,
revision 0008), read through the covering index ``ix_evaluations_turns``, so the page, its CSV, its
JSON and ``taskeval export`` count the same numbers. Each PR counts once (its latest evaluation) and
the filters are :class:`dashboard.queries.Filters`, visibility included.

Quantiles are the linear-interpolation ones (a spreadsheet's ``PERCENTILE.INC``, numpy's default).
Their 95 % intervals are percentile-bootstrap intervals computed exactly, without resampling: the
r-th smallest of n draws with replacement lies at or below the i-th sorted value exactly when at
least r draws do, which is Binomial(n, i/n) (:func:`bootstrap_quantile`). So a page shows the same
interval on every load and in every process, at a cost independent of n.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from sqlalchemy import Connection, case, func, select

from dashboard.queries import (
    UNATTRIBUTED,
    E,
    Filters,
    decided_sql,
    group_key,
    is_draft_sql,
    where,
    wilson,
)
from taskeval.store.ranking import SMALL_SAMPLE, Mean, mean_ci, t95
from taskeval.store.results import provisional_sql

LEVELS = (0.025, 0.975)  # the 95 % interval's ends
TREND_WEEKS = 26
BATCH = 200  # rows per fetch of the cycle-time read (_columns): under the collector's 700

PROJECT_REASONS = ("superseded", "duplicate", "stale", "declined")
CLOSURE_GROUPS = (("agent_failure", "the agent's failure", ("agent_failure",)),
                  ("project", "the project's reasons", PROJECT_REASONS),
                  ("withdrawn_unknown", "withdrawn or unknown", ("withdrawn", "unknown")))
RESCUE_CLASSES = ("clean", "feedback_loop", "taken_over")
# A merged PR whose writers the evidence cannot all name (docs/turns.md#rescue): neither clean nor
# rescued, so it is counted apart from every rescue figure, as provisional grades are from means.
RESCUE_UNKNOWN = "unknown"

# (key, column, title, which PRs it rests on)
CYCLE_FIGURES: tuple[tuple[str, Any, str, str], ...] = (
    ("first_response", E.first_response_hours, "Time to first human response",
     "PRs a person reviewed or commented on: opened to that first response"),
    ("agent_turns", E.agent_hours, "Time on the agent's turns",
     "PRs whose timeline was read: hours it was the agent's move"),
    ("waiting_for_people", E.people_hours, "Time waiting for people",
     "PRs whose timeline was read: hours it was the people's move"),
    ("time_to_merge", E.merge_hours, "Time to merge", "merged PRs: opened to merged"),
    ("draft", E.draft_hours, "Time as a draft (apart)",
     "PRs that spent time as a draft: hours before they were marked ready"),
)


# --- quantiles -------------------------------------------------------------------------------------

def quantile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile of sorted ``values`` by linear interpolation (``PERCENTILE.INC``)."""
    n = len(values)
    if not n:
        return None
    h = (n - 1) * q
    k = math.floor(h)
    if k + 1 >= n:
        return float(values[-1])
    return float(values[k] + (h - k) * (values[k + 1] - values[k]))


def _binomial_tail(n: int, p: float, r: int) -> float:
    """P(Binomial(n, p) ≥ r), summed term by term over the smaller side of the distribution (the
    terms fall off like a normal density's, so about nine standard deviations of them)."""
    if r <= 0 or p >= 1.0:
        return 1.0
    if r > n or p <= 0.0:
        return 0.0
    upper = r > n * p
    c = r if upper else r - 1
    term = math.exp(math.lgamma(n + 1) - math.lgamma(c + 1) - math.lgamma(n - c + 1)
                    + c * math.log(p) + (n - c) * math.log1p(-p))
    odds = p / (1 - p)
    total = 0.0
    while term > total * 1e-17:
        total += term
        if upper:
            term *= (n - c) / (c + 1) * odds
            c += 1
        else:
            term *= c / ((n - c + 1) * odds)
            c -= 1
    return total if upper else 1.0 - total


def _resampled_position(n: int, r: int, level: float) -> int:
    """The ``level`` quantile of where the r-th smallest of a bootstrap resample falls among the n
    sorted values (1-based): the smallest i with P(Binomial(n, i/n) ≥ r) ≥ ``level``. Found by
    stepping from the normal approximation of Beta(r, n−r+1), one or two steps at large n."""
    mean = r / (n + 1)
    sd = math.sqrt(mean * (1 - mean) / (n + 2))
    i = min(n, max(1, math.ceil(n * (mean + NormalDist().inv_cdf(level) * sd))))
    while i > 1 and _binomial_tail(n, (i - 1) / n, r) >= level:
        i -= 1
    while _binomial_tail(n, i / n, r) < level:
        i += 1
    return i


def bootstrap_quantile(values: Sequence[float], q: float) -> tuple[float, float] | None:
    """95 % percentile-bootstrap interval of :func:`quantile` over sorted ``values``; None under 2.

    Exact, not resampled. A quantile that is one order statistic (the r-th smallest) has as its
    bootstrap distribution P(x*₍r₎ ≤ x₍i₎) = P(Binomial(n, i/n) ≥ r), so its interval is the
    values at the 2.5th and 97.5th percentiles of that distribution. A quantile that interpolates
    between the r-th and (r+1)-th takes the same interpolation of their two exact intervals: the
    percentile interval of the interpolation when the two move together, as adjacent order
    statistics of a resample nearly do (at n = 27,500 it matches 1,000 resamples to within their
    own noise; docs/bot.md).
    """
    n = len(values)
    if n < 2:
        return None
    h = (n - 1) * q
    k = math.floor(h)
    frac = h - k
    ends = []
    for level in LEVELS:
        value = values[_resampled_position(n, k + 1, level) - 1]
        if frac and k + 1 < n:
            value += frac * (values[_resampled_position(n, k + 2, level) - 1] - value)
        ends.append(float(value))
    return ends[0], ends[1]


@dataclass
class Quantile:
    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass
class Figure:
    """One cycle-time figure of a selection: median and 90th percentile, and what they rest on."""

    key: str
    title: str
    rests_on: str
    count: int
    median: Quantile
    p90: Quantile

    @property
    def small(self) -> bool:
        return self.count < SMALL_SAMPLE


def _figure(key: str, title: str, rests_on: str, values: Sequence[float]) -> Figure:
    out = []
    for q in (0.5, 0.9):
        interval = bootstrap_quantile(values, q)
        out.append(Quantile(quantile(values, q), *(interval or (None, None))))
    return Figure(key, title, rests_on, len(values), out[0], out[1])


@dataclass
class CycleTimes:
    figures: list[Figure]
    trend: list[tuple[str, float, int]]  # (week, median time to merge in hours, merged PRs)


def _columns(conn: Connection, statement: Any, width: int) -> list[list[Any]]:
    """The ``width`` columns of a Core statement's rows, each as one list of the driver's values.

    Read through the DBAPI cursor: reading 30,000 rows through SQLAlchemy's result objects cost
    three times the query on SQLite, and these values need no type processing (floats, strings).
    Read in batches of :data:`BATCH` rows, not with ``fetchall()``: 27,500 row tuples alive at once
    outlived the garbage collector's young generations, and promoting them made a full collection
    (60–75 ms in a dashboard process) fall on every other request. A batch also stays under the
    collector's first threshold (700 new container objects): each is freed before it can start a
    collection, where batches of 1,000 started ~27 a request and, through the tuples alive at
    each, a full collection every ~15 requests (``gc.callbacks``, BENCHMARKS.md).
    """
    compiled = statement.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    params = compiled.params
    args = tuple(params[k] for k in compiled.positiontup) if compiled.positiontup is not None else params
    out: list[list[Any]] = [[] for _ in range(width)]
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(str(compiled), args)
        while batch := cursor.fetchmany(BATCH):
            for values, column in zip(out, zip(*batch, strict=True), strict=True):
                values.extend(column)
    finally:
        cursor.close()
    return out


def cycle_times(conn: Connection, f: Filters) -> CycleTimes:
    """The :data:`CYCLE_FIGURES` of the PRs in view, and the weekly median time to merge.

    One index-only read of the five hour columns and the week (a draft time of 0 means the PR
    never was one and is left out of the draft figure); sorting and the intervals are Python's.
    Ranking in SQL instead (window functions, or ``ORDER BY … LIMIT … OFFSET`` around each
    quantile) cost more on SQLite: each is a sort of the selection in a temporary B-tree."""
    columns = [c for _k, c, _t, _r in CYCLE_FIGURES]
    # the week only where the trend reads it (merged PRs): the other rows return NULL, no string
    merged_week = case((E.merge_hours.is_not(None), E.week))
    by_column = _columns(conn, select(*columns, merged_week).where(*where(f)), len(columns) + 1)
    figures = []
    for i, (key, _c, title, rests) in enumerate(CYCLE_FIGURES):
        column = by_column[i]  # floats as the driver gives them (Float columns)
        if key == "draft":
            values = sorted([v for v in column if v is not None and v > 0])
        else:
            values = sorted([v for v in column if v is not None])
        figures.append(_figure(key, title, rests, values))
    merge_at = next(i for i, (k, *_r) in enumerate(CYCLE_FIGURES) if k == "time_to_merge")
    weeks: dict[str, list[float]] = defaultdict(list)
    for v, week in zip(by_column[merge_at], by_column[-1], strict=True):
        if v is not None and week is not None:
            weeks[str(week)].append(float(v))
    trend = []
    for week in sorted(weeks)[-TREND_WEEKS:]:
        values = sorted(weeks[week])
        trend.append((week, float(quantile(values, 0.5) or 0.0), len(values)))
    return CycleTimes(figures, trend)


# --- what an agent PR costs people, and fair denominators ------------------------------------------

@dataclass
class Share:
    key: str
    title: str
    count: int
    of: int  # the denominator

    @property
    def share(self) -> Mean:
        return wilson(self.count, self.of)


@dataclass
class Costs:
    """The PRs in view by decision, rescue and closure (docs/bot.md, "Costs to people")."""

    merged: int = 0
    closed: int = 0  # closed unmerged after being marked ready: reached a decision
    closed_drafts: int = 0  # closed while still a draft: never marked ready, counted apart
    open: int = 0
    open_drafts: int = 0
    rescue: dict[str, int] = field(default_factory=dict)  # merged PRs by rescue class (None: not classified)
    closure: dict[str, int] = field(default_factory=dict)  # decided closed PRs by closure class
    people_commits: Mean = field(default_factory=lambda: Mean(None))  # per merged PR with a rescue class
    rounds: Mean = field(default_factory=lambda: Mean(None))  # per merged PR with turns
    people_comments: Mean = field(default_factory=lambda: Mean(None))  # per PR with turns, any state
    per_pr_counts: dict[str, int] = field(default_factory=dict)  # the PRs each per-PR mean rests on

    def per_pr(self) -> list[tuple[str, str, str, Mean, int]]:
        """(key, figure, which PRs, mean, how many) of the per-PR costs to people."""
        return [
            ("people_commits", "People's commits per merged PR", "merged PRs with a known rescue class",
             self.people_commits, self.per_pr_counts.get("people_commits", 0)),
            ("rounds", "Review rounds per merged PR", "merged PRs with turns", self.rounds,
             self.per_pr_counts.get("rounds", 0)),
            ("people_comments", "Comments by people per PR", "PRs with turns, any state",
             self.people_comments, self.per_pr_counts.get("people_comments", 0)),
        ]

    @property
    def decided(self) -> int:
        return self.merged + self.closed

    @property
    def merge_rate(self) -> Mean:
        return wilson(self.merged, self.decided)

    @property
    def rescued_known(self) -> int:
        return sum(n for k, n in self.rescue.items() if k in RESCUE_CLASSES)

    @property
    def rescue_unknown(self) -> int:
        """Merged PRs whose rescue class is ``unknown``: left out of the mix, the rescue rate and
        people's commits per merged PR."""
        return self.rescue.get(RESCUE_UNKNOWN, 0)

    def rescue_mix(self) -> list[Share]:
        names = {"clean": "clean", "feedback_loop": "feedback loop", "taken_over": "taken over"}
        return [Share(k, names[k], self.rescue.get(k, 0), self.rescued_known) for k in RESCUE_CLASSES]

    @property
    def closure_known(self) -> int:
        return sum(n for k, n in self.closure.items() if k is not None)

    def closure_groups(self) -> list[Share]:
        return [Share(key, title, sum(self.closure.get(c, 0) for c in classes), self.closure_known)
                for key, title, classes in CLOSURE_GROUPS]

    def closure_classes(self) -> list[Share]:
        order = [c for _k, _t, classes in CLOSURE_GROUPS for c in classes]
        return [Share(c, c.replace("_", " "), self.closure.get(c, 0), self.closure_known) for c in order]


def _is_draft() -> Any:
    return is_draft_sql()


def costs(conn: Connection, f: Filters) -> Costs:
    """Decision counts, the rescue mix, people's commits and rounds per merged PR, comments by
    people per PR, and the closure classes of the decided closed PRs: one grouped, index-only read
    (by state, draft, rescue and closure class: a few dozen groups), split here."""
    out = Costs()
    draft = _is_draft()
    commits, rounds, comments = (func.coalesce(E.people_commits, 0), func.coalesce(E.rounds, 0),
                                 func.coalesce(E.people_comments, 0))
    sums = dict(c=0, cs=0, cq=0, r=0, rs=0, rq=0, m=0, ms=0, mq=0)
    query = (select(E.pr_state, draft, E.rescue_class, E.closure_class, func.count(),
                    func.count(E.people_commits), func.sum(commits), func.sum(commits * commits),
                    func.count(E.rounds), func.sum(rounds), func.sum(rounds * rounds),
                    func.count(E.people_comments), func.sum(comments), func.sum(comments * comments))
             .where(*where(f)).group_by(E.pr_state, draft, E.rescue_class, E.closure_class))
    for state, is_draft, rescue, closure, n, *parts in conn.execute(query):
        n = int(n)
        values = [int(v or 0) for v in parts]
        for name, value in zip(("m", "ms", "mq"), values[6:], strict=True):
            sums[name] += value  # comments by people: every PR with turns, whatever its state
        if state == "merged":
            out.merged += n
            out.rescue[rescue] = out.rescue.get(rescue, 0) + n
            for name, value in zip(("c", "cs", "cq", "r", "rs", "rq"), values[:6], strict=True):
                sums[name] += value
        elif state == "closed":
            if is_draft:
                out.closed_drafts += n
            else:
                out.closed += n
                out.closure[closure] = out.closure.get(closure, 0) + n
        elif state == "open":
            out.open += n
            out.open_drafts += n if is_draft else 0
    out.people_commits = _mean(sums["c"], sums["cs"], sums["cq"])
    out.rounds = _mean(sums["r"], sums["rs"], sums["rq"])
    out.people_comments = _mean(sums["m"], sums["ms"], sums["mq"])
    out.per_pr_counts = {"people_commits": sums["c"], "rounds": sums["r"], "people_comments": sums["m"]}
    return out


def _mean(n: int, total: int, squares: int) -> Mean:
    """A mean with its t interval, not clipped to the 0–100 score scale."""
    if not n:
        return Mean(None)
    m = total / n
    if n < 2:
        return Mean(m)
    variance = max(0.0, (squares / n - m * m) * n / (n - 1))
    half = t95(n - 1) * math.sqrt(variance / n)
    return Mean(m, max(0.0, m - half), m + half)


def _one_in(p: float) -> str:
    if p == 0:
        return "none"
    if p <= 0.5:
        return f"1 in {round(1 / p)}"
    return f"{100 * p:.0f} %"


def sentence(name: str, c: Costs, *, subject: str | None = None, agent: bool = True) -> str:
    """The agent page's plain sentence: how often a merged PR needed a person's commits, and how
    many of its rejections were its own failures; "too few PRs" under :data:`SMALL_SAMPLE`.
    ``subject``: the PRs, plural (default "<name> PRs"); ``agent`` False (an author's PRs, or those
    where no agent was found) speaks of "their" rejections, not an agent's own."""
    subject = subject or f"{name} PRs"
    merged = c.rescued_known
    if merged < SMALL_SAMPLE:
        first = f"Too few merged {subject} ({merged}) to say how often a person had to push commits"
    else:
        taken = c.rescue.get("taken_over", 0)
        share = _one_in(taken / merged)
        if share == "none":
            first = (f"No merged {name} PR of {merged} needed a person to push commits" if agent else
                     f"None of the {merged} merged {subject} needed a person to push commits")
        else:
            first = f"{share} merged {subject} needed a person to push commits"
    if c.rescue_unknown:
        first += (f" ({c.rescue_unknown} merged PR{'s' if c.rescue_unknown != 1 else ''} whose commits' "
                  "writers are unknown left out)")
    closed = c.closure_known
    if closed < SMALL_SAMPLE:
        second = f"too few rejections ({closed}) to say whose failures they were"
    else:
        failures = c.closure.get("agent_failure", 0)
        second = (f"{100 * failures / closed:.0f} % of its rejections were its own failures" if agent else
                  f"{100 * failures / closed:.0f} % of their rejections were failures of the work itself "
                  "(agent_failure)")
    return f"{first}; {second}."


# --- comparison -------------------------------------------------------------------------------------

@dataclass
class Cell:
    """Sums of one side within one stratum (a task type and repository)."""

    n: int = 0
    decided: int = 0
    merged: int = 0
    rescued_known: int = 0
    taken_over: int = 0
    ap_n: int = 0
    ap_sum: float = 0.0
    ap_sq: float = 0.0
    ap_provisional: int = 0  # PRs whose agentPerformance grade was provisional (in ap_n or left out)

    def add(self, other: Cell) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def cells(conn: Connection, f: Filters, *, exclude_provisional: bool = False,
          by: Any = None) -> dict[tuple[str, str], Cell]:
    """One side's sums per (task type, repository; ``by``: per task type and that column): one
    grouped, index-only read. The mean agentPerformance counts its provisional grades (coverage
    under ``PROVISIONAL_BELOW``) and, with ``exclude_provisional``, leaves them out."""
    second = E.repo if by is None else by
    merged = case((E.pr_state == "merged", 1), else_=0)
    decided = decided_sql()  # the merge rate's one denominator
    known = case(((E.pr_state == "merged") & E.rescue_class.in_(RESCUE_CLASSES), 1), else_=0)
    taken = case(((E.pr_state == "merged") & (E.rescue_class == "taken_over"), 1), else_=0)
    task = func.coalesce(E.task_type, "unknown")
    ap = E.agent_performance
    flag = case((provisional_sql(E.agent_performance_coverage), 1), else_=0)
    query = (select(task, second, func.count(), func.sum(decided), func.sum(merged), func.sum(known),
                    func.sum(taken), func.sum(ap), func.sum(ap * ap),
                    func.sum(flag), func.sum(flag * ap), func.sum(flag * ap * ap))
             .where(*where(f)).group_by(task, second))
    out = {}
    for row in conn.execute(query):
        n, v = int(row[2]), int(row[9] or 0)
        ap_n, ap_sum, ap_sq = n, float(row[7] or 0), float(row[8] or 0)
        if exclude_provisional:
            ap_n, ap_sum, ap_sq = n - v, ap_sum - float(row[10] or 0), ap_sq - float(row[11] or 0)
        # A NULL agent (stored before attribution) is UNATTRIBUTED, as the overview names it.
        second_key = UNATTRIBUTED if row[1] is None else str(row[1])
        out[(str(row[0]), second_key)] = Cell(n, int(row[3] or 0), int(row[4] or 0), int(row[5] or 0),
                                              int(row[6] or 0), ap_n, ap_sum, ap_sq, v)
    return out


@dataclass
class Difference:
    """A minus B, with its 95 % interval; ``too_few`` when either side rests on under 10 PRs."""

    a: float | None
    b: float | None
    a_n: int
    b_n: int
    diff: float | None = None
    low: float | None = None
    high: float | None = None
    a_provisional: int | None = None  # a mean of grades: how many of each side's were provisional
    b_provisional: int | None = None
    strata: int | None = None  # a task-mix-adjusted difference: the strata it is taken within

    @property
    def too_few(self) -> bool:
        return min(self.a_n, self.b_n) < SMALL_SAMPLE


def share_difference(a_hits: int, a_n: int, b_hits: int, b_n: int) -> Difference:
    """Difference of two shares, Newcombe's hybrid score interval (from the two Wilson intervals):
    sound at small n and near 0 or 1, where the normal approximation is not."""
    wa, wb = wilson(a_hits, a_n), wilson(b_hits, b_n)
    out = Difference(wa.mean, wb.mean, a_n, b_n)
    if wa.mean is None or wb.mean is None:
        return out
    assert wa.low is not None and wa.high is not None and wb.low is not None and wb.high is not None
    d = wa.mean - wb.mean
    out.diff = d
    out.low = d - math.sqrt((wa.mean - wa.low) ** 2 + (wb.high - wb.mean) ** 2)
    out.high = d + math.sqrt((wa.high - wa.mean) ** 2 + (wb.mean - wb.low) ** 2)
    return out


def mean_difference(a: Cell, b: Cell) -> Difference:
    """Difference of the mean agentPerformance, Welch's t interval (unequal variances)."""
    def stats(c: Cell) -> tuple[float | None, float]:
        if not c.ap_n:
            return None, 0.0
        m = c.ap_sum / c.ap_n
        var = max(0.0, (c.ap_sq / c.ap_n - m * m) * c.ap_n / (c.ap_n - 1)) if c.ap_n > 1 else 0.0
        return m, var

    (ma, va), (mb, vb) = stats(a), stats(b)
    out = Difference(ma, mb, a.ap_n, b.ap_n, a_provisional=a.ap_provisional, b_provisional=b.ap_provisional)
    if ma is None or mb is None or a.ap_n < 2 or b.ap_n < 2:
        return out
    ea, eb = va / a.ap_n, vb / b.ap_n
    se = math.sqrt(ea + eb)
    df = ((ea + eb) ** 2 / ((ea * ea) / (a.ap_n - 1) + (eb * eb) / (b.ap_n - 1))) if se else 1.0
    out.diff = ma - mb
    out.low, out.high = out.diff - t95(max(1, int(df))) * se, out.diff + t95(max(1, int(df))) * se
    return out


@dataclass
class Stratum:
    kind: str  # overall | adjusted | task type | repository
    name: str
    merge_rate: Difference
    rescue_rate: Difference
    agent_performance: Difference


def _stratum(kind: str, name: str, a: Cell, b: Cell) -> Stratum:
    return Stratum(kind, name, share_difference(a.merged, a.decided, b.merged, b.decided),
                   share_difference(a.taken_over, a.rescued_known, b.taken_over, b.rescued_known),
                   mean_difference(a, b))


# --- the task-mix-adjusted difference ---------------------------------------------------------------

# The two task-mix adjustments: within task types (every pair of agents shares some), and within
# task type × repository (finer, but two agents in different repositories share few such strata).
ADJUSTED_BY_TYPE = "all PRs, task mix adjusted (within task types)"
ADJUSTED_BY_CELL = "all PRs, task mix adjusted (within task type × repository)"


def _stratum_variance(c: Cell, part: str) -> float:
    """The variance of one side's estimate within one stratum: of a share, from the share with one
    success and one failure added (Agresti and Caffo's adjustment, so a stratum at 0 % or 100 % is
    not taken as certain); of a mean, the sample variance over n."""
    if part == "agent_performance":
        if c.ap_n < 2:
            return 0.0
        m = c.ap_sum / c.ap_n
        return max(0.0, (c.ap_sq / c.ap_n - m * m) * c.ap_n / (c.ap_n - 1)) / c.ap_n
    hits, n = (c.merged, c.decided) if part == "merge_rate" else (c.taken_over, c.rescued_known)
    p = (hits + 1) / (n + 2)
    return p * (1 - p) / (n + 2)


def adjusted_difference(pairs: Sequence[tuple[Cell, Cell]], part: str) -> Difference:
    """A minus B within each stratum (a task type, or a task type and repository) both sides have
    PRs in for this measure, weighted by the stratum's size (both sides' PRs in the measure's denominator): what
    the difference would be if both had worked on the same task mix. ``part``: ``merge_rate``,
    ``rescue_rate`` or ``agent_performance``.

    Its 95 % interval is ``D ± 1.96·√(Σ (w/W)² (var_A + var_B))`` over the strata
    (:func:`_stratum_variance`): the strata are independent, so the variance of the weighted sum is
    the weighted sum of theirs. A stratified bootstrap of 1,000 resamples over 36 strata cost
    ~165 ms of CPU per comparison (BENCHMARKS.md), for the same interval up to its own noise.
    """
    def size(c: Cell) -> int:
        return {"merge_rate": c.decided, "rescue_rate": c.rescued_known, "agent_performance": c.ap_n}[part]

    def value(c: Cell) -> float:
        if part == "merge_rate":
            return c.merged / c.decided
        if part == "rescue_rate":
            return c.taken_over / c.rescued_known
        return c.ap_sum / c.ap_n

    shared = [(a, b) for a, b in pairs if size(a) and size(b)]
    a_n, b_n = sum(size(a) for a, _b in shared), sum(size(b) for _a, b in shared)
    out = Difference(None, None, a_n, b_n, strata=len(shared))
    if part == "agent_performance":
        out.a_provisional = sum(a.ap_provisional for a, _b in shared)
        out.b_provisional = sum(b.ap_provisional for _a, b in shared)
    if not shared:
        return out
    weights = [size(a) + size(b) for a, b in shared]
    total = sum(weights)
    out.a = sum(w * value(a) for w, (a, _b) in zip(weights, shared, strict=True)) / total
    out.b = sum(w * value(b) for w, (_a, b) in zip(weights, shared, strict=True)) / total
    out.diff = out.a - out.b
    variance = sum((w / total) ** 2 * (_stratum_variance(a, part) + _stratum_variance(b, part))
                   for w, (a, b) in zip(weights, shared, strict=True))
    half = 1.96 * math.sqrt(variance)
    out.low, out.high = out.diff - half, out.diff + half
    return out


def _sum(found: Iterable[tuple[tuple[str, str], Cell]], index: int) -> dict[str, Cell]:
    out: dict[str, Cell] = defaultdict(Cell)
    for key, cell in found:
        out[key[index]].add(cell)
    return out


@dataclass
class TaskCell:
    """One agent's PRs of one task type: merge rate over decided PRs and mean agentPerformance,
    each with its interval; ``too_few`` under :data:`SMALL_SAMPLE` PRs (shown instead of numbers)."""

    agent: str
    task_type: str
    prs: int
    decided: int
    merged: int
    merge_rate: Mean
    agent_performance: Mean
    provisional: int

    @property
    def too_few(self) -> bool:
        return self.prs < SMALL_SAMPLE


def task_matrix(conn: Connection, f: Filters, *,
                exclude_provisional: bool = False) -> dict[tuple[str, str], TaskCell]:
    """The agent × task-type matrix (issue "task types"): one grouped read by task type and
    agent, the PRs without a found agent in one row of their own, as on the overview."""
    out: dict[tuple[str, str], Cell] = defaultdict(Cell)
    found = cells(conn, f, exclude_provisional=exclude_provisional, by=E.agent_id)
    for (task, agent), cell in found.items():
        out[(group_key(agent, "agent"), task)].add(cell)
    return {key: TaskCell(key[0], key[1], c.n, c.decided, c.merged, wilson(c.merged, c.decided),
                          mean_ci(c.ap_n, c.ap_sum, c.ap_sq), c.ap_provisional)
            for key, c in out.items()}


def compare(conn: Connection, fa: Filters, fb: Filters, *, exclude_provisional: bool = False) -> list[Stratum]:
    """A minus B overall, then adjusted for the task mix (:func:`adjusted_difference`, within task
    types and within task type × repository), then within each task type and each repository both
    sides worked on (so an agent given only the easy tasks does not look better for it)."""
    a = cells(conn, fa, exclude_provisional=exclude_provisional)
    b = cells(conn, fb, exclude_provisional=exclude_provisional)
    total_a, total_b = Cell(), Cell()
    for c in a.values():
        total_a.add(c)
    for c in b.values():
        total_b.add(c)
    out = [_stratum("overall", "all PRs", total_a, total_b)]
    by_type_a, by_type_b = _sum(a.items(), 0), _sum(b.items(), 0)
    for name, pairs in (
            (ADJUSTED_BY_TYPE, [(by_type_a[t], by_type_b[t]) for t in sorted(set(by_type_a) & set(by_type_b))]),
            (ADJUSTED_BY_CELL, [(a[key], b[key]) for key in sorted(set(a) & set(b))])):
        out.append(Stratum("adjusted", name, *(adjusted_difference(pairs, part) for part in
                                                ("merge_rate", "rescue_rate", "agent_performance"))))
    for index, kind in ((0, "task type"), (1, "repository")):
        sa, sb = _sum(a.items(), index), _sum(b.items(), index)
        for name in sorted(set(sa) & set(sb)):
            out.append(_stratum(kind, name, sa[name], sb[name]))
    return out
