"""Requests and wall time of one PR collection, concurrent vs sequential, over real HTTP.

Serves a merged PR with N commits (one workflow run each) from the local fake GitHub with a fixed
latency per request, collects it with ``max_workers=8`` and ``max_workers=1`` in the same run, and
prints the median of a few repetitions. Run from the repository root:

    python -m benchmarks.collect_bench --commits 150 --latency 0.05 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

from taskeval.github import collect, make_client
from tests.fakegithub import FAKE_TOKEN, FakeGitHub

REPO = "octo-org/widgets"


def measure(fake: FakeGitHub, workers: int, repeat: int) -> tuple[float, int, Counter[str]]:
    """Median wall seconds, requests per collection, and requests per route of the last run."""
    times: list[float] = []
    requests = 0
    routes: Counter[str] = Counter()
    for _ in range(repeat):
        fake.reset_log()
        gh = make_client(FAKE_TOKEN, base_url=fake.url, retries=0)
        start = time.perf_counter()
        # REST: concurrency across its 12 listings is what this measures (GraphQL is one query).
        raw = collect(gh, REPO, 482, max_workers=workers, api="rest")
        times.append(time.perf_counter() - start)
        if raw.requests != len(fake.log):
            raise SystemExit(f"counted {raw.requests} requests, the server saw {len(fake.log)}")
        requests, routes = raw.requests, fake.counts()
    return statistics.median(times), requests, routes


def naive_commit_requests(fake: FakeGitHub) -> int:
    """Requests the obvious PyGithub code makes for the commits alone: objects listed by
    ``get_commits()`` complete themselves when ``raw_data`` is read, one GET per commit."""
    fake.reset_log()
    gh = make_client(FAKE_TOKEN, base_url=fake.url, retries=0)
    pull = gh.get_repo(REPO).get_pull(482)
    fake.reset_log()
    for commit in pull.get_commits():
        _ = commit.raw_data
    return len(fake.log)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=150)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added per request")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    fake = FakeGitHub(latency=args.latency)
    fake.add_pr(REPO, 482, commits=args.commits, ci="fail-then-fix")
    rows = []
    with fake.serve():
        for workers in (8, 1):
            seconds, requests, routes = measure(fake, workers, args.repeat)
            rows.append((workers, requests, seconds, routes))
        naive = naive_commit_requests(fake)

    print(f"PR with {args.commits} commits, {args.latency * 1000:.0f} ms per request, "
          f"median of {args.repeat}")
    print("| max_workers | requests | wall time | requests x latency |")
    print("|---:|---:|---:|---:|")
    for workers, requests, seconds, _ in rows:
        print(f"| {workers} | {requests} | {seconds:.2f} s | {requests * args.latency:.2f} s |")
    print(f"speed-up: {rows[1][2] / rows[0][2]:.1f}x")
    print("requests per route:", dict(sorted(rows[0][3].items())))
    print(f"commits alone through PyGithub objects + raw_data: {naive} requests "
          f"(collect: {rows[0][3]['pulls.commits']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
