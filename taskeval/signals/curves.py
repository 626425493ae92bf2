"""The score curves. Every signal maps its measured quantity to 0..100 through one of these.

All are continuous and monotone in their input, so a small change in evidence moves a score a
little: no step at an arbitrary threshold (the failure mode of hand-rolled ``+25 if x >= 3``).
"""

from __future__ import annotations

from taskeval.contract import round_half_up


def to_score(value: float) -> int:
    """Clamp to 0..100 and round half up, as every stored score is."""
    return round_half_up(min(100.0, max(0.0, value)))


def decay(x: float, half_life: float) -> float:
    """100 at 0, halving every ``half_life``: for counts of bad things (red pushes, leaks)."""
    if half_life <= 0:
        raise ValueError("half_life must be positive")
    factor: float = 0.5 ** (max(0.0, x) / half_life)
    return 100.0 * factor


def saturating(x: float, half: float) -> float:
    """0 at 0, 50 at ``half``, approaching 100: for good things with diminishing returns."""
    if half <= 0:
        raise ValueError("half must be positive")
    factor: float = 0.5 ** (max(0.0, x) / half)
    return 100.0 * (1.0 - factor)


def linear(x: float, full_at: float, zero_at: float) -> float:
    """Piecewise-linear: 100 at ``full_at``, 0 at ``zero_at``, flat beyond both (either order)."""
    if full_at == zero_at:
        raise ValueError("full_at and zero_at must differ")
    t = (x - full_at) / (zero_at - full_at)
    return 100.0 * (1.0 - min(1.0, max(0.0, t)))


def eased_drop(x: float, start: float, end: float, floor: float) -> float:
    """100 up to ``start``, then a quadratic fall to ``floor`` at ``end`` (steepest first).

    Quadratic because review effectiveness falls fastest just past a comfortable size and then
    levels off; the floor keeps a huge change from reading as proof of a bad process.
    """
    if end <= start:
        raise ValueError("end must be greater than start")
    t = min(1.0, max(0.0, (x - start) / (end - start)))
    return floor + (100.0 - floor) * (1.0 - t) ** 2


def coverage(companion: float, subject: float, ratio_half: float, leniency: float) -> float:
    """How well ``companion`` lines (tests, docs) accompany ``subject`` lines (source, API).

    The larger of a saturating curve over the companion/subject ratio and an allowance that
    decays with the subject size: tiny changes need little company, big ones need a real share.
    """
    if subject <= 0:
        raise ValueError("subject must be positive")
    return max(saturating(companion / subject, ratio_half), decay(subject, leniency))
