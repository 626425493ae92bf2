"""Deterministic signals: one small pure function per signal, grouped by category.

Each signal reads only the evidence bundle and the settings, measures one real quantity, and maps
it to 0..100 through a documented curve (:mod:`taskeval.signals.curves`) whose parameters live in
``Settings.thresholds``. A signal without data is ``inconclusive``: it is reported, and left out of
its category's mean instead of counting as 0.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from pydantic import TypeAdapter, ValidationError

from taskeval import SCORER_VERSION
from taskeval.config import THRESHOLD_OWNERS, Settings
from taskeval.contract import CATEGORIES
from taskeval.memo import by_identity
from taskeval.models import Closure, EvidenceBundle, Rescue, Signal, Turns

from . import agent, outcome, process, rework  # noqa: F401  (registers the signals)
from .base import REGISTRY, SignalSpec
from .closure import closure_of, rescue_of
from .context import Ctx
from .hygiene import Finding, detect_text_issues
from .turns import turns_of

__all__ = [
    "ATTRIBUTION_READS",
    "READERS",
    "REGISTRY",
    "Account",
    "Ctx",
    "Finding",
    "SignalSpec",
    "Stale",
    "account_of",
    "compute_signals",
    "detect_text_issues",
    "kept_signals",
    "signal_specs",
    "stale_signals",
    "unknown_signal_ids",
]


def signal_specs() -> list[SignalSpec]:
    """Every registered signal in the stable output order: by category, then registration."""
    return list(_ordered(len(REGISTRY)))


@functools.lru_cache(maxsize=4)
def _ordered(registered: int) -> tuple[SignalSpec, ...]:
    del registered  # the cache key: the order is computed again if a signal is registered
    order = {c: n for n, c in enumerate(CATEGORIES)}
    ranked = sorted(enumerate(REGISTRY), key=lambda p: (order[p[1].category], p[0]))
    return tuple(spec for _, spec in ranked)


class Account(NamedTuple):
    """A PR's life as the result tells it: the turns, and why it ended (closure or rescue)."""

    turns: Turns | None
    closure: Closure | None
    rescue: Rescue | None


def account_of(ctx: Ctx) -> Account:
    """The turns, closure and rescue of the bundle ``ctx`` holds (pure, like every signal)."""
    return Account(turns_of(ctx), closure_of(ctx), rescue_of(ctx))


def compute_signals(
    bundle: EvidenceBundle, settings: Settings, kept: Mapping[str, Mapping[str, Any]] | None = None,
    ctx: Ctx | None = None,
) -> list[Signal]:
    """All enabled signals for one bundle (:func:`_enabled`).

    ``kept``: a stored result's signals, by id, that still hold (:func:`stale_signals`); each is
    used as stored, with the weight the settings give it now, instead of being measured again.
    ``ctx``: the bundle's context when the caller has one (its derived lookups are shared)."""

    def measure(spec: SignalSpec) -> Signal:
        nonlocal ctx
        if ctx is None:
            ctx = Ctx(bundle, settings)
        return spec.run_in(ctx)

    return _with_weights(_enabled(settings), _validated(kept) if kept else {}, measure)


def kept_signals(settings: Settings, kept: Mapping[str, Mapping[str, Any]]) -> list[Signal] | None:
    """:func:`compute_signals` when every enabled signal is among ``kept`` and validates (nothing
    to measure, so no bundle is needed); None when one would have to be measured."""
    enabled = _enabled(settings)
    if any(spec.id not in kept for spec, _ in enabled):
        return None  # known before validating any
    ready = _validated(kept)
    if any(spec.id not in ready for spec, _ in enabled):
        return None
    return _with_weights(enabled, ready, _never)


def _never(spec: SignalSpec) -> Signal:
    raise AssertionError(f"{spec.id} was to be kept")


def _enabled(settings: Settings) -> tuple[tuple[SignalSpec, float], ...]:
    """Every enabled signal in output order, with its weight: ``disabled_signals`` and a weight
    of 0 turn one off."""
    return _enabled_of(settings, len(REGISTRY))


@by_identity  # a batch asks for the same settings for every file
def _enabled_of(settings: Settings, registered: int) -> tuple[tuple[SignalSpec, float], ...]:
    disabled = set(settings.disabled_signals)
    specs = ((spec, settings.signal_weights.get(spec.id, spec.weight)) for spec in _ordered(registered))
    return tuple((spec, weight) for spec, weight in specs if spec.id not in disabled and weight != 0)


def _with_weights(
    enabled: tuple[tuple[SignalSpec, float], ...], ready: Mapping[str, Signal], measure: Callable[[SignalSpec], Signal],
) -> list[Signal]:
    """The ready signals with today's weights; the others measured."""
    out = []
    for spec, weight in enabled:
        stored = ready.get(spec.id)
        if stored is None:
            out.append(measure(spec))
            continue
        if stored.weight != weight:
            stored.weight = float(weight)
        out.append(stored)  # its contribution is set again by scoring
    return out


