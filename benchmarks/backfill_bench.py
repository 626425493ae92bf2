"""``taskeval backfill`` of a repository with many closed PRs, served over real HTTP by the local fake
GitHub with a fixed latency per request: wall time, requests per PR, and the speed-up of fetching
a few PRs at a time (``--parallel``) over one PR at a time. Each run writes a fresh SQLite store,
with the AI judge off (deterministic scores), exactly as the command does. Run from the repository
root:

    python -m benchmarks.backfill_bench --prs 1000 --latency 0.05 --parallel 1 4 8

A second pass over the same store (``--rerun``) measures the restart path: every PR is skipped
from the listing alone.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from bot.jobs import backfill
from taskeval.github import make_client
from tests.fakegithub import BASE_TIME, FAKE_TOKEN, FakeGitHub

REPO = "octo-org/widgets"


def build(prs: int, latency: float) -> FakeGitHub:
    fake = FakeGitHub(latency=latency, rate_limit=1_000_000)
    for n in range(1, prs + 1):
        fake.add_pr(REPO, n, commits=3, merged=n % 5 != 0, state="closed",
                    created_at=BASE_TIME + timedelta(hours=6 * n))
    return fake


def one(fake: FakeGitHub, store: Path, parallel: int) -> tuple[backfill.Summary, float, int]:
    url = f"sqlite:///{store}"
    engine = backfill.open_store(url)
    gh = make_client(FAKE_TOKEN, base_url=fake.url)
    opts = backfill.Options(repository=REPO, store_url=url, state="closed", ai="off",
                            parallel=parallel, reserve=0)
    seen = len(fake.log)
    start = time.perf_counter()
    summary = backfill.Backfill(opts, gh, engine, token=FAKE_TOKEN, api_url=fake.url,
                                stream=io.StringIO(), tty=False).run()
    wall = time.perf_counter() - start
    engine.dispose()
    charged = len(fake.log) - seen - sum(1 for q in fake.log[seen:] if q.route == "rate_limit")
    return summary, wall, charged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added per request")
    parser.add_argument("--parallel", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--rerun", action="store_true", help="also time a second, no-op pass")
    args = parser.parse_args(argv)
    os.environ.setdefault("TASKEVAL_CACHE_DIR", tempfile.mkdtemp(prefix="backfill-bench-cache-"))

    started = time.perf_counter()
    fake = build(args.prs, args.latency)
    print(f"{args.prs} closed PRs (3 commits each) served with +{args.latency * 1000:.0f} ms "
          f"per request; built in {time.perf_counter() - started:.1f} s")
    walls: dict[int, float] = {}
    with fake.serve(), tempfile.TemporaryDirectory(prefix="backfill-bench-") as tmp:
        for parallel in args.parallel:
            store = Path(tmp) / f"p{parallel}.db"
            summary, wall, charged = one(fake, store, parallel)
            walls[parallel] = wall
            if summary.failed or summary.evaluated != args.prs:
                raise SystemExit(f"parallel {parallel}: {summary.lines()}")
            print(f"parallel {parallel:2d}: {wall:7.1f} s wall, {args.prs / wall:5.1f} PRs/s, "
                  f"{charged / args.prs:.2f} requests/PR ({charged} in all, "
                  f"{summary.requests} counted by the budget)")
            if args.rerun:
                again, wall2, charged2 = one(fake, store, parallel)
                print(f"           rerun: {wall2:5.1f} s, skipped {again.skipped}, "
                      f"{charged2} requests")
    base = walls.get(1)
    if base:
        for parallel, wall in walls.items():
            if parallel != 1:
                print(f"speed-up of --parallel {parallel} over 1: {base / wall:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
