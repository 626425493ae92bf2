"""Why a PR ended: the closure class of a closed, unmerged PR and the rescue class of a merged one.

A closure is weighed from the evidence in a fixed order (docs/turns.md#closure), and the result
says which decided (``decidedBy``) and cites it:

1. **words**: a reason stated near the end, by anyone, as the reader reads it
   (:mod:`.reader`): the last units before the close (and just after it), the agent's own
   notices (its failure reports, a close it relays "as requested by @x"), the PR body's and
   title's own trial markers, and the labels. A verdict on the work comes first, then the
   project's reasons (done elsewhere, a trial, not wanted, inactivity), as the labelling guide
   orders them;
2. **ci**: CI failing at the head commit when it closed;
3. **closer**: who closed it and after how long: the agent's failed last session or empty work, a
   reviewer's change request left unanswered, a verdict earlier in the conversation, a stale bot,
   another PR that took the work on, a long silence on one side's move, and only then the
   operator taking it back.

Only ``agent_failure`` counts a rejection against the agent (:data:`AGAINST_AGENT`); how a silent
close by the operator counts was decided from the train side of the held-out labels
(docs/validity.md#held-out-by-repository).
"""

from __future__ import annotations

import re
from typing import Final

from taskeval.evidence.vocabulary import agent_run_event
from taskeval.models import AGAINST_AGENT, Closure, ClosureClass, ClosureDecider, Rescue, RescueClass, Role

from .context import Ctx, derived
from .identity import authors_of, writers
from .reader import PROJECT, Reading, read
from .turns import Said, _hours, _seconds, intervention_of, people_of, said_of, turns_of
from .wording import agree, plural, share, times

# Days of silence on the people's move before a close reads as "stale": GitHub's own stale action
# marks after 60 days by default and many projects use 14 to 30; 14 is the short end of that.
STALE_DAYS: Final = 14.0
# Commit subjects that say the agent answered a review ("Address PR comments", "Apply review
# suggestions"): a feedback loop even where the comments themselves were not collected.
ADDRESSED: Final = re.compile(
    r"(?i)\b(?:address(?:ed|es|ing)?|apply|applied|incorporat\w+|resolv\w+|per)\s+(?:the\s+)?"
    r"(?:pr\s+|code\s+)?(?:review|feedback|comments?|suggestions?)\b")

# The project's reasons in the guide's order, and the closure class each gives.
_ORDER: Final = ("work_wrong", "elsewhere", "trial", "not_wanted", "inactivity")
_CLASS: Final[dict[str, ClosureClass]] = {"work_wrong": "agent_failure", "elsewhere": "superseded",
                                          "trial": "declined", "not_wanted": "declined",
                                          "inactivity": "stale"}
_SAYS: Final = {"work_wrong": "the work was wrong", "elsewhere": "the work was done elsewhere",
                "trial": "it was a trial, never meant to land", "not_wanted": "it was not wanted",
                "inactivity": "it went stale"}
_DUPLICATE_RULES: Final = frozenset({"says it is a duplicate or already done", "a label says duplicate"})


def _judges(ctx: Ctx, role: Role) -> bool:
    """Whose words can pass a verdict on the agent's work: people, and the operator of an agent
    (who judges what it wrote, even as they close it themselves); never the agent or a bot."""
    if role in ("reviewer", "person"):
        return True
    return role == "operator" and not people_of(ctx).human_pr


def _counts(ctx: Ctx, unit: Said, verdict: str, worked: bool) -> bool:
    """Whether ``unit``'s ``verdict`` can decide the closure: a verdict on the work by those who
    judge it, the agent's own failure notice, or a CI bot's failure report; the project's reasons
    by anyone but the agent, whose "already done" counts only when it then did no work."""
    role, reading = unit.role, unit.reading
    if reading.verdict == "relayed":
        role = "person"  # the agent passes on a person's words: they count as that person's
    if verdict == "work_wrong":
        if role == "agent":
            return reading.rule is not None
        if role == "bot":
            return reading.rule == "reports failing CI or tests"
        return _judges(ctx, role)
    if role == "agent":
        return verdict == "elsewhere" and not worked
    return verdict in PROJECT