_SIGNALS = TypeAdapter(list[Signal])


def _validated(kept: Mapping[str, Mapping[str, Any]]) -> dict[str, Signal]:
    """Stored signals as models, by id; one that does not validate (edited or damaged) is left
    out, so it is measured again. All in one call when all validate (nearly always; about 5 % of a
    kept re-score), one by one only to find which did not."""
    try:
        return {s.id: s for s in _SIGNALS.validate_python(list(kept.values()))}
    except ValidationError:
        pass
    out = {}
    for stored in kept.values():
        try:
            signal = Signal.model_validate(stored)
        except ValidationError:
            continue
        out[signal.id] = signal
    return out


# What a signal can read of the settings is the patterns, the agents table and the thresholds
# (tests/test_rescore_keep.py records it); the rest only weighs signals, turns them off, or
# concerns the AI judge.
# The signals that read each pattern and the agents table (each threshold has one reader,
# config.THRESHOLD_OWNERS). Accounts decide who is another person, a bot or an agent, and through
# attribution what the PR's agent writes by design; file globs decide what is a test, a doc or
# ignored. tests/test_rescore_keep.py records what every signal and attribution read against it.
_ACCOUNTS = frozenset({
    "agent.admitted_failures", "agent.feedback_addressed", "agent.force_pushes",
    "agent.human_intervention", "agent.idle_gaps", "agent.objections", "agent.rejection",
    "agent.restarts", "agent.review_rounds", "agent.text_hygiene", "outcome.post_approval_changes",
    "process.change_requests", "process.conventional_commits", "process.human_approval",
    "process.template_filled",
})
_FILE_CLASSES = frozenset({"outcome.claims", "outcome.test_evidence", "process.change_size",
                           "process.docs_with_surface"})
READERS: dict[str, frozenset[str]] = {
    "patterns.test_paths": _FILE_CLASSES,
    "patterns.doc_paths": _FILE_CLASSES,
    "patterns.ignore_paths": _FILE_CLASSES,
    "patterns.public_surface_paths": frozenset({"process.docs_with_surface"}),
    "patterns.commit_convention": frozenset({"process.conventional_commits"}),
    "patterns.task_trailers": frozenset({"process.task_reference"}),
    "patterns.task_id_pattern": frozenset({"process.task_reference"}),
    "patterns.bot_logins": _ACCOUNTS,
    "patterns.agent_logins": _ACCOUNTS,
    "agents": _ACCOUNTS,
}
# What attribution (a stored result's agent) reads of the settings.
ATTRIBUTION_READS = frozenset({"patterns.bot_logins", "patterns.agent_logins", "agents"})


class Stale(NamedTuple):
    """What a change of settings makes a stored result measure again."""

    signals: frozenset[str]  # the ids of the signals to measure again
    attribution: bool  # the agent to attribute again


_NOTHING = Stale(frozenset(), False)


def stale_signals(stored_version: object, stored: Settings, now: Settings) -> Stale | None:
    """What a stored result must measure again when it is re-scored under ``now``: None for
    everything, else the signals (and whether the attribution) that a changed setting feeds. A
    stored signal is kept only when it was measured by this very scorer (same
    ``SCORER_VERSION``: a change to any signal's output changes it, as tests/test_rescore_keep.py
    enforces) under settings that agree with ``now`` on everything it reads; it is then what
    measuring again would give, byte for byte. So a change of weights (what ``taskeval
    calibrate`` suggests) re-scores a history without measuring anything again, and a change of
    one threshold or one pattern measures only the signals that read it."""
    if stored_version != SCORER_VERSION:
        return None
    return _NOTHING if stored is now else _stale(stored, now)


@by_identity  # a batch compares the same two configs for every file
def _stale(stored: Settings, now: Settings) -> Stale | None:
    changed = [f"patterns.{name}" for name in type(now.patterns).model_fields
               if getattr(stored.patterns, name) != getattr(now.patterns, name)]
    changed += ["agents"] if stored.agents != now.agents else []
    if any(name not in READERS for name in changed):
        return None
    ids = {sid for name in changed for sid in READERS[name]}
    for name in type(now.thresholds).model_fields:
        if getattr(stored.thresholds, name) != getattr(now.thresholds, name):
            owner = THRESHOLD_OWNERS[name]
            if owner is None:
                return None
            ids.add(owner)
    return Stale(frozenset(ids), any(name in ATTRIBUTION_READS for name in changed))


def unknown_signal_ids(settings: Settings) -> list[str]:
    """Signal ids named in the config that no signal has (likely typos), for a warning."""
    known = {spec.id for spec in REGISTRY}
    named = set(settings.disabled_signals) | set(settings.signal_weights)
    return sorted(named - known)
