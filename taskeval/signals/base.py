"""The registry of signals and the decorator that registers one.

A signal is a small pure function of the bundle and the settings. It is written as
``measure(ctx) -> Measure`` and registered with :func:`signal`, which turns it into the
``(bundle, settings) -> Signal`` function the registry holds, filling id, category, weight and
``reads`` and mapping cited IDs onto the bundle (an ID capped out of its group becomes the PR item,
so every citation resolves).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple

from taskeval.config import Settings
from taskeval.contract import Category
from taskeval.models import (
    EvidenceBundle,
    Signal,
)

from .context import Ctx
from .curves import to_score

SignalFunc = Callable[[EvidenceBundle, Settings], Signal]


class Measure(NamedTuple):
    """What a signal found, before the registry dresses it as a :class:`Signal` (a named tuple:
    every signal of every bundle makes one, and a frozen dataclass costs several times more)."""

    status: Literal["ok", "inconclusive"]
    reason: str
    value: float | None = None
    score: int | None = None
    evidence: tuple[str, ...] = ()


def ok(value: float, score: float, reason: str, evidence: Iterable[str] = ()) -> Measure:
    value = float(value)
    # Most values are counts: a whole number is its own rounding, and round() is slow.
    return Measure("ok", reason, value if value.is_integer() else round(value, 4), to_score(score),
                   tuple(evidence))


def inconclusive(reason: str, evidence: Iterable[str] = (), value: float | None = None) -> Measure:
    return Measure("inconclusive", reason, value, None, tuple(evidence))


@dataclass(frozen=True)
class SignalSpec:
    id: str
    category: Category
    name: str
    weight: float
    reads: tuple[str, ...]
    run: SignalFunc
    # The same signal over a context shared by every signal of one bundle (its lazy lookups are
    # computed once per bundle, not once per signal): what :func:`compute_signals` calls.
    run_in: Callable[[Ctx], Signal]


REGISTRY: list[SignalSpec] = []


def signal(
    id: str, category: Category, name: str, weight: float, reads: Iterable[str]
) -> Callable[[Callable[[Ctx], Measure]], SignalFunc]:
    """Register ``measure`` as signal ``id``; returns the ``(bundle, settings) -> Signal`` form."""
    reads_t = tuple(reads)

    def wrap(measure: Callable[[Ctx], Measure]) -> SignalFunc:
        def run_in(ctx: Ctx) -> Signal:
            found = measure(ctx)
            return Signal.model_validate({
                "id": id, "category": category, "name": name, "status": found.status,
                "value": found.value, "score": found.score,
                "weight": ctx.settings.signal_weights.get(id, weight), "reason": found.reason,
                "evidence": ctx.cite(found.evidence), "reads": list(reads_t),
            })

        @functools.wraps(measure)
        def run(bundle: EvidenceBundle, settings: Settings) -> Signal:
            return run_in(Ctx(bundle, settings))

        if any(spec.id == id for spec in REGISTRY):
            raise ValueError(f"signal {id} registered twice")
        REGISTRY.append(SignalSpec(id, category, name, weight, reads_t, run, run_in))
        return run

    return wrap


