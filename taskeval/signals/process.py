"""processCompliance: tests run before merge, review/merge expectations, docs, commit and task
conventions, a reviewable size and a filled-in description."""

from __future__ import annotations

import re
from typing import Final

from taskeval.agents import is_person, machine_accounts
from taskeval.config import compile_config_pattern
from taskeval.contract import Category
from taskeval.evidence import vocabulary as ev
from taskeval.models import ReviewEntry

from .base import Measure, inconclusive, ok, signal
from .context import CITally, Ctx, before_merge
from .curves import coverage, decay, eased_drop, linear, saturating
from .hygiene import FindingKind, blank_quotes, detect_text_issues, prose_length, visible_text
from .wording import agree, all_of, names, none_of, plural, quoted, sentence, share

CAT: Category = "processCompliance"


@signal("process.ci_at_merge", CAT, "CI green when merged", 3.0,
        ["facts.checks", "facts.runs", "facts.pull.mergedAt", "facts.pull.headSha"])
def ci_at_merge(ctx: Ctx) -> Measure:
    """Checks at the head as they stood at the merge moment: red or unfinished is a breach."""
    pull = ctx.pull
    if not pull.merged or not pull.merged_at:
        return inconclusive("The PR is not merged.", [ctx.pr])
    verdicts = ctx.ci_at(pull.merged_at).at(pull.head_sha)
    if not verdicts:
        if ctx.ci_unavailable:
            return inconclusive("CI results could not be read.",
                                [f"audit:unavailable-{r}" for r in ctx.facts.unavailable])
        return inconclusive("No CI had run on the head commit when the PR was merged.", [ctx.pr])
    tally = CITally.of(verdicts)
    if not tally.decided:
        return inconclusive("Every check at merge time was skipped or neutral.",
                            [v.evidence for v in verdicts])
    problems = tally.problems(("red", "red"), ("unfinished", "unfinished"))
    if problems:
        reason = f"Merged with {' and '.join(problems)}."
    else:
        reason = f"{sentence(all_of(tally.counted, 'check'))} had passed when the PR was merged."
    half = ctx.settings.thresholds.merge_failing_half_life
    return ok(tally.value, decay(tally.value, half), reason, tally.cited)


def _standing(reviews: list[ReviewEntry], until: str | None) -> dict[str, ReviewEntry]:
    """Each reviewer's latest decisive review (approve / request changes / dismissed) of
    ``reviews`` (``Ctx.human_reviews``: other people's)."""
    out: dict[str, ReviewEntry] = {}
    for r in reviews:
        if r.state not in _DECISIVE or not r.author:
            continue
        if until is not None and (r.submitted_at or "") > until:
            continue
        out[r.author] = r
    return out


_DECISIVE: Final = frozenset({"APPROVED", "CHANGES_REQUESTED", "DISMISSED"})


@signal("process.human_approval", CAT, "Approved by another person", 2.0,
        ["facts.reviews", "facts.pull.author"])
def human_approval(ctx: Ctx) -> Measure:
    """Independent human approvals still standing; bot and agent approvals do not count, and
    neither does the approval of the agent's operator (who ran the agent: for Copilot the person
    who assigned or started it): approving the work one asked an agent for is the author's own
    sign-off, not another person's review (docs/signals.md)."""
    if "reviews" in ctx.facts.unavailable:
        return inconclusive("Reviews could not be read.", ["audit:unavailable-reviews"])
    operator = ctx.attribution.operator if ctx.attribution.id != "human" else None
    standing = _standing(ctx.human_reviews, ctx.pull.merged_at)
    own = sorted(a for a, r in standing.items() if r.state == "APPROVED" and a == operator)
    approvers = sorted([a for a, r in standing.items() if r.state == "APPROVED" and a != operator])
    approved = [r for r in ctx.facts.reviews if r.state == "APPROVED"]
    machines = machine_accounts(ctx.settings)
    machine = sorted({
        r.author for r in approved if r.author and not is_person(r.author, r.author_is_bot, machines)
    })
    late = sorted({
        r.author or "" for r in before_merge(ctx, approved)[1]
        if ctx.is_other_human(r.author, r.author_is_bot) and r.author != operator
    }.difference(approvers))
    if approvers:
        reason = (f"Approved by {plural(len(approvers), 'person', 'people')} other than the author "
                  f"({names(approvers)}).")
    elif late:
        reason = (f"No one other than the author approved the PR before it was merged; "
                  f"{names(late)} approved only after the merge, which does not approve what shipped.")
    else:
        reason = "No one other than the author approved the PR."
    if own:
        reason += (f" The approval of {names(own)}, who ran the agent, does not count: the operator "
                   "is not an independent approver.")
    if machine:
        reason += f" Approvals by bots or agents ({names(machine)}) do not count."
    cited = [f"review:{standing[a].id}" for a in approvers] or [ctx.pr]
    half = ctx.settings.thresholds.approval_half
    return ok(len(approvers), saturating(len(approvers), half), reason, cited)


