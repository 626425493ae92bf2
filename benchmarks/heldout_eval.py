"""The reader and the closure against people's labels, on repositories they were never tuned on.

    python benchmarks/heldout_eval.py collect --output-dir /tmp/faults      # once: 783 closed PRs
    python benchmarks/heldout_eval.py report --results /tmp/faults [--group G] [--json out.json]

The labels (docs/labels/, docs/labelling.md) were made before any score was looked at. Every
repository is in one part (benchmarks/comment_sample.py ``part``): ``train`` and ``heldout-dev``
are the fitting side (rules written, model fitted, mistakes read), ``heldout-test`` is neither, and
its figures are the ones that say how the reader reads words it has never seen; the others are
printed beside them, marked in-sample. The test part is measured against its first labels and
against its settled ones (two of three blind labellers, benchmarks/train_sample.py ``settled``),
beside a second labeller's labels read as if they were the reader and the closure.

What is measured, per side:

* **comment verdicts**: every labelled unit read by :func:`taskeval.signals.reader.read`, against
  its label: per class precision and recall with Wilson 95 % intervals, F1, macro-F1 over
  the classes present, accuracy and the confusion; for the combined reader (rules and model) and
  for the rules alone.
* **closure**: the fault-labelled closed PRs (``collect`` evaluates them through the AIDev-pop
  replay, AI off; ``report`` re-scores them with this tree's scorer): among those whose fault is
  written (``agent`` or ``project``; the data has no CI, so "CI red at closing" cannot add any),
  the precision and recall of ``closure.countsAgainstAgent`` for the agent's own failures, the
  share of project-reason closures not counted, the closure classes and what decided them, and the
  AUC of ``agentPerformance`` separating the agent's failures from the project's reasons (with a
  bootstrap interval).

Reads the data from TASKEVAL_CORPUS_DIR or ../shared/data/aidev-pop-v1; says so and stops when
it is absent.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import comment_sample as cs
from benchmarks.reader_units import LabelledUnit, load_units, settle
from taskeval.corpus import aidev
from taskeval.signals import reader

# The targets (docs/validity.md): what "done" means on held-out repositories.
TARGETS = {"countsAgainstPrecision": 0.90, "countsAgainstRecall": 0.75, "projectNotCounted": 0.90,
           "auc": 0.85, "workWrongPrecision": 0.85}


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """Wilson score 95 % interval of a proportion ``hits / n`` (None when n is 0)."""
    if n <= 0:
        return None
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def proportion(hits: int, n: int) -> dict[str, Any]:
    interval = wilson(hits, n)
    return {"hits": hits, "n": n, "value": hits / n if n else None,
            "low": interval[0] if interval else None, "high": interval[1] if interval else None}


def verdict_figures(pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Per-class precision and recall (with intervals), F1, macro-F1 over the classes labelled at
    least once, accuracy and the confusion of (label, reading) pairs."""
    classes: dict[str, Any] = {}
    f1s = []
    for cls in reader.VERDICTS:
        tp = sum(a == p == cls for a, p in pairs)
        predicted = sum(p == cls for _, p in pairs)
        labelled = sum(a == cls for a, _ in pairs)
        precision, recall = proportion(tp, predicted), proportion(tp, labelled)
        p, r = precision["value"], recall["value"]
        f1 = 2 * p * r / (p + r) if p and r else 0.0
        if labelled:
            f1s.append(f1)
        classes[cls] = {"labelled": labelled, "predicted": predicted, "precision": precision,
                        "recall": recall, "f1": f1}
    return {"n": len(pairs), "accuracy": sum(a == p for a, p in pairs) / len(pairs) if pairs else None,
            "macroF1": sum(f1s) / len(f1s) if f1s else None, "classes": classes,
            "confusion": Counter(f"{a}->{p}" for a, p in pairs if a != p).most_common(12)}


@contextmanager
def reading_with(fitted: reader.Model | None) -> Iterator[None]:
    """The reader with ``fitted`` in place of its packaged model (None: the rules alone)."""
    saved = reader.model
    reader._read_packaged.cache_clear()
    reader.model = lambda: fitted  # type: ignore[assignment]
    try:
        yield
    finally:
        reader.model = saved
        reader._read_packaged.cache_clear()


