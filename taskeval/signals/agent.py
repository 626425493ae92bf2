"""agentPerformance: execution effectiveness, recovery from issues, quality of decisions."""

from __future__ import annotations

from typing import Final

from taskeval.contract import Category
from taskeval.evidence import vocabulary as ev

from .base import Measure, inconclusive, ok, signal
from .context import Ctx, Verdict
from .curves import decay, linear
from .hygiene import FindingKind, detect_text_issues
from .identity import authors_of, how, writers
from .turns import intervention_of, turns_of
from .wording import agree, all_of, names, none_of, plural, sentence, share, times

CAT: Category = "agentPerformance"


def _no_ci(ctx: Ctx) -> Measure:
    if ctx.ci_unavailable:
        return inconclusive("Check runs or workflow runs could not be read, so CI history is "
                            "unknown.", [f"audit:unavailable-{r}" for r in ctx.facts.unavailable])
    return inconclusive("No CI ran on this PR.", [ctx.pr])


@signal("agent.ci_recovery", CAT, "Recovered from CI failures", 2.0,
        ["facts.checks", "facts.runs", "facts.pull.headSha"])
def ci_recovery(ctx: Ctx) -> Measure:
    """Share of checks that failed at some point and pass at the head: fail-then-fix. CI that
    ran after the PR was merged or closed is not counted."""
    view = ctx.ci_before_end
    if not view.shas():
        return _no_ci(ctx)
    head = ctx.pull.head_sha
    # One source per commit (checks when there are any): a failing job and its workflow run
    # are one failure, not two.
    failures: dict[tuple[str, str], Verdict] = {}  # each check's first failure
    for v in view.all():
        if v.outcome == "fail" and (v.source, v.key) not in failures:
            failures[(v.source, v.key)] = v
    if not failures:
        return inconclusive("CI never failed on this PR, so there was nothing to recover from.",
                            [v.evidence for v in view.at(head)])
    at_head: dict[tuple[str, str], Verdict] = {
        (v.source, v.key): v for src in (view.checks, view.runs)
        for v in src.get(head, {}).values()
    }
    recovered: list[tuple[str, str]] = []
    stuck: list[tuple[str, str]] = []
    for key in sorted(failures):
        now = at_head.get(key)
        if now is not None and now.outcome == "pass":
            recovered.append(key)
        elif now is not None and now.outcome == "fail":
            stuck.append(key)
    cited = [failures[k].evidence for k in stuck + recovered]
    cited += [at_head[k].evidence for k in stuck + recovered]
    if not recovered and not stuck:
        return inconclusive(
            f"{plural(len(failures), 'check')} failed earlier but did not run again at the head "
            "commit, so recovery cannot be told.", cited)
    value = len(recovered) / (len(recovered) + len(stuck))
    label = {k: at_head[k].label for k in stuck + recovered}
    if stuck and not recovered:
        n = len(stuck)
        reason = (f"{agree(n, 'A CI failure was', 'CI failures were')} never fixed: "
                  f"{names(label[k] for k in stuck)} still {agree(n, 'fails', 'fail')} at the head "
                  "commit.")
    elif stuck:
        reason = (f"Fixed {share(len(recovered), len(recovered) + len(stuck), 'CI failure')} by the "
                  f"head commit; still failing: {names(label[k] for k in stuck)}.")
    else:
        n = len(recovered)
        reason = (f"{sentence(all_of(n, 'failing check'))} ({names(label[k] for k in recovered)}) "
                  f"{agree(n, 'was', 'were')} fixed by a later commit and {agree(n, 'passes', 'pass')} "
                  "at the head.")
    return ok(value, linear(value, 1.0, 0.0), reason, cited)


@signal("agent.red_pushes", CAT, "Pushes kept CI green", 1.5, ["facts.checks", "facts.runs"])
def red_pushes(ctx: Ctx) -> Measure:
    """Commits whose CI was red after all re-runs: flaky failures re-run to green don't count,
    and neither does CI that ran after the PR was merged or closed."""
    view = ctx.ci_before_end
    if not view.shas():
        return _no_ci(ctx)
    order = {c.sha: n for n, c in enumerate(ctx.facts.commits)}
    last = len(order)
    shas = sorted(view.shas(), key=lambda s: (order.get(s, last), s))
    failing = {s: [v.evidence for v in view.at(s) if v.outcome == "fail"] for s in shas}
    red = [s for s in shas if failing[s]]
    flaky = [v for v in view.all() if v.flaky]
    cited = [ctx.commit_id(s) for s in red]
    cited += [e for s in red for e in failing[s]]
    cited += [v.evidence for v in flaky]
    note = (f" ({plural(len(flaky), 'flaky failure')} re-run to green on the same commit not "
            "counted)") if flaky else ""
    if red:
        shorts = names(s[:7] for s in red)
        reason = (f"{share(len(red), len(shas), 'commit')} with CI results "
                  f"{agree(len(red), 'was', 'were')} red ({shorts}){note}.")
    else:
        n = len(shas)
        reason = (f"{sentence(none_of(n, 'commit'))} with CI results {agree(n, 'was not', 'was')} "
                  f"red{note}.")
    threshold = ctx.settings.thresholds.red_push_half_life
    return ok(len(red), decay(len(red), threshold), reason, cited or [ctx.commit_id(s) for s in shas[:3]])


