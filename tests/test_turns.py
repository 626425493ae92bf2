"""Turns, closure and rescue (docs/turns.md): one table case per rule, per closure and rescue class,
and per phrase table, on the baseline PR of tests/builders.py changed only where the case says.

The baseline: Copilot opens the PR at minute 0 (not a draft), pushes at 10, 40 and 60, CI is green
at 62, alice approves at 90 and it is merged at 120.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from taskeval.config import Settings
from taskeval.evidence import build_bundle
from taskeval.models import EvidenceBundle, TimelineEntry
from taskeval.raw import RawCollection, RawUser
from taskeval.signals import Ctx, account_of
from taskeval.signals.closure import closure_of, rescue_of
from taskeval.signals.reader import failing_checks
from taskeval.signals.turns import RULES, intervention_of, turns_of

from . import builders as b

ROOT = Path(__file__).resolve().parents[1]
BOB = b.BOB


def ev(name: str, minutes: float, actor: str | None = "alice", **kw: Any) -> TimelineEntry:
    when = b.at(minutes).strftime("%Y-%m-%dT%H:%M:%SZ")
    return TimelineEntry(id=f"event:{name}-{int(minutes)}", event=name, actor=actor,
                         actor_is_bot=bool(actor and actor.endswith("[bot]")), created_at=when, **kw)


def scenario(timeline: list[TimelineEntry] | None = None, **kw: Any) -> EvidenceBundle:
    bundle = build_bundle(b.merged_agent_pr(**kw))
    bundle.facts.timeline = [] if timeline is None else timeline
    return bundle


def ctx_of(bundle: EvidenceBundle, settings: Settings | None = None) -> Ctx:
    return Ctx(bundle, settings or Settings())


CR = b.review(7002, b.ALICE, "CHANGES_REQUESTED", 70, body="Please add a test for the empty case.")
CLOSED: dict[str, Any] = {"merged": False, "state": "closed", "closed_at": b.at(120)}


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class RuleCase:
    rule: str
    build: Callable[[], EvidenceBundle]
    evidence: str  # the event the rule reads
    whose: str | None  # whose move the span it begins is; None: it begins no span


RULE_CASES = [
    RuleCase("opened", lambda: scenario(), "pr:482", "people"),
    RuleCase("opened-draft", lambda: scenario([ev("ready_for_review", 50, "Copilot")], draft=False),
             "pr:482", "agent"),
    RuleCase("push", lambda: scenario(reviews=[b.review(7002, b.ALICE, "CHANGES_REQUESTED", 5)]),
             f"commit:{b.sha('c1')[:7]}", "people"),
    RuleCase("push-draft", lambda: scenario([ev("ready_for_review", 50, "Copilot")]),
             f"commit:{b.sha('c1')[:7]}", None),
    RuleCase("reply", lambda: scenario(reviews=[CR], issue_comments=[
        b.issue_comment(8001, b.AGENT, "Added the test.", 80)]), "comment:8001", "people"),
    RuleCase("ready", lambda: scenario([ev("ready_for_review", 50, "Copilot")]), "event:ready_for_review-50",
             "people"),
    RuleCase("review-requested", lambda: scenario([ev("review_requested", 80, "Copilot")], reviews=[CR]),
             "event:review_requested-80", "people"),
    RuleCase("session-start", lambda: scenario([ev("copilot_work_started", 70)]),
             "event:copilot_work_started-70", "agent"),
    RuleCase("session-end", lambda: scenario([ev("copilot_work_started", 70),
                                              ev("copilot_work_finished", 80)], reviews=[]),
             "event:copilot_work_finished-80", "people"),
    RuleCase("change-request", lambda: scenario(reviews=[CR]), "review:7002", "agent"),
    RuleCase("request", lambda: scenario(issue_comments=[
        b.issue_comment(8001, b.ALICE, "Can you cover the empty input too?", 70)]), "comment:8001", "agent"),
    RuleCase("remark", lambda: scenario(reviews=[CR], issue_comments=[
        b.issue_comment(8001, b.ALICE, "Thanks, looks good!", 75)]), "comment:8001", None),
    RuleCase("approval", lambda: scenario(reviews=[CR, b.review(7003, b.ALICE, "APPROVED", 90)]),
             "review:7003", "people"),
    RuleCase("assigned-agent", lambda: scenario([ev("assigned", 70, assignee="Copilot")]),
             "event:assigned-70", "agent"),
    RuleCase("to-draft", lambda: scenario([ev("convert_to_draft", 70)]), "event:convert_to_draft-70",
             "agent"),
    RuleCase("ci-red", lambda: scenario(check_runs=[b.check(9001, "test", b.HEAD, "failure", start=62)]),
             "check:test", "agent"),
    RuleCase("bot", lambda: scenario(issue_comments=[
        b.issue_comment(8001, b.RENOVATE, "Please update the lock file?", 70)]), "comment:8001", None),
    RuleCase("take-over", lambda: scenario(reviews=[CR], commits=[
        *b.default_commits(), b.commit("c4", "fix: handle empty input", 80, author=BOB)]),
        f"commit:{b.sha('c4')[:7]}", "people"),
    RuleCase("people-push", lambda: scenario([ev("head_ref_force_pushed", 80, "bob")], reviews=[CR]),
             "event:head_ref_force_pushed-80", None),
    RuleCase("reopened", lambda: scenario([ev("reopened", 80)], reviews=[CR]), "event:reopened-80", "people"),
]


def test_every_rule_has_a_case_and_a_row_in_the_docs() -> None:
    assert sorted(c.rule for c in RULE_CASES) == sorted(RULES)
    table = (ROOT / "docs" / "turns.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", table, re.MULTILINE))
    assert set(RULES) <= documented, sorted(set(RULES) - documented)


@pytest.mark.parametrize("case", RULE_CASES, ids=[c.rule for c in RULE_CASES])
def test_rule(case: RuleCase) -> None:
    turns = turns_of(ctx_of(case.build()))
    begun = [s for s in turns.spans if s.evidence == case.evidence]
    if case.whose is None:
        assert not begun, turns.spans
    else:
        assert begun, [(s.rule, s.evidence) for s in turns.spans]
        assert begun[0].whose == case.whose
        assert begun[0].rule == case.rule


def test_the_agents_turn_ends_when_a_person_takes_over() -> None:
    """Changes requested at minute 70 hand the work to the agent; Bob pushes the fix himself at 80
    and the PR merges at 120: the 40 minutes after his commit are the people's, not the agent's,
    and his push is no round of sending the work back."""
    turns = turns_of(ctx_of(scenario(reviews=[CR], commits=[
        *b.default_commits(), b.commit("c4", "fix: handle empty input", 80, author=BOB)])))
    agent = [(s.rule, s.hours) for s in turns.spans if s.whose == "agent"]
    assert agent == [("change-request", round(10 / 60, 2))]
    assert turns.at_end == "people" and turns.rounds == 1  # the change request, not the take-over
    assert turns.agent_hours == round(10 / 60, 2)


def test_time_on_each_side_adds_up_and_events_after_the_end_are_left_out() -> None:
    bundle = scenario(reviews=[b.review(7002, b.ALICE, "CHANGES_REQUESTED", 100, body="Please fix."),
                               b.review(7003, b.ALICE, "CHANGES_REQUESTED", 200, body="Please fix.")],
                      closed_at=b.at(24 * 60), merged_at=b.at(24 * 60))
    turns = turns_of(ctx_of(bundle))
    assert turns.agent_hours + turns.people_hours == pytest.approx(24.0, abs=0.02)
    assert turns.agent_hours == pytest.approx((24 * 60 - 100) / 60, abs=0.02)
    assert turns.at_end == "agent" and turns.rounds == 1
    late = scenario(reviews=[b.review(7002, b.ALICE, "CHANGES_REQUESTED", 300, body="Please fix.")])
    assert turns_of(ctx_of(late)).agent_hours == 0  # the review came after the merge at 120


def test_roles_name_each_account() -> None:
    bundle = scenario(commits=[*b.default_commits(), b.commit("c4", "fix", 80, author=BOB),
                               b.commit("c5", "chore: bump", 85, author=RawUser(login="release-bot"))],
                      issue_comments=[b.issue_comment(8001, b.RENOVATE, "Update", 70)])
    roles = turns_of(ctx_of(bundle)).roles
    assert roles["Copilot"] == "agent" and roles["alice"] == "reviewer"
    assert roles["bob"] == "person" and roles["release-bot"] == "bot" and roles["renovate[bot]"] == "bot"


def test_first_human_response_is_a_review_or_comment() -> None:
    turns = turns_of(ctx_of(scenario([ev("assigned", 0, assignee="Copilot")])))
    assert turns.first_human_response_hours == pytest.approx(1.5)  # alice's approval at 90


# --------------------------------------------------------------------------- closure


def closed(comments: list[tuple[RawUser, str, float]] = (), closer: str | None = "alice",
           timeline: list[TimelineEntry] | None = None, **kw: Any) -> EvidenceBundle:
    fields = {**CLOSED, **kw}
    at_close = (fields["closed_at"] - b.BASE).total_seconds() / 60
    events = list(timeline or [])
    if closer is not None:
        events.append(ev("closed", at_close, closer))
    return scenario(events, issue_comments=[b.issue_comment(8000 + n, who, text, when)
                                            for n, (who, text, when) in enumerate(comments)],
                    assignees=[b.ALICE], **fields)


PLAN_ONLY: dict[str, Any] = {"commits": [b.commit("p1", "Initial plan", 1)], "reviews": [],
                             "check_runs": [], "workflow_runs": []}


@dataclass(frozen=True)
class ClosureCase:
    name: str
    build: Callable[[], EvidenceBundle]
    cls: str
    fragment: str
    decided: str  # what decided it: words near the end, CI at closing, or who closed it


RED = {"check_runs": [b.check(9001, "test", b.HEAD, "failure", start=62)]}
STALE_NOTICE = ("This pull request has been automatically marked as stale because it has not had "
                "recent activity.")

CLOSURE_CASES = [
    ClosureCase("verdict", lambda: closed([(BOB, "This doesn't work at all: the retry never fires.", 100)]),
                "agent_failure", "bob said the work was wrong", "words"),
    ClosureCase("breaking change", lambda: closed([(BOB, "This introduces a breaking change, sorry.", 100)]),
                "agent_failure", "breaking change", "words"),
    ClosureCase("negated verdict is no verdict", lambda: closed(
        [(BOB, "This is not a breaking change, but we went another way: not planned.", 100)]),
        "declined", "not wanted", "words"),
    ClosureCase("quoted verdict is no verdict", lambda: closed(
        [(BOB, "> this doesn't work\n\nIt does for me; superseded by #500 anyway.", 100)]),
        "superseded", "done elsewhere", "words"),
    ClosureCase("red CI at closing", lambda: closed(**RED), "agent_failure", "CI failing", "ci"),
    # Words near the end outrank red CI: a PR closed in favour of another is not the agent's miss.
    ClosureCase("a stated reason outranks red CI", lambda: closed(
        [(b.ALICE, "Closing in favour of #501.", 100)], **RED), "superseded", "done elsewhere", "words"),
    ClosureCase("a trial title outranks red CI", lambda: closed(title="[DO NOT MERGE] trying the agent",
                                                                 **RED), "declined", "trial", "words"),
    ClosureCase("an operator's silent close with red CI", lambda: closed(**RED), "agent_failure",
                "CI failing", "ci"),
    ClosureCase("failed last session", lambda: closed(timeline=[
        ev("copilot_work_started", 65), ev("copilot_work_finished_failure", 80)]),
        "agent_failure", "last session failed", "closer"),
    ClosureCase("a session failing after the close is not its failure", lambda: closed(
        timeline=[ev("copilot_work_started", 65), ev("copilot_work_finished", 80),
                  ev("copilot_work_finished_failure", 125)], closer="alice"),
        "withdrawn", "Closed by its operator alice", "closer"),
    ClosureCase("gave up", lambda: closed([(b.AGENT, "I was unable to reproduce the failure.", 90)]),
                "agent_failure", "Copilot said the work was wrong", "words"),
    ClosureCase("found it done", lambda: closed(body="The link is already present in the README.",
                                                **PLAN_ONLY), "duplicate", "already done", "words"),
    ClosureCase("change request unanswered", lambda: closed(reviews=[CR]), "agent_failure",
                "change request", "closer"),
    ClosureCase("plan only", lambda: closed(timeline=[ev("copilot_work_started", 1),
                                                      ev("copilot_work_finished", 30)], **PLAN_ONLY),
                "agent_failure", "no work beyond its plan", "closer"),
    ClosureCase("closed mid-session", lambda: closed(timeline=[ev("copilot_work_started", 1)],
                                                     **PLAN_ONLY), "withdrawn", "alice", "closer"),
    ClosureCase("superseded", lambda: closed([(b.ALICE, "Closing in favour of #501.", 100)]),
                "superseded", "done elsewhere", "words"),
    ClosureCase("duplicate", lambda: closed([(b.ALICE, "Duplicate of #12.", 100)]), "duplicate",
                "a duplicate", "words"),
    # The operator's verdict as they close their own agent's PR is a verdict on the agent's work.
    ClosureCase("the operator's own verdict", lambda: closed([(b.ALICE, "Not a good solution, closing.", 100)]),
                "agent_failure", "alice said the work was wrong", "words"),
    # Without the close event the conversation is read all the same.
    ClosureCase("no close event, words read", lambda: closed(
        [(BOB, "Wrong approach: this belongs in the parser.", 100)], closer=None),
        "agent_failure", "bob said the work was wrong", "words"),
    ClosureCase("the agent relays a person's decision", lambda: closed(
        [(b.AGENT, "Closing this PR as requested by @bob: it is no longer needed.", 118)], closer=None),
        "declined", "bob (relayed by Copilot)", "words"),
    ClosureCase("a stale notice", lambda: closed([(RawUser(login="stale[bot]", type="Bot"), STALE_NOTICE, 110)],
                                                 closer=None), "stale", "went stale", "words"),
    ClosureCase("stale bot", lambda: closed(closer="github-actions[bot]"), "stale", "github-actions",
                "closer"),
    ClosureCase("silence on the people's move", lambda: closed(closed_at=b.at(60 * 24 * 20)), "stale",
                "20 days of silence", "closer"),
    ClosureCase("silence on the agent's move", lambda: closed(reviews=[CR], closed_at=b.at(60 * 24 * 20),
                                                              closer="github-actions[bot]"),
                "stale", "github-actions", "closer"),
    ClosureCase("declined", lambda: closed([(b.ALICE, "Thanks, but this is out of scope for us.", 100)]),
                "declined", "not wanted", "words"),
    ClosureCase("trial title", lambda: closed(title="[DO NOT MERGE] trying the agent"), "declined", "trial",
                "words"),
    # A person's plain request left unanswered is not a verdict: on the train labels such closes
    # were the project's reason as often as the agent's failure.
    ClosureCase("a plain request left unanswered", lambda: closed(
        [(BOB, "@copilot please rename the helper to parse_window.", 100)]), "withdrawn",
        "without a stated reason", "closer"),
    ClosureCase("withdrawn", lambda: closed(), "withdrawn", "without a stated reason", "closer"),
    ClosureCase("unknown closer", lambda: closed(closer=None), "unknown", "not recorded", "nothing"),
    ClosureCase("someone else, no words", lambda: closed(closer="bob"), "unknown", "closed by bob", "nothing"),
]


@pytest.mark.parametrize("case", CLOSURE_CASES, ids=[c.name for c in CLOSURE_CASES])
def test_closure(case: ClosureCase) -> None:
    found = closure_of(ctx_of(case.build()))
    assert found is not None
    assert found.class_ == case.cls, found.reason
    assert case.fragment in found.reason, found.reason
    assert found.decided_by == case.decided, found.reason
    assert found.counts_against_agent == (case.cls == "agent_failure")
    assert found.evidence


def test_merged_and_open_prs_have_no_closure() -> None:
    assert closure_of(ctx_of(scenario())) is None
    assert closure_of(ctx_of(scenario(merged=False, state="open", closed_at=None))) is None


# --------------------------------------------------------------------------- rescue and intervention


def merged(extra: list[Any] = (), **kw: Any) -> EvidenceBundle:
    return scenario(commits=[*b.default_commits(), *extra], **kw)


@dataclass(frozen=True)
class RescueCase:
    name: str
    build: Callable[[], EvidenceBundle]
    cls: str
    people_commits: int


RESCUE_CASES = [
    RescueCase("clean", lambda: merged(), "clean", 0),
    RescueCase("feedback loop", lambda: merged(reviews=[b.review(7002, b.ALICE, "CHANGES_REQUESTED", 30),
                                                        b.review(7003, b.ALICE, "APPROVED", 90)]),
               "feedback_loop", 0),
    RescueCase("addressed-review commit", lambda: merged(
        [b.commit("c4", "Address PR review comments", 70)]), "feedback_loop", 0),
    RescueCase("taken over", lambda: merged([b.commit("c4", "fix: handle empty input", 70, author=BOB)]),
               "taken_over", 1),
    RescueCase("merge of the base branch", lambda: merged(
        [b.commit("c4", "Merge branch 'main' into copilot/retry-backoff", 70, author=BOB)]), "clean", 0),
    RescueCase("version bump by a person", lambda: merged([b.commit("c4", "chore: bump version to 1.4.0",
                                                                    70, author=BOB)]), "clean", 0),
    RescueCase("release account", lambda: merged([b.commit("c4", "update changelog", 70,
                                                           author=RawUser(login="acme-release"))]), "clean", 0),
    RescueCase("stacked on a person's branch", lambda: scenario(commits=[
        b.commit("c0", "wip: base work", -60, author=BOB), *b.default_commits()]), "clean", 0),
    RescueCase("after the merge", lambda: merged([b.commit("c4", "fix typo", 200, author=BOB)]), "clean", 0),
]


@pytest.mark.parametrize("case", RESCUE_CASES, ids=[c.name for c in RESCUE_CASES])
def test_rescue(case: RescueCase) -> None:
    found = rescue_of(ctx_of(case.build()))
    assert found is not None
    assert found.class_ == case.cls, found.reason
    assert found.commits_by_people == case.people_commits


def test_operator_hand_work_beside_an_agent_committing_as_itself() -> None:
    """Cursor commits as cursoragent; the operator's own commits beside them are hand work."""
    alice, cursor = b.ALICE, RawUser(login="cursoragent")
    bundle = scenario(user=alice, commits=[b.commit("c1", "feat: add retry", 10, author=cursor),
                                           b.commit("c2", "fix the retry by hand", 40, author=alice)],
                      head_ref="cursor/retry", reviews=[])
    ctx = ctx_of(bundle)
    assert intervention_of(ctx).operator_hand
    assert [c.subject for c in intervention_of(ctx).counted] == ["fix the retry by hand"]
    # The same account alone is the agent working under the operator's account (Codex): none.
    codex = scenario(user=alice, commits=[b.commit("c1", "feat: add retry", 10, author=alice)],
                     head_ref="codex/retry", reviews=[])
    assert not intervention_of(ctx_of(codex)).counted


