"""Signals -> deterministic category scores.

Each category's score is the weighted mean of its conclusive signals. Inconclusive signals (no
data) are left out rather than counted as 0; a category with no conclusive signal gets a neutral
50, marked not conclusive, and says so. Arithmetic is in :class:`~decimal.Decimal` and rounds half
up through :func:`taskeval.contract.round_half_up`, so re-scoring a bundle is byte-identical.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple

from taskeval.config import Settings
from taskeval.contract import CATEGORIES, Category, round_half_up
from taskeval.models import Signal
from taskeval.signals.wording import all_of, plural, sentence

NEUTRAL_SCORE = 50
_CATEGORY_NAMES: dict[Category, str] = {
    "agentPerformance": "agent performance",
    "taskOutcomeQuality": "task outcome quality",
    "processCompliance": "process compliance",
}


@dataclass(frozen=True)
class CategoryOutcome:
    score: int
    conclusive: bool
    rationale: str
    evidence: list[str]


_SCORES = [Decimal(n) for n in range(101)]
_CENT = Decimal("0.01")


@functools.lru_cache(maxsize=256)
def _decimal(weight: float) -> Decimal:
    """A weight as the decimal it is written as (2.5, not 2.5's binary expansion)."""
    return Decimal(str(weight))


@functools.lru_cache(maxsize=1024)
def _total(weights: tuple[float, ...]) -> Decimal:
    return sum(map(_decimal, weights), Decimal(0))


@functools.lru_cache(maxsize=8192)
def _points(weight: float, score: int, total: Decimal) -> tuple[Decimal, float]:
    """A signal's weighted points in its category, and the same rounded to the cent. A history
    re-scored under one config repeats a few weights, totals and scores; Decimal division is the
    costly part of scoring a bundle whose signals were kept."""
    exact = _decimal(weight) * _SCORES[score] / total
    return exact, float(exact.quantize(_CENT, ROUND_HALF_UP))


def _counted(s: Signal) -> bool:
    return s.status == "ok" and s.score is not None and s.weight > 0


def _evidence(signals: list[Signal]) -> list[str]:
    """Every cited ID once, in first-cited order."""
    return list(dict.fromkeys(e for s in signals for e in s.evidence))


def _clause(s: Signal) -> str:
    reason = s.reason.rstrip(".")
    return f"{s.name} ({s.score}): {reason[:1].lower()}{reason[1:]}" if reason else s.name


def _rationale(category: Category, score: int, counted: list[Signal], skipped: int) -> str:
    """Two sentences: what the score rests on, then the strongest positive and the biggest drag."""
    label = _CATEGORY_NAMES[category]
    tail = f", {skipped} inconclusive" if skipped else ""
    title = f"{label[:1].upper()}{label[1:]}"
    head = f"{title} {score} from {plural(len(counted), 'conclusive signal')}{tail}."
    # The drag is the signal that lost the most weighted points against a perfect 100; the
    # strongest positive gained the most weighted points above the neutral 50.
    losers = [s for s in counted if (s.score or 0) < 100]
    drag = max(losers, key=lambda s: (100 - (s.score or 0)) * s.weight, default=None)
    gainers = [s for s in counted if (s.score or 0) > NEUTRAL_SCORE and s is not drag]
    best = max(gainers, key=lambda s: ((s.score or 0) - NEUTRAL_SCORE) * s.weight, default=None)
    if drag is None:
        top = max(counted, key=lambda s: s.weight)
        if len(counted) == 1:
            return f"{head} The only signal scored 100: {_clause(top)}."
        return f"{head} {sentence(all_of(len(counted), 'signal'))} scored 100, led by {_clause(top)}."
    if best is None:
        return f"{head} Biggest drag: {_clause(drag)}; no other signal scored above 50."
    return f"{head} Strongest: {_clause(best)}; biggest drag: {_clause(drag)}."


def deterministic_scores(
    signals: list[Signal], settings: Settings
) -> dict[Category, CategoryOutcome]:
    """Weighted mean of conclusive signals per category; fills each signal's ``contribution``.

    ``settings`` is accepted for symmetry with :func:`taskeval.signals.compute_signals` (weights
    are already on the signals, so a stored signal list re-scores the same way).
    """
    del settings
    out: dict[Category, CategoryOutcome] = {}
    by_category: dict[Category, list[Signal]] = {c: [] for c in CATEGORIES}
    for s in signals:
        by_category[s.category].append(s)
    for category, mine in by_category.items():
        counted = [s for s in mine if _counted(s)]
        skipped = [s for s in mine if s.status != "ok"]
        points: dict[int, tuple[Decimal, float]] = {}
        if counted:
            total = _total(tuple(s.weight for s in counted))
            points = {id(s): _points(s.weight, s.score or 0, total) for s in counted}
        for s in mine:
            p = points.get(id(s))
            s.contribution = 0.0 if p is None else p[1]
        if not counted:
            why = (", ".join(s.name for s in skipped) + " had no data") if skipped else (
                "no signal is enabled for it")
            out[category] = CategoryOutcome(
                score=NEUTRAL_SCORE,
                conclusive=False,
                rationale=(f"No conclusive signal for {_CATEGORY_NAMES[category]} ({why}), so it "
                           f"gets a neutral {NEUTRAL_SCORE}."),
                evidence=_evidence(mine),
            )
            continue
        score = round_half_up(sum((p[0] for p in points.values()), Decimal(0)))
        out[category] = CategoryOutcome(
            score=max(0, min(100, score)),
            conclusive=True,
            rationale=_rationale(category, score, counted, len(skipped)),
            evidence=_evidence(counted),
        )
    return out


class Coverage(NamedTuple):
    """How sure a category's score is (contract.PROVISIONAL_BELOW)."""

    share: float  # of its enabled signals' weight that was conclusive, 0..1, four decimals
    conclusive: int
    total: int


def coverage(category: Category, signals: list[Signal]) -> Coverage:
    """The share of a category's enabled signals' weight that was conclusive, and how many of
    its signals were: a score from 1 of 6 signals says less than one from 6 of 6."""
    mine = [s for s in signals if s.category == category and s.weight > 0]
    total = _total(tuple(s.weight for s in mine)) if mine else Decimal(0)
    conclusive = [s for s in mine if _counted(s)]
    share = (_total(tuple(s.weight for s in conclusive)) / total) if total and conclusive else Decimal(0)
    return Coverage(float(share.quantize(Decimal("0.0001"), ROUND_HALF_UP)), len(conclusive), len(mine))
