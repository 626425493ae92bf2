"""Instructions aimed at the AI judge in what the PR's people wrote: the evaluation that finds one
leaves the judge out (final = deterministic, ``aiScore`` null), and says why.

The judge only ever moves a category by its 30 % share, and it is told that the evidence is data;
but a judge that obeys a planted instruction would still move the grade by that share. So when
the text-hygiene detector (:mod:`taskeval.signals.hygiene`) finds an instruction aimed at the
judge in the PR's title or body, a commit message, a review or a comment (anyone's: the judge
reads them all), no model is asked. Code spans and fences are left out, as the detector leaves
them out everywhere (a PR that discusses a prompt is not addressing the judge), and so are the
texts the PR's agent writes by design.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .context import Ctx
from .hygiene import Finding, FindingKind, aimed_at_judge, detect_text_issues

_LEAKAGE: Final[frozenset[FindingKind]] = frozenset({"leakage"})


@dataclass(frozen=True)
class Injection:
    evidence: str  # the evidence id of the text that holds it
    where: str  # "the PR text", "commit 1a2b3c4", "comment 881"
    finding: Finding


def judge_injections(ctx: Ctx) -> list[Injection]:
    """Every instruction aimed at the AI judge in the texts of the PR's people, one per rule and
    text."""
    found: list[Injection] = []
    for evidence, where, text in _texts(ctx):
        seen: set[str] = set()
        for finding in detect_text_issues(text, standard=ctx.standard_texts, kinds=_LEAKAGE):
            if aimed_at_judge(finding) and finding.rule not in seen:
                seen.add(finding.rule)
                found.append(Injection(evidence, where, finding))
    return found


def withheld_reason(found: list[Injection]) -> str:
    """Why the judge was left out, in one line naming what was found and where."""
    shown = [f"{i.finding.describe()} in {i.where}" for i in found[:3]]
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return (f"the PR's text holds an instruction aimed at the AI judge ({'; '.join(shown)}{more}), so no model "
            "was asked: the finals are the deterministic scores")


def _texts(ctx: Ctx) -> list[tuple[str, str, str]]:
    out = [(ctx.pr, "the PR text", f"{ctx.pull.title}\n\n{ctx.pull.body}")]
    for c in ctx.facts.commits:
        out.append((ctx.commit_id(c.sha), f"commit {c.sha[:7]}", f"{c.subject}\n\n{c.message_excerpt}"))
    for r in ctx.facts.reviews:
        out.append((f"review:{r.id}", f"review {r.id}", r.body_excerpt))
    for note in ctx.facts.comments:
        prefix = "comment" if note.kind == "issue" else "review-comment"
        out.append((f"{prefix}:{note.id}", f"{prefix} {note.id}", note.body_excerpt))
    return out
