"""The history scan's rules, indexed: the same records, in the same order, as comparing every
merged PR with every later one (tests/outcomes_history.py keeps that implementation)."""

from __future__ import annotations

import random

import pytest

from taskeval import outcomes as oc

from .outcomes_history import REPO, random_history, reference_detect, reopened_log


def _pull(n: int, title: str, merged_at: str | None, body: str = "", sha: str | None = None,
          base: str = "main") -> oc.PullSummary:
    return oc.PullSummary(n, title, body, merged_at, merged_at or "2026-03-01T00:00:00Z",
                          sha or f"{n:040d}", base, f"https://github.com/{REPO}/pull/{n}")


def _commit(message: str, day: int = 3) -> oc.CommitSummary:
    return oc.CommitSummary("f" * 40, message, f"2026-03-{day:02d}T00:00:00Z", f"c/{day}")


SHA = "abc1234def" + "0" * 30
MARCH_1 = "2026-03-01T00:00:00Z"

# (what happened, the closed PRs, the base branch's commits, expected (PR, outcome) -> value)
SCENARIOS = [
    ("a revert PR by title", [_pull(1, "Add retries", MARCH_1),
                              _pull(2, 'Revert "Add retries"', "2026-03-02T00:00:00Z")], [],
     {(1, "reverted"): True, (2, "reverted"): False}),
    ("a revert PR merged at the same second is not later",
     [_pull(1, "Add retries", MARCH_1), _pull(2, 'Revert "Add retries"', MARCH_1)], [],
     {(1, "reverted"): False}),
    ("a revert PR by body, another repository's does not count",
     [_pull(1, "Add retries", MARCH_1),
      _pull(2, "Back out", "2026-03-02T00:00:00Z", f"Reverts {REPO}#1"),
      _pull(3, "Back out", "2026-03-02T00:00:00Z", "Reverts other/repo#1")], [],
     {(1, "reverted"): True}),
    ("a revert of the revert", [_pull(1, "Add retries", MARCH_1),
                                _pull(2, 'Revert "Add retries"', "2026-03-02T00:00:00Z"),
                                _pull(3, 'Revert "Revert "Add retries""', "2026-03-03T00:00:00Z")],
     [], {(1, "reverted"): True, (2, "reverted"): True, (3, "reverted"): False}),
    ("git's revert message with the abbreviated SHA",
     [_pull(1, "Speed up", MARCH_1, sha=SHA)], [_commit("This reverts commit abc1234.")],
     {(1, "reverted"): True}),
    ("git's revert message with a longer prefix", [_pull(1, "Speed up", MARCH_1, sha=SHA)],
     [_commit("This reverts commit abc1234def0.")], {(1, "reverted"): True}),
    ("the same first seven digits, another SHA", [_pull(1, "Speed up", MARCH_1, sha=SHA)],
     [_commit("This reverts commit abc1234dee.")], {(1, "reverted"): False}),
    ("a follow-up fix within the window", [_pull(1, "Tidy docs", MARCH_1),
                                           _pull(2, "Fix the docs build after #1", "2026-03-10T00:00:00Z")],
     [], {(1, "follow_up_fix"): True}),
    ("a fix naming the PR by URL", [_pull(1, "Tidy docs", MARCH_1),
                                    _pull(2, "Repair docs", "2026-03-10T00:00:00Z",
                                          f"After https://github.com/{REPO}/pull/1")], [],
     {(1, "follow_up_fix"): True}),
    ("a fix past the window", [_pull(1, "Tidy docs", MARCH_1),
                               _pull(2, "Fix the docs build after #1", "2026-03-20T00:00:00Z")], [],
     {(1, "follow_up_fix"): False}),
    ("a mention without fix words", [_pull(1, "Tidy docs", MARCH_1),
                                     _pull(2, "Extend #1 to the API pages", "2026-03-05T00:00:00Z")],
     [], {(1, "follow_up_fix"): False}),
    ("an unmerged PR is rejected", [_pull(1, "Experiment", None)], [], {(1, "rejected"): True}),
]


@pytest.mark.parametrize(("pulls", "commits", "expected"),
                         [s[1:] for s in SCENARIOS], ids=[s[0] for s in SCENARIOS])
def test_history_rules(pulls: list[oc.PullSummary], commits: list[oc.CommitSummary],
                       expected: dict[tuple[int, str], bool]) -> None:
    records = oc.detect(REPO, pulls, commits, default_branch="main")
    assert records == reference_detect(REPO, pulls, commits, default_branch="main")
    got = {(r.number, r.outcome): r.value for r in records}
    assert {k: got.get(k) for k in expected} == expected


@pytest.mark.parametrize("seed", range(300))
def test_indexed_rules_give_what_comparing_every_pair_gives(seed: int) -> None:
    rng = random.Random(seed)
    pulls, commits = random_history(rng, rng.randrange(0, 60))
    branch = rng.choice(["main", None])
    # 3e6 days past either end of the calendar: detect's OverflowError branch.
    window = rng.choice([14.0, 14.0, 1.0, 0.0, 0.5, 30.0, -1.0, 3e6, -3e6])
    reopened, asked = reopened_log(seed)
    expected_reopened, expected_asked = reopened_log(seed)
    got = oc.detect(REPO, pulls, commits, reopened, branch, window)
    want = reference_detect(REPO, pulls, commits, expected_reopened, branch, window)
    assert got == want
    assert asked == expected_asked  # the same questions, in the same order


def test_the_random_histories_exercise_every_rule() -> None:
    """The equivalence above means something only if the rules fire in those histories."""
    fired: dict[str, int] = {}
    for seed in range(300):
        rng = random.Random(seed)
        pulls, commits = random_history(rng, rng.randrange(0, 60))
        reopened, _ = reopened_log(seed)
        for r in reference_detect(REPO, pulls, commits, reopened, "main", 14.0):
            fired[f"{r.outcome}={r.value}"] = fired.get(f"{r.outcome}={r.value}", 0) + 1
    by_commit = sum(1 for seed in range(300) for r in oc.detect(REPO, *random_history(
        random.Random(seed), 30)) if any("/commit/" in e for e in r.evidence))
    assert all(fired.get(f"{k}={v}", 0) > 50 for k in ("reverted", "follow_up_fix", "rejected",
                                                         "reopened_task") for v in (True, False)), fired
    assert by_commit > 50
