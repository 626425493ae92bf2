"""A PR's life as turns: who acted, in which role, and whose move it was between events.

Modelled on Gerrit's attention set ("whose turn is it?"): code review as a turn-based exchange
between the change's owner (here the agent and, when it works under their account, its operator)
and the people who review it. The rules, each one row of :data:`RULES` and of the table in
docs/turns.md, map GitHub's events onto turns; :func:`account` applies them to a bundle's facts.
Pure: it reads only the bundle and the settings (who is a bot, which accounts are agents), so a
stored result re-scores offline to the same turns.

What it is for: the agent is charged only for its own turns (a stall while people owed a review is
the team's cycle time, not the agent's miss), and closure and rescue (:mod:`.closure`) read who
acted last and whose move it was when the PR ended.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from taskeval.agents import is_person
from taskeval.evidence.vocabulary import NOT_PR_CI_EVENTS, agent_run_event
from taskeval.models import CommitEntry, Role, Turns, TurnSpan, Whose

from .context import Ctx, Remark, derived
from .identity import Author, authors_of
from .reader import Reading, read

TURN_SPANS_CAP: Final = 40

# Accounts that act for a release process or CI without GitHub's bot flag ("release-bot",
# "ci-runner", "deploy-automation"): a hyphen- or underscore-separated part that names a machine's
# job, or a name ending in "bot". Their commits are no person's rescue of the work.
RELEASE_ACCOUNT: Final = re.compile(
    r"(?i)(?:^|[-_.])(?:bot|bots|release|releases|releaser|deploy|deployer|automation|ci|cd|build|"
    r"builder|publish|publisher|autobump|bump|version|changeset|changesets|semantic-release)"
    r"(?:$|[-_.])|bot$")

# rule id -> (whose move it becomes, what the rule says); docs/turns.md lists the same table.
RULES: Final[dict[str, tuple[Whose | None, str]]] = {
    "opened": ("people", "The PR is opened ready for review: the people's move."),
    "opened-draft": ("agent", "The PR is opened as a draft: the agent is still working."),
    "push": ("people", "The agent (or the owner) pushes a commit to a PR that is not a draft."),
    "push-draft": (None, "A push to a draft changes nothing: the work is still in progress."),
    "reply": ("people", "The agent or the owner comments or reviews: it answered."),
    "ready": ("people", "The PR is marked ready for review."),
    "review-requested": ("people", "The owner's side requests a review."),
    "session-start": ("agent", "The agent's session starts (e.g. copilot_work_started)."),
    "session-end": ("people", "The agent's session ends, finished or failed: it stopped."),
    "change-request": ("agent", "A person requests changes in a review."),
    "request": ("agent", "A person comments or reviews asking for something (a request, an "
                         "instruction, a question, a verdict, a mention of the agent)."),
    "remark": (None, "A person comments without asking for anything (thanks, LGTM)."),
    "approval": ("people", "A person approves: merging is the people's move."),
    "assigned-agent": ("agent", "A person assigns the agent."),
    "to-draft": ("agent", "The PR is converted to a draft: back to work."),
    "ci-red": ("agent", "CI fails on a commit of the owner's side."),
    "bot": (None, "A bot's comment or review changes nothing (CI failures are ci-red)."),
    "take-over": ("people", "A person other than the owner pushes a commit doing the PR's work (one "
                            "agent.human_intervention counts): they took over, so the time after is "
                            "theirs, not the agent's."),
    "people-push": (None, "A person other than the owner pushes something that is not the PR's work (a "
                          "version bump, their own base, a force-push): nothing changes hands."),
    "reopened": ("people", "The PR is reopened."),
}

# What counts as a person's first response: a review or a comment, not an assignment or a push.
_RESPONSES: Final = frozenset({"change-request", "request", "remark", "approval"})
_PRIORITY: Final = {"opened": 0, "opened-draft": 0}  # opening comes first among equal times


@dataclass(frozen=True, slots=True)
class Event:
    at: str
    rule: str
    role: Role
    login: str | None
    evidence: str
    by_person: bool  # a person other than the owner's side acted


class People:
    """Who is who in one PR (the agent, its operator, reviewers, other people, bots)."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        pull = ctx.pull
        self.author = pull.author
        agent = ctx.attribution
        self.operator = agent.operator
        self.human_pr = agent.id == "human"
        reviewers = {r.author for r in ctx.facts.reviews if r.author}
        reviewers |= {c.author for c in ctx.facts.comments if c.kind == "review" and c.author}
        reviewers |= set(pull.requested_reviewers)
        if pull.merged_by:
            reviewers.add(pull.merged_by)
        reviewers |= {e.actor for e in ctx.facts.timeline or []
                      if e.event in ("closed", "merged", "reviewed") and e.actor}
        self.reviewers = reviewers
        self._roles: dict[tuple[str | None, bool], Role] = {}

    def role(self, login: str | None, flagged: bool = False) -> Role:
        key = (login, flagged)
        known = self._roles.get(key)
        if known is None:
            known = self._roles[key] = self._role(login, flagged)
        return known

    def _role(self, login: str | None, flagged: bool) -> Role:
        ctx = self.ctx
        if login and ctx.is_agent(login):
            return "agent"
        if login and login == self.author:
            return "agent" if (ctx.pull.author_is_bot or login.endswith("[bot]")) else "operator"
        if not is_person(login, flagged, ctx.machines) or self.is_release_account(login):
            return "bot" if login else "person"
        if login == self.operator:
            return "operator"
        return "reviewer" if login in self.reviewers else "person"

    def author_role(self, a: Author) -> Role | None:
        """The role of whoever wrote a commit (:mod:`.identity`); None when that is unknown."""
        if a.agent:
            return "agent"
        if a.login:
            return self.role(a.login, a.flagged)
        return "person" if a.rule == "web-editor" else None

    def author_side(self, a: Author) -> bool | None:
        """Whether whoever wrote a commit is on the owner's side (:meth:`owner_side`); None when
        that is unknown: no one is named, or only "a person" while the PR's author is one too."""
        if a.agent:
            return True
        if a.login:
            return self.owner_side(a.login, a.flagged)
        if a.rule == "web-editor":
            return False if self.role(self.author, self.ctx.pull.author_is_bot) in ("agent", "bot") else None
        return None

    @staticmethod
    def is_release_account(login: str | None) -> bool:
        return bool(login) and bool(RELEASE_ACCOUNT.search(login or ""))

    def owner_side(self, login: str | None, flagged: bool = False) -> bool:
        """The agent, or the PR's author (its operator when the agent works under their account,
        the author of a person's PR): the side whose move a review asks for."""
        return self.role(login, flagged) == "agent" or (login is not None and login == self.author)

    @functools.cached_property
    def handles(self) -> tuple[str, ...]:
        """Lower-cased @-handles that address the agent ("@copilot", "@devin-ai-integration");
        read for every comment, so made once."""
        rule = self.ctx.agent_rule
        out = {login.lower().removesuffix("[bot]") for r in rule for login in r.logins}
        if self.author and self.role(self.author, self.ctx.pull.author_is_bot) == "agent":
            out.add(self.author.lower().removesuffix("[bot]"))
        return tuple(sorted(out))


