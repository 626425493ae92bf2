"""Does the score predict what happened to the work? Conclusive share, AUC with bootstrap
intervals, outcome rates per band, and the signals that separate nothing.

Inputs are rows (one per evaluated PR: its category scores and signals, read from stored results)
and outcome records (:mod:`taskeval.outcomes`). For every signal and category and every outcome
present it reports:

* **conclusive share** (``conclusiveShare``): the share of PRs where the signal (or category) is
  conclusive. Not a result's ``coverage``, the *weight coverage* of one PR's category (the share of
  its signal weight that had data, which the comment and the dashboard show): two measures, two
  names;
* **AUC**: the probability that a PR without the outcome scores higher than one with it (ties
  count half), over the PRs where the signal is conclusive and the outcome applies. 0.5 is a
  coin; above 0.5 the score is lower where the bad thing happened, as it should be; below 0.5 it
  points the wrong way. The 95 % interval is a percentile bootstrap over PRs;
* **outcome rate per band** of each category's deterministic score.

A signal that reads the very fact an outcome records (``outcome.delivery`` and ``rejected``) would
"predict" it trivially: such pairs are left out of that outcome's figures, and a category's score
for that outcome is recomputed without them (the weighted mean of its other conclusive signals).
The report lists what was left out.

numpy and matplotlib are imported only when a report is computed (``pip install
'taskeval[validate]'``); the core never needs them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from taskeval.contract import BAND_NAMES, CATEGORIES, band, overall
from taskeval.outcomes import OUTCOMES, OutcomeRecord, key_of, meaning

# Signal -> outcomes it encodes by construction (it reads the same fact the outcome records).
TRIVIAL: Final[dict[str, frozenset[str]]] = {
    "outcome.delivery": frozenset({"rejected", "agent_failed"}),
    "agent.restarts": frozenset({"rejected", "agent_failed"}),
    "process.ci_at_merge": frozenset({"rejected", "agent_failed"}),  # conclusive only when merged
    "agent.review_rounds": frozenset({"changes_requested", "agent_failed"}),
    "process.change_requests": frozenset({"changes_requested", "agent_failed"}),
    "agent.force_pushes": frozenset({"force_pushed"}),
    "agent.own_failures": frozenset({"agent_failure", "agent_failed"}),
    # Conclusive only on closed PRs, and its closure class reads the agent's failed sessions.
    "agent.rejection": frozenset({"rejected", "agent_failure", "agent_failed"}),
}
CI_SIGNALS: Final = frozenset({"agent.ci_recovery", "agent.red_pushes", "outcome.ci_head",
                               "process.ci_at_merge"})
MIN_CASES: Final = 10  # fewer PRs with (or without) an outcome than this: no AUC is reported
NEUTRAL: Final = 50  # the score of a category with no conclusive signal (taskeval.scoring)
OVERALL: Final = "overall"  # the overall score's row in the verdicts
# What a figure says, decided by its 95 % interval alone (the point estimate never decides).
PREDICTS: Final = "predicts"  # interval wholly above 0.5: lower scores where the outcome happened
NO_EVIDENCE: Final = "no evidence either way"  # the interval contains 0.5
WRONG_WAY: Final = "points the wrong way"  # wholly below 0.5: higher scores where it happened
TOO_FEW: Final = "too few cases"  # fewer than MIN_CASES PRs on one side: no figure at all


@dataclass
class Row:
    """One evaluated PR as validation sees it."""

    repository: str
    number: int
    agent: str | None
    categories: dict[str, tuple[int, bool]]  # category -> (deterministic score, conclusive)
    signals: dict[str, tuple[str, bool, int | None, float]]  # id -> (category, ok, score, weight)

    @property
    def key(self) -> tuple[str, int]:
        return (self.repository.lower(), self.number)

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> Row:
        pull = result.get("pullRequest") or {}
        agent = result.get("agent") if isinstance(result.get("agent"), dict) else None
        return cls(
            repository=str(result.get("repository") or ""),
            number=int(pull.get("number") or 0),
            agent=(agent or {}).get("id"),
            categories={c["category"]: (int(c["deterministicScore"]), bool(c.get("conclusive", True)))
                        for c in result.get("categoryScores") or []},
            signals={s["id"]: (s["category"], s.get("status") == "ok" and s.get("score") is not None,
                               s.get("score"), float(s.get("weight") or 0))
                     for s in result.get("signals") or []},
        )

    def category_without(self, category: str, leave_out: frozenset[str]) -> int | None:
        """The category's score from its conclusive signals other than ``leave_out`` (None when
        none is left): what the score would be without the signals that encode an outcome."""
        parts = [(w, sc) for sid, (cat, ok, sc, w) in self.signals.items()
                 if cat == category and ok and w > 0 and sid not in leave_out and sc is not None]
        if not parts:
            return None
        total = sum(w for w, _ in parts)
        return int(sum(w * sc for w, sc in parts) / total + 0.5)


    def overall_without(self, leave_out: frozenset[str]) -> int | None:
        """The deterministic overall score (the contract's weighted sum of the three categories)
        with the signals that encode an outcome left out of their categories; a category left
        with no conclusive signal counts the scorer's neutral 50, as it does when scoring. None
        when the result lacks a category."""
        finals: dict[str, int] = {}
        for cat in CATEGORIES:
            if cat not in self.categories:
                return None
            if any(self.signals[s][0] == cat for s in leave_out if s in self.signals):
                score = self.category_without(cat, leave_out)
                finals[cat] = NEUTRAL if score is None else score
            else:
                finals[cat] = self.categories[cat][0]
        return overall(finals)


def read_results(paths: Iterable[Path]) -> tuple[list[Row], list[dict[str, Any]]]:
    """Rows from result files (one result per ``.json``; ``*.bundle.json`` and non-results are
    skipped), and the raw results for outcome derivation."""
    from taskeval.outcomes import iter_result_files

    rows, raws = [], []
    for path in iter_result_files(paths):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "categoryScores" in data and "signals" in data:
            rows.append(Row.of(data))
            raws.append(data)
    return rows, raws


# --------------------------------------------------------------------------- statistics


def auc(scores: Sequence[float], bad: Sequence[bool]) -> float | None:
    """P(score of a PR without the outcome > score of one with it), ties half; None if one side
    is empty. Mann-Whitney U over ranks."""
    import numpy as np

    s = np.asarray(scores, dtype=float)
    y = np.asarray(bad, dtype=bool)
    n_bad, n_good = int(y.sum()), int((~y).sum())
    if not n_bad or not n_good:
        return None
    from scipy.stats import rankdata

    ranks = rankdata(s)
    u_good = ranks[~y].sum() - n_good * (n_good + 1) / 2
    return float(u_good / (n_good * n_bad))


def _resampled_aucs(s: Any, y: Any, idx: Any) -> Any:
    """The AUC of each resample (one row of indexes into ``s``/``y`` each; NaN where a resample
    holds one side only). Integer scores 0..100, so each is counted from histograms: fast at any
    size."""
    import numpy as np

    rounds = idx.shape[0]
    offs = (np.arange(rounds) * 101)[:, None]
    cells = (s[idx] + offs).ravel()
    bad_hist = np.bincount(cells, weights=y[idx].ravel().astype(float),
                           minlength=101 * rounds).reshape(rounds, 101)
    all_hist = np.bincount(cells, minlength=101 * rounds).reshape(rounds, 101).astype(float)
    good_hist = all_hist - bad_hist
    below_bad = np.cumsum(bad_hist, axis=1) - bad_hist  # bad PRs strictly below each score
    wins = (good_hist * (below_bad + 0.5 * bad_hist)).sum(axis=1)
    pairs = good_hist.sum(axis=1) * bad_hist.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, wins / np.where(pairs > 0, pairs, 1), np.nan)


def _as_scores(scores: Sequence[float]) -> Any:
    import numpy as np

    return np.clip(np.rint(np.asarray(scores, dtype=float)), 0, 100).astype(np.int64)


def bootstrap_auc(scores: Sequence[float], bad: Sequence[bool], rounds: int = 1000,
                  seed: int = 7) -> tuple[float, float] | None:
    """Percentile 95 % interval of :func:`auc` over ``rounds`` resamples of the PRs."""
    import numpy as np

    s = _as_scores(scores)
    y = np.asarray(bad, dtype=bool)
    n = len(s)
    if n == 0 or y.all() or not y.any():
        return None
    idx = np.random.default_rng(seed).integers(0, n, size=(rounds, n))
    values = _resampled_aucs(s, y, idx)
    values = values[~np.isnan(values)]
    if not len(values):
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def bootstrap_auc_gain(before: Sequence[float], after: Sequence[float], bad: Sequence[bool],
                       rounds: int = 1000, seed: int = 7) -> tuple[float, float] | None:
    """Percentile 95 % interval of AUC(after) - AUC(before) over ``rounds`` resamples of the
    PRs, both scores of a PR drawn together (paired: the same PRs, scored two ways)."""
    import numpy as np

    b, a = _as_scores(before), _as_scores(after)
    y = np.asarray(bad, dtype=bool)
    n = len(y)
    if n == 0 or y.all() or not y.any():
        return None
    idx = np.random.default_rng(seed).integers(0, n, size=(rounds, n))
    gains = _resampled_aucs(a, y, idx) - _resampled_aucs(b, y, idx)
    gains = gains[~np.isnan(gains)]
    if not len(gains):
        return None
    low, high = np.percentile(gains, [2.5, 97.5])
    return float(low), float(high)


@dataclass
class Figure:
    """One AUC figure: a score (signal or category) against one outcome."""

    auc: float | None
    low: float | None
    high: float | None
    n: int
    positives: int
    left_out: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        def r(v: float | None) -> float | None:
            return None if v is None else round(v, 4)

        return {"auc": r(self.auc), "low": r(self.low), "high": r(self.high), "n": self.n,
                "positives": self.positives, "leftOut": self.left_out, "verdict": self.verdict}

    @property
    def verdict(self) -> str:
        """:data:`PREDICTS`, :data:`NO_EVIDENCE`, :data:`WRONG_WAY` or :data:`TOO_FEW`: the
        interval decides (an AUC without an interval, all resamples degenerate, decides nothing)."""
        if self.auc is None:
            return TOO_FEW
        if self.low is not None and self.low > 0.5:
            return PREDICTS
        if self.high is not None and self.high < 0.5:
            return WRONG_WAY
        return NO_EVIDENCE


def figure(pairs: list[tuple[float, bool]], rounds: int, left_out: Iterable[str] = ()) -> Figure:
    positives = sum(1 for _, b in pairs if b)
    out = Figure(None, None, None, len(pairs), positives, sorted(left_out))
    if positives < MIN_CASES or len(pairs) - positives < MIN_CASES:
        return out
    scores = [s for s, _ in pairs]
    bad = [b for _, b in pairs]
    out.auc = auc(scores, bad)
    interval = bootstrap_auc(scores, bad, rounds)
    if interval:
        out.low, out.high = interval
    return out


# --------------------------------------------------------------------------- the report


def outcome_table(records: Iterable[OutcomeRecord]) -> dict[str, dict[tuple[str, int], bool]]:
    table: dict[str, dict[tuple[str, int], bool]] = {}
    for r in records:
        table.setdefault(r.outcome, {})[key_of(r)] = r.value
    return table


def analyse(rows: Sequence[Row], records: Iterable[OutcomeRecord], rounds: int = 1000
            ) -> dict[str, Any]:
    """Every figure of the report as plain data (what validity.json holds)."""
    outcomes = outcome_table(records)
    # The built-in kinds in their order, then a team's own labels as first seen, named as given.
    present = [o for o in OUTCOMES if o in outcomes] + [o for o in outcomes if o not in OUTCOMES]
    # Per outcome: the signals that encode it, left out of its figures.
    trivial_for = {o: frozenset(s for s, v in TRIVIAL.items() if o in v) for o in present}
    cat_of = {sid: sig[0] for r in reversed(rows) for sid, sig in r.signals.items()}
    signal_ids = sorted(cat_of, key=lambda s: (CATEGORIES.index(cat_of[s]), s))
    report: dict[str, Any] = {
        "prs": len(rows),
        "bootstrapRounds": rounds,
        "outcomes": {o: {"meaning": meaning(o), "builtIn": o in OUTCOMES, "applicable": sum(
            1 for r in rows if r.key in outcomes[o]), "positives": sum(
            1 for r in rows if outcomes[o].get(r.key))} for o in present},
        "categories": {},
        "signals": {},
        "trivial": {s: sorted(o for o in v if o in present) for s, v in TRIVIAL.items()
                    if any(o in present for o in v)},
    }
    for cat in CATEGORIES:
        conclusive = [r for r in rows if r.categories.get(cat, (0, False))[1]]
        entry: dict[str, Any] = {"conclusiveShare": round(len(conclusive) / len(rows), 4) if rows else 0,
                                 "auc": {}, "bands": {}}
        for o in present:
            leave = trivial_for[o]
            pairs = []
            for r in rows:
                if r.key not in outcomes[o]:
                    continue
                score = r.category_without(cat, leave) if any(
                    s in r.signals for s in leave) else (
                    r.categories[cat][0] if r.categories.get(cat, (0, False))[1] else None)
                if score is not None:
                    pairs.append((float(score), outcomes[o][r.key]))
            used = sorted(s for s in leave if cat_of.get(s) == cat)
            entry["auc"][o] = figure(pairs, rounds, used).as_dict()
            per_band: dict[str, dict[str, Any]] = {}
            # Bands of the same score the AUC uses (without the signals that encode ``o``).
            banded = [(band(int(sc)), outcomes[o][r.key]) for r in conclusive
                      if r.key in outcomes[o] and (sc := r.category_without(cat, leave)) is not None]
            for b in BAND_NAMES:
                hits = [bad for name, bad in banded if name == b]
                per_band[b] = {"n": len(hits),
                               "rate": round(sum(hits) / len(hits), 4) if hits else None}
            entry["bands"][o] = per_band
        report["categories"][cat] = entry
    report["overall"] = {"auc": {}}
    for o in present:
        pairs = [(float(sc), outcomes[o][r.key]) for r in rows if r.key in outcomes[o]
                 and (sc := r.overall_without(trivial_for[o])) is not None]
        report["overall"]["auc"][o] = figure(pairs, rounds, sorted(trivial_for[o] & set(cat_of))).as_dict()
    # Per outcome, what the overall score and each category say (the report's first table).
    report["verdicts"] = {o: {OVERALL: report["overall"]["auc"][o]["verdict"],
                              **{cat: report["categories"][cat]["auc"][o]["verdict"]
                                 for cat in CATEGORIES}} for o in present}
    for sid in signal_ids:
        have = [r for r in rows if sid in r.signals]
        ok = [r for r in have if r.signals[sid][1]]
        entry = {"category": cat_of[sid], "conclusiveShare": round(len(ok) / len(have), 4) if have else 0,
                 "evaluated": len(have), "auc": {}}
        for o in present:
            if o in TRIVIAL.get(sid, frozenset()):
                entry["auc"][o] = {"trivial": True}
                continue
            pairs = [(float(r.signals[sid][2] or 0), outcomes[o][r.key]) for r in ok
                     if r.key in outcomes[o]]
            entry["auc"][o] = figure(pairs, rounds).as_dict()
        report["signals"][sid] = entry
    agents = sorted({r.agent for r in rows if r.agent})
    if len(agents) > 1:
        # Per agent: a score can separate outcomes across agents only because agents differ
        # (one writes long descriptions and is rejected more often); within one agent it cannot.
        report["agents"] = {}
        for agent in agents:
            mine = [r for r in rows if r.agent == agent]
            per: dict[str, Any] = {"prs": len(mine)}
            for cat in CATEGORIES:
                per[cat] = {}
                for o in present:
                    leave = trivial_for[o]
                    pairs = [(float(sc), outcomes[o][r.key]) for r in mine if r.key in outcomes[o]
                             and (sc := r.category_without(cat, leave)) is not None]
                    per[cat][o] = figure(pairs, max(100, rounds // 4)).as_dict()
            report["agents"][agent] = per
    report["separatesNothing"] = [
        sid for sid, e in report["signals"].items()
        if not any(f["verdict"] in (PREDICTS, WRONG_WAY) for f in e["auc"].values()
                   if not f.get("trivial"))
    ]
    report["pointsTheWrongWay"] = sorted(
        f"{sid} vs {o}" for sid, e in report["signals"].items() for o, f in e["auc"].items()
        if not f.get("trivial") and f["verdict"] == WRONG_WAY)
    report["ciInconclusive"] = sorted(s for s in CI_SIGNALS if s in report["signals"]
                                      and report["signals"][s]["conclusiveShare"] == 0)
    return report


def code(name: str) -> str:
    """``name`` as inline code in a markdown table cell, exactly as given (a team's label may
    hold a backtick or a pipe)."""
    text = name.replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def file_part(name: str, taken: set[str]) -> str:
    """A file-name-safe form of an outcome label, unique among ``taken`` (which it joins)."""
    import re

    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "outcome"
    part, n = base, 2
    while part.lower() in taken:
        part, n = f"{base}-{n}", n + 1
    taken.add(part.lower())
    return part


def _verdict_cell(f: Mapping[str, Any]) -> str:
    if f["verdict"] == TOO_FEW:
        return f"{TOO_FEW} (n={f['n']}, {f['positives']} with it)"
    interval = f" [{f['low']:.2f}, {f['high']:.2f}]" if f.get("low") is not None else ""
    word = f["verdict"] if f["verdict"] == NO_EVIDENCE else f"**{f['verdict']}**"
    return f"{word}: {f['auc']:.3f}{interval}"


def verdict_lines(report: Mapping[str, Any]) -> list[str]:
    """The report's first section: for each outcome, does the overall score, and does each
    category, predict it? The 95 % interval decides."""
    outs = list(report["outcomes"])
    lines = ["## Verdict", "",
             "Does a lower score mean the outcome happened more often? The 95 % interval of the AUC "
             f"decides: wholly above 0.5 **{PREDICTS}**, containing 0.5 {NO_EVIDENCE}, wholly "
             f"below 0.5 **{WRONG_WAY}** (higher scores where it happened); {TOO_FEW}: under "
             f"{MIN_CASES} PRs with or without it. Overall is the deterministic overall score.", ""]
    if not outs:
        return [*lines, "No outcome is recorded for these PRs: nothing to judge.", ""]
    lines += ["| score | " + " | ".join(code(o) for o in outs) + " |",
              "|---|" + "---|" * len(outs)]
    figures = [(OVERALL, report["overall"]["auc"])]
    figures += [(f"`{cat}`", e["auc"]) for cat, e in report["categories"].items()]
    for name, per in figures:
        lines.append(f"| {name} | " + " | ".join(_verdict_cell(per[o]) for o in outs) + " |")
    wrong = [f"{name} against {code(o)}" for name, per in figures for o in outs
             if per[o]["verdict"] == WRONG_WAY]
    if wrong:
        lines += ["", "Pointing the wrong way: " + "; ".join(wrong) + "."]
    return [*lines, ""]


def _fmt(f: Mapping[str, Any]) -> str:
    if f.get("trivial"):
        return "(trivial)"
    if f.get("auc") is None:
        return f"n/a (n={f.get('n', 0)}, {f.get('positives', 0)}+)"
    interval = (f" [{f['low']:.2f}, {f['high']:.2f}]" if f.get("low") is not None else "")
    return f"{f['auc']:.3f}{interval}"


def markdown(report: Mapping[str, Any], title: str = "Validity report",
             baseline: Mapping[str, Any] | None = None, command: str | None = None) -> str:
    """validity.md: the figures in plain tables."""
    outs = list(report["outcomes"])
    lines = [f"# {title}", ""]
    if command:
        lines += ["Reproduce with:", "", "```", command, "```", ""]
    lines += [
        f"{report['prs']} evaluated PRs. AUC = probability that a PR *without* the outcome scores "
        "higher than one *with* it (ties half): 0.5 is a coin, above 0.5 the score is lower where "
        f"the bad thing happened. Intervals: percentile bootstrap, {report['bootstrapRounds']} "
        "resamples, 95 %. n/a: fewer than "
        f"{MIN_CASES} PRs on one side.", "",
        *verdict_lines(report),
        "## Outcomes", "", "| outcome | meaning | PRs it applies to | with the outcome |",
        "|---|---|---:|---:|",
    ]
    for o, v in report["outcomes"].items():
        lines.append(f"| {code(o)} | {v['meaning']} | {v['applicable']} | {v['positives']} |")
    lines += ["", "## Categories (deterministic score)", "",
              "| category | conclusive share (of PRs) | " + " | ".join(f"AUC {code(o)}" for o in outs) + " |",
              "|---|---:|" + "---:|" * len(outs)]
    for cat, e in report["categories"].items():
        lines.append(f"| `{cat}` | {e['conclusiveShare']:.1%} | "
                     + " | ".join(_fmt(e["auc"][o]) for o in outs) + " |")
    if baseline:
        lines += ["", "## Before and after", "",
                  "The same PRs and outcomes, scored by the baseline and by this scorer.", "",
                  "| category | outcome | AUC before | AUC after |", "|---|---|---:|---:|"]
        for cat in report["categories"]:
            for o in outs:
                before = (baseline.get("categories", {}).get(cat, {}).get("auc", {}).get(o))
                if before is None:
                    continue
                lines.append(f"| `{cat}` | {code(o)} | {_fmt(before)} | "
                             f"{_fmt(report['categories'][cat]['auc'][o])} |")
    left = {cat: {o: e["auc"][o]["leftOut"] for o in outs if e["auc"][o]["leftOut"]}
            for cat, e in report["categories"].items()}
    lines += ["", "### Left out as trivial", "",
              "A signal that reads the fact an outcome records is left out of that outcome's "
              "figures; a category's score against that outcome is recomputed without it."]
    for sid, os_ in report["trivial"].items():
        lines.append(f"- `{sid}`: {', '.join(f'`{o}`' for o in os_)}")
    for cat, per in left.items():
        for o, sids in per.items():
            lines.append(f"- `{cat}` against {code(o)} is scored without {', '.join(sids)}")
    lines += ["", "## Outcome rate per band", "",
              "Bands of the same scores as the AUC figures (signals encoding the outcome left out).",
              ""]
    for cat, e in report["categories"].items():
        lines += [f"### `{cat}`", "", "| outcome | " + " | ".join(BAND_NAMES) + " |",
                  "|---|" + "---:|" * len(BAND_NAMES)]
        for o in outs:
            cells = []
            for b in BAND_NAMES:
                v = e["bands"][o][b]
                cells.append("—" if v["rate"] is None else f"{v['rate']:.1%} (n={v['n']})")
            lines.append(f"| {code(o)} | " + " | ".join(cells) + " |")
        lines.append("")
    if report.get("agents"):
        lines += ["## Per agent", "",
                  "The same category figures within each agent's PRs (an agent's own habits, e.g. "
                  "long descriptions, cannot make a score look predictive here).", ""]
        for cat in report["categories"]:
            lines += [f"### `{cat}`", "", "| agent | PRs | " + " | ".join(code(o) for o in outs)
                      + " |", "|---|---:|" + "---:|" * len(outs)]
            for agent, per in report["agents"].items():
                lines.append(f"| {agent} | {per['prs']} | "
                             + " | ".join(_fmt(per[cat][o]) for o in outs) + " |")
            lines.append("")
    lines += ["## Signals", "", "| signal | conclusive share (of PRs) | " + " | ".join(code(o) for o in outs) + " |",
              "|---|---:|" + "---:|" * len(outs)]
    for sid, e in report["signals"].items():
        lines.append(f"| `{sid}` | {e['conclusiveShare']:.1%} | "
                     + " | ".join(_fmt(e["auc"][o]) for o in outs) + " |")
    lines += ["", "## Signals that separate nothing on this data", "",
              "No outcome's 95 % interval excludes 0.5 (or no figure could be computed):", ""]
    lines += [f"- `{s}`" for s in report["separatesNothing"]] or ["- (none)"]
    if report["pointsTheWrongWay"]:
        lines += ["", "Pointing the wrong way (interval wholly below 0.5):", ""]
        lines += [f"- {s}" for s in report["pointsTheWrongWay"]]
    if report["ciInconclusive"]:
        lines += ["", "CI signals inconclusive on every PR (the data has no CI): "
                  + ", ".join(f"`{s}`" for s in report["ciInconclusive"]) + "."]
    return "\n".join(lines) + "\n"


def plots(report: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """One PNG per outcome (AUC with intervals, categories then signals) and one per category
    (outcome rate per band)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    taken: set[str] = set()
    for o in report["outcomes"]:
        rows = [(f"[{OVERALL}]", report["overall"]["auc"][o])]
        rows += [(f"[{c}]", e["auc"][o]) for c, e in report["categories"].items()]
        rows += [(s, e["auc"][o]) for s, e in report["signals"].items()]
        rows = [(name, f) for name, f in rows if f.get("auc") is not None]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(7, 0.3 * len(rows) + 1.2))
        ys = list(range(len(rows)))[::-1]
        for y, (_, f) in zip(ys, rows, strict=True):
            lo, hi = f.get("low") or f["auc"], f.get("high") or f["auc"]
            ax.plot([lo, hi], [y, y], color="0.4")
            ax.plot([f["auc"]], [y], "o", color="C0")
        ax.axvline(0.5, color="C3", linestyle="--", linewidth=1)
        ax.set_yticks(ys, [name for name, _ in rows], fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"AUC against {o} (95 % bootstrap interval)")
        fig.tight_layout()
        path = out_dir / f"auc-{file_part(o, taken)}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    for cat, e in report["categories"].items():
        fig, ax = plt.subplots(figsize=(7, 3.2))
        width = 0.8 / max(1, len(e["bands"]))
        for n, (o, per) in enumerate(e["bands"].items()):
            xs = [i + n * width for i in range(len(BAND_NAMES))]
            ax.bar(xs, [(per[b]["rate"] or 0) for b in BAND_NAMES], width, label=o)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(BAND_NAMES))], list(BAND_NAMES))
        ax.set_ylabel("outcome rate")
        ax.set_title(f"{cat}: outcome rate per band")
        ax.legend(fontsize=6)
        fig.tight_layout()
        path = out_dir / f"bands-{cat}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_report(report: Mapping[str, Any], out_dir: Path, *, baseline: Mapping[str, Any] | None
                 = None, command: str | None = None, with_plots: bool = True) -> list[Path]:
    """Write validity.json, validity.md and the plots into ``out_dir``, all or nothing: they are
    made in a staging folder inside it and moved in only once every one is written."""
    import os
    import tempfile

    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    data = dict(report)
    if baseline is not None:
        data["baseline"] = baseline
    try:
        with tempfile.TemporaryDirectory(dir=out_dir, prefix=".validity-") as tmp:
            staging = Path(tmp)
            (staging / "validity.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n",
                                                   encoding="utf-8")
            (staging / "validity.md").write_text(markdown(report, baseline=baseline, command=command),
                                                 encoding="utf-8")
            staged = [staging / "validity.json", staging / "validity.md"]
            if with_plots:
                staged += plots(report, staging)
            for path in staged:
                os.replace(path, out_dir / path.name)
    except BaseException:
        if created and not any(out_dir.iterdir()):
            out_dir.rmdir()
        raise
    return [out_dir / path.name for path in staged]
