"""The reader and the closure against people's labels on repositories they were never tuned on
(benchmarks/heldout_eval.py, docs/validity.md#held-out-by-repository).

The labels (docs/labels/comments*.csv, faults.csv) are always checked for shape; the measurement
needs the AIDev-pop folder (``TASKEVAL_CORPUS_DIR`` or ``../shared/data/aidev-pop-v1``) and skips
without it, saying so, unless ``TASKEVAL_REQUIRE_CORPUS=1`` makes it mandatory. The floors are the
held-out test figures this reader reached when docs/validity.md was written, less about one PR or
unit of slack: a regression guard, not the issue's targets (which it does not all reach yet; the
targets are asserted to stay written down, and the gap is in docs/validity.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import comment_sample as cs
from benchmarks import heldout_eval, train_sample
from tests.waiting import corpus_dir

# (figure, floor): heldout-test against its first labels, reached at 2026.12.5 (docs/validity.md),
# less about one unit or PR of slack.
FLOORS = {
    "commentsMacroF1": 0.40,  # reached 0.419
    "workWrongPrecision": 0.69,  # reached 0.721 (31/43)
    "countsAgainstPrecision": 0.70,  # reached 0.750 (18/24)
    "countsAgainstRecall": 0.43,  # reached 0.462 (18/39)
    "projectNotCounted": 0.80,  # reached 0.829 (29/35)
    "auc": 0.64,  # reached 0.669 [0.54, 0.79]
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


def test_the_held_out_side_is_split_again_and_its_test_part_is_never_fitted_on() -> None:
    every = [r["repository"] for r in cs.read_csv(cs.COMMENT_SAMPLE) + cs.read_csv(cs.FAULT_SAMPLE)]
    parts = {repo: cs.part(repo) for repo in every}
    assert {p for repo, p in parts.items() if cs.side(repo) == "train"} == {"train"}
    assert {p for repo, p in parts.items() if cs.side(repo) == "heldout"} == {"heldout-dev", "heldout-test"}
    assert "heldout-test" not in cs.FIT_PARTS
    # Every later round keeps to its side; round four draws from the fitting side only.
    for rnd in train_sample.ROUNDS.values():
        for path in (rnd.comment_sample, rnd.fault_sample):
            rows = cs.read_csv(path)
            assert rows and all(train_sample.on_side(rnd.side, r["repository"]) for r in rows), path.name
    fit4 = cs.read_csv(train_sample.ROUNDS["fit4"].comment_sample)
    assert {cs.part(r["repository"]) for r in fit4} <= set(cs.FIT_PARTS)


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus_dir("the held-out measurement")
    out = tmp_path_factory.mktemp("faults")
    assert heldout_eval.collect(out, workers=2) == 0
    return out


@pytest.fixture(scope="module")
def figures(collected: Path) -> dict[str, Any]:
    return heldout_eval.report(collected, ("heldout-test", "heldout-test-settled", "heldout-dev", "train"))


def test_the_closure_is_cross_validated_on_every_fitting_side_pr(collected: Path) -> None:
    """closure_cv weighs every fault-labelled PR of the fitting side, by its settled fault, with a
    reader fitted without its repository; its figures are what docs/validity.md gives."""
    from benchmarks import closure_cv

    weighed = closure_cv.weigh(collected, closure_cv.READERS)
    rows = weighed["model"]
    samples = cs.read_csv(cs.FAULT_SAMPLE) + [r for rnd in train_sample.ROUNDS.values()
                                              for r in cs.read_csv(rnd.fault_sample)]
    fitting = {int(r["pr_id"]) for r in samples if cs.part(r["repository"]) in cs.FIT_PARTS}
    labels = heldout_eval.fault_labels("settled")
    assert sorted(f for f, _ in rows) == sorted(labels[pr_id][2] for pr_id in fitting if pr_id in labels)
    found = closure_cv.measure(rows)
    assert found["precision"]["value"] >= 0.85 and found["projectNotCounted"]["value"] >= 0.85, found
    # Read as the labellers read each unit, the same closure finds far more of the agent's failures
    # at the same precision: what it lacks is reading (docs/validity.md).
    ceiling = closure_cv.measure(weighed["labels"])
    assert ceiling["recall"]["value"] >= found["recall"]["value"] + 0.1, (ceiling, found)
    assert ceiling["precision"]["value"] >= 0.9, ceiling


def test_the_heldout_measurement_runs_on_every_labelled_unit_and_pr(figures: dict[str, Any]) -> None:
    held = figures["heldout-test"]
    assert held["inSample"] is False and figures["train"]["inSample"] is True
    assert figures["heldout-dev"]["inSample"] is True  # read and fitted on since the second split
    rounds = [cs.read_csv(cs.COMMENT_SAMPLE)] + [cs.read_csv(r.comment_sample) for r in train_sample.ROUNDS.values()]
    labelled = {r["id"] for rows in rounds for r in rows if cs.part(r["repository"]) == "heldout-test"}
    assert held["comments"]["n"] == len(labelled)
    faults = cs.read_csv(cs.FAULT_SAMPLE) + cs.read_csv(train_sample.ROUNDS["heldout3"].fault_sample)
    assert held["closure"]["missing"] == 0
    # Against the settled labels the same units and PRs are read; a second blind labeller, read as if
    # it were the closure, meets the targets: the labels hold what the targets ask for.
    settled = figures["heldout-test-settled"]
    assert settled["reference"] == "settled" and settled["comments"]["n"] == held["comments"]["n"]
    second = held["secondLabeller"]["closure"]
    assert second["countsAgainstPrecision"]["value"] >= 0.9 and second["projectNotCounted"]["value"] >= 0.9
    assert held["closure"]["prs"] == sum(cs.part(r["repository"]) == "heldout-test" for r in faults)


def test_heldout_floors(figures: dict[str, Any]) -> None:
    held = figures["heldout-test"]
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
    held = figures["heldout-test"]
    assert held["comments"]["macroF1"] >= held["commentsRulesOnly"]["macroF1"]


@pytest.mark.parametrize(("first", "second", "third", "settled"), [
    ("neutral", "neutral", None, "neutral"),  # the first two agree: no third label
    ("change_request", "work_wrong", "work_wrong", "work_wrong"),  # the third sides with the second
    ("change_request", "work_wrong", "change_request", "change_request"),  # ... or with the first
    ("neutral", "approval", "work_wrong", "neutral"),  # three different labels: the first stands
    ("agent", "unclear", None, "agent"),  # no third label yet: the first stands
    ("agent", None, None, "agent"),  # no second label
])
def test_a_settled_label_is_what_two_of_three_labellers_gave(first: str, second: str | None, third: str | None,
                                                             settled: str) -> None:
    assert train_sample.two_of_three(first, second, third) == settled


def test_the_test_parts_second_and_third_labels_cover_it_and_are_well_formed() -> None:
    assert train_sample.check_settling() == []
    test = train_sample.TEST
    for kind in test.kinds:
        ids = set(train_sample.ids_of(test, kind))
        second = cs.read_csv(test.second(kind))
        assert {r["id" if kind == "comments" else "pr_id"] for r in second} == ids
        first_labellers = {r["labeller"] for r in cs.read_csv(cs.COMMENT_LABELS if kind == "comments"
                                                                else cs.FAULT_LABELS)}
        assert not first_labellers & {r["labeller"] for r in second}, "a second label must be another labeller's"
    settled = train_sample.settled("comments")
    assert len(settled) == len(train_sample.ids_of(test, "comments")) > 1000
    # The fitting side is settled apart: none of its units is in the test part's files.
    fit = set(train_sample.ids_of(train_sample.SETTLINGS["fit"], "comments"))
    assert not fit & set(settled)


@pytest.mark.parametrize(("row", "problem"), [
    ("comment:1,neutral,labeller-z", "comment:1 is not a labelled unit of heldout-test"),
    ("{agreed},work_wrong,labeller-z", "needs no third label (the first two agree)"),
    ("{split},bogus,labeller-z", "has unknown verdict 'bogus'"),
    ("{split},neutral,labeller-z\n{split},neutral,labeller-z", "labelled twice"),
])
def test_a_bad_third_label_is_reported(row: str, problem: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    test = train_sample.TEST
    first, second = train_sample.first_labels("comments"), train_sample.second_labels(test, "comments")
    ids = train_sample.ids_of(test, "comments")
    agreed = next(i for i in ids if second.get(i) == first[i])
    split = next(i for i in ids if i in second and second[i] != first[i])
    third = tmp_path / "comments.heldout-test.third.csv"
    third.write_text("id,verdict,labeller\n" + row.format(agreed=agreed, split=split) + "\n", encoding="utf-8")
    real = train_sample.Settling.third
    monkeypatch.setattr(train_sample.Settling, "third",
                        lambda self, kind: third if self is test and kind == "comments" else real(self, kind))
    assert any(problem in p for p in train_sample.check_settling())


def test_the_third_labellers_files_hold_every_split_unit_and_pr(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With no third label yet, ``third --settle heldout-test`` writes one file of units and one of
    closed PRs, each holding exactly those whose first two labels differ, with their text."""
    from taskeval.corpus import aidev

    test = train_sample.TEST
    monkeypatch.setattr(train_sample.Settling, "third", lambda self, kind: tmp_path / f"none.{kind}.csv")
    split = {}
    for kind in test.kinds:
        first, second = train_sample.first_labels(kind), train_sample.second_labels(test, kind)
        split[kind] = [i for i in train_sample.ids_of(test, kind) if i in second and second[i] != first[i]]
    faults = {int(i) for i in split["faults"]}
    units = {int(r["pr_id"]) for r in cs.read_csv(cs.COMMENT_SAMPLE) if r["id"] in set(split["comments"])}
    units |= {int(r["pr_id"]) for rnd in train_sample.ROUNDS.values() for r in cs.read_csv(rnd.comment_sample)
              if r["id"] in set(split["comments"])}
    corpus = aidev.load(corpus_dir("the labellers' files"), ids=faults | units)
    out = tmp_path / "batches"
    out.mkdir()
    written = train_sample.write_third(corpus, test, out)
    assert written == {"heldout-test-third-comments.txt": len(split["comments"]),
                       "heldout-test-third-faults.txt": len(split["faults"])}
    text = (out / "heldout-test-third-faults.txt").read_text(encoding="utf-8")
    assert all(i in text for i in split["faults"])
