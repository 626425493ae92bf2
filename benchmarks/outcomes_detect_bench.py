"""The history scan's rules (``taskeval outcomes OWNER/REPO``): indexed against pairwise.

:func:`taskeval.outcomes.detect` finds each merged PR's reverts (revert PRs, git's revert
commits), follow-up fixes within the window and reopened tasks. Its first version compared every
merged PR with every later one and every commit; the reference copy of it lives in
tests/outcomes_history.py. This times both on the same generated repository (``--prs`` closed PRs
over ``--days`` days, one and a half times as many base-branch commits, 3 % of them reverts),
checks that they give the same records in the same order, and prints the times and the ratio.

Run from the repository root:

    python -m benchmarks.outcomes_detect_bench --prs 2000
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taskeval.outcomes import OutcomeRecord, detect
from tests.outcomes_history import REPO, random_history, reference_detect, reopened_log


def _best(func: Callable[[], list[OutcomeRecord]], repeat: int) -> tuple[float, list[OutcomeRecord]]:
    best, out = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        out = func()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", type=int, default=2000, help="closed PRs (default 2000)")
    parser.add_argument("--days", type=float, default=365.0, help="over how many days (default 365)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="best of (default 3; reference once)")
    args = parser.parse_args(argv)
    pulls, commits = random_history(random.Random(args.seed), args.prs, days=args.days, dense=False)
    reopened, _ = reopened_log(args.seed)
    merged = sum(1 for p in pulls if p.merged_at)
    print(f"{len(pulls)} closed PRs ({merged} merged) over {args.days:g} days, {len(commits)} commits")
    ref_s, ref = _best(lambda: reference_detect(REPO, pulls, commits, reopened, "main"), 1)
    new_s, new = _best(lambda: detect(REPO, pulls, commits, reopened, "main"), args.repeat)
    if new != ref:
        print("!! the indexed rules give other records than the reference")
        return 1
    hits = {k: sum(1 for r in new if r.outcome == k and r.value) for k in ("reverted", "follow_up_fix")}
    print(f"{len(new)} records, identical; true: {hits}")
    print(f"reference (pairwise) {ref_s * 1000:9.1f} ms")
    print(f"indexed              {new_s * 1000:9.1f} ms")
    print(f"ratio                {ref_s / new_s:9.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