def _relayed(reading: Reading) -> str:
    """The verdict a unit carries: for a relay, the verdict of what it relays."""
    return (reading.relays or "neutral") if reading.verdict == "relayed" else reading.verdict


def closure(ctx: Ctx) -> Closure | None:
    pull = ctx.pull
    if pull.merged or pull.state != "closed" or not pull.closed_at:
        return None
    end = pull.closed_at
    people = people_of(ctx)
    turns = turns_of(ctx)
    said = said_of(ctx)
    timeline = ctx.facts.timeline
    # GitHub writes the closed event a second or two after the PR's closed_at.
    closed = [e for e in timeline or [] if e.event == "closed" and _before(e.created_at, end, 120)]
    closer = closed[-1].actor if closed else None
    closer_role: Role | None = people.role(closer, closed[-1].actor_is_bot) if closed else None
    last = turns.last_activity_at
    silence = _hours(last, end) if last else None
    worked = _did_work(ctx)

    def made(cls: ClosureClass, decided: ClosureDecider, reason: str, evidence: list[str]) -> Closure:
        return Closure.model_validate({
            "class": cls, "closedBy": closer, "closedByRole": closer_role, "closedAt": end,
            "hoursSinceLastActivity": silence, "turnAtClose": turns.at_end,
            "countsAgainstAgent": cls in AGAINST_AGENT, "decidedBy": decided,
            "evidence": list(dict.fromkeys(evidence)) or [ctx.pr], "reason": reason})

    who = f" by {closer} ({closer_role})" if closer else ""
    # 1. A reason stated near the end (or the PR's own trial markers, or a label).
    stated: list[tuple[str, str, str, str]] = []  # (verdict, evidence, whose words, the words)
    near = said.near_end()
    for unit in near:
        verdict = _relayed(unit.reading)
        if verdict in _CLASS and _counts(ctx, unit, verdict, worked):
            whose = unit.login or "someone"
            if unit.reading.verdict == "relayed" and unit.reading.person:
                whose = f"{unit.reading.person} (relayed by {unit.login})"
            stated.append((verdict, unit.evidence, whose, _words(unit.reading.words)))
    for unit in said.units:
        if unit.kind == "body" and unit.position != "last3" and unit.reading.verdict == "trial":
            stated.append(("trial", unit.evidence, "its description", _words(unit.reading.words)))
    title = read(pull.title, "title", people.role(pull.author, pull.author_is_bot))
    if title.verdict in ("trial", "work_wrong"):
        stated.append((title.verdict, ctx.pr, "its title", _words(title.words)))
    labels = [e.label for e in timeline or [] if e.event == "labeled" and e.label] + pull.labels
    for label in labels:
        reading = read(label, "label", "person")
        if reading.verdict in PROJECT:
            rule = "a label says duplicate" if reading.rule == "a label says duplicate" else None
            stated.append((reading.verdict, "label" if rule is None else "label:duplicate",
                           f"the label {label!r}", label))
    if stated:
        verdict, eid, whose, words = min(stated, key=lambda t: _ORDER.index(t[0]))
        cls = _CLASS[verdict]
        unit_reading = said.reading(eid)
        if verdict == "elsewhere" and (unit_reading.rule in _DUPLICATE_RULES or eid == "label:duplicate"):
            cls = "duplicate"
        if cls == "stale" and turns.at_end == "agent" and turns.rounds:
            return made("agent_failure", "words", f"Closed{who} for inactivity ({eid}) while it was "
                        "the agent's move: people had asked for changes and it did not act.", [eid])
        side = "" if cls in AGAINST_AGENT else ": the PR ended for the project's reasons"
        cited = [eid] if ":" in eid and not eid.startswith("label") else []
        says = "it was a duplicate or already done" if cls == "duplicate" else _SAYS[verdict]
        return made(cls, "words", f"Closed{who}; {whose} said {says}"
                    f"{f' ({words})' if words else ''}{f' in {eid}' if cited else ''}{side}.", cited)
    # 2. CI at the head commit when it closed.
    head = [v for v in ctx.ci_at(end).at(pull.head_sha) if v.outcome == "fail"]
    if head:
        return made("agent_failure", "ci", f"Closed{who} with CI failing at the head commit "
                    f"({', '.join(v.label for v in head[:3])}).", [v.evidence for v in head])
    # 3. Who closed it, and after how long.
    sessions = [(e, kind) for e in timeline or []
                if (kind := agent_run_event(e.event)) and (e.created_at or "") <= end]
    if sessions and sessions[-1][1] == "failed":
        return made("agent_failure", "closer", f"Closed{who} after the agent's last session failed "
                    f"({sessions[-1][0].event}).", [sessions[-1][0].id])
    for unit in said.until_end() if not worked else []:
        if unit.role == "agent" and unit.reading.verdict == "elsewhere":
            return made("duplicate", "closer", f"Closed{who}; the agent found the work already done "
                        f"({unit.evidence}): the PR ended for the project's reasons.", [unit.evidence])
    running = bool(sessions) and sessions[-1][1] == "started"
    by_person = closer_role in ("operator", "reviewer", "person")
    final = turns.spans[-1] if turns.spans else None
    # A change request left unanswered at the close; a person's plain request is not enough (on the
    # train labels it was the project's reason as often as the agent's failure).
    if (by_person or closer is None) and final is not None and final.whose == "agent" and \
            final.by in ("operator", "reviewer", "person") and final.rule == "change-request":
        return made("agent_failure", "closer", f"Closed{who} while a reviewer's change request "
                    f"({final.evidence}) was still unanswered.", [final.evidence])
    if not running and not worked and (sessions or ctx.own_commits) and closer_role != "bot":
        cited = [sessions[-1][0].id] if sessions else [ctx.commit_id(c.sha) for c in ctx.own_commits[-1:]]
        return made("agent_failure", "closer", f"Closed{who} after the agent's session ended with no "
                    "work beyond its plan.", cited)
    earlier = [u for u in said.until_end() if u.position == "earlier" and u.reading.verdict == "work_wrong"
               and _judges(ctx, u.role)]
    if earlier and closer_role != "bot":
        unit = earlier[-1]
        return made("agent_failure", "closer", f"Closed{who} after {unit.login} said the work was "
                    f"wrong ({_words(unit.reading.words)}) in {unit.evidence}, with no other reason given.",
                    [unit.evidence])
    if closer_role == "bot" and closer is not None:
        return made("stale", "closer", f"Closed by the bot {closer} with no reason written: the PR "
                    "ended for the project's reasons.", [closed[-1].id])
    # Another PR (whose state and author GitHub gives) that referred to it from a day before the close.
    later = [e for e in timeline or [] if e.event == "cross-referenced" and e.source_is_pull
             and e.source_state in ("open", "closed", "merged") and e.source_author
             and e.created_at and not _before(e.created_at, end, -86400)]
    if later:
        ref = later[-1]
        return made("superseded", "closer", f"Closed{who}; {ref.source or 'another PR'} referred to it "
                    "around the close and carries the work on: the PR ended for the project's reasons.",
                    [ref.id])
    if silence is not None and silence >= STALE_DAYS * 24:
        if turns.at_end == "agent" and turns.rounds:
            return made("agent_failure", "closer", f"Closed{who} after {silence / 24:.0f} days in which "
                        "it was the agent's move (people had asked for changes) and it did not act.", [ctx.pr])
        if turns.at_end == "people":
            return made("stale", "closer", f"Closed{who} after {silence / 24:.0f} days of silence in "
                        "which it was the people's move: the PR ended for the project's reasons.", [ctx.pr])
    if closer is not None and (closer == pull.author or closer == people.operator) and closer_role != "bot":
        return made("withdrawn", "closer", f"Closed by its {'author' if closer == pull.author else 'operator'} "
                    f"{closer} without a stated reason.", [closed[-1].id])
    what = "who closed it is not recorded" if closer is None else f"closed by {closer} ({closer_role})"
    return made("unknown", "nothing", f"Nothing in the evidence says why it ended ({what}, no reason "
                "given).", [closed[-1].id] if closed else [])