def _in_pr_reverts(ctx: Ctx) -> list[str]:
    commits = ctx.facts.commits
    subjects = {c.subject for c in commits}
    out = []
    for c in commits:
        # Only a message saying "This reverts commit" can name a reverted commit.
        target = ev.reverted_sha(c.message_excerpt) if "This reverts" in c.message_excerpt else None
        by_sha = bool(target) and any(
            o.sha.startswith(target or "") for o in commits if o.sha != c.sha)
        by_subject = c.subject.startswith('Revert "') and c.subject[8:].rstrip('"') in subjects
        if by_sha or by_subject:
            out.append(c.sha)
    return out


@signal("agent.commit_churn", CAT, "No revert or fixup churn", 1.0, ["facts.commits"])
def commit_churn(ctx: Ctx) -> Measure:
    """Share of commits that undo (in-PR reverts) or patch (fixup!/squash!) the PR's own work."""
    commits = ctx.own_commits
    if not commits:
        return inconclusive("The PR lists no commits of its own.", [ctx.pr])
    reverts = _in_pr_reverts(ctx)
    # "fixup! ", "squash! " and "amend! " subjects: only one with a "!" can be one.
    fixups = [c.sha for c in commits
              if "!" in c.subject and ev.is_fixup(c.subject) and c.sha not in reverts]
    churn = reverts + fixups
    value = len(churn) / len(commits)
    zero = ctx.settings.thresholds.churn_ratio_zero
    if churn:
        parts = []
        if reverts:
            parts.append(f"{plural(len(reverts), 'revert')} of the PR's own commits")
        if fixups:
            parts.append(f"{plural(len(fixups), 'fixup/squash commit')}")
        reason = f"{' and '.join(parts)} among {plural(len(commits), 'commit')}."
        reason = reason[0].upper() + reason[1:]
    else:
        reason = f"No reverts or fixup commits among {plural(len(commits), 'commit')}."
    cited = [ctx.commit_id(s) for s in churn] or [ctx.pr]
    return ok(value, linear(value, 0.0, zero), reason, cited)


@signal("agent.human_intervention", CAT, "No outside commits needed", 2.0,
        ["facts.commits", "facts.pull.author", "facts.pull.createdAt", "facts.pull.closedAt",
         "facts.pull.mergedAt", "facts.reviews", "facts.comments", "facts.timeline"])
