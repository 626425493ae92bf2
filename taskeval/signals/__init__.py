"""Deterministic signals: one small pure function per signal, grouped by category.

Each signal reads only the evidence bundle and the settings, measures one real quantity, and maps
it to 0..100 through a documented curve (:mod:`taskeval.signals.curves`) whose parameters live in
``Settings.thresholds``. A signal without data is ``inconclusive``: it is reported, and left out of
its category's mean instead of counting as 0.
"""

from __future__ import annotations

from taskeval.config import Settings
from taskeval.contract import CATEGORIES
from taskeval.models import EvidenceBundle, Signal

from . import agent, outcome, process, rework  # noqa: F401  (registers the signals)
from .base import REGISTRY, Ctx, SignalSpec
from .hygiene import Finding, detect_text_issues

__all__ = [
    "REGISTRY",
    "Finding",
    "SignalSpec",
    "compute_signals",
    "detect_text_issues",
    "signal_specs",
    "unknown_signal_ids",
]


def signal_specs() -> list[SignalSpec]:
    """Every registered signal in the stable output order: by category, then registration."""
    order = {c: n for n, c in enumerate(CATEGORIES)}
    ranked = sorted(enumerate(REGISTRY), key=lambda p: (order[p[1].category], p[0]))
    return [spec for _, spec in ranked]


def compute_signals(bundle: EvidenceBundle, settings: Settings) -> list[Signal]:
    """All enabled signals for one bundle. ``disabled_signals`` and a weight of 0 turn one off."""
    disabled = set(settings.disabled_signals)
    ctx = Ctx(bundle, settings)  # one per bundle: its derived lookups are shared by every signal
    out = []
    for spec in signal_specs():
        if spec.id in disabled or settings.signal_weights.get(spec.id, spec.weight) == 0:
            continue
        out.append(spec.run_in(ctx))
    return out


def unknown_signal_ids(settings: Settings) -> list[str]:
    """Signal ids named in the config that no signal has (likely typos), for a warning."""
    known = {spec.id for spec in REGISTRY}
    named = set(settings.disabled_signals) | set(settings.signal_weights)
    return sorted(named - known)
