"""agentPerformance, continued: the agent's own failures as GitHub shows them without any CI.

What people say about the work (objections, "please fix" rounds), history rewritten after a
review, the agent's own failure events on the issue timeline, long silences, and work thrown away
and restarted under a new PR. Every signal here reads only what GitHub serves for any PR (reviews,
conversation comments, the issue timeline), so it works the same live and on a replayed corpus,
and each is inconclusive when the part it reads was not collected or could not be read.
"""

from __future__ import annotations

from typing import Final

from taskeval.contract import Category
from taskeval.evidence.vocabulary import agent_run_event
from taskeval.models import PROJECT_REASONS, TimelineEntry

from .base import Measure, inconclusive, ok, signal
from .closure import closure_of
from .context import Ctx
from .curves import decay
from .reader import failing_checks
from .turns import people_of, said_of, turns_of
from .wording import agree, all_of, duration, names, none_of, plural, sentence

CAT: Category = "agentPerformance"

@signal("agent.objections", CAT, "Reviewers did not call the work wrong", 1.5,
        ["facts.reviews", "facts.comments", "facts.pull.closedAt", "facts.pull.mergedAt"])
def objections_signal(ctx: Ctx) -> Measure:
    """Comments and reviews by other people, up to the PR's end, that the reader
    (taskeval/signals/reader.py) reads as a verdict that the work is wrong: broken, a breaking
    change, the wrong approach, not what was asked, useless, a 👎. The operator of an agent
    judges its work too (their verdict counts even when they close the PR themselves). A request
    for a change is not a verdict (the review rounds count those); quoted lines, quotations and
    code are not read, and a negated phrase ("not a breaking change") does not count."""
    people = people_of(ctx)
    judges = {"reviewer", "person"} | ({"operator"} if not people.human_pr else set())
    units = [u for u in said_of(ctx).until_end() if u.kind != "body" and u.role in judges]
    unread = [r for r in ("issue_comments", "review_comments") if r in ctx.facts.unavailable]
    gap = (f" ({' and '.join(r.replace('_', ' ') for r in unread)} could not be read, so only "
           "what could be read is counted)") if unread else ""
    if not units:
        return inconclusive(f"No one other than the author wrote a review or comment{gap}.",
                            [f"audit:unavailable-{r}" for r in unread] or [ctx.pr])
    found = [u for u in units if u.reading.verdict == "work_wrong"]
    half = ctx.settings.thresholds.objection_half_life
    if found:
        words = [w for u in found for w in u.reading.words[:1]]
        reason = (f"{plural(len(found), 'comment or review', 'comments or reviews')} of "
                  f"{len(units)} by people ({names(sorted({u.login or '' for u in found}))}) "
                  f"{'says' if len(found) == 1 else 'say'} the work is wrong"
                  f"{' (' + ', '.join(f'“{w[:40]}”' for w in words[:3]) + ')' if words else ''}{gap}.")
    else:
        n = len(units)
        reason = (f"{sentence(none_of(n, 'comment or review', 'comments or reviews'))} by people "
                  f"{agree(n, 'does not say', 'says')} the work is wrong{gap}.")
    cited = [u.evidence for u in found] or [u.evidence for u in units[:3]]
    return ok(len(found), decay(len(found), half), reason, cited)


# --------------------------------------------------------------------------- timeline


def _no_timeline(ctx: Ctx) -> Measure:
    if "timeline" in ctx.facts.unavailable:
        return inconclusive("The issue timeline could not be read.", ["audit:unavailable-timeline"])
    return inconclusive("The issue timeline was not collected for this evaluation.", [ctx.pr])


def _first_human_review(ctx: Ctx, timeline: list[TimelineEntry]) -> str | None:
    times = [r.submitted_at for r in ctx.human_reviews
             if r.submitted_at and r.state != "PENDING"]
    times += [e.created_at for e in timeline
              if e.event == "reviewed" and e.created_at and e.state != "PENDING"
              and ctx.is_other_human(e.actor, e.actor_is_bot)]
    return min(times) if times else None


@signal("agent.force_pushes", CAT, "No history rewrites after review", 1.0,
        ["facts.timeline", "facts.reviews"])
def force_pushes(ctx: Ctx) -> Measure:
    """Force-pushes to the PR branch after the first human review: the reviewed commits are gone."""
    timeline = ctx.facts.timeline
    if timeline is None:
        return _no_timeline(ctx)
    first = _first_human_review(ctx, timeline)
    pushes = [e for e in timeline if e.event == "head_ref_force_pushed"]
    if first is None:
        return inconclusive(
            f"No human reviewed the PR, so no rewrite came after a review "
            f"({plural(len(pushes), 'force-push', 'force-pushes')} in all).",
            [e.id for e in pushes] or [ctx.pr])
    after = [e for e in pushes if (e.created_at or "") > first]
    half = ctx.settings.thresholds.force_push_half_life
    if after:
        who = names(sorted({e.actor or "someone" for e in after}))
        reason = (f"The branch was force-pushed {plural(len(after), 'time')} after the first human "
                  f"review (by {who}), replacing commits a reviewer had seen.")
    else:
        reason = "No force-push after the first human review."
        if pushes:
            reason = (f"{plural(len(pushes), 'force-push', 'force-pushes')}, all before the first "
                      "human review.")
    return ok(len(after), decay(len(after), half), reason, [e.id for e in after] or [ctx.pr])