def _person_says(people: People, m: Remark) -> Event:
    """A review or comment: the owner's side answering, a bot, or a person's request (which hands
    the turn to the agent) or remark (which does not)."""
    assert m.at is not None
    role = people.role(m.author, m.flagged)
    if role == "bot":
        return Event(m.at, "bot", role, m.author, m.evidence, False)
    if people.owner_side(m.author, m.flagged):
        return Event(m.at, "reply", role, m.author, m.evidence, False)
    if m.state == "CHANGES_REQUESTED":
        return Event(m.at, "change-request", role, m.author, m.evidence, True)
    if m.state == "APPROVED":
        return Event(m.at, "approval", role, m.author, m.evidence, True)
    if said_of(people.ctx).reading(m.evidence).asks:
        return Event(m.at, "request", role, m.author, m.evidence, True)
    return Event(m.at, "remark", role, m.author, m.evidence, True)


def events(ctx: Ctx, people: People) -> tuple[list[Event], int]:
    """Every dated event up to the end, in time order, and how many had no time."""
    facts, pull = ctx.facts, ctx.pull
    end = pull.merged_at or pull.closed_at
    timeline = facts.timeline or []
    names = [e.event for e in timeline]
    opened_draft = "ready_for_review" in names and (
        "convert_to_draft" not in names or names.index("ready_for_review") < names.index("convert_to_draft"))
    opened_draft = opened_draft or (pull.draft and facts.timeline is not None and "convert_to_draft" not in names)
    out: list[Event] = [Event(pull.created_at, "opened-draft" if opened_draft else "opened",
                              people.role(pull.author, pull.author_is_bot), pull.author, ctx.pr, False)]
    undated = 0
    owner_shas: set[str] = set()
    authors = authors_of(ctx)
    work = {c.sha for c in intervention_of(ctx).counted}  # people's commits doing the PR's work
    for c in facts.commits:
        when = c.committed_at or c.authored_at
        who = authors[c.sha]
        # A commit whose writer is unknown reads as the owner's push, as it always has: nothing
        # says a person took a turn.
        owner = people.author_side(who) is not False
        if owner:
            owner_shas.add(c.sha)
        if c.is_merge:
            continue
        if not when:
            undated += 1
            continue
        role = people.author_role(who) or "person"
        kind = "push" if owner else ("bot" if role == "bot" else "take-over" if c.sha in work else "people-push")
        out.append(Event(when, kind, role, who.login, ctx.commit_id(c.sha), kind in ("take-over", "people-push")))
    for m in ctx.remarks:
        if m.state == "PENDING" or (not m.at and m.state is not None):
            continue  # a pending review, or an undated one: no one has seen it
        if not m.at:
            undated += 1  # an undated comment
            continue
        out.append(_person_says(people, m))
    for e in timeline:
        if not e.created_at:
            continue
        role = people.role(e.actor, e.actor_is_bot)
        owner = people.owner_side(e.actor, e.actor_is_bot)
        run = agent_run_event(e.event)
        rule: str | None = None
        if run == "started":
            rule = "session-start"
        elif run in ("finished", "failed"):
            rule = "session-end"
        elif e.event == "ready_for_review":
            rule = "ready"
        elif e.event == "convert_to_draft":
            rule = "to-draft"
        elif e.event == "review_requested" and owner:
            rule = "review-requested"
        elif e.event == "assigned" and e.assignee and people.role(e.assignee) == "agent" and not owner:
            rule = "assigned-agent"
        elif e.event == "head_ref_force_pushed":
            rule = "push" if owner else "people-push"
        elif e.event == "reopened":
            rule = "reopened"
        if rule is not None:
            out.append(Event(e.created_at, rule, role, e.actor, e.id, not owner and role != "bot"))
    out += _ci_red(ctx, owner_shas)
    if end:
        out = [e for e in out if e.at <= end]
    out.sort(key=lambda e: (e.at, _PRIORITY.get(e.rule, 1)))
    return out, undated


