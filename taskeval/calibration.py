"""Propose ``signal_weights`` fitted on outcomes; never apply them.

The category score is the weighted mean of its conclusive signals, so the weights are what a
repository can tune. :func:`calibrate` fits non-negative weights for one category's signals
against one outcome with an L2-regularised logistic model (bounded L-BFGS from scipy: weights
stay >= 0, so a signal can be turned down but never made to count backwards), scores held-out PRs
with the category's own weighted mean under the current and the proposed weights, and reports
the cross-validated AUC of both. :func:`snippet` writes the proposal as a YAML block for a person
to review and commit to ``.github/taskeval.yml``.

A change is proposed only when the held-out gain is **clear**: the 95 % percentile interval of
AUC(proposed) - AUC(current), from a paired bootstrap over the held-out PRs (each PR's two scores
drawn together), lies wholly above 0. Otherwise the snippet says why and proposes nothing: a
point estimate that moves from 0.487 to 0.482 is noise, not a reason to change a config.

Signals that trivially encode the outcome (:data:`taskeval.validity.TRIVIAL`) are left out of the
fit and keep their weights; the figures leave them out too. So do signals the data says nothing
about: never conclusive on these PRs (CI signals on data without CI), or conclusive but always
the same score. Fitting them would set their weight to 0 for want of evidence, not because of
evidence; they keep their weights and the snippet names them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from taskeval.outcomes import OutcomeRecord
from taskeval.validity import TRIVIAL, Row, auc, bootstrap_auc, bootstrap_auc_gain, outcome_table

GAIN_ROUNDS = 1000  # paired bootstrap resamples of the held-out gain


@dataclass
class Proposal:
    outcome: str
    category: str
    prs: int
    positives: int
    folds: int
    current: dict[str, float]
    proposed: dict[str, float]
    left_out: list[str]
    auc_before: float | None
    auc_after: float | None
    interval_before: tuple[float, float] | None
    interval_after: tuple[float, float] | None
    gain_interval: tuple[float, float] | None = None  # of AUC(proposed) - AUC(current), held out
    never_conclusive: tuple[str, ...] = ()  # no conclusive value on these PRs: weights kept
    never_varied: tuple[str, ...] = ()  # conclusive, but one score on every PR: weights kept

    @property
    def gain(self) -> float | None:
        if self.auc_before is None or self.auc_after is None:
            return None
        return self.auc_after - self.auc_before

    @property
    def clear(self) -> bool:
        """The held-out gain's 95 % interval lies wholly above 0: the only case a change is
        proposed in."""
        return self.gain_interval is not None and self.gain_interval[0] > 0


def _weighted(row: Row, signals: Sequence[str], weights: Sequence[float]) -> float | None:
    num = den = 0.0
    for sid, w in zip(signals, weights, strict=True):
        sig = row.signals.get(sid)
        if sig and sig[1] and sig[2] is not None and w > 0:
            num += w * sig[2]
            den += w
    return num / den if den else None


def _shortfall(row: Row, signal: str) -> float:
    """Distance below a perfect score, 0 when inconclusive (no evidence either way)."""
    entry = row.signals.get(signal)
    if entry is None:
        return 0.0
    _, ok, score, _ = entry
    return (100 - score) / 100 if ok and score is not None else 0.0


def _fit(x: Any, y: Any, strength: float) -> Any:
    """Non-negative weights w and intercept b of P(bad) = sigmoid(b + x @ w), L2 on w: ``x`` is
    each signal's shortfall from a perfect score, so a weight says how much a shortfall raises
    the odds of the outcome (never lowers them)."""
    import numpy as np
    from scipy.optimize import minimize

    n, k = x.shape

    def loss(theta: Any) -> tuple[float, Any]:
        w, b = theta[:k], theta[k]
        z = b + x @ w
        p = 1.0 / (1.0 + np.exp(-z))
        eps = 1e-12
        value = -np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps))
        value += strength * float(w @ w) / n
        g = p - y  # d loss / d z per sample
        grad_w = (x.T @ g) / n + 2 * strength * w / n
        grad_b = np.mean(g)
        return float(value), np.concatenate([grad_w, [grad_b]])

    start = np.concatenate([np.full(k, 0.1), [0.0]])
    bounds = [(0.0, None)] * k + [(None, None)]
    found = minimize(loss, start, jac=True, method="L-BFGS-B", bounds=bounds)
    return found.x[:k]


def calibrate(rows: Sequence[Row], records: Iterable[OutcomeRecord], outcome: str = "agent_failed",
              category: str = "agentPerformance", folds: int = 5, strength: float = 1.0,
              seed: int = 7) -> Proposal:
    import numpy as np

    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {folds}")
    if not strength >= 0 or strength == float("inf"):
        raise ValueError(f"the L2 strength must be a finite number >= 0, got {strength}")
    table = outcome_table(records).get(outcome)
    if not table:
        raise ValueError(f"no '{outcome}' outcome among the records")
    data = [r for r in rows if r.key in table]
    signals = sorted({sid for r in data for sid, sig in r.signals.items() if sig[0] == category})
    left_out = sorted(s for s in signals if outcome in TRIVIAL.get(s, frozenset()))
    # What the data cannot weigh: never conclusive here, or one and the same score on every PR.
    seen = {s: {r.signals[s][2] for r in data if s in r.signals and r.signals[s][1]} for s in signals}
    never_conclusive = tuple(s for s in signals if s not in left_out and not seen[s])
    never_varied = tuple(s for s in signals if s not in left_out and len(seen[s]) == 1
                         and all(s in r.signals and r.signals[s][1] for r in data))
    fitted = [s for s in signals if s not in left_out and s not in never_conclusive
              and s not in never_varied]
    if not fitted:
        raise ValueError(f"no signal of {category} varies on these PRs: nothing to fit")
    current = {s: next(r.signals[s][3] for r in data if s in r.signals) for s in signals}
    y = np.array([1.0 if table[r.key] else 0.0 for r in data])
    if y.sum() < 10 or (1 - y).sum() < 10:
        raise ValueError(f"too few PRs on one side of '{outcome}' to fit ({int(y.sum())} with, "
                         f"{int((1 - y).sum())} without; 10 of each needed)")
    if folds > len(data):
        raise ValueError(f"{folds} folds for {len(data)} PRs: use at most {len(data)}")
    # Feature: distance below a perfect score, 0 when inconclusive (no evidence either way).
    x = np.array([[_shortfall(r, s) for s in fitted] for r in data])
    rng = np.random.default_rng(seed)
    fold_of = rng.permutation(len(data)) % folds
    before_scores: list[float] = []
    after_scores: list[float] = []
    labels: list[bool] = []
    base = [current[s] for s in fitted]

    def scaled(w: Any) -> Any:
        """Fitted weights rescaled to sum to the current weights' total."""
        return w * (sum(base) / w.sum()) if w.sum() > 0 else w * 0.0

    for f in range(folds):
        train, test = fold_of != f, fold_of == f
        w = scaled(_fit(x[train], y[train], strength))
        for i in np.flatnonzero(test):
            b = _weighted(data[i], fitted, base)
            a = _weighted(data[i], fitted, list(w))
            if b is None or a is None:
                continue
            # Scored as the category is: an integer, rounded half up.
            before_scores.append(float(int(b + 0.5)))
            after_scores.append(float(int(a + 0.5)))
            labels.append(bool(y[i]))
    proposed = {s: round(float(v), 2)
                for s, v in zip(fitted, scaled(_fit(x, y, strength)), strict=True)}
    return Proposal(outcome, category, len(data), int(y.sum()), folds,
                    {s: current[s] for s in signals}, proposed, left_out,
                    auc(before_scores, labels), auc(after_scores, labels),
                    bootstrap_auc(before_scores, labels, 500),
                    bootstrap_auc(after_scores, labels, 500),
                    bootstrap_auc_gain(before_scores, after_scores, labels, GAIN_ROUNDS, seed),
                    never_conclusive, never_varied)