def human_intervention(ctx: Ctx) -> Measure:
    """Share of the PR's commits that people other than its owner pushed as part of its work: the
    agent needed help (the rescue class ``taken_over``).

    Only the PR's work counts (taskeval/signals/turns.py, ``intervention``): not a merge or rebase
    of the base branch, not a version bump or a release or bot account, not a commit that came
    before the agent's first (a PR stacked on someone's branch), not one after the PR ended. A
    commit with no date is counted (who wrote it is known even when the time is not). Where the
    agent commits under its own account (Cursor's "cursoragent"), its operator's commits beside
    them are hand work and count too. A commit whose author GitHub links to no account is
    attributed by its git identity where that is unambiguous (taskeval/signals/identity.py);
    one it does not attribute is left out of the share, and the reason counts it. The reason
    says what was left out."""
    found = intervention_of(ctx)
    unknown = found.unattributed
    if not found.known:
        if unknown:
            return inconclusive(
                f"No commit's writer is known: {plural(len(unknown), 'commit')} of the PR's work "
                f"{agree(len(unknown), 'has', 'have')} no GitHub account and a git identity that "
                "names no one in the PR, so who did the work is unknown.",
                [ctx.commit_id(c.sha) for c in unknown])
        return inconclusive("No commit has a known writer (no GitHub account, no git identity "
                            "naming anyone), so who did the work is unknown.", [ctx.pr])
    counted = found.counted
    n = len(found.known)
    value = len(counted) / n
    who = writers(authors_of(ctx)[c.sha] for c in counted)
    left = [(found.merges, "merge or rebase of the base branch", "merges or rebases of the base branch"),
            (found.releases, "version bump or release/bot commit", "version bumps or release/bot commits"),
            (found.stacked, "commit the PR was built on (before the agent's first)",
             "commits the PR was built on (before the agent's first)"),
            (found.early, "commit whose writer is unknown before the owner's first (no one's rescue "
             "either way)", "commits whose writer is unknown before the owner's first (no one's rescue "
             "either way)"),
            (found.late, "commit after the PR ended", "commits after the PR ended"),
            (unknown, "commit whose writer is unknown (no GitHub account, no git identity naming "
             "anyone)", "commits whose writer is unknown (no GitHub account, no git identity naming "
             "anyone)")]
    skipped = [plural(len(cs), one, many) for cs, one, many in left if cs]
    tail = f" (not counted: {names(skipped, 6)})" if skipped else ""
    if found.by_identity:
        linked = [authors_of(ctx)[c.sha] for c in found.by_identity]
        tail += (f"; {plural(len(linked), 'commit')} without a GitHub account attributed by "
                 f"{agree(len(linked), 'its', 'their')} git identity ({how(linked)})")
    if counted:
        whose = "another person" if len(who) == 1 else "other people"
        if found.operator_hand and ctx.pull.author in who:
            whose = "its operator by hand" if len(who) == 1 else "its operator and other people"
        reason = (f"{share(len(counted), n, 'commit')} {agree(len(counted), 'was', 'were')} the "
                  f"PR's work pushed by {whose} ({names(who)})")
        if found.undated:
            k = len(found.undated)
            reason += (f"; {plural(k, 'commit')} without a date counted whether or not "
                       f"{agree(k, 'it', 'they')} came before the PR opened")
        reason += f"{tail}."
    else:
        reason = (f"{sentence(none_of(n, 'commit'))} with a known author "
                  f"{agree(n, 'was not', 'was')} the PR's work done by another person{tail}.")
    zero = ctx.settings.thresholds.intervention_ratio_zero
    cited = [ctx.commit_id(c.sha) for c in counted] or [ctx.pr]
    return ok(value, linear(value, 0.0, zero), reason, cited)


@signal("agent.review_rounds", CAT, "Few rounds of sending the work back", 1.5,
        ["facts.reviews", "facts.comments", "facts.timeline", "facts.commits", "facts.pull.createdAt",
         "facts.pull.closedAt", "facts.pull.mergedAt"])
def review_rounds(ctx: Ctx) -> Measure:
    """How often people sent the work back: change requests, and the turns in which a person's
    request handed the work back to the agent after it had handed it over (docs/turns.md). Each
    round is a miss the author made; a "thanks" or an approval is none."""
    human = [r for r in ctx.human_reviews if r.state != "PENDING"]
    turns = turns_of(ctx)
    sent = [s for s in turns.spans if s.whose == "agent" and s.rule in _SENT_BACK and s.by != "agent"]
    if not human and not turns.rounds:
        return inconclusive("No one other than the author reviewed the PR or sent it back.", [ctx.pr])
    requested = [r for r in human if r.state == "CHANGES_REQUESTED"]
    rounds = max(len(requested), turns.rounds)
    half = ctx.settings.thresholds.review_rounds_half_life
    if rounds:
        asked = sorted({r.author or "" for r in requested})
        parts = []
        if requested:
            parts.append(f"{agree(len(asked), 'a reviewer', 'reviewers')} ({names(asked)}) requested "
                         f"changes {times(len(requested))}")
        if turns.rounds > len(requested):
            parts.append(f"people sent the work back {times(turns.rounds)} in all")
        reason = f"{'; '.join(parts)}."
        reason = reason[:1].upper() + reason[1:]
    else:
        reason = f"No one sent the work back in {plural(len(human), 'human review')}."
    cited = [f"review:{r.id}" for r in requested] + [s.evidence for s in sent]
    return ok(rounds, decay(rounds, half), reason, cited or [f"review:{r.id}" for r in human])


_SENT_BACK: Final = frozenset({"change-request", "request", "assigned-agent", "to-draft"})


@signal("agent.feedback_addressed", CAT, "Review feedback followed up", 1.0,
        ["facts.reviews", "facts.comments", "facts.commits"])
