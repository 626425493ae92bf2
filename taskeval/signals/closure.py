"""Why a PR ended: the closure class of a closed, unmerged PR and the rescue class of a merged one.

The classes and their order are the labelling guide's (docs/labelling.md), so the classifier can
be checked against people's reading of real PRs (docs/validity.md#the-labelled-set): a verdict on
the work first, then the agent's own failure, then the project's reasons (another PR carried the
work, a duplicate, silence on the people's move, not wanted), then the operator taking it back.
Only ``agent_failure`` counts a rejection against the agent (:data:`AGAINST_AGENT`); the labelled
set decided how ``withdrawn`` and ``unknown`` count (docs/turns.md#closure).
"""

from __future__ import annotations

import re
from typing import Final

from taskeval.evidence.vocabulary import agent_run_event
from taskeval.models import AGAINST_AGENT, Closure, ClosureClass, Rescue, RescueClass, Role

from .context import Ctx, derived
from .turns import _hours, _seconds, intervention_of, people_of, turns_of
from .words import CLOSING_LABELS, TRIAL_TITLE, admissions, closing_reasons, objections

# Days of silence on the people's move before a close reads as "stale": GitHub's own stale action
# marks after 60 days by default and many projects use 14 to 30; 14 is the short end of that.
STALE_DAYS: Final = 14.0
# Commit subjects that say the agent answered a review ("Address PR comments", "Apply review
# suggestions"): a feedback loop even where the comments themselves were not collected.
ADDRESSED: Final = re.compile(
    r"(?i)\b(?:address(?:ed|es|ing)?|apply|applied|incorporat\w+|resolv\w+|per)\s+(?:the\s+)?"
    r"(?:pr\s+|code\s+)?(?:review|feedback|comments?|suggestions?)\b")


def _texts(ctx: Ctx, end: str) -> list[tuple[str, str | None, Role, str, str]]:
    """(time, login, role, evidence id, text) of every review and comment up to the end."""
    role = people_of(ctx).role
    return sorted(((m.at or "", m.author, role(m.author, m.flagged), m.evidence, m.text)
                   for m in ctx.remarks if m.text and (m.at or "") <= end), key=lambda t: t[0])


def _judges(ctx: Ctx, login: str | None, role: Role) -> bool:
    """Whose words can pass a verdict on the agent's work: people, and the operator of an agent
    that works under the operator's account (who reviews what it wrote); never the agent."""
    if role in ("reviewer", "person"):
        return True
    return role == "operator" and not people_of(ctx).human_pr