def snippet(p: Proposal) -> str:
    """The proposal as YAML for a person to review: a ``signal_weights`` block only when the
    held-out gain is clear (:attr:`Proposal.clear`), else comments saying why nothing changes."""
    def fmt(v: float | None, ci: tuple[float, float] | None) -> str:
        if v is None:
            return "n/a"
        return f"{v:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

    gain = "n/a" if p.gain is None else f"{p.gain:+.3f}"
    if p.gain_interval:
        gain += f" [{p.gain_interval[0]:+.3f}, {p.gain_interval[1]:+.3f}]"
    lines = [
        f"# Proposed by `taskeval calibrate` for {p.category} against '{p.outcome}' on {p.prs} PRs "
        f"({p.positives} with the outcome).",
        f"# Cross-validated AUC ({p.folds} folds, category score on held-out PRs): current weights "
        f"{fmt(p.auc_before, p.interval_before)}, fitted {fmt(p.auc_after, p.interval_after)}.",
        f"# Held-out gain {gain} (95 % paired bootstrap over the held-out PRs).",
    ]
    if p.left_out:
        lines.append(f"# Left out of the fit (they encode '{p.outcome}' itself; weights kept): "
                     + ", ".join(p.left_out) + ".")
    if p.never_conclusive:
        lines.append("# Never conclusive on these PRs, so never seen (weights kept): "
                     + ", ".join(p.never_conclusive) + ".")
    if p.never_varied:
        lines.append("# The same score on every PR, so nothing to weigh (weights kept): "
                     + ", ".join(p.never_varied) + ".")
    if not p.clear:
        lines += [
            "# No change proposed: the gain is not clear (its 95 % interval does not lie wholly "
            "above 0).",
            "# Keep the current signal_weights; more PRs with the outcome may show a clear gain.",
        ]
        return "\n".join(lines) + "\n"
    lines.append("# The gain is clear (its interval lies wholly above 0). Nothing has changed: "
                 "review, then commit this block to .github/taskeval.yml to use it.")
    lines.append("signal_weights:")
    for sid in sorted(p.proposed):
        lines.append(f"  {sid}: {p.proposed[sid]}  # now {p.current[sid]:g}")
    return "\n".join(lines) + "\n"