def feedback_addressed(ctx: Ctx) -> Measure:
    """Share of human review feedback followed by a commit, an author reply or an approval."""
    author = ctx.pull.author
    feedback: list[tuple[str, str, str]] = []  # (evidence id, reviewer, time)
    for r in ctx.human_reviews:
        if (r.state == "CHANGES_REQUESTED" or (r.state == "COMMENTED" and r.body_excerpt)) and \
                r.submitted_at:
            feedback.append((f"review:{r.id}", r.author or "", r.submitted_at))
    for c in ctx.facts.comments:
        if c.kind == "review" and ctx.is_other_human(c.author, c.author_is_bot) and c.created_at:
            feedback.append((f"review-comment:{c.id}", c.author or "", c.created_at))
    if not feedback:
        return inconclusive("No human review feedback to follow up.", [ctx.pr])
    # A piece is followed up when anything came after it: only the latest push, reply and
    # approval (by the same reviewer) need comparing ("" when there is none, which no time follows).
    last_push = max([c.committed_at or c.authored_at or "" for c in ctx.own_commits], default="")
    replies = [c.created_at or "" for c in ctx.facts.comments if c.author == author]
    replies += [r.submitted_at or "" for r in ctx.facts.reviews if r.author == author]
    last_reply = max(replies, default="")
    last_approval: dict[str, str] = {}
    for r in ctx.facts.reviews:
        if r.state == "APPROVED" and r.author:
            last_approval[r.author] = max(last_approval.get(r.author, ""), r.submitted_at or "")
    open_items = [
        eid for eid, who, when in feedback
        if not last_push > when and not last_reply > when
        and not last_approval.get(who, "") > when
    ]
    done = len(feedback) - len(open_items)
    undated = [c for c in ctx.own_commits if not (c.committed_at or c.authored_at)]
    if open_items and undated:
        # A commit without a date may have come after the feedback: "got none" would be a guess.
        return inconclusive(
            f"{share(done, len(feedback), 'piece')} of review feedback got a later reply or approval; "
            f"whether a commit followed the other {len(open_items)} cannot be told: "
            f"{plural(len(undated), 'commit')} {agree(len(undated), 'carries', 'carry')} no date.",
            open_items)
    value = done / len(feedback)
    if open_items:
        reason = (f"{share(done, len(feedback), 'piece')} of review feedback got a later "
                  f"commit, reply or approval; {len(open_items)} got none.")
    else:
        reason = (f"{sentence(all_of(len(feedback), 'piece'))} of review feedback got a later "
                  "commit, reply or approval.")
    return ok(value, linear(value, 1.0, 0.0), reason, open_items or [e for e, _, _ in feedback])


def _texts(ctx: Ctx) -> list[tuple[str, str, str]]:
    """(evidence id, where, text) the author is answerable for."""
    out = [(ctx.pr, "the PR text", f"{ctx.pull.title}\n\n{ctx.pull.body}")]
    for c in ctx.facts.commits:
        out.append((ctx.commit_id(c.sha), f"commit {c.sha[:7]}",
                    f"{c.subject}\n\n{c.message_excerpt}"))
    mine = {ctx.pull.author}
    for r in ctx.facts.reviews:
        if r.author in mine or ctx.is_agent(r.author):
            out.append((f"review:{r.id}", f"review {r.id}", r.body_excerpt))
    for note in ctx.facts.comments:
        if note.author in mine or ctx.is_agent(note.author):
            prefix = "comment" if note.kind == "issue" else "review-comment"
            out.append((f"{prefix}:{note.id}", f"{prefix} {note.id}", note.body_excerpt))
    return out


# The kinds of finding the hygiene signal scores (template text is process.template_filled's).
_SCORED: Final[frozenset[FindingKind]] = frozenset({"leakage", "boilerplate"})


@signal("agent.text_hygiene", CAT, "No prompt leakage or chat boilerplate", 2.0,
        ["facts.pull.title", "facts.pull.body", "facts.commits", "facts.reviews", "facts.comments"])
def text_hygiene(ctx: Ctx) -> Measure:
    """Prompt leakage and chat boilerplate in text the author wrote (PR, commits, own comments)."""
    t = ctx.settings.thresholds
    weights = {"leakage": t.leakage_weight, "boilerplate": t.boilerplate_weight}
    texts = _texts(ctx)
    hits: list[tuple[str, str, str, str]] = []  # (evidence id, where, kind, description)
    for eid, where, text in texts:
        seen: set[str] = set()
        for f in detect_text_issues(text, standard=ctx.standard_texts, kinds=_SCORED):
            if f.kind in weights and f.rule not in seen:
                seen.add(f.rule)
                hits.append((eid, where, f.kind, f.describe()))
    value = sum(weights[kind] for _, _, kind, _ in hits)
    if hits:
        leaks = [f"{d} in {w}" for _, w, k, d in hits if k == "leakage"]
        chat = [f"{d} in {w}" for _, w, k, d in hits if k == "boilerplate"]
        parts = []
        if leaks:
            parts.append(f"prompt leakage: {names(leaks, 2)}")
        if chat:
            parts.append(f"chat boilerplate: {names(chat, 2)}")
        reason = "Found " + "; ".join(parts) + "."
    else:
        reason = (f"No prompt leakage or chat boilerplate in the PR text, "
                  f"{plural(len(ctx.facts.commits), 'commit message')} or the author's comments.")
    cited = [eid for eid, _, _, _ in hits] or [ctx.pr]
    return ok(value, decay(value, t.hygiene_half_life), reason, cited)
