"""The one rule by which taskeval ranks groups of PRs (agents or authors): the read API's
``/api/leaderboard`` and the dashboard's overview both rank with :func:`rank`, so the same data
gets the same ranks wherever it is read.

* Each group's mean overall score has a 95 % interval, ``mean ± t(n-1) · s / √n`` (Student's t,
  so a small group gets the wide interval it deserves), kept within the 0–100 scale.
* A group's rank is one more than the number of groups whose whole interval lies above its own.
  Groups the data cannot tell apart share a rank (shown "=2"); ranks are not a strict 1, 2, 3.
* Groups whose mean rests on fewer than :data:`SMALL_SAMPLE` PRs, groups without an interval and
  the PRs where no agent was found (``human``, ``unknown-bot``, results stored before attribution)
  get no rank; nor does a group with no other to be ranked against ("rank 1" of one says nothing).
* Order: ranked groups by rank, then mean (highest first), then PR count, then key; then the
  unranked groups by the same keys; the no-agent groups last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

SMALL_SAMPLE: Final = 10  # a mean over fewer PRs is shown, marked, and not ranked

# Two-sided 95 % Student t quantiles by degrees of freedom; 1.96 beyond the table.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
        18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
        26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042}


def t95(df: int) -> float:
    if df in _T95:
        return _T95[df]
    if df <= 40:
        return 2.021
    if df <= 60:
        return 2.000
    if df <= 120:
        return 1.980
    return 1.960


@dataclass
class Mean:
    """A mean with its 95 % interval (``None`` when fewer than two values)."""

    mean: float | None
    low: float | None = None
    high: float | None = None

    @property
    def half_width(self) -> float | None:
        return None if self.mean is None or self.high is None else self.high - self.mean


def mean_ci(n: int, total: float | None, squares: float | None) -> Mean:
    """Mean and 95 % interval (within 0–100) from COUNT, SUM(x) and SUM(x·x)."""
    if not n or total is None:
        return Mean(None)
    mean = float(total) / n
    if n < 2 or squares is None:
        return Mean(mean)
    variance = max(0.0, (float(squares) / n - mean * mean) * n / (n - 1))
    half = t95(n - 1) * math.sqrt(variance / n)
    return Mean(mean, max(0.0, mean - half), min(100.0, mean + half))


@dataclass
class Standing:
    """One group as the rule sees it; :func:`rank` fills ``rank`` and ``tied``. ``item`` is the
    caller's own row (a dashboard group, an API entry), carried along."""

    key: str
    overall: Mean
    rests_on: int  # PRs the overall mean rests on
    count: int  # PRs in the group (the order's tie-break)
    no_agent: bool = False
    item: Any = None
    rank: int | None = None
    tied: bool = False

    @property
    def small(self) -> bool:
        return self.rests_on < SMALL_SAMPLE

    @property
    def rankable(self) -> bool:
        return not self.small and not self.no_agent and self.overall.low is not None \
            and self.overall.high is not None


def rank(standings: Sequence[Standing]) -> list[Standing]:
    """Fill in each standing's rank (None where unranked) and whether it is shared; return them in
    display order (see the module's rule)."""
    ranked = [s for s in standings if s.rankable]
    for s in standings:
        s.rank, s.tied = None, False
    if len(ranked) < 2:
        ranked = []  # nothing to rank it against
    for s in ranked:
        above = [o for o in ranked if o is not s and (o.overall.low or 0.0) > (s.overall.high or 0.0)]
        s.rank = 1 + len(above)
    for s in ranked:
        s.tied = sum(o.rank == s.rank for o in ranked) > 1
    return sorted(standings, key=lambda s: (s.no_agent, s.rank is None, s.rank or 0,
                                            -(s.overall.mean if s.overall.mean is not None else -1.0),
                                            -s.count, s.key))
