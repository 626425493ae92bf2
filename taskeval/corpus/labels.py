"""The labelled set (docs/labels/, docs/labelling.md): people's reading of real agent PRs, and the
scorer compared with it.

``collect`` evaluates the labelled PRs through the real pipeline over the AIDev-pop replay (AI off)
and stores one result per PR; ``report`` re-scores those results with this scorer (every signal
measured again) and compares them with the labels: the closure class per class and overall,
``agentPerformance`` separating closures for the agent's own failure from the others (AUC with a
bootstrap interval), rescued merges from clean ones, the rescue class, and Cohen's kappa between two
labellers. ``benchmarks/labelled_set.py`` is its command line; tests/test_labelled_set.py holds the
scorer to it.
"""

from __future__ import annotations

import csv
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taskeval import models
from taskeval.corpus import aidev
from taskeval.corpus.evaluate import as_json, client, evaluate
from taskeval.corpus.replay import serving
from taskeval.pipeline import Options, rescore
from taskeval.validity import auc, bootstrap_auc

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "docs" / "labels" / "aidev-pop-v1.csv"
SECOND = ROOT / "docs" / "labels" / "aidev-pop-v1.second.csv"
CLOSURES = ("agent_failure", "superseded", "duplicate", "stale", "declined", "withdrawn", "unknown")
RESCUES = ("clean", "feedback_loop", "taken_over")
PROJECT_REASONS: frozenset[str] = frozenset(models.PROJECT_REASONS)


@dataclass(frozen=True)
class Label:
    agent: str
    pr_id: int
    repository: str
    number: int
    state: str
    label: str
    note: str

    @property
    def stem(self) -> str:
        owner, name = self.repository.split("/", 1)
        return f"{owner}__{name}__{self.number}"


def read_labels(path: Path) -> list[Label]:
    with path.open(encoding="utf-8", newline="") as f:
        return [Label(r["agent"], int(r["pr_id"]), r["repository"], int(r["number"]), r["state"],
                      r["label"].strip(), r.get("note", "")) for r in csv.DictReader(f)]


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' labels on the same items (None when chance agreement is 1)."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    chance = sum(first[k] * second[k] for k in set(first) | set(second)) / (n * n)
    return None if chance == 1 else (observed - chance) / (1 - chance)


def collect(labels: Iterable[Label], out: Path, workers: int = 4) -> int:
    data = aidev.default_data_dir()
    wanted = list(labels)
    corpus = aidev.load(data, ids={lab.pr_id for lab in wanted})
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    with serving(corpus) as replay:
        gh = client(replay.url)

        def one(pr: aidev.PullRecord) -> str | None:
            path = out / f"{pr.file_stem}.json"
            try:
                path.write_text(json.dumps(as_json(evaluate(gh, pr)), indent=2), encoding="utf-8")
            except Exception as exc:
                return f"{pr.ref}: {exc}"
            return None

        with ThreadPoolExecutor(workers) as pool:
            for problem in pool.map(one, corpus.prs):
                if problem:
                    failed += 1
                    print(problem, file=sys.stderr)
    print(f"collected {len(corpus.prs) - failed} of {len(wanted)} labelled PRs into {out}")
    return 1 if failed else 0


def rescored(path: Path) -> dict[str, Any]:
    """A stored result re-scored with this tree's scorer (AI off, no stored signal kept), as JSON."""
    data: dict[str, Any] = json.loads(rescore(path, Options(ai="off", env={}, keep_signals=False)).json())
    return data


def category_score(result: dict[str, Any], name: str) -> int:
    """A result's deterministic score of category ``name``."""
    return int(next(c["deterministicScore"] for c in result["categoryScores"] if c["category"] == name))


def _auc(pairs: list[tuple[float, bool]]) -> dict[str, Any]:
    if not pairs or all(b for _, b in pairs) or not any(b for _, b in pairs):
        return {"n": len(pairs), "auc": None}
    scores, bad = [s for s, _ in pairs], [b for _, b in pairs]
    interval = bootstrap_auc(scores, bad, rounds=1000)
    low, high = interval if interval else (None, None)
    return {"n": len(pairs), "bad": sum(bad), "auc": auc(scores, bad), "low": low, "high": high}


def _classes(rows: list[tuple[str, str]], names: Sequence[str]) -> dict[str, Any]:
    per = {}
    for k in names:
        predicted = sum(p == k for _, p in rows)
        actual = sum(a == k for a, _ in rows)
        hit = sum(a == k and p == k for a, p in rows)
        per[k] = {"labelled": actual, "predicted": predicted, "right": hit,
                  "precision": hit / predicted if predicted else None,
                  "recall": hit / actual if actual else None}
    right = sum(a == p for a, p in rows)
    return {"n": len(rows), "accuracy": right / len(rows) if rows else None, "classes": per,
            "confusion": Counter(f"{a}->{p}" for a, p in rows if a != p).most_common()}


