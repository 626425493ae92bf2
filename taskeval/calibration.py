"""Propose ``signal_weights`` fitted on outcomes; never apply them.

The category score is the weighted mean of its conclusive signals, so the weights are what a
repository can tune. :func:`calibrate` fits non-negative weights for one category's signals
against one outcome with an L2-regularised logistic model (bounded L-BFGS from scipy: weights
stay >= 0, so a signal can be turned down but never made to count backwards), scores held-out PRs
with the category's own weighted mean under the current and the proposed weights, and reports
the cross-validated AUC of both. :func:`snippet` writes the proposal as a YAML block for a person
to review and commit to ``.github/taskeval.yml``.

Signals that trivially encode the outcome (:data:`taskeval.validity.TRIVIAL`) are left out of the
fit and keep their weights; the figures leave them out too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from taskeval.outcomes import OutcomeRecord
from taskeval.validity import TRIVIAL, Row, auc, bootstrap_auc, outcome_table


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

    folds = max(2, folds)
    table = outcome_table(records).get(outcome)
    if not table:
        raise ValueError(f"no '{outcome}' outcome among the records")
    data = [r for r in rows if r.key in table]
    signals = sorted({sid for r in data for sid, sig in r.signals.items() if sig[0] == category})
    left_out = sorted(s for s in signals if outcome in TRIVIAL.get(s, frozenset()))
    fitted = [s for s in signals if s not in left_out]
    if not fitted:
        raise ValueError(f"no signal of {category} to fit")
    current = {s: next(r.signals[s][3] for r in data if s in r.signals) for s in signals}
    y = np.array([1.0 if table[r.key] else 0.0 for r in data])
    if y.sum() < 10 or (1 - y).sum() < 10:
        raise ValueError(f"too few PRs on one side of '{outcome}' to fit ({int(y.sum())} with, "
                         f"{int((1 - y).sum())} without)")
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
            before_scores.append(b)
            after_scores.append(a)
            labels.append(bool(y[i]))
    proposed = {s: round(float(v), 2)
                for s, v in zip(fitted, scaled(_fit(x, y, strength)), strict=True)}
    return Proposal(outcome, category, len(data), int(y.sum()), folds,
                    {s: current[s] for s in signals}, proposed, left_out,
                    auc(before_scores, labels), auc(after_scores, labels),
                    bootstrap_auc(before_scores, labels, 500),
                    bootstrap_auc(after_scores, labels, 500))


def snippet(p: Proposal) -> str:
    def fmt(v: float | None, ci: tuple[float, float] | None) -> str:
        if v is None:
            return "n/a"
        return f"{v:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")

    lines = [
        f"# Proposed by `taskeval calibrate` for {p.category} against '{p.outcome}' on {p.prs} PRs "
        f"({p.positives} with the outcome).",
        f"# Cross-validated AUC ({p.folds} folds, category score on held-out PRs): current weights "
        f"{fmt(p.auc_before, p.interval_before)}, proposed {fmt(p.auc_after, p.interval_after)}.",
        "# Nothing has changed: review, then commit this block to .github/taskeval.yml to use it.",
    ]
    if p.left_out:
        lines.append(f"# Left out of the fit (they encode '{p.outcome}' itself; weights kept): "
                     + ", ".join(p.left_out) + ".")
    lines.append("signal_weights:")
    for sid in sorted(p.proposed):
        lines.append(f"  {sid}: {p.proposed[sid]}  # now {p.current[sid]:g}")
    return "\n".join(lines) + "\n"