def _ci_red(ctx: Ctx, owner_shas: set[str]) -> list[Event]:
    """The first CI failure on each of the owner's commits."""
    first: dict[str, tuple[str, str]] = {}
    for c in ctx.facts.checks:
        done = c.completed_at
        if c.head_sha in owner_shas and done and c.conclusion in _FAILING and \
                (c.head_sha not in first or done < first[c.head_sha][0]):
            first[c.head_sha] = (done, ctx.check_ids.get(c.id, f"check:{c.name}"))
    for r in ctx.facts.runs:
        if r.event in NOT_PR_CI_EVENTS:
            continue
        when = r.updated_at if r.status == "completed" else None
        if r.head_sha in owner_shas and when and r.conclusion in _FAILING and \
                (r.head_sha not in first or when < first[r.head_sha][0]):
            first[r.head_sha] = (when, f"run:{r.id}")
    return [Event(at, "ci-red", "ci", None, eid, False) for at, eid in first.values()]


_FAILING: Final = frozenset({"failure", "timed_out", "startup_failure", "action_required"})


def _parse(value: str) -> datetime | None:
    """A stored timestamp (``2026-01-02T03:04:05Z``) as ``strptime`` reads it; None otherwise."""
    try:
        if _STAMP.fullmatch(value):  # the one spelling taskeval stores: no format parsing needed
            return datetime.fromisoformat(value[:-1])
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None


