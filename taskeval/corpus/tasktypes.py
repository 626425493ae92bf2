"""Task types on the real corpus: taskeval's task type against the one AIDev's authors assigned.

Each AIDev-pop agent folder holds ``gpt_conventional_commits.csv``: a Conventional Commits type
per PR, assigned by the dataset's authors with a language model from the PR's title and
description. taskeval reads only the title's prefix and the labels (the PR's labels are the
net ``labeled``/``unlabeled`` events of ``pr_timelines.csv``; the Devin folder has no timelines),
so it says ``unknown`` where neither names a type. :func:`agreement` compares the two per type:
how often taskeval says anything (coverage) and, where it does, how often it says the same.

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

from taskeval.corpus.aidev import AGENT_FOLDERS, default_data_dir
from taskeval.models import PullFacts
from taskeval.tasktypes import BUILTIN_PREFIXES, TYPES, classify

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


def rows(data_dir: Path | None = None, folders: Iterable[str] = AGENT_FOLDERS) -> Iterator[Row]:
    """Every PR of the dataset's type table, with taskeval's type from its title and labels."""
    root = data_dir or default_data_dir()
    for agent in folders:
        folder = root / agent
        labels = _labels(folder)
        with (folder / GPT_FILE).open(newline="", encoding="utf-8") as f:
            for rec in csv.DictReader(f):
                pr = int(rec["id"])
                got = classify(PullFacts(
                    number=0, title=rec["title"], author="-", labels=list(labels.get(pr, ())), state="closed",
                    created_at="", head_sha="", head_ref="", base_ref="", url=""))
                yield Row(agent, pr, rec["title"], labels.get(pr, ()),
                          DATASET_TYPES.get(rec["type"].strip().lower(), "unknown"), got.type, got.source)


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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
