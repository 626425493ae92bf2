"""The reader and the closure against people's labels on repositories they were never tuned on
(benchmarks/heldout_eval.py, docs/validity.md#held-out-by-repository).

The labels (docs/labels/comments*.csv, faults.csv) are always checked for shape; the measurement
needs the AIDev-pop folder (``TASKEVAL_CORPUS_DIR`` or ``../shared/data/aidev-pop-v1``) and skips
without it, saying so, unless ``TASKEVAL_REQUIRE_CORPUS=1`` makes it mandatory. The floors are the
held-out figures this reader reached when docs/validity.md was written, less about one PR or unit
of slack: a regression guard, not the issue's targets (which it does not all reach yet; the
targets are asserted to stay written down, and the gap is in docs/validity.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks import comment_sample as cs
from benchmarks import heldout_eval
from taskeval.corpus import aidev

# (figure, floor): held out, reached 2026.12.2 (docs/validity.md), less about one unit of slack.
FLOORS = {
    "commentsMacroF1": 0.34,  # reached 0.359
    "workWrongPrecision": 0.47,  # reached 0.522 (12/23)
    "countsAgainstPrecision": 0.76,  # reached 0.800 (20/25)
    "countsAgainstRecall": 0.51,  # reached 0.541 (20/37)
    "projectNotCounted": 0.84,  # reached 0.872 (34/39)
    "auc": 0.80,  # reached 0.820 [0.72, 0.91]
}


def test_the_split_keeps_every_repository_on_one_side() -> None:
    sample = cs.read_csv(cs.COMMENT_SAMPLE) + cs.read_csv(cs.FAULT_SAMPLE)
    sides: dict[str, set[str]] = {}
    for row in sample:
        sides.setdefault(row["repository"], set()).add(row["side"])
        assert row["side"] == cs.side(row["repository"])
    assert all(len(s) == 1 for s in sides.values())


def test_the_targets_are_the_issues() -> None:
    assert heldout_eval.TARGETS == {"countsAgainstPrecision": 0.90, "countsAgainstRecall": 0.75,
                                    "projectNotCounted": 0.90, "auc": 0.85, "workWrongPrecision": 0.85}


@pytest.mark.parametrize(("hits", "n", "low", "high"), [
    (0, 10, 0.0, 0.278), (10, 10, 0.722, 1.0), (5, 10, 0.237, 0.763), (20, 25, 0.609, 0.911),
])
def test_wilson_interval(hits: int, n: int, low: float, high: float) -> None:
    interval = heldout_eval.wilson(hits, n)
    assert interval is not None
    assert interval == pytest.approx((low, high), abs=1e-3)
    assert heldout_eval.wilson(0, 0) is None


def _data_dir() -> Path:
    path = aidev.default_data_dir()
    if not aidev.is_corpus_dir(path):
        message = f"AIDev-pop corpus not found at {path} (set TASKEVAL_CORPUS_DIR); the held-out measurement needs it"
        if os.environ.get("TASKEVAL_REQUIRE_CORPUS") == "1":
            pytest.fail(f"{message}, and TASKEVAL_REQUIRE_CORPUS=1 makes it mandatory", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    _data_dir()
    out = tmp_path_factory.mktemp("faults")
    assert heldout_eval.collect(out, workers=2) == 0
    return heldout_eval.report(out, ("heldout", "train"))


def test_the_heldout_measurement_runs_on_every_labelled_unit_and_pr(figures: dict[str, Any]) -> None:
    held = figures["heldout"]
    assert held["inSample"] is False and figures["train"]["inSample"] is True
    labelled = {r["id"] for r in cs.read_csv(cs.COMMENT_SAMPLE) if r["side"] == "heldout"}
    assert held["comments"]["n"] == len(labelled)
    assert held["closure"]["missing"] == 0 and held["closure"]["prs"] == 210


def test_heldout_floors(figures: dict[str, Any]) -> None:
    held = figures["heldout"]
    comments, closure = held["comments"], held["closure"]
    reached = {
        "commentsMacroF1": comments["macroF1"],
        "workWrongPrecision": comments["classes"]["work_wrong"]["precision"]["value"],
        "countsAgainstPrecision": closure["countsAgainstPrecision"]["value"],
        "countsAgainstRecall": closure["countsAgainstRecall"]["value"],
        "projectNotCounted": closure["projectNotCounted"]["value"],
        "auc": closure["auc"]["value"],
    }
    assert {k: v for k, v in reached.items() if v is None or v < FLOORS[k]} == {}, reached


def test_the_reader_with_its_model_reads_heldout_words_no_worse_than_the_rules_alone(
        figures: dict[str, Any]) -> None:
    held = figures["heldout"]
    assert held["comments"]["macroF1"] >= held["commentsRulesOnly"]["macroF1"]