_STAMP: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def _seconds(value: str) -> int | None:
    """:func:`_parse` as whole seconds since year 1 (a stamp has no fraction of a second), so a
    gap is one integer subtraction: ``(b - a) / 3600`` is the very float that
    ``(parse(b) - parse(a)).total_seconds() / 3600`` is (both divide the exact count of seconds)."""
    moment = _parse(value)
    if moment is None:
        return None
    return moment.toordinal() * 86400 + moment.hour * 3600 + moment.minute * 60 + moment.second


def _hours(a: str, b: str) -> float:
    x, y = _seconds(a), _seconds(b)
    return 0.0 if x is None or y is None or y < x else round((y - x) / 3600, 2)


def account(ctx: Ctx) -> Turns:
    """The turns of one PR (the rules of :data:`RULES`, in time order)."""
    people = people_of(ctx)
    found, undated = events(ctx, people)
    pull = ctx.pull
    end = pull.merged_at or pull.closed_at or (found[-1].at if found else pull.created_at)
    spans: list[TurnSpan] = []
    opening = found[0]  # the opening, unless a commit is dated before it (a stacked branch)
    whose: Whose = RULES[opening.rule][0] or "people"
    start = opening
    draft = opening.rule == "opened-draft"
    draft_since: str | None = pull.created_at if draft else None
    draft_hours = 0.0
    rounds = 0
    handed_over = whose == "people"  # the owner's side has handed the work to people
    first_response: float | None = None
    for e in found[1:]:
        if e.by_person and first_response is None and e.rule in _RESPONSES:
            first_response = _hours(pull.created_at, e.at)
        rule = "push-draft" if e.rule == "push" and draft else e.rule
        after, _ = RULES[rule]
        if rule in ("opened-draft", "to-draft"):
            draft, draft_since = True, draft_since or e.at
        if rule == "ready" and draft:
            draft_hours += _hours(draft_since or e.at, e.at)
            draft, draft_since = False, None
        if after is None or after == whose:
            continue
        if after == "agent" and e.by_person and handed_over:
            rounds += 1
        if after == "people" and rule != "take-over":  # a take-over is no hand-over by the owner
            handed_over = True
        spans.append(_span(whose, start, e.at))
        whose, start = after, e
    if draft and draft_since:
        draft_hours += _hours(draft_since, end)
    spans.append(_span(whose, start, end))
    agent_hours = round(sum(s.hours for s in spans if s.whose == "agent"), 2)
    people_hours = round(sum(s.hours for s in spans if s.whose == "people"), 2)
    agent_spans = [s.hours for s in spans if s.whose == "agent"]
    last = [e for e in found if e.at < end] or found
    roles = {login: people.role(login) for login in sorted(_logins(ctx))}
    return Turns(
        agent_hours=agent_hours, people_hours=people_hours, draft_hours=round(draft_hours, 2),
        first_human_response_hours=first_response, rounds=rounds,
        longest_agent_turn_hours=max(agent_spans) if agent_spans else None,
        at_end=whose, last_activity_at=last[-1].at if last else None, roles=roles,
        spans=spans[:TURN_SPANS_CAP], omitted=max(0, len(spans) - TURN_SPANS_CAP), undated=undated,
        partial=ctx.facts.timeline is None,
    )


def _span(whose: Whose, start: Event, end: str) -> TurnSpan:
    """The stretch from the event that began a turn to the next change of turn (or the end)."""
    return TurnSpan(whose=whose, start=start.at, end=end, hours=_hours(start.at, end),
                    rule=start.rule, by=start.role, evidence=start.evidence)


def _logins(ctx: Ctx) -> set[str]:
    facts = ctx.facts
    out = {ctx.pull.author}
    out |= {a.login for a in authors_of(ctx).values() if a.login}
    out |= {r.author for r in facts.reviews if r.author}
    out |= {m.author for m in facts.comments if m.author}
    out |= {e.actor for e in facts.timeline or [] if e.actor}
    return out


# --------------------------------------------------------------------------- people's commits