def _words(words: tuple[str, ...]) -> str:
    """The first two of the words that weighed in a reading, quoted."""
    return ", ".join(f"“{w[:60]}”" for w in words[:2])


def _before(stamp: str | None, end: str, slack: int) -> bool:
    """Whether ``stamp`` is at most ``slack`` seconds after ``end`` (a negative slack: that long
    before it); an event with no time counts as before."""
    at, limit = _seconds(stamp or ""), _seconds(end)
    return at is None or limit is None or at <= limit + slack


def _did_work(ctx: Ctx) -> bool:
    """Whether the agent pushed anything beyond the commits it makes by design ("Initial plan")."""
    return any(not ctx.is_standard_commit(c.subject) for c in ctx.own_commits)


# --------------------------------------------------------------------------- rescue


def rescue(ctx: Ctx) -> Rescue | None:
    pull = ctx.pull
    if not pull.merged:
        return None
    found = intervention_of(ctx)
    people_commits = found.counted
    unknown = found.unattributed
    rounds = turns_of(ctx).rounds
    authors = authors_of(ctx)
    addressed = [c for c in ctx.own_commits if ADDRESSED.search(c.subject)
                 and people_of(ctx).author_side(authors[c.sha])]
    changes = [r for r in ctx.human_reviews if r.state == "CHANGES_REQUESTED"
               and (r.submitted_at or "") <= (pull.merged_at or "~")]
    if people_commits:
        who = writers(authors[c.sha] for c in people_commits)
        tail = f"; who wrote {plural(len(unknown), 'other commit')} is unknown" if unknown else ""
        return _rescue("taken_over", rounds, len(people_commits),
                       [ctx.commit_id(c.sha) for c in people_commits],
                       f"{len(people_commits)} of the PR's commits came from "
                       f"{', '.join(who)}: people finished part of the work before the merge{tail}.",
                       len(unknown))
    n = max(rounds, len(changes), 1 if addressed else 0)
    if unknown or not found.known:
        sent = f"; people sent the work back {times(n)}" if n else ""
        if unknown:
            why = (f"{share(len(unknown), len(ctx.own_commits), 'commit')} "
                   f"{agree(len(unknown), 'has', 'have')} no GitHub account and a git identity "
                   "that names no one in the PR")
            cited = [ctx.commit_id(c.sha) for c in unknown]
        elif "commits" in ctx.facts.unavailable:
            why, cited = "the PR's commits could not be read", ["audit:unavailable-commits"]
        else:
            why, cited = "no commit of the PR's own has a known writer", [ctx.pr]
        return _rescue("unknown", rounds, None, cited,
                       f"Who finished the work is unknown: {why}, so it cannot be told whether "
                       f"people pushed part of it{sent}.", len(unknown))
    if n:
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


def _rescue(cls: RescueClass, rounds: int, people: int | None, evidence: list[str], reason: str,
            unattributed: int = 0) -> Rescue:
    return Rescue.model_validate({"class": cls, "rounds": rounds, "commitsByPeople": people,
                                  "evidence": evidence, "reason": reason,
                                  "unattributedCommits": unattributed})


closure_of = derived(closure)  # why a closed, unmerged PR ended; None otherwise; once per context
rescue_of = derived(rescue)  # whether a merged PR needed people to finish it; None otherwise
