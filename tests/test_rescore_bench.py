"""The re-scoring benchmark itself: chunks add up, and a byte that differs is counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import rescore_bench
from benchmarks.rescore_bench import Store, Stored, run, run_file


def test_chunks_add_up_to_the_count_and_rescores_match() -> None:
    report = run(5, seed=2, chunk=2, mode="thresholds")
    assert (report.count, len(report.per_bundle), len(report.sizes), report.mismatches) == (5, 5, 5, 0)
    assert report.cpu_seconds > 0


def test_a_rescore_that_differs_from_scoring_from_scratch_is_a_mismatch(monkeypatch: pytest.MonkeyPatch) -> None:
    real = Store.__call__

    def off_by_a_byte(self: Store, *args: object) -> Stored:
        stored = real(self, *args)  # type: ignore[arg-type]
        return Stored(stored.path, stored.scored + " ")

    monkeypatch.setattr(Store, "__call__", off_by_a_byte)
    assert run(3, seed=2, mode="weights").mismatches == 3


def test_copies_of_one_file_are_each_compared() -> None:
    example = Path(rescore_bench.__file__).resolve().parents[1] / "examples" / "agent-pr-482.result.json"
    report = run_file(example, 3, "weights")
    assert (report.count, report.mismatches) == (3, 0)
