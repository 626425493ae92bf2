"""The CI signals on GitHub's documented shapes of check runs and workflow runs: re-runs
(``run_attempt``), skipped, neutral and cancelled conclusions, runs from other events on the same
commit, and runs that finished after the PR ended. One table: each case names the score every CI
signal must give (None: inconclusive).

The baseline (tests/builders.py): three commits c1, c2, c3 (the head, pushed at minute 60), green
checks on the head at 62, one workflow run at 62, approved at 90, merged at 120.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from taskeval.config import Settings
from taskeval.evidence import build_bundle
from taskeval.raw import RawCollection, RawWorkflowRun
from taskeval.signals import signal_specs

from . import builders as b

HEAD = b.HEAD


def with_runs(*runs: RawWorkflowRun, checks: list | None = None) -> Callable[[], RawCollection]:
    return lambda: b.merged_agent_pr(workflow_runs=list(runs),
                                     check_runs=b.green_checks() if checks is None else checks)


def event_run(run_id: int, event: str, conclusion: str, start: float) -> RawWorkflowRun:
    r = b.run(run_id, HEAD, conclusion, start=start, name="Nightly", workflow_id=run_id)
    return r.model_copy(update={"event": event})


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], RawCollection]
    scores: dict[str, int | None]


CASES = [
    Case("green", lambda: b.merged_agent_pr(),
         {"agent.red_pushes": 100, "agent.ci_recovery": None, "outcome.ci_head": 100,
          "process.ci_at_merge": 100}),
    Case("fail then fix", b.fail_then_fix,
         {"agent.red_pushes": 71, "agent.ci_recovery": 100, "outcome.ci_head": 100,
          "process.ci_at_merge": 100}),
    Case("re-run to green on the same commit (run_attempt 2)", b.flaky_rerun,
         {"agent.red_pushes": 100, "outcome.ci_head": 100, "process.ci_at_merge": 100}),
    Case("red at merge", b.red_ci_at_merge, {"agent.red_pushes": 71, "process.ci_at_merge": 25}),
    Case("skipped and neutral conclusions are no failure", lambda: b.merged_agent_pr(check_runs=[
        *b.green_checks(), b.check(9101, "deploy-preview", HEAD, "skipped", start=62),
        b.check(9102, "codeql", HEAD, "neutral", start=62)]),
         {"agent.red_pushes": 100, "outcome.ci_head": 100, "process.ci_at_merge": 100}),
    Case("a scheduled run on the head commit is not the PR's CI",
         with_runs(b.run(5001, HEAD, start=62), event_run(5101, "schedule", "failure", 63)),
         {"agent.red_pushes": 100, "outcome.ci_head": 100, "process.ci_at_merge": 100}),
    Case("an agent session run ('dynamic') is not CI",
         with_runs(b.run(5001, HEAD, start=62), event_run(5102, "dynamic", "failure", 63)),
         {"agent.red_pushes": 100, "outcome.ci_head": 100, "process.ci_at_merge": 100}),
    Case("a push run on the same commit is its CI",
         with_runs(b.run(5001, HEAD, start=62), event_run(5103, "push", "failure", 63), checks=[]),
         {"agent.red_pushes": 71, "outcome.ci_head": 25}),
    Case("a scheduled run is left out where there are no check runs too",
         with_runs(b.run(5001, HEAD, start=62), event_run(5105, "schedule", "failure", 63), checks=[]),
         {"agent.red_pushes": 100, "outcome.ci_head": 100}),
    Case("a run that failed after the merge does not count against the agent",
         with_runs(b.run(5001, HEAD, start=62), b.run(5104, HEAD, "failure", start=130, name="Post",
                                                      workflow_id=91)),
         {"agent.red_pushes": 100, "agent.ci_recovery": None, "process.ci_at_merge": 100}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_ci_signal_shapes(case: Case) -> None:
    bundle = build_bundle(case.build())
    specs = {s.id: s for s in signal_specs()}
    for sid, expected in case.scores.items():
        got = specs[sid].run(bundle, Settings())
        if expected is None:
            assert got.status == "inconclusive", (sid, got.reason)
        else:
            assert (got.status, got.score) == ("ok", expected), (sid, got.reason)


def test_ci_going_red_on_the_agents_commit_is_its_turn() -> None:
    from taskeval.signals import Ctx
    from taskeval.signals.turns import turns_of

    bundle = build_bundle(b.fail_then_fix())
    bundle.facts.timeline = []
    spans = turns_of(Ctx(bundle, Settings())).spans
    red = [s for s in spans if s.rule == "ci-red"]
    assert red and red[0].whose == "agent"
