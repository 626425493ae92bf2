"""The agent-performance signals that read people's words and the issue timeline: table tests.

Each case builds the baseline merged Copilot PR (tests/builders.py), changes only what it is
about, and names the status, exact score and a fragment of the reason it must produce.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from taskeval.config import Settings
from taskeval.evidence import build_bundle
from taskeval.evidence.vocabulary import agent_run_event
from taskeval.models import EvidenceBundle, TimelineEntry
from taskeval.raw import CollectionIssue, RawCollection
from taskeval.signals import signal_specs

from . import builders as b


def event(name: str, minutes: float | None, actor: str | None = "Copilot", n: int = 0,
          **kw: Any) -> TimelineEntry:
    when = b.at(minutes).strftime("%Y-%m-%dT%H:%M:%SZ") if minutes is not None else None
    return TimelineEntry(id=f"event:{name}-{n or int(minutes or 0)}", event=name, actor=actor,
                         actor_is_bot=bool(actor and actor.endswith("[bot]")), created_at=when,
                         **kw)


Scenario = Callable[[], EvidenceBundle]


def pr(timeline: list[TimelineEntry] | None = None, raw: RawCollection | None = None,
       **kw: Any) -> Scenario:
    def build() -> EvidenceBundle:
        bundle = build_bundle(raw or b.merged_agent_pr(**kw))
        if timeline is not None:
            bundle.facts.timeline = timeline
        return bundle
    return build


def unreadable_timeline() -> EvidenceBundle:
    raw = b.merged_agent_pr(issues=[CollectionIssue(resource="timeline", status=404,
                                                     message="Not Found")])
    return build_bundle(raw)


@dataclass(frozen=True)
class Case:
    signal: str
    scenario: Scenario
    status: str
    score: int | None
    fragment: str


ALICE_SAYS = [b.issue_comment(801, b.ALICE, "@copilot this doesn't work, please fix the parser.",
                              70)]
ALICE_CHEERS = [b.issue_comment(801, b.ALICE, "Nice, thanks!", 70)]
QUOTED = [b.issue_comment(801, b.ALICE, "> it doesn't work\n\nIt works for me now.", 70)]
REVIEWED = [b.review(7001, b.ALICE, "APPROVED", 90)]
CLOSED: dict[str, Any] = {"merged": False, "state": "closed"}

CASES = [
    Case("agent.objections", pr(issue_comments=ALICE_SAYS), "ok", 50,
         "1 comment or review of 2 by people (alice) says the work is wrong (“doesn't work”)"),
    Case("agent.objections", pr(issue_comments=ALICE_CHEERS), "ok", 100,
         "Neither of the 2 comments or reviews"),
    Case("agent.objections", pr(issue_comments=QUOTED), "ok", 100, "Neither of the 2"),
    Case("agent.objections", pr(reviews=[b.review(7001, b.BOB, "CHANGES_REQUESTED", 50,
                                                  body="The tests are failing, please fix."),
                                         b.review(7002, b.ALICE, "COMMENTED", 60,
                                                  body="This is wrong.")]),
         "ok", 25, "(alice and bob)"),
    Case("agent.objections", pr(reviews=[]), "inconclusive", None, "No one other than the author"),
    Case("agent.objections",
         pr(raw=b.merged_agent_pr(reviews=[], issues=[CollectionIssue(
             resource="issue_comments", status=404, message="Not Found")])),
         "inconclusive", None, "issue comments could not be read"),
    Case("agent.force_pushes", pr([event("head_ref_force_pushed", 95, "Copilot")]), "ok", 50,
         "force-pushed 1 time after the first human review (by Copilot)"),
    Case("agent.force_pushes", pr([event("head_ref_force_pushed", 20)]), "ok", 100,
         "1 force-push, all before the first human review"),
    Case("agent.force_pushes", pr([]), "ok", 100, "No force-push after the first human review"),
    Case("agent.force_pushes", pr([event("head_ref_force_pushed", 95)], reviews=[]),
         "inconclusive", None, "No human reviewed the PR"),
    Case("agent.force_pushes", pr(None), "inconclusive", None, "not collected"),
    Case("agent.force_pushes", unreadable_timeline, "inconclusive", None, "could not be read"),
    Case("agent.own_failures",
         pr([event("copilot_work_started", 1, "alice"), event("copilot_work_finished", 30, "alice"),
             event("copilot_work_started", 70, "alice"),
             event("copilot_work_finished_failure", 80, "alice")]), "ok", 50,
         "reported 1 failed run (copilot_work_finished_failure) out of 2 recorded runs"),
    Case("agent.own_failures",
         pr([event("copilot_work_started", 1), event("copilot_work_finished", 30)]), "ok", 100,
         "The only recorded agent run finished"),
    Case("agent.own_failures", pr([event("labeled", 1)]), "inconclusive", None,
         "no agent session events"),
    Case("agent.own_failures", pr(None), "inconclusive", None, "not collected"),
    # Only the agent's turns count: a PR that waited eight days for its review is no stall.
    Case("agent.idle_gaps", pr([]), "inconclusive", None, "never the agent's move"),
    Case("agent.idle_gaps", pr([], closed_at=b.at(60 * 24 * 8), merged_at=b.at(60 * 24 * 8)),
         "inconclusive", None, "8.0 days waiting for people, not charged"),
    Case("agent.idle_gaps",
         pr([], reviews=[b.review(7002, b.ALICE, "CHANGES_REQUESTED", 100, body="Please add a test.")],
            closed_at=b.at(60 * 24 * 8), merged_at=b.at(60 * 24 * 8)),
         "ok", 44, "The longest agent turn lasted 7.9 days"),
    Case("agent.idle_gaps",
         pr([event("copilot_work_started", 110, "alice"), event("copilot_work_finished", 140, "alice")],
            reviews=[b.review(7002, b.ALICE, "CHANGES_REQUESTED", 100, body="Please add a test.")],
            closed_at=b.at(60 * 24 * 8), merged_at=b.at(60 * 24 * 8)),
         "ok", 100, "The longest agent turn lasted 40 minutes"),
    Case("agent.restarts", pr([event("cross-referenced", 200, "Copilot",
                                     source="acme/widgets#490", source_is_pull=True,
                                     source_author="Copilot")], **CLOSED), "ok", 50,
         "then Copilot referenced it from acme/widgets#490 1 time"),
    Case("agent.restarts", pr([event("cross-referenced", 200, "alice")], **CLOSED),
         "inconclusive", None, "whether the work was restarted is unknown"),
    Case("agent.restarts", pr([event("cross-referenced", 200, "Copilot")]), "inconclusive", None,
         "merged or still open"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.signal}:{n}" for n, c in enumerate(CASES)])
def test_rework_signal_case(case: Case) -> None:
    spec = next(s for s in signal_specs() if s.id == case.signal)
    s = spec.run(case.scenario(), Settings())
    assert s.status == case.status, s.reason
    assert s.score == case.score, s.reason
    assert case.fragment in s.reason, s.reason
    assert s.evidence, "every signal cites what it read"


@pytest.mark.parametrize(("name", "kind"), [
    ("copilot_work_started", "started"), ("copilot_work_finished", "finished"),
    ("copilot_work_finished_failure", "failed"), ("devin_work_stopped", "failed"),
    ("somebot_work_started", "started"), ("labeled", None), ("head_ref_force_pushed", None),
])
def test_agent_run_events(name: str, kind: str | None) -> None:
    assert agent_run_event(name) == kind
