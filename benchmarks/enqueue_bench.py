"""``taskeval backfill --enqueue`` with workers against one ``taskeval backfill`` process: what each
spends per PR of the same typical PRs (REST requests GitHub charges, GraphQL points), measured at
the local fake GitHub over real HTTP.

    python -m benchmarks.enqueue_bench --prs 120 --workers 4 --copilot-share 0.3

The typical PRs are the cost model's (``benchmarks.cost_model.typical_prs``: 1 to 10 commits with
a CI run each, 0 to 30 review items, a share of them by GitHub's Copilot agent). One run is a
single backfill process over GraphQL; the other queues the same PRs (``--enqueue``, which reads
the repository-wide answers once and hands each job its part) and then runs ``--workers``
queue workers (``bot.jobs.worker.Worker``, threads of this process, token mode, each on the
store's shared rate budgets) until the queue is empty. Each run starts with a fresh fake, store
and ETag cache. Prints a markdown table (``--json`` for data); exit 1 when the workers spent
more REST requests or points per PR than the single process.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cost_model import PAT, REPO, _fresh_process, typical_prs
from tests.fakegithub import FakeGitHub


@dataclass
class Spent:
    how: str
    prs: int
    evaluated: int
    rest: int  # REST requests GitHub charged (304s are not)
    points: int
    seconds: float
    batches: list[int]
    bundles: dict[int, str] = field(default_factory=dict, repr=False)  # PR -> stored bundleHash

    @property
    def rest_per_pr(self) -> float:
        return self.rest / self.prs

    @property
    def points_per_pr(self) -> float:
        return self.points / self.prs

    def per_hour(self, rest_limit: int = 5_000, points_limit: int = 5_000) -> int:
        rates = [rest_limit * self.prs / self.rest] if self.rest else []
        if self.points:
            rates.append(points_limit * self.prs / self.points)
        return int(min(rates)) if rates else 0


def _fake(prs: int, share: float) -> FakeGitHub:
    fake = FakeGitHub(token=None)
    fake.add_token(PAT, "mona")
    typical_prs(fake, prs, share)
    return fake


def _charged(fake: FakeGitHub) -> int:
    return sum(1 for r in fake.log if r.route not in ("rate_limit", "graphql") and r.status != 304)


def _options(url: str, **extra: Any) -> Any:
    from bot.jobs.backfill import Options

    return Options(repository=REPO, store_url=url, ai="off", api="graphql", **extra)


def single(prs: int, share: float) -> Spent:
    """One ``taskeval backfill`` process over GraphQL."""
    from bot.jobs.backfill import Backfill, open_store
    from taskeval.github import make_client

    _fresh_process()
    fake = _fake(prs, share)
    with tempfile.TemporaryDirectory() as folder, fake.serve(), \
            contextlib.redirect_stderr(io.StringIO()):
        url = f"sqlite:///{Path(folder) / 'store.db'}"
        engine = open_store(url)
        started = time.perf_counter()
        job = Backfill(_options(url), make_client(PAT, base_url=fake.url), engine, token=PAT,
                       api_url=fake.url, stream=io.StringIO(), tty=False)
        summary = job.run()
        seconds = time.perf_counter() - started
        bundles = _bundles(engine)
        engine.dispose()
    return Spent("one process", prs, summary.evaluated, _charged(fake), fake.graphql_points,
                 seconds, list(job.batches), bundles)


def _bundles(engine: Any) -> dict[int, str]:
    from taskeval.store.db import evaluations

    with engine.connect() as conn:
        return {int(r.number): str(json.loads(r.result_json)["bundleHash"])
                for r in conn.execute(evaluations.select())}


def enqueued(prs: int, share: float, workers: int, store_url: str | None = None) -> Spent:
    """``backfill --enqueue`` and then ``workers`` queue workers until the queue is empty."""
    from bot.jobs.backfill import Backfill, open_store
    from bot.jobs.queue import Queue
    from bot.jobs.worker import Worker
    from bot.settings import BotSettings
    from taskeval.github import make_client

    _fresh_process()
    fake = _fake(prs, share)
    with tempfile.TemporaryDirectory() as folder, fake.serve(), \
            contextlib.redirect_stderr(io.StringIO()):
        url = store_url or f"sqlite:///{Path(folder) / 'store.db'}"
        engine = open_store(url)
        started = time.perf_counter()
        Backfill(_options(url, enqueue=True), make_client(PAT, base_url=fake.url), engine,
                 token=PAT, api_url=fake.url, stream=io.StringIO(), tty=False).run()
        base = BotSettings.from_env({"GITHUB_WEBHOOK_SECRET": "s" * 32, "DATABASE_URL": url,
                                     "GITHUB_TOKEN": PAT, "GITHUB_API_URL": fake.url,
                                     "TASKEVAL_API": "graphql"}, receives_webhooks=False)
        settings = replace(base, ai="off", poll_seconds=0.05)
        queue = Queue.for_settings(engine, settings)
        stop = threading.Event()
        pool = [Worker(settings, engine, worker_id=f"bench-{i}") for i in range(workers)]
        threads = [threading.Thread(target=w.run, args=(stop,), daemon=True) for w in pool]
        for thread in threads:
            thread.start()
        while True:
            depth = queue.depth()
            if depth["queued"] == 0 and depth["running"] == 0:
                break
            time.sleep(0.1)
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        seconds = time.perf_counter() - started
        bundles = _bundles(engine)
        dead = queue.depth()["dead"]
        engine.dispose()
    if dead:
        raise SystemExit(f"{dead} jobs failed")
    return Spent(f"--enqueue, {workers} workers", prs, len(bundles), _charged(fake),
                 fake.graphql_points, seconds, [], bundles)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", type=int, default=120)
    parser.add_argument("--workers", type=int, nargs="+", default=[4])
    parser.add_argument("--copilot-share", type=float, default=0.3)
    parser.add_argument("--store", default=None, help="the workers' store (default: a SQLite file)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    runs = [single(args.prs, args.copilot_share)]
    runs += [enqueued(args.prs, args.copilot_share, n, args.store) for n in args.workers]
    if args.json:
        print(json.dumps([{**{k: v for k, v in asdict(r).items() if k != "bundles"},
                           "rest_per_pr": r.rest_per_pr,
                           "points_per_pr": r.points_per_pr, "per_hour": r.per_hour()}
                          for r in runs], indent=2))
    else:
        print(f"{args.prs} typical PRs, {args.copilot_share * 100:.0f} % by Copilot, over GraphQL:\n")
        print("| run | evaluated | REST requests charged | per PR | GraphQL points | per PR | "
              "PRs/hour, installation (5,000 + 5,000) | wall time |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in runs:
            print(f"| {r.how} | {r.evaluated} | {r.rest} | {r.rest_per_pr:.3f} | {r.points} | "
                  f"{r.points_per_pr:.3f} | {r.per_hour():,} | {r.seconds:.1f} s |")
    one = runs[0]
    worse = [r for r in runs[1:] if r.evaluated != one.evaluated or r.rest > one.rest
             or r.points > one.points or r.bundles != one.bundles]
    return 1 if worse else 0


if __name__ == "__main__":
    raise SystemExit(main())
