"""The scoring contract in numbers: blend, overall score and bands.

These are the only functions allowed to turn category scores into finals. They validate instead of
clamping silently: a score outside 0..100 or a non-integer is a bug upstream and must surface.
Rounding is half up (as the contract's origin, JavaScript's ``Math.round``, does), not Python's
half-to-even ``round``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Final, Literal

Category = Literal["agentPerformance", "taskOutcomeQuality", "processCompliance"]
Band = Literal["failing", "weak", "acceptable", "strong", "excellent"]

CATEGORIES: Final[tuple[Category, ...]] = (
    "agentPerformance",
    "taskOutcomeQuality",
    "processCompliance",
)
WEIGHTS: Final[Mapping[Category, float]] = {
    "agentPerformance": 0.30,
    "taskOutcomeQuality": 0.45,
    "processCompliance": 0.25,
}
# The hidden first line of taskeval's one PR comment; how every adapter finds the comment to update.
COMMENT_MARKER: Final = "<!-- taskeval:evaluation -->"
DETERMINISTIC_SHARE: Final = Decimal("0.7")
AI_SHARE: Final = Decimal("0.3")
# Lower bound of each band, highest first.
BANDS: Final[tuple[tuple[int, Band], ...]] = (
    (90, "excellent"),
    (75, "strong"),
    (60, "acceptable"),
    (40, "weak"),
    (0, "failing"),
)
BAND_NAMES: Final[tuple[Band, ...]] = tuple(name for _floor, name in reversed(BANDS))  # failing .. excellent


class ScoreError(ValueError):
    """A score that breaks the contract (not an integer, or outside 0..100)."""


def validate_score(value: object, what: str = "score") -> int:
    """Return ``value`` if it is an integer in 0..100, else raise :class:`ScoreError`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScoreError(f"{what} must be an integer 0..100, got {value!r}")
    if not 0 <= value <= 100:
        raise ScoreError(f"{what} must be within 0..100, got {value}")
    return value


# Below this share of a category's signal weight conclusive, its band is shown as provisional (the
# comment, the Action outputs and the dashboard say so); the overall likewise, on the categories'
# coverages weighted as the overall weighs them (overall_coverage). Half: a grade that rests on less than half
# of what the category weighs is more guess than measurement. The contract's numbers do not change.
PROVISIONAL_BELOW: Final = 0.5


def is_provisional(coverage: float | None) -> bool:
    """Whether a grade resting on ``coverage`` of its signal weight is provisional: under
    :data:`PROVISIONAL_BELOW`. None (a result stored before coverage existed) is not."""
    return coverage is not None and coverage < PROVISIONAL_BELOW


def overall_coverage(coverages: Mapping[str, float | None]) -> float | None:
    """The share of the overall score's weight that rests on data: each category's coverage
    weighted by its contract weight (0.30 / 0.45 / 0.25), four decimals. None unless all three
    categories have one. Under :data:`PROVISIONAL_BELOW` the overall (the comment's headline, the
    Action's outputs, the dashboard) is provisional, as a category's band is."""
    if any(coverages.get(c) is None for c in CATEGORIES):
        return None
    total = sum(WEIGHTS[c] * float(coverages[c] or 0.0) for c in CATEGORIES)
    return round(total / sum(WEIGHTS.values()), 4)

FAST_ROUNDING = True  # switched off by the tests to compare both ways


def round_half_up(value: Decimal | float) -> int:
    """Round half away from zero for non-negative values (80.5 -> 81), as ``Math.round`` does."""
    if FAST_ROUNDING and type(value) is float and 0.0 <= value < 2.0**52:
        # The same answer without Decimal: str(value) is the shortest text that reads back as
        # value, so it lies on the same side of n + 0.5 (a float) as value itself; and
        # value - floor(value) is exact below 2**52.
        whole = math.floor(value)
        return whole + 1 if value - whole >= 0.5 else whole
    exact = value if type(value) is Decimal else Decimal(str(value))
    return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))



def _clamp(value: Decimal) -> Decimal:
    return max(Decimal(0), min(Decimal(100), value))


def blend(deterministic: int, ai: int | None) -> int:
    """Final category score: ``round(clamp(0.7*det + 0.3*ai, 0, 100))``; no AI score -> deterministic."""
    det = validate_score(deterministic, "deterministic score")
    if ai is None:
        return det
    ai_score = validate_score(ai, "AI score")
    # Decimal keeps 0.7*x + 0.3*y exact, so a true .5 rounds up instead of drifting below it.
    return round_half_up(_clamp(Decimal(det) * DETERMINISTIC_SHARE + Decimal(ai_score) * AI_SHARE))


def overall(finals: Mapping[str, int]) -> int:
    """Overall score: ``round(sum(final * weight))`` over exactly the three contract categories."""
    missing = [c for c in CATEGORIES if c not in finals]
    extra = [c for c in finals if c not in WEIGHTS]
    if missing or extra:
        raise ScoreError(f"overall needs exactly {list(CATEGORIES)}; missing {missing}, unknown {extra}")
    total = sum(
        (Decimal(validate_score(finals[c], f"{c} final score")) * Decimal(str(WEIGHTS[c]))
         for c in CATEGORIES),
        Decimal(0),
    )
    return round_half_up(_clamp(total))


def band(score: int) -> Band:
    """Band name for a validated score."""
    value = validate_score(score)
    for lower, name in BANDS:
        if value >= lower:
            return name
    raise AssertionError("unreachable: BANDS covers 0")  # pragma: no cover