@signal("process.change_requests", CAT, "Change requests resolved before merge", 2.0,
        ["facts.reviews", "facts.pull.mergedAt"])
def change_requests(ctx: Ctx) -> Measure:
    """Human change requests still standing at merge (not approved over or dismissed)."""
    asked = [r for r in ctx.human_reviews if r.state == "CHANGES_REQUESTED"]
    if not asked:
        return inconclusive("No reviewer requested changes.", [ctx.pr])
    standing = _standing(ctx.human_reviews, ctx.pull.merged_at)
    open_ = sorted(a for a, r in standing.items() if r.state == "CHANGES_REQUESTED")
    moment = "merged" if ctx.pull.merged else "evaluated"
    who = sorted({r.author or "" for r in asked})
    if open_:
        reason = (f"{names(open_)}'s change {agree(len(open_), 'request was', 'requests were')} "
                  f"still standing when the PR was {moment}.")
    else:
        n = len(asked)
        reason = (f"{sentence(all_of(n, 'change request'))} ({names(who)}) {agree(n, 'was', 'were')} "
                  f"resolved by a later approval or dismissal before the PR was {moment}.")
    cited = [f"review:{standing[a].id}" for a in open_] + [f"review:{r.id}" for r in asked]
    half = ctx.settings.thresholds.change_request_half_life
    return ok(len(open_), decay(len(open_), half), reason, cited)


@signal("process.docs_with_surface", CAT, "Docs updated with public surface", 1.0,
        ["facts.files"])
def docs_with_surface(ctx: Ctx) -> Measure:
    """Doc lines against changed public-surface lines (APIs, CLIs, manifests)."""
    if "files" in ctx.facts.unavailable:
        return inconclusive("The changed files could not be read, so whether the public surface "
                            "changed is unknown.", ["audit:unavailable-files"])
    surface = [f for f in ctx.facts.files if ctx.classify(f.path) == "source"
               and ctx.is_surface(f.path)]
    if not surface:
        return inconclusive("No public-surface file (API, CLI, manifest, exports) changed.",
                            [ctx.pr])
    lines = sum(f.additions + f.deletions for f in surface)
    docs = ctx.lines_by_class.get("docs", 0)
    if lines == 0:
        return inconclusive("Public-surface files were only renamed or had no line changes.",
                            ctx.biggest_file_ids(f.path for f in surface))
    t = ctx.settings.thresholds
    value = docs / lines
    paths = [f.path for f in surface]
    if docs:
        reason = (f"{plural(docs, 'doc line')} changed alongside {plural(lines, 'public-surface line')} "
                  f"in {names(paths, 2)}.")
    else:
        reason = (f"Public surface changed ({names(paths, 2)}, {plural(lines, 'line')}) with no doc "
                  "change.")
    cited = ctx.biggest_file_ids(ctx.files_of("docs")) + ctx.biggest_file_ids(paths)
    return ok(value, coverage(docs, lines, t.doc_ratio_half, t.doc_leniency_lines), reason, cited)


@signal("process.conventional_commits", CAT, "Commit subjects follow the convention", 1.0,
        ["facts.commits"])
def conventional_commits(ctx: Ctx) -> Measure:
    """Share of commit subjects matching ``patterns.commit_convention``; git's own
    ``Revert "..."`` subjects count as conforming, and commits an agent makes by design (Copilot's
    empty "Initial plan") are left out."""
    commits = [c for c in ctx.own_commits if not ctx.is_standard_commit(c.subject)]
    if not commits:
        return inconclusive("The PR lists no commits of its own.", [ctx.pr])
    pattern = compile_config_pattern(ctx.settings.patterns.commit_convention)
    bad = [c for c in commits
           if not pattern.search(c.subject) and not c.subject.startswith('Revert "')]
    value = (len(commits) - len(bad)) / len(commits)
    if bad:
        good = len(commits) - len(bad)
        n = len(commits)
        head = (sentence(none_of(n, "commit subject")) + agree(n, " does not follow", " follows")
                if not good else f"{share(good, n, 'commit subject')} {agree(good, 'follows', 'follow')}")
        reason = f"{head} the convention; not: {names([quoted(c.subject) for c in bad], 2)}."
    else:
        n = len(commits)
        reason = (f"{sentence(all_of(n, 'commit subject'))} {agree(n, 'follows', 'follow')} the "
                  "convention.")
    cited = [ctx.commit_id(c.sha) for c in bad] or [ctx.commit_id(c.sha) for c in commits[:3]]
    return ok(value, linear(value, 1.0, 0.0), reason, cited)


# What every match of the default ``task_id_pattern`` holds: "#" before the issue number of a
# closing keyword, or the "-" before a tracker key's number ("ABC-123"). Each match spans that
# token and at most the keyword before it, so the search can skip every other part of a long
# body (see ``near_anchors``); a repository's own pattern is searched as it is.
_TASK_ANCHOR: Final = re.compile(r"#\d|[A-Z0-9]-\d")