# Subjects of commits that bring the base branch in or bump a version: no one's rescue of the work.
MERGE_SUBJECT: Final = re.compile(
    r"(?i)^merge\s+(?:branch|remote-tracking\s+branch|pull\s+request\s+#\d+|tag|commit|"
    r"'[^']+'|\"[^\"]+\"|(?:origin|upstream)/\S+|\S+\s+into\s+)|^rebase\b|^sync(?:ed)?\s+with\s+"
    r"(?:main|master|base|upstream)")
VERSION_BUMP: Final = re.compile(
    r"(?i)^(?:chore(?:\([^)]*\))?!?:\s*)?(?:bump(?:ed)?\s+(?:the\s+)?(?:version|package|to\s+v?\d)|"
    r"release\s+v?\d|prepare\s+(?:for\s+)?release|v?\d+\.\d+\.\d+(?:[-+.]\S*)?$|version\s+(?:bump|"
    r"v?\d+\.\d+)|update\s+(?:the\s+)?version|\[(?:skip\s+ci|ci\s+skip)\]\s+(?:bump|release))")


@dataclass(frozen=True)
class Intervention:
    """The PR's commits by people other than its owner, split by whether they were the PR's work,
    and the commits whose writer is unknown (:mod:`.identity`)."""

    known: list[CommitEntry]  # own (non-merge) commits whose writer's side is known
    counted: list[CommitEntry]  # people's commits that did part of the PR's work
    undated: list[CommitEntry]  # of counted: no date, so counted whatever their time
    merges: list[CommitEntry]  # people's (or unknown writers') merge or rebase commits of the base branch
    releases: list[CommitEntry]  # version bumps and release or bot accounts
    stacked: list[CommitEntry]  # people's commits before the agent's first: the base it was built on
    late: list[CommitEntry]  # after the PR ended
    operator_hand: bool  # the operator's commits count: the agent commits under its own account
    # Commits that would be the PR's work if a person wrote them, whose writer is unknown: no
    # account, and no git identity that names anyone (or only "a person" who may be the owner).
    unattributed: list[CommitEntry] = field(default_factory=list)
    by_identity: list[CommitEntry] = field(default_factory=list)  # known through the git identity only
    # Commits whose writer is unknown before the owner's first (or dated before the PR opened):
    # the base it was built on if a person's, the owner's own otherwise; no one's rescue either way.
    early: list[CommitEntry] = field(default_factory=list)


def intervention(ctx: Ctx) -> Intervention:
    people = people_of(ctx)
    pull = ctx.pull
    end = pull.merged_at or pull.closed_at
    authors = authors_of(ctx)
    commits = [c for c in ctx.facts.commits if not c.is_merge]
    side = {c.sha: people.author_side(authors[c.sha]) for c in commits}
    agent_own = any(people.author_role(authors[c.sha]) == "agent" for c in commits)
    # The operator's own commits beside the agent's (Cursor commits as "cursoragent"): hand work.
    operator_hand = agent_own and not people.human_pr and \
        people.role(pull.author, pull.author_is_bot) == "operator"

    def hand(who: Author) -> bool:
        """The operator's hand work; an unnamed person then counts whoever it was (the operator's
        hand or another person's)."""
        return operator_hand and not who.agent and (who.login == pull.author or (
            who.login is None and who.rule == "web-editor"))

    first_agent = next((n for n, c in enumerate(commits)
                        if side[c.sha] and not hand(authors[c.sha])), None)
    known: list[CommitEntry] = []
    counted: list[CommitEntry] = []
    undated: list[CommitEntry] = []
    merges: list[CommitEntry] = []
    releases: list[CommitEntry] = []
    stacked: list[CommitEntry] = []
    late: list[CommitEntry] = []
    unknown: list[CommitEntry] = []
    early: list[CommitEntry] = []
    for n, c in enumerate(commits):
        who = authors[c.sha]
        mine = side[c.sha]
        if hand(who):
            mine = False
        if mine is not None:
            known.append(c)
        if mine:
            continue
        if people.author_role(who) == "bot":
            releases.append(c)
            continue
        when = c.committed_at or c.authored_at or ""
        if MERGE_SUBJECT.search(c.subject):
            merges.append(c)
        elif VERSION_BUMP.search(c.subject):
            releases.append(c)
        elif first_agent is None and mine is None:
            unknown.append(c)  # nothing of the owner's side to place it by: it may be the work
        elif first_agent is None or n < first_agent or (when and when < pull.created_at):
            # before the agent's first commit, or dated before the PR opened
            (early if mine is None else stacked).append(c)
        elif end and when > end:
            late.append(c)
        elif mine is None:
            unknown.append(c)
        else:
            counted.append(c)
            if not when:
                undated.append(c)
    by_identity = [c for c in known if authors[c.sha].by_git_identity]
    return Intervention(known, counted, undated, merges, releases, stacked, late, operator_hand,
                        unknown, by_identity, early)


