"""The scoring contract: every band edge, every .5 case, and loud failures on bad input."""

from __future__ import annotations

import pytest

from taskeval import contract
from taskeval.contract import ScoreError, band, blend, overall


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        (0, "failing"), (39, "failing"), (40, "weak"), (59, "weak"), (60, "acceptable"),
        (74, "acceptable"), (75, "strong"), (89, "strong"), (90, "excellent"), (100, "excellent"),
    ],
)
def test_band_edges(score: int, expected: str) -> None:
    assert band(score) == expected


@pytest.mark.parametrize(
    ("det", "ai", "expected"),
    [
        (80, None, 80),  # no AI score: final is the deterministic score
        (0, None, 0),
        (100, 100, 100),
        (0, 0, 0),
        (100, 0, 70),
        (0, 100, 30),
        (80, 90, 83),
        # exact .5 cases round up (Math.round), where Python's round() would go to even
        (85, 80, 84),   # 59.5 + 24 = 83.5 -> 84
        (75, 60, 71),   # 52.5 + 18 = 70.5 -> 71
        (65, 50, 61),   # 45.5 + 15 = 60.5 -> 61
        (55, 40, 51),   # 38.5 + 12 = 50.5 -> 51
        (45, 30, 41),   # 31.5 + 9 = 40.5 -> 41
        (5, 0, 4),      # 3.5 -> 4
        (1, 0, 1),      # 0.7 -> 1
        (1, 1, 1),
        (99, 100, 99),  # 69.3 + 30 = 99.3
        (95, 50, 82),   # 66.5 + 15 = 81.5 -> 82
    ],
)
def test_blend(det: int, ai: int | None, expected: int) -> None:
    assert blend(det, ai) == expected


@pytest.mark.parametrize(
    ("finals", "expected"),
    [
        ({"agentPerformance": 100, "taskOutcomeQuality": 100, "processCompliance": 100}, 100),
        ({"agentPerformance": 0, "taskOutcomeQuality": 0, "processCompliance": 0}, 0),
        # 0.3*80 + 0.45*80 + 0.25*81 = 80.25
        ({"agentPerformance": 80, "taskOutcomeQuality": 80, "processCompliance": 81}, 80),
        # 0.3*81 + 0.45*80 + 0.25*80 = 80.3
        ({"agentPerformance": 81, "taskOutcomeQuality": 80, "processCompliance": 80}, 80),
        # 0.3*75 + 0.45*90 + 0.25*60 = 22.5 + 40.5 + 15 = 78.0
        ({"agentPerformance": 75, "taskOutcomeQuality": 90, "processCompliance": 60}, 78),
        # 0.3*85 + 0.45*80 + 0.25*78 = 25.5 + 36 + 19.5 = 81.0
        ({"agentPerformance": 85, "taskOutcomeQuality": 80, "processCompliance": 78}, 81),
        # .5 exactly: 0.3*95 + 0.45*0 + 0.25*0 = 28.5 -> 29
        ({"agentPerformance": 95, "taskOutcomeQuality": 0, "processCompliance": 0}, 29),
        # 0.3*0 + 0.45*10 + 0.25*0 = 4.5 -> 5
        ({"agentPerformance": 0, "taskOutcomeQuality": 10, "processCompliance": 0}, 5),
        # 0.25*2 = 0.5 -> 1
        ({"agentPerformance": 0, "taskOutcomeQuality": 0, "processCompliance": 2}, 1),
    ],
)
def test_overall(finals: dict[str, int], expected: int) -> None:
    assert overall(finals) == expected


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: blend(101, None), "within 0..100"),
        (lambda: blend(-1, 50), "within 0..100"),
        (lambda: blend(50, 101), "AI score"),
        (lambda: blend(50.5, None), "integer"),  # type: ignore[arg-type]
        (lambda: blend(True, None), "integer"),  # type: ignore[arg-type]
        (lambda: blend("80", None), "integer"),  # type: ignore[arg-type]
        (lambda: band(100.0), "integer"),  # type: ignore[arg-type]
        (lambda: band(-5), "within"),
        (lambda: overall({"agentPerformance": 1, "taskOutcomeQuality": 1}), "missing"),
        (lambda: overall({"agentPerformance": 1, "taskOutcomeQuality": 1, "processCompliance": 1,
                          "speed": 1}), "unknown"),
        (lambda: overall({"agentPerformance": 1, "taskOutcomeQuality": 1,
                          "processCompliance": 200}), "processCompliance"),
    ],
)
def test_bad_input_is_a_clear_error(call, message: str) -> None:
    with pytest.raises(ScoreError, match=message):
        call()


def test_weights_sum_to_one_and_follow_contract_order() -> None:
    assert contract.CATEGORIES == ("agentPerformance", "taskOutcomeQuality", "processCompliance")
    assert [contract.WEIGHTS[c] for c in contract.CATEGORIES] == [0.30, 0.45, 0.25]
    assert abs(sum(contract.WEIGHTS.values()) - 1.0) < 1e-12


def test_every_blend_is_integer_and_within_share() -> None:
    """The AI can move a final score by at most its 30 % share, for every pair of inputs."""
    for det in range(0, 101, 3):
        for ai in range(0, 101, 7):
            final = blend(det, ai)
            assert isinstance(final, int)
            assert abs(final - det) <= round(0.3 * abs(ai - det)) + 1