@signal("process.task_reference", CAT, "Linked to a task", 1.0,
        ["facts.pull.title", "facts.pull.body", "facts.commits"])
def task_reference(ctx: Ctx) -> Measure:
    """A task reference in the PR text, or else the share of commits with a task trailer."""
    source = ctx.settings.patterns.task_id_pattern
    pattern = compile_config_pattern(source)
    text = blank_quotes(visible_text(f"{ctx.pull.title}\n\n{ctx.pull.body}"))
    if source == ev.DEFAULT_PATTERNS.task_id_pattern and isinstance(pattern, re.Pattern):
        match = next(ev.near_anchors(pattern, text, _TASK_ANCHOR), None)
    else:
        match = pattern.search(text)
    keys = {k.lower() for k in ctx.settings.patterns.task_trailers}
    commits = ctx.own_commits
    tagged = [c for c in commits if keys & {k.lower() for k in c.trailers}]
    if match:
        quote = " ".join(match.group(0).split())
        issues = [i.id for i in ev.linked_issues(match.group(0), ctx.bundle.repository)]
        return ok(1.0, 100, f'The PR text references a task ("{quote}").', [ctx.pr, *issues])
    value = len(tagged) / len(commits) if commits else 0.0
    trailers = ", ".join(ctx.settings.patterns.task_trailers[:3])
    if tagged:
        reason = (f"No task reference in the PR title or body; {share(len(tagged), len(commits), 'commit')} "
                  f"{agree(len(tagged), 'carries', 'carry')} a task trailer.")
    else:
        reason = f"No task reference in the PR title, body or commit trailers ({trailers}, ...)."
    cited = [ctx.pr, *(ctx.commit_id(c.sha) for c in tagged)]
    return ok(value, linear(value, 1.0, 0.0), reason, cited)


@signal("process.change_size", CAT, "Reviewable change size", 1.5,
        ["facts.files", "facts.pull.additions", "facts.pull.deletions", "facts.pull.changedFiles"])
def change_size(ctx: Ctx) -> Measure:
    """Changed lines outside generated/vendored files: review effectiveness drops past ~400."""
    pull = ctx.pull
    files = ctx.facts.files
    if not files and "files" in ctx.facts.unavailable and not (pull.additions + pull.deletions):
        return inconclusive("The changed files could not be read.", ["audit:unavailable-files"])
    ignored = ctx.lines_by_class.get("ignored", 0)
    listed = sum(f.additions + f.deletions for f in files)
    if len(files) < pull.changed_files:  # GitHub lists at most 3,000 files; trust its totals
        lines = max(0, pull.additions + pull.deletions - ignored)
    else:
        lines = listed - ignored
    t = ctx.settings.thresholds
    note = f" ({ignored} generated/lockfile lines excluded)" if ignored else ""
    if lines <= t.comfortable_change_lines:
        reason = (f"{plural(lines, 'changed line')}{note}: within the comfortable "
                  f"{t.comfortable_change_lines} for one review.")
    else:
        reason = (f"{plural(lines, 'changed line')}{note}: past the comfortable "
                  f"{t.comfortable_change_lines} for one review, which loses effectiveness as "
                  "size grows.")
    cited = ctx.biggest_file_ids((f.path for f in files if ctx.classify(f.path) != "ignored"), 3)
    score = eased_drop(lines, t.comfortable_change_lines, t.max_change_lines, t.change_size_floor)
    return ok(lines, score, reason, cited or [ctx.pr])


@signal("process.description", CAT, "PR has a real description", 1.0, ["facts.pull.body"])
def description(ctx: Ctx) -> Measure:
    """Length of the written description (saturating: a few sentences are enough)."""
    chars = prose_length(ctx.pull.body)
    half = ctx.settings.thresholds.description_half_chars
    if chars == 0:
        reason = "The PR has no description."
    else:
        reason = f"The PR description has {plural(chars, 'character')} of text."
    return ok(chars, saturating(chars, half), reason, [ctx.pr])


_TEMPLATE: Final[frozenset[FindingKind]] = frozenset({"template"})


@signal("process.template_filled", CAT, "PR template filled in", 1.0, ["facts.pull.body"])
def template_filled(ctx: Ctx) -> Measure:
    """Unfilled PR-template text left in the description (placeholders, instructions, empty
    checklists), from the shared text detector."""
    if not ctx.pull.body.strip():
        return inconclusive("The PR has no description to check.", [ctx.pr])
    found = detect_text_issues(ctx.pull.body, standard=ctx.standard_texts, kinds=_TEMPLATE)
    half = ctx.settings.thresholds.template_half_life
    if found:
        reason = ("Unfilled template text in the description: "
                  + names([f"{f.describe()} on line {f.line}" for f in found], 2) + ".")
    else:
        reason = "No unfilled PR-template text in the description."
    return ok(len(found), decay(len(found), half), reason, [ctx.pr])