@signal("agent.own_failures", CAT, "Agent runs finished without failing", 2.0, ["facts.timeline"])
def own_failures(ctx: Ctx) -> Measure:
    """The agent's own failure and stop events on the timeline (e.g. Copilot's
    copilot_work_finished_failure), counted against its recorded runs, up to the PR's end: a
    session that fails after a maintainer closed the PR was stopped by the close."""
    timeline = ctx.facts.timeline
    if timeline is None:
        return _no_timeline(ctx)
    pull = ctx.pull
    end = pull.merged_at or pull.closed_at or "~"
    every = [(e, kind) for e in timeline if (kind := agent_run_event(e.event))]
    runs = [(e, kind) for e, kind in every if (e.created_at or "") <= end]
    late = len(every) - len(runs)
    if not runs:
        why = (f" ({plural(late, 'session event')} after the PR ended not counted)" if late else "")
        return inconclusive("The timeline records no agent session events before the PR ended "
                            f"(GitHub records them for agents such as Copilot){why}.", [ctx.pr])
    failed = [e for e, kind in runs if kind == "failed"]
    started = sum(1 for _, kind in runs if kind == "started")
    half = ctx.settings.thresholds.agent_failure_half_life
    if failed:
        reason = (f"The agent reported {plural(len(failed), 'failed run')} "
                  f"({names(sorted({e.event for e in failed}))}) out of "
                  f"{plural(max(started, len(failed)), 'recorded run')}.")
    else:
        n = max(started, 1)
        reason = f"{sentence(all_of(n, 'recorded agent run'))} finished without a failure."
    if late:
        reason = reason[:-1] + (f"; {plural(late, 'session event')} after the PR was "
                                f"{'merged' if pull.merged else 'closed'} not counted.")
    cited = [e.id for e in failed] or [e.id for e, _ in runs[-1:]]
    return ok(len(failed), decay(len(failed), half), reason, cited)


@signal("agent.idle_gaps", CAT, "No long stalls on the agent's turns", 0.5,
        ["facts.pull.createdAt", "facts.pull.closedAt", "facts.pull.mergedAt", "facts.pull.draft",
         "facts.commits", "facts.reviews", "facts.comments", "facts.timeline", "facts.checks",
         "facts.runs"])
def idle_gaps(ctx: Ctx) -> Measure:
    """The longest stretch in which it was the agent's move (a person asked for changes or
    assigned it, CI went red on its commit, or it was still drafting) before it acted, beyond a
    grace period. Time waiting for people is the team's cycle time and is shown, never charged
    (docs/turns.md)."""
    turns = turns_of(ctx)
    th = ctx.settings.thresholds
    waiting = (f"; {duration(turns.people_hours)} waiting for people, not charged"
               if turns.people_hours else "")
    mine = [s for s in turns.spans if s.whose == "agent"]
    if not mine:
        return inconclusive(f"It was never the agent's move after the PR opened{waiting}.",
                            [ctx.pr])
    longest = max(mine, key=lambda s: s.hours)
    over = max(0.0, longest.hours - th.idle_grace_hours)
    reason = (f"The longest agent turn lasted {duration(longest.hours)} ({longest.start[:10]} to "
              f"{longest.end[:10]}, begun by {_RULE_WORDS.get(longest.rule, longest.rule)}) among "
              f"{plural(len(mine), 'agent turn')}")
    reason += ("" if over else f", within the {th.idle_grace_hours:g}-hour grace") + f"{waiting}."
    return ok(longest.hours, decay(over, th.idle_half_life_hours), reason,
              [longest.evidence, ctx.pr])


_RULE_WORDS: Final = {
    "opened-draft": "opening as a draft", "change-request": "a change request",
    "request": "a person's request", "assigned-agent": "an assignment", "to-draft": "a return to draft",
    "ci-red": "red CI", "session-start": "its session starting",
}


@signal("agent.restarts", CAT, "Work not abandoned and restarted", 1.0,
        ["facts.timeline", "facts.pull.state", "facts.pull.merged", "facts.comments",
         "facts.reviews", "facts.pull.labels", "facts.pull.title"])