def closure(ctx: Ctx) -> Closure | None:
    pull = ctx.pull
    if pull.merged or pull.state != "closed" or not pull.closed_at:
        return None
    end = pull.closed_at
    people = people_of(ctx)
    turns = turns_of(ctx)
    timeline = ctx.facts.timeline
    # GitHub writes the closed event a second or two after the PR's closed_at.
    closed = [e for e in timeline or [] if e.event == "closed" and _before(e.created_at, end, 120)]
    closer = closed[-1].actor if closed else None
    closer_role: Role | None = people.role(closer, closed[-1].actor_is_bot) if closed else None
    last = turns.last_activity_at
    silence = _hours(last, end) if last else None
    texts = _texts(ctx, end)

    def made(cls: ClosureClass, reason: str, evidence: list[str]) -> Closure:
        return Closure.model_validate({
            "class": cls, "closedBy": closer, "closedByRole": closer_role, "closedAt": end,
            "hoursSinceLastActivity": silence, "turnAtClose": turns.at_end,
            "countsAgainstAgent": cls in AGAINST_AGENT,
            "evidence": list(dict.fromkeys(evidence)) or [ctx.pr], "reason": reason})

    who = f" by {closer} ({closer_role})" if closer else ""
    # 1. A verdict on the work.
    for _, login, role, eid, text in texts:
        if _judges(ctx, login, role) and (found := judgement(text)):
            return made("agent_failure", f"Closed{who} after {login} {_VERB.get(found[0], found[0])} "
                        f"({eid}).", [eid])
    # 2. The agent's own failure: red CI at closing, a failed last session, giving up, no work.
    head = [v for v in ctx.ci_at(end).at(pull.head_sha) if v.outcome == "fail"]
    if head:
        return made("agent_failure", f"Closed{who} with CI failing at the head commit "
                    f"({', '.join(v.label for v in head[:3])}).", [v.evidence for v in head])
    sessions = [(e, kind) for e in timeline or []
                if (kind := agent_run_event(e.event)) and (e.created_at or "") <= end]
    if sessions and sessions[-1][1] == "failed":
        return made("agent_failure", f"Closed{who} after the agent's last session failed "
                    f"({sessions[-1][0].event}).", [sessions[-1][0].id])
    for _, _login, role, eid, text in reversed(texts):
        if role == "agent" and admissions(text)[2]:
            return made("agent_failure", f"Closed{who} after the agent said it could not finish "
                        f"({eid}).", [eid])
    # The agent itself found nothing to do ("already present", "no changes needed").
    # Only when it then pushed no work: an agent's description often says what is "already" there.
    own = [(pull.title + "\n\n" + pull.body, ctx.pr)] if people.role(pull.author, pull.author_is_bot) == "agent" else []
    own += [(text, eid) for _, _login, role, eid, text in texts if role == "agent"]
    worked = _did_work(ctx)
    for text, eid in own if not worked else []:
        if "duplicate" in closing_reasons(text):
            return made("duplicate", f"Closed{who}; the agent found the work already done "
                        f"({eid}): the PR ended for the project's reasons.", [eid])
    running = bool(sessions) and sessions[-1][1] == "started"
    by_person = closer_role in ("operator", "reviewer", "person")
    final = turns.spans[-1] if turns.spans else None
    if by_person and final is not None and final.whose == "agent" and final.rule == "change-request":
        return made("agent_failure", f"Closed{who} while a reviewer's change request "
                    f"({final.evidence}) was still unanswered.", [final.evidence])
    if not running and sessions and not worked:
        return made("agent_failure", f"Closed{who} after the agent's session ended with no work "
                    "beyond its plan.", [sessions[-1][0].id])
    # 3. The project's reasons, in what people (or the owner) wrote, the labels and the title.
    said: dict[str, str] = {}
    for _, _login, role, eid, text in texts:
        if role == "agent":
            continue
        for cls in closing_reasons(text):
            said.setdefault(cls, eid)
    labels = [e.label for e in timeline or [] if e.event == "labeled" and e.label] + pull.labels
    for cls, pattern in CLOSING_LABELS:
        if any(pattern.search(label) for label in labels):
            said.setdefault(cls, "label")
    if closer_role == "bot" and closer is not None:
        said.setdefault("stale", "closer")
    for cls in _PROJECT_ORDER:
        if cls in said:
            eid = said[cls]
            where = {"label": "a label", "closer": f"the bot {closer}"}.get(eid, eid)
            return made(cls, f"Closed{who}; {where} says it was {_READ[cls]}: the PR ended for "
                        "the project's reasons.", [eid] if eid.count(":") else [])
    # Another PR (whose state and author GitHub gives) that referred to it from a day before the close.
    later = [e for e in timeline or [] if e.event == "cross-referenced" and e.source_is_pull
             and e.source_state in ("open", "closed", "merged") and e.source_author
             and e.created_at and not _before(e.created_at, end, -86400)]
    if later and closer_role != "bot":
        ref = later[-1]
        return made("superseded", f"Closed{who}; {ref.source or 'another PR'} referred to it around "
                    "the close and carries the work on: the PR ended for the project's reasons.",
                    [ref.id])
    if TRIAL_TITLE.search(pull.title):
        return made("declined", f"Closed{who}; its title says it was a trial, never meant to land: "
                    "the PR ended for the project's reasons.", [ctx.pr])
    # 4. Long silence: on the people's move it is stale; on the agent's, its miss.
    if silence is not None and silence >= STALE_DAYS * 24:
        if turns.at_end == "agent" and turns.rounds:
            return made("agent_failure", f"Closed{who} after {silence / 24:.0f} days in which it was "
                        "the agent's move (people had asked for changes) and it did not act.", [ctx.pr])
        if turns.at_end == "people":
            return made("stale", f"Closed{who} after {silence / 24:.0f} days of silence in which it "
                        "was the people's move: the PR ended for the project's reasons.", [ctx.pr])
    # 5. Taken back by whoever ran it.
    if closer is not None and (closer == pull.author or closer == people.operator) and closer_role != "bot":
        return made("withdrawn", f"Closed by its {'author' if closer == pull.author else 'operator'} "
                    f"{closer} without a stated reason.", [closed[-1].id])
    what = "who closed it is not recorded" if closer is None else f"closed by {closer} ({closer_role})"
    return made("unknown", f"Nothing in the evidence says why it ended ({what}, no reason given).",
                [closed[-1].id] if closed else [])


