"""The labelled units of people's words (docs/labels/comments*.csv) with their text, for training
and measuring the reader (taskeval/signals/reader.py).

The text comes from the AIDev-pop folder (TASKEVAL_CORPUS_DIR or ../shared/data/aidev-pop-v1),
unit by unit as benchmarks/comment_sample.py cut them for the labellers; nothing of it is written
anywhere. ``side`` is the repository's side of the held-out split (``comment_sample.side``).
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import comment_sample as cs
from taskeval.corpus import aidev


@dataclass(frozen=True, slots=True)
class LabelledUnit:
    id: str
    pr_id: int
    agent: str
    repository: str
    side: str
    part: str  # train | heldout-dev | heldout-test (comment_sample.part)
    kind: str  # comment | review | body
    role: str  # agent | operator | bot | person
    position: str  # last3 | earlier | after | open
    state: str | None  # a review's state
    text: str
    verdict: str  # the first labeller's


def load_units(data: Path | None = None, sides: tuple[str, ...] = cs.SIDES) -> list[LabelledUnit]:
    """Every labelled unit of ``sides`` with its text, in the sample's order."""
    from benchmarks import train_sample

    rows = cs.read_csv(cs.COMMENT_SAMPLE)
    label_rows = cs.read_csv(cs.COMMENT_LABELS)
    for later in train_sample.ROUNDS.values():  # rounds two (train) and three (held out)
        if later.comment_labels.is_file():
            rows += cs.read_csv(later.comment_sample)
            label_rows += cs.read_csv(later.comment_labels)
    sample = {r["id"]: r for r in rows}
    labels = {r["id"]: r["verdict"] for r in label_rows}
    wanted = {i for i, r in sample.items() if r["side"] in sides}
    corpus = aidev.load(data or aidev.default_data_dir(),
                        ids={int(sample[i]["pr_id"]) for i in wanted})
    states = {f"review:{r.id}": r.state for pr in corpus.prs for r in pr.reviews}
    found: dict[str, LabelledUnit] = {}
    for pr in corpus.prs:
        for u in cs.units_of(pr):
            if u.id in wanted and u.id in labels:
                found[u.id] = LabelledUnit(u.id, u.pr_id, u.agent, u.repository, u.side,
                                           cs.part(u.repository), u.kind, u.role,
                                           u.position, states.get(u.id), u.text, labels[u.id])
    return [found[i] for i in sample if i in found]


def settle(units: list[LabelledUnit], group: str = "heldout-test") -> list[LabelledUnit]:
    """``units`` with the verdicts of ``group``'s units (benchmarks/train_sample.py ``SETTLINGS``)
    replaced by their settled labels: the label two of three blind labellers gave."""
    from dataclasses import replace

    from benchmarks import train_sample

    settled = train_sample.settled("comments", train_sample.SETTLINGS[group])
    return [replace(u, verdict=settled[u.id]) if u.id in settled else u for u in units]


def fitting_units() -> list[LabelledUnit]:
    """The fitting side's units (``train`` and ``heldout-dev`` repositories) with their settled
    labels, as the reader's model is fitted and cross-validated on: never a ``heldout-test`` unit."""
    units = settle([u for u in load_units() if u.part in cs.FIT_PARTS], "fit")
    assert not any(u.part == "heldout-test" for u in units)
    return units


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