def restarts(ctx: Ctx) -> Measure:
    """Later PRs by the same author that mention this one after it was closed without merging:
    the work was thrown away and started again."""
    timeline = ctx.facts.timeline
    if timeline is None:
        return _no_timeline(ctx)
    pull = ctx.pull
    if pull.merged or pull.state != "closed":
        return inconclusive("The PR is merged or still open: no abandoned work to restart.",
                            [ctx.pr])
    ended = closure_of(ctx)
    if ended is not None and ended.class_ in PROJECT_REASONS:
        return inconclusive(f"Closed as {ended.class_.replace('_', ' ')}: the PR ended for the "
                            "project's reasons, not because the work was thrown away.",
                            ended.evidence)
    closed = pull.closed_at or ""
    mine = {pull.author.lower()}
    again = [
        e for e in timeline
        if e.event == "cross-referenced" and (e.created_at or "") >= closed
        and (e.source_author or e.actor or "").lower() in mine
        and (e.source_is_pull or e.source is None)
    ]
    half = ctx.settings.thresholds.restart_half_life
    if again:
        where = names(sorted({e.source for e in again if e.source})) or "a later PR or issue"
        reason = (f"Closed without merging, then {pull.author} referenced it from {where} "
                  f"{plural(len(again), 'time')}: the work was restarted elsewhere.")
        return ok(len(again), decay(len(again), half), reason, [e.id for e in again])
    # Nothing seen is not proof of nothing: a restart need not mention the PR it replaces.
    return inconclusive("Closed without merging; no later PR by the same author refers to it, so "
                        "whether the work was restarted is unknown.", [ctx.pr])


# --------------------------------------------------------------------------- the end


@signal("agent.rejection", CAT, "Not rejected for its own failure", 3.0,
        ["facts.pull.state", "facts.pull.merged", "facts.pull.closedAt", "facts.pull.labels",
         "facts.pull.title", "facts.timeline", "facts.reviews", "facts.comments", "facts.commits",
         "facts.checks", "facts.runs"])
def rejection(ctx: Ctx) -> Measure:
    """A closed, unmerged PR counts against the agent only when it ended for the agent's own
    failure (the closure class ``agent_failure``: a verdict on the work, red CI at closing, a
    failed last session, giving up). Superseded, duplicate, stale and declined PRs ended for the
    project's reasons; withdrawn and unknown ones are not counted either way (docs/turns.md)."""
    ended = closure_of(ctx)
    if ended is None:
        state = "merged" if ctx.pull.merged else "still open"
        return inconclusive(f"The PR is {state}: it was not rejected.", [ctx.pr])
    if ended.counts_against_agent:
        return ok(1, 0, f"Rejected for the agent's own failure: {_lower(ended.reason)}", ended.evidence)
    if ended.class_ in PROJECT_REASONS:
        return inconclusive(f"Not counted against the agent: {_lower(ended.reason)}", ended.evidence)
    return inconclusive(f"Not counted either way ({ended.class_}): {_lower(ended.reason)}",
                        ended.evidence)


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:]


@signal("agent.admitted_failures", CAT, "Did not report failing checks", 1.0,
        ["facts.pull.body", "facts.comments", "facts.reviews"])
def admitted_failures(ctx: Ctx) -> Measure:
    """The agent's own reports, in its description and comments, that a check it ran fails
    ("`npm test` *(fails: …)*", "tests still fail") or that it could not finish. A check its
    sandbox could not run at all (a missing tool, no network) is reported but not counted: it
    says the work was not verified, not that it is broken."""
    people = people_of(ctx)
    said = said_of(ctx)
    texts = [(ctx.pr, ctx.pull.body)] if people.role(ctx.pull.author, ctx.pull.author_is_bot) in (
        "agent", "operator") and not people.human_pr else []
    by_agent = [m for m in ctx.remarks if m.text and people.role(m.author, m.flagged) == "agent"]
    # Comments before reviews: the order its reason cites them in.
    texts += [(m.evidence, m.text) for m in sorted(by_agent, key=lambda m: m.state is not None)]
    # Whether it says it could not finish is the reader's verdict on its own words.
    gave = {u.evidence for u in said.units if u.role == "agent" and u.reading.verdict == "work_wrong"
            and u.reading.rule == "the agent reports it could not do the work"}
    if not texts:
        return inconclusive("Nothing the agent wrote was collected (a person's PR, or no text).",
                            [ctx.pr])
    failing = sandbox = 0
    gave_up: list[str] = []
    cited: list[str] = []
    for eid, text in texts:
        f, sb = failing_checks(text)
        g = eid in gave
        failing += f
        sandbox += sb
        if f - sb > 0:
            cited.append(eid)
        if g:
            gave_up.append(eid)
    counted = failing - sandbox + len(gave_up)
    parts = []
    if failing - sandbox:
        parts.append(f"reported {plural(failing - sandbox, 'failing check')}")
    if gave_up:
        parts.append("said it could not finish")
    note = (f" ({plural(sandbox, 'check')} its environment could not run, not counted)"
            if sandbox else "")
    if parts:
        reason = f"The agent {' and '.join(parts)}{note}."
    else:
        reason = f"The agent reported no failing check{note}."
    return ok(counted, decay(counted, 1.0), reason, cited + gave_up or [ctx.pr])
