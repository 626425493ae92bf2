"""Task types on the real corpus: taskeval's task type against the one AIDev's authors assigned.

Each AIDev-pop agent folder holds ``gpt_conventional_commits.csv``: a Conventional Commits type
per PR, assigned by the dataset's authors with a language model from the PR's title and
description. taskeval reads the title's prefix, the PR's labels (the net ``labeled``/``unlabeled``
events of ``pr_timelines.csv``; the Devin folder has no timelines) and then its linked issues'
labels: the issues collection would read (``evidence.vocabulary.issues_to_read`` of the title
and body) that the data holds, each with the labels the replay serves for it
(``replay.issue_labels``, or a linked PR's own labels), so this is what an evaluation through
the replay gives. It says ``unknown`` where none names a type. :func:`agreement` compares the
two per type: how often taskeval says anything (coverage) and, where it does, how often it says
the same.

``python -m taskeval.corpus.tasktypes [--sample]`` prints the table docs/tasktypes.md shows.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from taskeval.corpus.aidev import AGENT_FOLDERS, Corpus, PullRecord, default_data_dir, load
from taskeval.corpus.replay import issue_labels
from taskeval.evidence.vocabulary import issue_id, issues_to_read
from taskeval.models import PullFacts
from taskeval.tasktypes import BUILTIN_PREFIXES, TYPES, LinkedIssue, classify

GPT_FILE: Final = "gpt_conventional_commits.csv"
# The dataset's Conventional Commits types as taskeval's task types (the built-in prefix table;
# "other" names none).
DATASET_TYPES: Final = {t: BUILTIN_PREFIXES[t] for t in
                        ("feat", "fix", "docs", "refactor", "test", "chore", "build", "perf", "ci", "style")}


@dataclass(frozen=True)
class Row:
    agent: str  # the dataset folder
    id: int
    title: str
    labels: tuple[str, ...]
    dataset: str  # the dataset's type mapped to a task type, "unknown" for "other"
    ours: str
    source: str
    issue_labels: tuple[str, ...] = ()  # the linked issues' labels that named the type, if they did


def _labels(folder: Path) -> dict[int, tuple[str, ...]]:
    """PR id -> its labels at the end of its timeline (labeled, unlabeled in order)."""
    path = folder / "pr_timelines.csv"
    if not path.is_file():
        return {}
    current: dict[int, list[str]] = defaultdict(list)
    with path.open(newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            label, event = row.get("label") or "", row.get("event")
            if not label or event not in ("labeled", "unlabeled"):
                continue
            held = current[int(row["pr_id"])]
            if event == "labeled" and label not in held:
                held.append(label)
            elif event == "unlabeled" and label in held:
                held.remove(label)
    return {pr: tuple(labels) for pr, labels in current.items()}


def _linked(corpus: Corpus, pr: PullRecord, labels: dict[int, tuple[str, ...]]) -> list[LinkedIssue]:
    """The linked issues an evaluation through the replay reads, with the labels it serves."""
    out = []
    for number in issues_to_read(pr.title, pr.body, pr.number, pr.repository):
        other = corpus.pull(pr.repository, number)
        issue = corpus.issue(pr.repository, number) if other is None else None
        if other is not None:
            held = labels.get(other.id, ())
        elif issue is not None:
            held = tuple(issue_labels(issue))
        else:
            continue  # the replay answers 404: not read
        out.append(LinkedIssue(evidence_id=issue_id(number), labels=tuple(sorted(held))))
    return out


def rows(data_dir: Path | None = None, folders: Iterable[str] = AGENT_FOLDERS) -> Iterator[Row]:
    """Every PR of the dataset's type table, with taskeval's type from its title, its labels and
    its linked issues' labels."""
    root = data_dir or default_data_dir()
    corpus = load(root, agents=list(folders))
    labels = {pid: held for agent in folders for pid, held in _labels(root / agent).items()}
    by_id = {p.id: p for p in corpus.prs}
    for agent in folders:
        with (root / agent / GPT_FILE).open(newline="", encoding="utf-8") as f:
            for rec in csv.DictReader(f):
                pr = int(rec["id"])
                record = by_id.get(pr)
                linked = _linked(corpus, record, labels) if record is not None else []
                got = classify(PullFacts(
                    number=0, title=rec["title"], author="-", labels=list(labels.get(pr, ())), state="closed",
                    created_at="", head_sha="", head_ref="", base_ref="", url=""), issues=linked)
                yield Row(agent, pr, rec["title"], labels.get(pr, ()),
                          DATASET_TYPES.get(rec["type"].strip().lower(), "unknown"), got.type, got.source,
                          tuple(got.matched) if got.source == "issue-label" else ())