def rules_only() -> contextlib.AbstractContextManager[None]:
    """The reader without its model, for the comparison (the rules alone)."""
    return reading_with(None)


def read_units(units: Sequence[LabelledUnit]) -> list[tuple[str, str]]:
    return [(u.verdict, reader.read(u.text, u.kind, u.role, u.position, u.state).verdict) for u in units]


# --------------------------------------------------------------------------- closures


def fault_sample() -> dict[int, tuple[str, str]]:
    """pr_id -> (side, agent folder) of every PR drawn for a fault label, both rounds (the second,
    benchmarks/train_sample.py, is train repositories only)."""
    from benchmarks import train_sample

    rows = cs.read_csv(cs.FAULT_SAMPLE)
    for later in train_sample.ROUNDS.values():
        if later.fault_sample.is_file():
            rows += cs.read_csv(later.fault_sample)
    return {int(r["pr_id"]): (r["side"], r["agent"]) for r in rows}


def fault_labels(reference: str = "first") -> dict[int, tuple[str, str, str]]:
    """pr_id -> (side, agent folder, fault), every round; with ``reference="settled"`` each PR's
    fault is its settled label (benchmarks/train_sample.py ``settled``), where it has one."""
    from benchmarks import train_sample

    sample = fault_sample()
    labels = train_sample.first_labels("faults")
    if reference == "settled":
        for group in train_sample.SETTLINGS.values():
            labels |= train_sample.settled("faults", group) if "faults" in group.kinds else {}
    return {int(pr_id): (*sample[int(pr_id)], fault) for pr_id, fault in labels.items()}


def has_second_labels() -> bool:
    from benchmarks import train_sample

    return all(train_sample.TEST.second(kind).is_file() for kind in train_sample.TEST.kinds)


def second_labeller() -> dict[str, Any]:
    """What a second blind labeller scores against the first on the held-out test part, read as if
    it were the reader and the closure: how high the figures can go against one labeller's labels."""
    from benchmarks import train_sample
    from taskeval.corpus.labels import cohen_kappa

    out: dict[str, Any] = {}
    test = train_sample.TEST
    first, second = train_sample.first_labels("comments"), train_sample.second_labels(test, "comments")
    pairs = [(first[i], second[i]) for i in train_sample.ids_of(test, "comments") if i in second]
    out["comments"] = verdict_figures(pairs)
    out["commentsKappa"] = cohen_kappa(pairs)
    first_f, second_f = train_sample.first_labels("faults"), train_sample.second_labels(test, "faults")
    rows = [{"fault": first_f[i], "counts": second_f[i] == "agent", "missing": False, "class": second_f[i],
             "decidedBy": "labeller", "score": 0.0 if second_f[i] == "agent" else 1.0}
            for i in train_sample.ids_of(test, "faults") if i in second_f]
    out["closure"] = closure_figures(rows)
    out["faultsKappa"] = cohen_kappa([(first_f[i], second_f[i]) for i in train_sample.ids_of(test, "faults")
                                      if i in second_f])
    return out


def collect(out: Path, workers: int = 2) -> int:
    """Evaluate the PRs drawn for fault labels through the replay (AI off), one result file per PR."""
    from taskeval.corpus.labels import Label
    from taskeval.corpus.labels import collect as collect_labels

    labels = [Label(agent, pr_id, "", 0, "closed", "", "") for pr_id, (_, agent) in fault_sample().items()]
    return collect_labels(labels, out, workers)