def test_the_account_is_in_the_result_and_rescores_the_same() -> None:
    bundle = closed([(BOB, "This doesn't work.", 100)])
    account = account_of(ctx_of(bundle))
    assert account.closure is not None and account.rescue is None and account.turns is not None
    again = account_of(ctx_of(EvidenceBundle.model_validate(bundle.json_form())))
    assert again == account


# --------------------------------------------------------------------------- the agent's test reports


@pytest.mark.parametrize(("text", "expected"), [
    ("## Testing\n- `npm test` *(fails: Cannot find module 'x')*", (1, 1)),
    ("- `pytest` *(fails: 3 assertions in test_api.py)*", (1, 0)),
    ("Tests still fail on Windows.", (1, 0)),
    ("I was unable to reproduce the issue.", (0, 0)),
    ("## Testing\n- `npm test`", (0, 0)),
])
def test_failing_checks(text: str, expected: tuple[int, int]) -> None:
    assert failing_checks(text) == expected


def _settings_with_bot(login: str) -> Settings:
    return Settings.model_validate({"patterns": {"bot_logins": [login]}})


def test_a_configured_bot_account_is_no_rescue() -> None:
    bundle = merged([b.commit("c4", "fix: handle empty input", 70, author=BOB)])
    assert rescue_of(ctx_of(bundle)).class_ == "taken_over"  # type: ignore[union-attr]
    assert rescue_of(ctx_of(bundle, _settings_with_bot("bob"))).class_ == "clean"  # type: ignore[union-attr]


def test_raw_collection_shape_is_untouched() -> None:
    """The account reads only facts: a bundle built without a timeline is partial, not broken."""
    raw: RawCollection = b.merged_agent_pr()
    bundle = build_bundle(raw)
    assert bundle.facts.timeline is None
    assert turns_of(ctx_of(bundle)).partial