# --------------------------------------------------------------------------- what was said

# A remark written this soon after the close or merge still belongs to it ("closing because…" is
# often typed a moment after the button): the labelling guide's window for "the last three".
CLOSE_GRACE_SECONDS: Final = 600
LAST: Final = 3  # the units "near the end" (docs/labelling.md: the last three weigh most)


@dataclass(frozen=True, slots=True)
class Said:
    """One unit of words on the PR (the description, a review, a comment, an inline comment) as
    the reader read it, with who wrote it and where it stands."""

    at: str
    login: str | None
    role: Role
    evidence: str
    kind: str  # body | review | comment | inline
    position: str  # last3 | earlier | after | open
    state: str | None
    reading: Reading


class Sayings:
    """Every unit of words of one PR in time order, each read once by :func:`.reader.read`."""

    def __init__(self, ctx: Ctx) -> None:
        people = people_of(ctx)
        pull = ctx.pull
        raw: list[tuple[str, int, str, str | None, Role, str, str | None, str]] = []
        if pull.body.strip():
            raw.append((pull.created_at, 0, ctx.pr, pull.author,
                        "agent" if not people.human_pr else people.role(pull.author, pull.author_is_bot),
                        "body", None, pull.body))
        for m in ctx.remarks:
            if m.state == "PENDING" or not (m.text or "").strip():
                continue
            kind = ("review" if m.evidence.startswith("review:") else
                    "inline" if m.evidence.startswith("review-comment:") else "comment")
            raw.append((m.at or pull.created_at, 1 if kind == "review" else 2, m.evidence, m.author,
                        people.role(m.author, m.flagged), kind, m.state, m.text))
        raw.sort(key=lambda r: (r[0], r[1], r[2]))
        end = pull.merged_at or pull.closed_at if (pull.merged or pull.state == "closed") else None
        limit = _seconds(end) if end else None
        positions = ["open"] * len(raw)
        if end:
            before = [i for i, r in enumerate(raw)
                      if limit is None or (_seconds(r[0]) or 0) <= limit + CLOSE_GRACE_SECONDS]
            positions = ["after"] * len(raw)
            for i in before:
                positions[i] = "earlier"
            for i in before[-LAST:]:
                positions[i] = "last3"
        handles = people.handles
        self.units = [
            Said(at, login, role, eid, kind, pos, state,
                 read(text, kind, role, pos, state, handles=handles if role not in ("agent", "bot") else ()))
            for (at, _, eid, login, role, kind, state, text), pos in zip(raw, positions, strict=True)]
        self._by_id = {u.evidence: u for u in self.units}

    def reading(self, evidence: str) -> Reading:
        found = self._by_id.get(evidence)
        return found.reading if found is not None else Reading("neutral")

    def near_end(self) -> list[Said]:
        """The last units up to the end (and its grace): where the reason for a close is written."""
        return [u for u in self.units if u.position == "last3"]

    def until_end(self) -> list[Said]:
        return [u for u in self.units if u.position in ("last3", "earlier")]


@derived
def said_of(ctx: Ctx) -> Sayings:
    """What was said on the PR, read once per context."""
    return Sayings(ctx)


@derived
def people_of(ctx: Ctx) -> People:
    """Who is who: the agent, its operator, reviewers, other people, bots; once per context."""
    return People(ctx)


turns_of = derived(account)  # whose move it was, event by event (docs/turns.md); once per context
intervention_of = derived(intervention)