def scored_closures(results: Path, references: Sequence[str] = ("first",)) -> dict[str, list[dict[str, Any]]]:
    """Each fault-labelled PR's stored result re-scored with this tree's scorer, once, with its
    fault under each of ``references`` (:func:`fault_labels`): reference -> rows."""
    from taskeval.corpus.labels import category_score, rescored

    labels = {ref: fault_labels(ref) for ref in references}
    ids = {pr_id for faults in labels.values() for pr_id in faults}
    corpus = aidev.load(aidev.default_data_dir(), ids=ids)
    stems = {pr.id: pr.file_stem for pr in corpus.prs}
    parts = {pr.id: cs.part(pr.repository) for pr in corpus.prs}
    scored: dict[int, dict[str, Any]] = {}
    for pr_id in sorted(ids):
        path = results / f"{stems.get(pr_id, '')}.json"
        if pr_id not in stems or not path.is_file():
            scored[pr_id] = {"missing": True}
            continue
        result = rescored(path)
        closure = result.get("closure") or {}
        scored[pr_id] = {"missing": False, "class": closure.get("class"), "decidedBy": closure.get("decidedBy"),
                         "counts": bool(closure.get("countsAgainstAgent")),
                         "score": float(category_score(result, "agentPerformance"))}
    return {ref: [{"pr_id": pr_id, "side": side, "part": parts.get(pr_id, side), "agent": agent, "fault": fault,
                   **scored[pr_id]} for pr_id, (side, agent, fault) in sorted(faults.items())]
            for ref, faults in labels.items()}


def closure_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    from taskeval.validity import auc, bootstrap_auc

    present = [r for r in rows if not r["missing"]]
    written = [r for r in present if r["fault"] in ("agent", "project")]
    counted = [r for r in written if r["counts"]]
    agent = [r for r in written if r["fault"] == "agent"]
    project = [r for r in written if r["fault"] == "project"]
    scores, bad = [r["score"] for r in written], [r["fault"] == "agent" for r in written]
    area = auc(scores, bad) if agent and project else None
    interval = bootstrap_auc(scores, bad, rounds=2000) if area is not None else None
    unclear = [r for r in present if r["fault"] == "unclear"]
    return {
        "prs": len(rows), "missing": len(rows) - len(present), "written": len(written),
        "agentFault": len(agent), "projectFault": len(project), "unclear": len(unclear),
        "countsAgainstPrecision": proportion(sum(r["fault"] == "agent" for r in counted), len(counted)),
        "countsAgainstRecall": proportion(sum(r["counts"] for r in agent), len(agent)),
        "projectNotCounted": proportion(sum(not r["counts"] for r in project), len(project)),
        "unclearCounted": proportion(sum(r["counts"] for r in unclear), len(unclear)),
        "auc": {"value": area, "low": interval[0] if interval else None,
                "high": interval[1] if interval else None, "n": len(written)},
        "classesByFault": {f: dict(Counter(r["class"] for r in present if r["fault"] == f).most_common())
                           for f in ("agent", "project", "unclear")},
        "decidedBy": {f: dict(Counter(r["decidedBy"] for r in present if r["fault"] == f).most_common())
                      for f in ("agent", "project", "unclear")},
    }


# What is reported, in this order: the held-out test repositories (nobody reads their mistakes),
# against their first labels and against their settled labels (two blind labels, a third where
# those differ), the held-out dev repositories (split off the held-out side to be read and fitted
# on), the whole held-out side as every earlier report gave it, and train.
GROUPS: dict[str, tuple[str, ...]] = {"heldout-test": ("heldout-test",), "heldout-test-settled": ("heldout-test",),
                                      "heldout-dev": ("heldout-dev",),
                                      "heldout": ("heldout-dev", "heldout-test"), "train": ("train",)}
SETTLED: Final = frozenset({"heldout-test-settled"})  # groups measured against the settled labels
MARKS = {"heldout-test": " (held out: never read, never fitted on; first labels)",
         "heldout-test-settled": " (the same repositories against their settled labels: two of three blind labellers)",
         "heldout-dev": " (READ AND FITTED ON since the held-out side was split again)",
         "heldout": " (all held-out repositories: test and dev together, as reported before the split)",
         "train": " (IN-SAMPLE: rules and model were fitted here)"}


def reference(group: str) -> str:
    """The labels a group is measured against: ``settled`` or ``first``."""
    return "settled" if group in SETTLED else "first"


