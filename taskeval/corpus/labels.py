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


def _score(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(rescore(path, Options(ai="off", env={}, keep_signals=False)).json())
    return data


def _category(result: dict[str, Any], name: str) -> int:
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


def report(labels: list[Label], results: Path, second: list[Label], split: bool = True) -> dict[str, Any]:
    closures: list[tuple[str, str]] = []
    rescues: list[tuple[str, str]] = []
    own: list[tuple[float, bool]] = []  # agentPerformance; bad = closed for the agent's failure
    every: list[tuple[float, bool]] = []  # the same, with the PRs people could not read either
    rescued: list[tuple[float, bool]] = []
    merged: list[tuple[float, str]] = []
    by_agent: dict[str, list[tuple[str, str]]] = {}
    missing = []
    for lab in labels:
        path = results / f"{lab.stem}.json"
        if not path.is_file():
            missing.append(lab.stem)
            continue
        result = _score(path)
        score = float(_category(result, "agentPerformance"))
        if lab.state == "closed":
            got = (result.get("closure") or {}).get("class", "none")
            closures.append((lab.label, got))
            by_agent.setdefault(lab.agent, []).append((lab.label, got))
            every.append((score, lab.label == "agent_failure"))
            if lab.label != "unknown":
                own.append((score, lab.label == "agent_failure"))
        else:
            got = (result.get("rescue") or {}).get("class", "none")
            rescues.append((lab.label, got))
            rescued.append((score, lab.label != "clean"))
            merged.append((score, lab.label))
    first = {lab.pr_id: lab.label for lab in labels}
    pairs = [(first[s.pr_id], s.label) for s in second if s.pr_id in first]
    return {
        "labelled": len(labels), "missing": missing,
        "closure": _classes(closures, CLOSURES),
        "closureByAgent": {a: _classes(rows, CLOSURES)["accuracy"] for a, rows in sorted(by_agent.items())},
        "rescue": _classes(rescues, RESCUES),
        "aucAgentFailure": _auc(own),
        "aucAgentFailureAllClosures": _auc(every),
        "aucAgentFailureVsProjectReasons": _auc(
            [(s, b) for (s, b), (lab, _) in zip(own, [c for c in closures if c[0] != "unknown"], strict=True)
             if b or lab in PROJECT_REASONS]),
        "aucRescued": _auc(rescued),
        "aucFeedbackLoop": _auc([(s, k == "feedback_loop") for s, k in merged if k != "taken_over"]),
        "aucTakenOver": _auc([(s, k == "taken_over") for s, k in merged if k != "feedback_loop"]),
        "kappa": {"n": len(pairs), "kappa": cohen_kappa(pairs),
                  "agreement": sum(a == b for a, b in pairs) / len(pairs) if pairs else None},
        "halves": {name: _brief(report(part, results, [], split=False))
                   for name, part in halves(labels).items()} if split else {},
    }


def _brief(figures: dict[str, Any]) -> dict[str, Any]:
    af = figures["closure"]["classes"]["agent_failure"]
    return {"closureAccuracy": figures["closure"]["accuracy"], "agentFailurePrecision": af["precision"],
            "agentFailureRecall": af["recall"], "rescueAccuracy": figures["rescue"]["accuracy"],
            "aucAgentFailure": figures["aucAgentFailure"], "aucRescued": figures["aucRescued"]}