def in_sample(pr_id: int, per_mille: int = 100) -> bool:
    """A stable pseudo-random tenth of the PRs (``sha256("tasktype-sample:<id>")``), no seed file."""
    digest = hashlib.sha256(f"tasktype-sample:{pr_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 1000 < per_mille


@dataclass
class Agreement:
    """Of the PRs the dataset gives one type: how many taskeval typed, and how many the same."""

    total: int = 0
    said: int = 0  # taskeval named a type (not unknown)
    same: int = 0  # ... and it is the dataset's

    @property
    def coverage(self) -> float:
        return self.said / self.total if self.total else 0.0

    @property
    def precision(self) -> float:
        """Agreement where taskeval named a type."""
        return self.same / self.said if self.said else 0.0


def agreement(found: Iterable[Row]) -> dict[str, Agreement]:
    """Per dataset type (and ``all``), by the types taskeval has."""
    out: dict[str, Agreement] = {t: Agreement() for t in (*TYPES, "unknown", "all")}
    for row in found:
        for key in (row.dataset, "all"):
            cell = out[key]
            cell.total += 1
            if row.ours != "unknown":
                cell.said += 1
                cell.same += row.ours == row.dataset
    return {k: v for k, v in out.items() if v.total}


def table(found: list[Row]) -> str:
    """The agreement table, markdown, with taskeval's own type counts beside it."""
    by_ours: dict[str, int] = defaultdict(int)
    for row in found:
        by_ours[row.ours] += 1
    lines = ["| dataset type | PRs | taskeval typed | coverage | same type where typed | taskeval says this type |",
             "|---|---:|---:|---:|---:|---:|"]
    for kind, cell in agreement(found).items():
        said_it = len(found) if kind == "all" else by_ours.get(kind, 0)
        lines.append(f"| {kind} | {cell.total} | {cell.said} | {cell.coverage:.0%} | "
                     f"{cell.precision:.0%} | {said_it} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=None, help="the AIDev-pop folder")
    parser.add_argument("--sample", action="store_true", help="the fixed tenth the test reads")
    args = parser.parse_args(argv)
    root = args.data or default_data_dir()
    if not (root / AGENT_FOLDERS[0] / GPT_FILE).is_file():
        print(f"no AIDev-pop data at {root} (set TASKEVAL_CORPUS_DIR)")
        return 2
    found = [r for r in rows(root) if not args.sample or in_sample(r.id)]
    print(table(found))
    print()
    print(sources(found))
    return 0


def sources(found: list[Row]) -> str:
    """Where the types came from, and the PRs typed by a linked issue's labels: how often the
    dataset agrees, and which labels did it (the ones to read for false positives)."""
    by_source: dict[str, int] = defaultdict(int)
    for row in found:
        by_source[row.source] += 1
    typed = [r for r in found if r.source == "issue-label"]
    same = sum(r.ours == r.dataset for r in typed)
    used: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in typed:
        for label in r.issue_labels:
            cell = used[(label, r.ours)]
            cell[0] += 1
            cell[1] += r.ours == r.dataset
    lines = [f"sources: {', '.join(f'{k} {v}' for k, v in sorted(by_source.items()))}; "
             f"typed by a linked issue's labels: {len(typed)} of {len(found)}, the dataset's type "
             f"for {same} of them",
             "",
             "| linked issue's label | taskeval type | PRs | dataset agrees |",
             "|---|---|---:|---:|"]
    for (label, kind), (n, agree) in sorted(used.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {label} | {kind} | {n} | {agree} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