def report(results: Path | None, groups: Sequence[str]) -> dict[str, Any]:
    first = load_units()
    if not has_second_labels():
        groups = [g for g in groups if g not in SETTLED]
    refs = sorted({reference(g) for g in groups})
    units = {"first": first, "settled": settle(first, "heldout-test") if "settled" in refs else first}
    out: dict[str, Any] = {"targets": TARGETS, "readerModel": (reader.model() or reader.Model(
        "none", (), {}, {}, frozenset())).version, "groups": list(groups)}
    nothing: dict[str, list[dict[str, Any]]] = {ref: [] for ref in refs}
    closures = scored_closures(results, refs) if results is not None else nothing
    with rules_only():
        rule_pairs = {g: read_units([u for u in units[reference(g)] if u.part in GROUPS[g]]) for g in groups}
        rule_closures = scored_closures(results, refs) if results is not None else nothing
    for group in groups:
        ref = reference(group)
        mine = [u for u in units[ref] if u.part in GROUPS[group]]
        entry: dict[str, Any] = {
            "inSample": group in ("train", "heldout-dev"), "parts": list(GROUPS[group]), "reference": ref,
            "comments": verdict_figures(read_units(mine)),
            "commentsRulesOnly": verdict_figures(rule_pairs[group]),
        }
        if results is not None:
            entry["closure"] = closure_figures([r for r in closures[ref] if r["part"] in GROUPS[group]])
            entry["closureRulesOnly"] = closure_figures([r for r in rule_closures[ref]
                                                         if r["part"] in GROUPS[group]])
        if group == "heldout-test" and has_second_labels():
            entry["secondLabeller"] = second_labeller()
        out[group] = entry
    return out


def fmt(p: dict[str, Any]) -> str:
    if p.get("value") is None:
        return "n/a"
    return f"{p['value']:.3f} [{p['low']:.2f}, {p['high']:.2f}] ({p.get('hits', '')}/{p.get('n', '')})"


def summary(figures: dict[str, Any], groups: Sequence[str]) -> str:
    lines = []
    for group in groups:
        f = figures[group]
        lines.append(f"== {group}{MARKS[group]}")
        for name in ("comments", "commentsRulesOnly"):
            c = f[name]
            ww = c["classes"]["work_wrong"]
            lines.append(f"  {name:18s} macro-F1 {c['macroF1']:.3f}  accuracy {c['accuracy']:.3f}  "
                         f"work_wrong P {fmt(ww['precision'])} R {fmt(ww['recall'])}")
        second = f.get("secondLabeller")
        if second:
            ww = second["comments"]["classes"]["work_wrong"]
            lines.append(f"  {'secondLabeller':18s} macro-F1 {second['comments']['macroF1']:.3f}  kappa "
                         f"{second['commentsKappa']:.3f}  work_wrong P {fmt(ww['precision'])} R {fmt(ww['recall'])}"
                         f"  (a second blind labeller read against the first; faults kappa "
                         f"{second['faultsKappa']:.3f})")
        for name in ("closure", "closureRulesOnly", "secondLabeller"):
            if name not in f:
                continue
            c = f[name] if name != "secondLabeller" else f[name]["closure"]
            lines.append(f"  {name:18s} counts-against P {fmt(c['countsAgainstPrecision'])} "
                         f"R {fmt(c['countsAgainstRecall'])}; project not counted "
                         f"{fmt(c['projectNotCounted'])}; AUC {c['auc']['value'] or float('nan'):.3f} "
                         f"[{c['auc']['low'] or float('nan'):.2f}, {c['auc']['high'] or float('nan'):.2f}]")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="evaluate the fault-labelled PRs through the replay")
    c.add_argument("--output-dir", type=Path, required=True)
    c.add_argument("--workers", type=int, default=2)
    r = sub.add_parser("report", help="the figures, held-out first")
    r.add_argument("--results", type=Path, default=None, help="collect's folder (no closures without it)")
    r.add_argument("--group", choices=(*GROUPS, "all"), default="all")
    r.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if not aidev.is_corpus_dir(aidev.default_data_dir()):
        print(f"heldout_eval: no AIDev-pop data at {aidev.default_data_dir()}; nothing to do", file=sys.stderr)
        return 2
    if args.command == "collect":
        return collect(args.output_dir, args.workers)
    figures = report(args.results, tuple(GROUPS) if args.group == "all" else (args.group,))
    groups = figures["groups"]
    print(summary(figures, groups))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