_VERB: Final = {
    "says it does not work": "said it does not work", "says it is wrong": "called it wrong",
    "says it breaks something": "said it breaks something", "reports failures": "reported failures",
    "says it breaks compatibility": "called it a breaking change",
    "calls the approach wrong": "called the approach wrong",
    "says it does not do the task": "said it does not do the task", "says it is broken": "called it broken",
    "asks to scrap it": "asked to scrap it",
}
# What agent.objections reads that is a verdict on the work, not a request for a change.
_JUDGING: Final = frozenset(_VERB)


def judgement(text: str) -> list[str]:
    """The verdicts on the work a person's comment passes: the objections that judge the work
    rather than ask for a change (taskeval/signals/words.py and agent.objections' table)."""
    return [k for k in objections(text) if k in _JUDGING]


def _before(stamp: str | None, end: str, slack: int) -> bool:
    """Whether ``stamp`` is at most ``slack`` seconds after ``end`` (a negative slack: that long
    before it); an event with no time counts as before."""
    at, limit = _seconds(stamp or ""), _seconds(end)
    return at is None or limit is None or at <= limit + slack


_PROJECT_ORDER: Final[tuple[ClosureClass, ...]] = ("superseded", "duplicate", "stale", "declined")
_READ: Final = {"superseded": "carried on elsewhere", "duplicate": "a duplicate or already done",
                "stale": "stale", "declined": "not wanted"}


def _did_work(ctx: Ctx) -> bool:
    """Whether the agent pushed anything beyond the commits it makes by design ("Initial plan")."""
    return any(not ctx.is_standard_commit(c.subject) for c in ctx.own_commits)


# --------------------------------------------------------------------------- rescue


def rescue(ctx: Ctx) -> Rescue | None:
    pull = ctx.pull
    if not pull.merged:
        return None
    people_commits = intervention_of(ctx).counted
    rounds = turns_of(ctx).rounds
    addressed = [c for c in ctx.own_commits if ADDRESSED.search(c.subject)
                 and people_of(ctx).owner_side(c.author_login, c.author_is_bot)]
    changes = [r for r in ctx.human_reviews if r.state == "CHANGES_REQUESTED"
               and (r.submitted_at or "") <= (pull.merged_at or "~")]
    if people_commits:
        who = sorted({c.author_login or "" for c in people_commits})
        return _rescue("taken_over", rounds, len(people_commits),
                       [ctx.commit_id(c.sha) for c in people_commits],
                       f"{len(people_commits)} of the PR's commits came from "
                       f"{', '.join(who)}: people finished part of the work before the merge.")
    if rounds or changes or addressed:
        n = max(rounds, len(changes), 1 if addressed else 0)
        cited = [f"review:{r.id}" for r in changes] + [ctx.commit_id(c.sha) for c in addressed]
        cited += [s.evidence for s in turns_of(ctx).spans if s.rule in ("change-request", "request",
                                                                    "assigned-agent", "to-draft")
                  and s.by != "agent"]
        return _rescue("feedback_loop", n, 0,
                       list(dict.fromkeys(cited)) or [ctx.pr],
                       f"People sent the work back {n} time{'s' if n != 1 else ''} and the "
                       "agent made the changes; no person pushed the PR's work.")
    return _rescue("clean", 0, 0, [ctx.pr],
                   "Merged without people sending the work back or pushing its work.")


def _rescue(cls: RescueClass, rounds: int, people: int, evidence: list[str], reason: str) -> Rescue:
    return Rescue.model_validate({"class": cls, "rounds": rounds, "commitsByPeople": people,
                                  "evidence": evidence, "reason": reason})


closure_of = derived(closure)  # why a closed, unmerged PR ended; None otherwise; once per context
rescue_of = derived(rescue)  # whether a merged PR needed people to finish it; None otherwise
