"""taskOutcomeQuality: correctness, completeness, verification quality, shipped-result quality."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from taskeval.contract import Category
from taskeval.evidence import vocabulary as ev
from taskeval.models import CommitEntry

from .base import Measure, inconclusive, ok, signal
from .context import CITally, Ctx, before_merge
from .curves import coverage, decay, linear
from .hygiene import blank_quotes, task_items, visible_text
from .wording import agree, all_of, names, none_of, plural, sentence, share

CAT: Category = "taskOutcomeQuality"


def _head_ci_missing(ctx: Ctx) -> Measure:
    if ctx.ci_unavailable:
        return inconclusive("CI results could not be read, so the head commit's state is unknown.",
                            [f"audit:unavailable-{r}" for r in ctx.facts.unavailable])
    if ctx.ci.shas():
        return inconclusive("CI ran on earlier commits but not on the head commit that shipped.",
                            [ctx.pr])
    return inconclusive("No CI ran on this PR.", [ctx.pr])


@signal("outcome.ci_head", CAT, "CI green at the head commit", 4.0,
        ["facts.checks", "facts.runs", "facts.pull.headSha"])
def ci_head(ctx: Ctx) -> Measure:
    """Latest state of every check at the commit that shipped; red is strong negative evidence."""
    verdicts = ctx.ci.at(ctx.pull.head_sha)
    if not verdicts:
        return _head_ci_missing(ctx)
    tally = CITally.of(verdicts)
    if not tally.decided:
        n = len(verdicts)
        return inconclusive(f"{sentence(all_of(n, 'check'))} at the head commit "
                            f"{agree(n, 'was', 'were')} skipped or neutral.",
                            [v.evidence for v in verdicts])
    problems = tally.problems(("fails at the head commit", "fail at the head commit"),
                              ("did not finish", "did not finish"))
    if problems:
        reason = sentence("; ".join(problems) + ".")
    else:
        n = len(tally.passing)
        reason = f"{sentence(all_of(n, 'check'))} at the head commit {agree(n, 'passes', 'pass')}."
    flaky = [v for v in tally.passing if v.flaky]
    if flaky:
        reason += f" {names(v.label for v in flaky)} passed on a re-run after a flaky failure."
    half = ctx.settings.thresholds.head_failing_half_life
    return ok(tally.value, decay(tally.value, half), reason, tally.cited)


# --------------------------------------------------------------------------- claims

_NOT_A_CLAIM: Final = re.compile(
    r"(?i)\b(?:make sure|ensure|verify|check(?: that)?|should|must|will|to|if|until|once|"
    r"wait for|whether|please|can|could|may|might|would|confirming)\s+(?:that\s+)?(?:all\s+)?"
    r"(?:the\s+)?(?:new\s+)?$"
)
_CLAIMS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("tests pass", re.compile(
        r"(?i)\b(?:all\s+)?(?:the\s+)?(?:unit\s+|integration\s+|e2e\s+)?(?:tests?|checks?|ci|specs?|"
        r"test suite|builds?)\s+(?:are\s+|is\s+|now\s+|still\s+)*(?:pass(?:es|ed|ing)?|green|"
        r"succeed(?:s|ed|ing)?)\b|\ball\s+green\b|\bpass(?:es|ing)?\s+(?:all\s+)?(?:the\s+)?"
        r"(?:tests|checks|ci)\b")),
    ("adds tests", re.compile(
        r"(?i)\b(?:add(?:s|ed|ing)?|updat(?:e|es|ed|ing)|writ(?:e|es|ten|ing)|extend(?:s|ed|ing)?|"
        r"includ(?:e|es|ed|ing)|expand(?:s|ed)?)\s+(?:new\s+|more\s+|a\s+|the\s+)?(?:unit\s+|"
        r"integration\s+|e2e\s+|regression\s+|end-to-end\s+)?(?:tests?|test cases?|specs?|"
        r"test coverage)\b|\b(?:new\s+)?tests?\s+(?:were\s+|have been\s+|are\s+)?added\b|"
        r"\bwith (?:unit |integration |regression )?tests\b")),
    ("updates docs", re.compile(
        r"(?i)\b(?:add(?:s|ed|ing)?|updat(?:e|es|ed|ing)|writ(?:e|es|ten|ing)|improv(?:e|es|ed|ing)|"
        r"revis(?:e|es|ed))\s+(?:the\s+)?(?:docs|documentation|readme|changelog|user guide)\b|"
        r"\b(?:docs|documentation|readme|changelog)\s+(?:is\s+|are\s+|was\s+|were\s+|has been\s+|"
        r"have been\s+)?updated\b")),
)
# Words every match of each claim pattern contains (read off the patterns above). A claim text
# whose case fold holds none of a claim's words cannot make that claim, so its pattern, which
# tries every position of a long body, is not run (tests/test_rescore_fast_paths.py compares).
_CLAIM_NEEDLES: Final[dict[str, tuple[str, ...]]] = {
    "tests pass": ("pass", "green", "succeed"),
    "adds tests": ("test", "spec"),
    "updates docs": ("doc", "readme", "changelog", "user guide"),
}
# Every character of a claim is a word character, whitespace or "-" (end-to-end): a claim sits
# inside one run of those, so the search skips the runs without one of the claim's words.
_NOT_IN_CLAIM: Final = re.compile(r"[^\w\s-]")
_UNCHECKED_LINE: Final = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+\[ \][^\n]*$", re.MULTILINE)

Verdict = Literal["supported", "contradicted", "unverifiable"]


@dataclass(frozen=True)
class Claim:
    what: str  # the kind, e.g. "tests pass", "fixes #12"
    quote: str  # the words as written
    verdict: Verdict
    why: str
    evidence: tuple[str, ...]


def claim_text(title: str, body: str) -> str:
    """What the PR asserts: rendered prose only, without unchecked checklist items or
    blockquoted text (an issue or a reviewer quoted in the description is not the PR's claim)."""
    shown = blank_quotes(visible_text(f"{title}\n\n{body}"))
    return _UNCHECKED_LINE.sub("", shown) if "[ ]" in shown else shown


def _find(text: str, pattern: re.Pattern[str], low: str | None = None,
          words: tuple[str, ...] = ()) -> str | None:
    """The first claim ``pattern`` finds in ``text`` that is not an instruction ("make sure
    tests pass"); with ``low`` (``fold(text)``) and the claim's ``words``, searched only in the
    clauses holding one of them (see ``ev.in_clauses``)."""
    found = (ev.in_clauses(pattern, text, low, words, _NOT_IN_CLAIM)
             if low is not None and words else pattern.finditer(text))
    for match in found:
        if not _NOT_A_CLAIM.search(text[max(0, match.start() - 40): match.start()]):
            return " ".join(match.group(0).split())
    return None


def _check_tests_pass(ctx: Ctx, quote: str) -> Claim:
    verdicts = ctx.ci.at(ctx.pull.head_sha)
    failing = [v for v in verdicts if v.outcome == "fail"]
    passing = [v for v in verdicts if v.outcome == "pass"]
    if failing:
        return Claim("tests pass", quote, "contradicted",
                     f"{names(v.label for v in failing)} "
                     f"{'fails' if len(failing) == 1 else 'fail'} at the head commit",
                     tuple(v.evidence for v in failing))
    if passing and not [v for v in verdicts if v.outcome in ("pending", "cancelled")]:
        return Claim("tests pass", quote, "supported", "CI passes at the head commit",
                     tuple(v.evidence for v in passing))
    return Claim("tests pass", quote, "unverifiable", "no finished CI at the head commit",
                 (ctx.pr,))


def _check_changed(ctx: Ctx, what: str, quote: str, cls: Literal["test", "docs"]) -> Claim:
    files = ctx.files_of(cls)
    if files:
        return Claim(what, quote, "supported",
                     f"{plural(len(files), 'test file' if cls == 'test' else 'doc file')} changed",
                     tuple(ctx.biggest_file_ids(files)))
    if not ctx.facts.files:
        return Claim(what, quote, "unverifiable", "the changed files could not be read", (ctx.pr,))
    kind = "test" if cls == "test" else "documentation"
    return Claim(what, quote, "contradicted", f"no {kind} file changed",
                 (ctx.pr, *ctx.biggest_file_ids(f.path for f in ctx.facts.files)))


def _check_fix(ctx: Ctx, link: ev.IssueLink) -> Claim:
    pull = ctx.pull
    ref = f"#{link.number}" if link.repo is None else f"{link.repo}#{link.number}"
    what = f"{link.keyword} {ref}"
    cited = (link.id, ctx.pr)
    if link.repo is None and link.number == pull.number:
        return Claim("fixes an issue", what, "contradicted", "it points at this PR itself", cited)
    if not pull.merged:
        # A closed PR fixes nothing, but that is outcome.delivery's finding: counting it here
        # again would only repeat it under another name.
        if pull.state == "closed":
            return Claim("fixes an issue", what, "unverifiable",
                         "the PR was closed without merging, which outcome.delivery already "
                         "counts", cited)
        return Claim("fixes an issue", what, "unverifiable", "the PR is not merged yet", cited)
    default = _pr_fact(ctx, "defaultBranch")
    if isinstance(default, str) and default and pull.base_ref != default:
        return Claim("fixes an issue", what, "contradicted",
                     f"it merged into {pull.base_ref}, not the default branch {default}, so "
                     "GitHub does not close the issue", cited)
    return Claim("fixes an issue", what, "supported", "merged with a closing link", cited)


def _pr_fact(ctx: Ctx, key: str) -> object:
    """A fact of the PR's evidence item (of the last item with its ID, as a table of every
    item's facts by ID would hold): one lookup, without building that table."""
    for group in reversed(ctx.bundle.groups):
        for item in reversed(group.items):
            if item.id == ctx.pr:
                return item.facts.get(key)
    return None


def check_claims(ctx: Ctx) -> list[Claim]:
    """Each claim the PR text makes about tests, docs or fixed issues, checked against evidence."""
    text = claim_text(ctx.pull.title, ctx.pull.body)
    low = ev.fold(text)
    out = []
    for kind, pattern in _CLAIMS:
        needles = _CLAIM_NEEDLES.get(kind)
        if needles and not any(needle in low for needle in needles):
            continue
        quote = _find(text, pattern, low, needles or ())
        if quote is None:
            continue
        if kind == "tests pass":
            out.append(_check_tests_pass(ctx, quote))
        else:
            out.append(_check_changed(ctx, kind, quote, "test" if kind == "adds tests" else "docs"))
    for link in ev.linked_issues(text, ctx.bundle.repository):
        if link.closing:
            out.append(_check_fix(ctx, link))
    return out


@signal("outcome.claims", CAT, "PR claims match the evidence", 2.0,
        ["facts.pull.title", "facts.pull.body", "facts.checks", "facts.runs", "facts.files",
         "facts.pull.merged", "facts.pull.baseRef"])
def claims(ctx: Ctx) -> Measure:
    """Cross-field check: "tests pass", "adds tests", "updates docs", "fixes #N" vs. evidence."""
    found = check_claims(ctx)
    checked = [c for c in found if c.verdict != "unverifiable"]
    cited = [e for c in found for e in c.evidence]
    if not checked:
        if found:
            return inconclusive(f"The PR's {agree(len(found), 'claim', 'claims')} could not be checked: "
                                + "; ".join(f'"{c.quote}" ({c.why})' for c in found) + ".", cited)
        return inconclusive("The PR text makes no checkable claim about tests, docs or fixed "
                            "issues.", [ctx.pr])
    bad = [c for c in checked if c.verdict == "contradicted"]
    good = [c for c in checked if c.verdict == "supported"]
    if bad:
        reason = "Contradicted: " + "; ".join(f'"{c.quote}" ({c.why})' for c in bad)
        if good:
            reason += "; supported: " + ", ".join(f'"{c.quote}"' for c in good)
        reason += "."
    else:
        n = len(good)
        reason = (f"{sentence(all_of(n, 'claim'))} the PR makes ("
                  + ", ".join(f'"{c.quote}"' for c in good)
                  + f") {agree(n, 'matches', 'match')} the evidence.")
    cited = [e for c in bad + good for e in c.evidence]
    half = ctx.settings.thresholds.claims_half_life
    return ok(len(bad), decay(len(bad), half), reason, cited)


# --------------------------------------------------------------------------- delivery


_DELIVERY: Final[dict[str, tuple[float, str]]] = {
    "merged": (1.0, "The PR was merged: the result shipped."),
    "open": (0.5, "The PR is open and not merged yet: the result has not shipped."),
    "draft": (0.25, "The PR is still a draft: the work is not offered as finished."),
    "closed": (0.0, "The PR was closed without merging: nothing shipped."),
}


@signal("outcome.delivery", CAT, "Result shipped", 1.0,
        ["facts.pull.merged", "facts.pull.state", "facts.pull.draft"])
def delivery(ctx: Ctx) -> Measure:
    """Whether the work shipped. A documented table, not a curve: the state is categorical."""
    pull = ctx.pull
    state = "merged" if pull.merged else ("draft" if pull.draft else pull.state)
    value, reason = _DELIVERY.get(state, _DELIVERY["open"])
    return ok(value, 100 * value, reason, [ctx.pr])


@signal("outcome.task_list", CAT, "Task list completed", 1.0, ["facts.pull.body"])
def task_list(ctx: Ctx) -> Measure:
    """Share of the PR's own task-list items checked off. A list with no box checked is an
    unfilled template (process.template_filled), not a plan, so it is left out here."""
    items = task_items(ctx.pull.body)
    if not items:
        return inconclusive("The PR description has no task list.", [ctx.pr])
    done = sum(items)
    if not done:
        n = len(items)
        return inconclusive(f"{sentence(none_of(n, 'task-list item'))} {agree(n, 'is not', 'is')} "
                            "checked: an unfilled template rather than a plan.", [ctx.pr])
    value = done / len(items)
    if done == len(items):
        reason = (f"{sentence(all_of(done, 'task-list item'))} in the description "
                  f"{agree(done, 'is', 'are')} checked.")
    else:
        reason = (f"{share(done, len(items), 'task-list item')} in the description "
                  f"{agree(done, 'is', 'are')} checked.")
    return ok(value, linear(value, 1.0, 0.0), reason, [ctx.pr])


@signal("outcome.post_approval_changes", CAT, "Shipped what was approved", 1.0,
        ["facts.reviews", "facts.commits"])
def post_approval_changes(ctx: Ctx) -> Measure:
    """Commits pushed after the last human approval: code that shipped without review. An
    approval submitted after the merge approved nothing that shipped, so it does not count (as in
    process.human_approval)."""
    human = [r for r in ctx.human_reviews if r.state == "APPROVED"]
    approvals, late = before_merge(ctx, human)
    if not approvals:
        if late:
            who = names(sorted({r.author or "" for r in late}))
            return inconclusive(f"No human approval before the merge ({who} approved only after it "
                                "was merged, which does not approve what shipped), so there is no "
                                "approved state to compare with.", [f"review:{r.id}" for r in late])
        return inconclusive("No human approval, so there is no approved state to compare with.",
                            [ctx.pr])
    last = approvals[-1]
    commits = ctx.own_commits
    who = last.author or "a reviewer"
    position = next((n for n, c in enumerate(ctx.facts.commits) if c.sha == last.commit_id), None)
    undated: list[CommitEntry] = []
    if position is not None:
        later = [c for c in ctx.facts.commits[position + 1:] if not c.is_merge]
    else:
        approved_at = last.submitted_at or ""
        undated = [c for c in commits if not (c.committed_at or c.authored_at)]
        later = [c for c in commits if (c.committed_at or c.authored_at or "") > approved_at > ""]
        if not approved_at or (undated and not later):
            missing = "the approval has no time" if not approved_at else (
                f"{plural(len(undated), 'commit')} {agree(len(undated), 'carries', 'carry')} no date")
            return inconclusive(
                f"{who}'s approval names no commit of this PR and {missing}, so what was pushed "
                "after it is unknown.", [f"review:{last.id}", ctx.pr])
    half = ctx.settings.thresholds.post_approval_half_life
    if later:
        reason = f"{plural(len(later), 'commit')} landed after {who}'s last approval without another approval"
        reason += (f" ({plural(len(undated), 'more commit')} without a date not counted)."
                   if undated else ".")
    else:
        reason = f"Nothing was pushed after {who}'s approval: what shipped is what was approved."
    cited = [f"review:{last.id}", *(ctx.commit_id(c.sha) for c in later)]
    return ok(len(later), decay(len(later), half), reason, cited)


@signal("outcome.test_evidence", CAT, "Tests changed with the source", 2.0, ["facts.files"])
def test_evidence(ctx: Ctx) -> Measure:
    """Changed test lines against changed source lines, lenient for tiny changes."""
    if not ctx.facts.files:
        if "files" in ctx.facts.unavailable:
            return inconclusive("The changed files could not be read.", ["audit:unavailable-files"])
        return inconclusive("The PR changes no files.", [ctx.pr])
    source = ctx.lines_by_class.get("source", 0)
    tests = ctx.lines_by_class.get("test", 0)
    if source == 0:
        return inconclusive("No source lines changed (docs, tests or generated files only), so "
                            "there is nothing for tests to cover.",
                            ctx.biggest_file_ids(f.path for f in ctx.facts.files))
    t = ctx.settings.thresholds
    value = tests / source
    if tests:
        reason = (f"{plural(tests, 'test line')} changed alongside {plural(source, 'source line')} "
                  f"(ratio {value:.2f}).")
    else:
        reason = f"No test file changed for {plural(source, 'source line')}."
    cited = ctx.biggest_file_ids(ctx.files_of("test"))
    cited += ctx.biggest_file_ids(ctx.files_of("source"))
    score = coverage(tests, source, t.test_ratio_half, t.test_leniency_lines)
    return ok(value, score, reason, cited)
