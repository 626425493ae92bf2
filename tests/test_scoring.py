"""Category scoring: weighted means of conclusive signals, neutral 50 with no data, stable output."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from taskeval.config import Settings
from taskeval.contract import CATEGORIES, Category
from taskeval.evidence import build_bundle
from taskeval.models import Signal
from taskeval.raw import RawCollection
from taskeval.scoring import CategoryOutcome, deterministic_scores
from taskeval.signals import compute_signals

from . import builders as b

SETTINGS = Settings()


def sig(
    sid: str, score: int | None, weight: float = 1.0, *, category: Category = "processCompliance",
    evidence: list[str] | None = None,
) -> Signal:
    return Signal(
        id=sid, category=category, name=sid.replace("_", " "),
        status="ok" if score is not None else "inconclusive", value=0 if score is not None else None,
        score=score, weight=weight, reason=f"{sid} reason.", evidence=evidence or [f"pr:{sid}"],
    )


def scores_of(raw: RawCollection, settings: Settings = SETTINGS) -> dict[Category, CategoryOutcome]:
    return deterministic_scores(compute_signals(build_bundle(raw), settings), settings)


@pytest.mark.parametrize(
    ("signals", "expected"),
    [
        ([sig("a", 80), sig("b", 81)], 81),  # 80.5 rounds half up, not to even
        ([sig("a", 100, 3), sig("b", 0, 1)], 75),
        ([sig("a", 100, 1), sig("b", 0, 3)], 25),
        ([sig("a", 90), sig("b", None), sig("c", None)], 90),  # inconclusive is not a zero
        ([sig("a", 70, 2), sig("b", 10, 0)], 70),  # a zero weight is left out
        ([sig("a", 33), sig("b", 33), sig("c", 34)], 33),
        ([sig("a", 1, 1.5), sig("b", 2, 1.5)], 2),  # 1.5 exactly: half up
    ],
)
def test_weighted_mean_of_conclusive_signals(signals: list[Signal], expected: int) -> None:
    out = deterministic_scores(signals, SETTINGS)["processCompliance"]
    assert out.score == expected and out.conclusive


def test_contributions_add_up_to_the_score_and_skip_inconclusive_signals() -> None:
    signals = [sig("a", 100, 3), sig("b", 40, 1), sig("c", None, 2)]
    out = deterministic_scores(signals, SETTINGS)["processCompliance"]
    assert [s.contribution for s in signals] == [75.0, 10.0, 0.0]
    assert sum(s.contribution for s in signals) == out.score


def test_a_category_without_conclusive_signals_is_neutral_and_says_why() -> None:
    signals = [sig("ci_head", None, category="taskOutcomeQuality"),
               sig("claims", None, category="taskOutcomeQuality")]
    out = deterministic_scores(signals, SETTINGS)
    outcome = out["taskOutcomeQuality"]
    assert (outcome.score, outcome.conclusive) == (50, False)
    assert "ci head, claims had no data" in outcome.rationale
    assert "neutral 50" in outcome.rationale
    # a category with no signals at all is neutral too, and says that instead
    assert out["agentPerformance"].score == 50
    assert "no signal is enabled" in out["agentPerformance"].rationale


def test_rationale_names_the_strongest_positive_and_the_biggest_drag() -> None:
    signals = [sig("approval", 90, 2), sig("ci_at_merge", 25, 3), sig("size", 100, 1),
               sig("template", None)]
    text = deterministic_scores(signals, SETTINGS)["processCompliance"].rationale
    assert text.startswith("Process compliance 59 from 3 conclusive signals, 1 inconclusive.")
    assert "Strongest: approval (90)" in text
    assert "biggest drag: ci at merge (25): ci_at_merge reason" in text


@pytest.mark.parametrize(
    ("signals", "fragment"),
    [
        ([sig("a", 100), sig("b", 100, 2)], "Both signals scored 100, led by b (100)"),
        ([sig("a", 100)], "from 1 conclusive signal. The only signal scored 100: a (100)"),
        ([sig("a", 20), sig("b", 10)], "Biggest drag: b (10): b reason; no other signal"),
    ],
)
def test_rationale_edge_cases(signals: list[Signal], fragment: str) -> None:
    assert fragment in deterministic_scores(signals, SETTINGS)["processCompliance"].rationale


def test_evidence_is_the_union_of_conclusive_citations_in_signal_order() -> None:
    signals = [sig("a", 90, evidence=["check:test", "pr:1"]),
               sig("b", 50, evidence=["pr:1", "review:7"]),
               sig("c", None, evidence=["file:x.py"])]
    out = deterministic_scores(signals, SETTINGS)["processCompliance"]
    assert out.evidence == ["check:test", "pr:1", "review:7"]


# --------------------------------------------------------------------------- whole scenarios


def test_claiming_all_tests_pass_with_red_ci_scores_lower_than_with_green_ci() -> None:
    body = "Adds retries with backoff.\n\nAll tests pass."
    green = scores_of(b.merged_agent_pr(body=body))["taskOutcomeQuality"]
    red = scores_of(b.red_ci_at_merge(body=body))["taskOutcomeQuality"]
    assert red.score < green.score
    assert red.score < 60, "red CI plus a false claim is weak at best"
    assert green.score >= 90
    assert '"All tests pass" (test (3.11) fails at the head commit)' in " ".join(
        s.reason for s in compute_signals(build_bundle(b.red_ci_at_merge(body=body)), SETTINGS)
    )


@pytest.mark.parametrize(
    ("worse", "category"),
    [
        (b.red_ci_at_merge, "processCompliance"),
        (b.red_ci_at_merge, "agentPerformance"),
        (b.unresolved_change_request, "processCompliance"),
        (b.leakage_in_body, "agentPerformance"),
        (b.unfilled_template, "processCompliance"),
    ],
)
def test_negative_evidence_pulls_the_category_down(
    worse: Callable[[], RawCollection], category: Category
) -> None:
    assert scores_of(worse())[category].score < scores_of(b.merged_agent_pr())[category].score


def test_a_repo_without_ci_is_not_punished_for_it() -> None:
    out = scores_of(b.no_ci())
    signals = compute_signals(build_bundle(b.no_ci()), SETTINGS)
    ci = [s for s in signals if s.id in ("outcome.ci_head", "process.ci_at_merge")]
    assert all(s.status == "inconclusive" and s.contribution == 0 for s in ci)
    assert all(out[c].conclusive for c in CATEGORIES)
    assert out["taskOutcomeQuality"].score >= 90


@pytest.mark.parametrize(
    "scenario",
    [b.merged_agent_pr, b.red_ci_at_merge, b.fail_then_fix, b.many_commits, b.leakage_in_body],
)
def test_building_and_scoring_twice_is_byte_identical(
    scenario: Callable[[], RawCollection],
) -> None:
    def run() -> str:
        bundle = build_bundle(scenario())
        signals = compute_signals(bundle, SETTINGS)
        outcomes = deterministic_scores(signals, SETTINGS)
        return json.dumps({
            "bundle": bundle.canonical_json(),
            "signals": [s.model_dump(mode="json", by_alias=True) for s in signals],
            "scores": {c: vars(o) for c, o in outcomes.items()},
        }, sort_keys=True)

    assert run() == run()


def test_rescoring_the_stored_bundle_gives_the_same_scores() -> None:
    bundle = build_bundle(b.fail_then_fix())
    stored = type(bundle).model_validate_json(bundle.to_json())
    first = deterministic_scores(compute_signals(bundle, SETTINGS), SETTINGS)
    again = deterministic_scores(compute_signals(stored, SETTINGS), SETTINGS)
    assert first == again


def _reference(signals: list[Signal]) -> tuple[list[float], int]:
    """The contract's arithmetic written out plainly: each signal's points in Decimal, rounded
    to the cent; the category score the sum of the exact points, rounded half up."""
    from decimal import ROUND_HALF_UP, Decimal

    counted = [s for s in signals if s.status == "ok" and s.score is not None and s.weight > 0]
    total = sum((Decimal(str(s.weight)) for s in counted), Decimal(0))
    exact = {id(s): Decimal(str(s.weight)) * Decimal(s.score or 0) / total for s in counted}
    rounded = [float(exact[id(s)].quantize(Decimal("0.01"), ROUND_HALF_UP)) if id(s) in exact else 0.0
               for s in signals]
    return rounded, int(sum(exact.values(), Decimal(0)).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def test_cached_points_give_the_plain_decimal_arithmetic() -> None:
    """Scoring caches each signal's points by weight, score and category total; over many random
    categories (weights with up to two decimals, every score, inconclusive and zero-weight
    signals) the contributions and scores are exactly the plain arithmetic's."""
    import random

    rng = random.Random(7)
    for _ in range(3000):
        signals = [
            sig(f"s{n}", rng.choice([None, 0, 50, 100, rng.randint(0, 100)]),
                rng.choice([0.0, 1.0, 1.5, 2.5, 0.25, round(rng.uniform(0, 10), rng.choice([0, 1, 2]))]))
            for n in range(rng.randint(1, 10))
        ]
        want_contributions, want_score = _reference(signals)
        outcome = deterministic_scores(signals, SETTINGS)["processCompliance"]
        assert [s.contribution for s in signals] == want_contributions
        if outcome.conclusive:
            assert outcome.score == max(0, min(100, want_score))
