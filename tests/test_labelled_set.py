"""The scorer against people's reading of 438 real agent PRs (docs/labels/, docs/labelling.md).

The labels file (IDs, labels and one-line notes, no PR text) is part of the repository and always
checked; the PRs themselves come from the AIDev-pop folder (``TASKEVAL_CORPUS_DIR`` or
``../shared/data/aidev-pop-v1``), without which the comparison skips, saying so, unless
``TASKEVAL_REQUIRE_CORPUS=1`` (set by ``.ci/run``) makes it mandatory. The floors below are the
issue's targets where the classifier meets them and, where it does not yet, the figure it reached
when docs/validity.md was written, so a change that makes it worse fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from taskeval.corpus import aidev
from taskeval.corpus.labels import (
    CLOSURES,
    LABELS,
    RESCUES,
    SECOND,
    cohen_kappa,
    collect,
    read_labels,
    report,
)
from tests.waiting import corpus_dir

CLOSED_CLASSES = set(CLOSURES)
MERGED_CLASSES = set(RESCUES)


def test_the_labels_file_is_ids_labels_and_notes_only() -> None:
    labels = read_labels(LABELS)
    assert len(labels) >= 400
    assert len({lab.pr_id for lab in labels}) == len(labels)
    for lab in labels:
        assert lab.label in (CLOSED_CLASSES if lab.state == "closed" else MERGED_CLASSES), lab
        assert len(lab.note) <= 200 and "\n" not in lab.note, lab.pr_id
    agents = {lab.agent for lab in labels}
    assert agents == set(aidev.AGENT_FOLDERS)  # stratified by agent ...
    assert {lab.state for lab in labels} == {"closed", "merged"}  # ... and by end state
    second = read_labels(SECOND)
    assert len(second) >= 60 and {s.pr_id for s in second} <= {lab.pr_id for lab in labels}


@pytest.mark.parametrize(("pairs", "kappa"), [
    ([("a", "a"), ("b", "b")], 1.0),
    ([("a", "b"), ("b", "a")], -1.0),
    ([("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")], 0.0),
    ([("a", "a")] * 3, None),  # both raters always say the same one class: chance agreement is 1
])
def test_cohen_kappa(pairs: list[tuple[str, str]], kappa: float | None) -> None:
    assert cohen_kappa(pairs) == kappa




@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    corpus_dir("the labelled-set comparison")
    labels = read_labels(LABELS)
    out = tmp_path_factory.mktemp("labelled")
    assert collect(labels, out, workers=4) == 0
    return report(labels, out, read_labels(SECOND))


def test_every_labelled_pr_was_evaluated(figures: dict[str, Any]) -> None:
    assert not figures["missing"]
    assert figures["closure"]["n"] + figures["rescue"]["n"] == figures["labelled"]


def test_closure_class_against_the_labels(figures: dict[str, Any]) -> None:
    closure = figures["closure"]
    assert closure["accuracy"] >= 0.78, closure["confusion"][:8]
    failure = closure["classes"]["agent_failure"]
    assert failure["precision"] >= 0.85, failure  # a rejection charged to the agent is rarely wrong
    assert failure["recall"] >= 0.5, failure
    for name in ("withdrawn", "unknown", "stale"):
        assert closure["classes"][name]["recall"] >= 0.75, (name, closure["classes"][name])


def test_agent_performance_separates_its_own_failures(figures: dict[str, Any]) -> None:
    own = figures["aucAgentFailure"]
    assert own["auc"] >= 0.75 and own["low"] > 0.5, own
    assert figures["aucAgentFailureAllClosures"]["auc"] >= 0.75


def test_agent_performance_separates_rescued_merges(figures: dict[str, Any]) -> None:
    rescued = figures["aucRescued"]
    assert rescued["auc"] >= 0.75 and rescued["low"] > 0.5, rescued
    assert figures["rescue"]["accuracy"] >= 0.85


def test_the_labellers_agree(figures: dict[str, Any]) -> None:
    assert figures["kappa"]["n"] >= 60 and figures["kappa"]["kappa"] >= 0.8