def halves(labels: list[Label]) -> dict[str, list[Label]]:
    """The set as drawn (docs/labelling.md) was read in four interleaved shards; the classifier's
    phrase tables were tuned on the errors of the first two only, so the last two are held out."""
    return {"tuned on (shards 1-2)": [lab for n, lab in enumerate(labels) if n % 4 in (0, 1)],
            "held out (shards 3-4)": [lab for n, lab in enumerate(labels) if n % 4 in (2, 3)]}


@dataclass(frozen=True)
class Scored:
    """One labelled PR as this scorer sees it: its label, the class it gave, agentPerformance."""

    label: Label
    got: str  # the closure class of a closed PR, the rescue class of a merged one ("none": neither)
    score: float  # deterministic agentPerformance


def score_all(labels: Iterable[Label], results: Path) -> tuple[list[Scored], list[str]]:
    """Each labelled PR's stored result re-scored with this scorer (every signal measured again),
    once; and the file stems with no stored result."""
    rows, missing = [], []
    for lab in labels:
        path = results / f"{lab.stem}.json"
        if not path.is_file():
            missing.append(lab.stem)
            continue
        result = rescored(path)
        ended = result.get("closure") if lab.state == "closed" else result.get("rescue")
        rows.append(Scored(lab, (ended or {}).get("class", "none"),
                           float(category_score(result, "agentPerformance"))))
    return rows, missing


def report(labels: list[Label], results: Path, second: list[Label]) -> dict[str, Any]:
    rows, missing = score_all(labels, results)
    first = {lab.pr_id: lab.label for lab in labels}
    pairs = [(first[s.pr_id], s.label) for s in second if s.pr_id in first]
    in_half = {lab.pr_id: name for name, part in halves(labels).items() for lab in part}
    return {
        "labelled": len(labels), "missing": missing, **figures(rows),
        "kappa": {"n": len(pairs), "kappa": cohen_kappa(pairs),
                  "agreement": sum(a == b for a, b in pairs) / len(pairs) if pairs else None},
        "halves": {name: _brief(figures([r for r in rows if in_half[r.label.pr_id] == name]))
                   for name in halves(labels)},
    }


def figures(rows: list[Scored]) -> dict[str, Any]:
    """What the scored rows say against their labels (see the module docstring)."""
    closed = [r for r in rows if r.label.state == "closed"]
    merged = [r for r in rows if r.label.state != "closed"]
    failure = [(r.score, r.label.label == "agent_failure") for r in closed]
    read = [(r.score, r.label.label == "agent_failure") for r in closed if r.label.label != "unknown"]
    by_agent: dict[str, list[tuple[str, str]]] = {}
    for r in closed:
        by_agent.setdefault(r.label.agent, []).append((r.label.label, r.got))
    return {
        "closure": _classes([(r.label.label, r.got) for r in closed], CLOSURES),
        "closureByAgent": {a: _classes(pairs, CLOSURES)["accuracy"] for a, pairs in sorted(by_agent.items())},
        "rescue": _classes([(r.label.label, r.got) for r in merged], RESCUES),
        "aucAgentFailure": _auc(read),
        "aucAgentFailureAllClosures": _auc(failure),
        "aucAgentFailureVsProjectReasons": _auc(
            [(r.score, r.label.label == "agent_failure") for r in closed
             if r.label.label == "agent_failure" or r.label.label in PROJECT_REASONS]),
        "aucRescued": _auc([(r.score, r.label.label != "clean") for r in merged]),
        "aucFeedbackLoop": _auc([(r.score, r.label.label == "feedback_loop") for r in merged
                                 if r.label.label != "taken_over"]),
        "aucTakenOver": _auc([(r.score, r.label.label == "taken_over") for r in merged
                              if r.label.label != "feedback_loop"]),
    }


def _brief(figures: dict[str, Any]) -> dict[str, Any]:
    af = figures["closure"]["classes"]["agent_failure"]
    return {"closureAccuracy": figures["closure"]["accuracy"], "agentFailurePrecision": af["precision"],
            "agentFailureRecall": af["recall"], "rescueAccuracy": figures["rescue"]["accuracy"],
            "aucAgentFailure": figures["aucAgentFailure"], "aucRescued": figures["aucRescued"]}
