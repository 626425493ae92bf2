"""The shared GitHub request budget (taskeval.store.budget): several processes taking slots from one database
row never grant more than the limit less the reserve, on SQLite and PostgreSQL; queue workers
defer jobs to the reset instead of exceeding it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from taskeval.store.budget import Budget, BudgetExhausted, GateMeter, budget_key, rate_headers
from taskeval.store.db import init_schema, jobs, make_engine, rate_budgets, write
from tests.bot.helpers import SECRET, run_together
from tests.fakegithub import BASE_TIME, FAKE_TOKEN, FakeGitHub

pytest_plugins = ["tests.bot.fixtures"]
ROOT = Path(__file__).resolve().parents[1]
KEY = "api.github.test|token:0123456789abcdef"


def _spend(url: str, barrier: Any, results: Any) -> None:
    engine = make_engine(url)
    meter = GateMeter(Budget(engine, KEY, reserve=10, wait=False), chunk=4)
    sent = 0
    barrier.wait()
    try:
        while True:
            meter.add()  # a request may go out now
            sent += 1
            time.sleep(0.002)  # the request's round trip, so the processes interleave
    except BudgetExhausted:
        pass
    finally:
        meter.close()
        engine.dispose()
        results.put(sent)


def test_processes_sharing_a_budget_never_exceed_it(engine: Any, db_url: str) -> None:
    budget = Budget(engine, KEY)
    budget.observe(200, 200, time.time() + 3600)
    sent = run_together(_spend, db_url, 4)
    assert sum(sent) == 200 - 10, sent  # every slot above the reserve, and not one more
    assert budget.state()["remaining"] == 10  # type: ignore[index]


def test_observations_lower_the_budget_and_a_new_window_restores_it(engine: Any) -> None:
    now = [1000.0]
    budget = Budget(engine, KEY, reserve=0, wait=False, clock=lambda: now[0])
    budget.observe(100, 100, 1060.0)
    window, size = budget.acquire(4)
    assert (window, size) == (1, 4)
    budget.observe(50, 100, 1060.0)  # someone else used the token meanwhile
    assert budget.state()["remaining"] == 50  # type: ignore[index]
    budget.release(4, window)
    assert budget.state()["remaining"] == 54  # type: ignore[index]
    budget.observe(70, 100, 1060.0)  # an answer never raises what is left to grant
    assert budget.state()["remaining"] == 54  # type: ignore[index]
    now[0] = 1061.0  # the window is over: the next take starts a new one at the limit
    window2, _ = budget.acquire(4)
    assert window2 == window + 1 and budget.state()["remaining"] == 96  # type: ignore[index]
    budget.release(4, window)  # slots of the old window are not given back into the new one
    assert budget.state()["remaining"] == 96  # type: ignore[index]


def test_exhausted_budget_waits_for_the_reset(engine: Any) -> None:
    now = [1000.0]
    told: list[float] = []

    def sleep(seconds: float) -> None:
        now[0] += seconds

    budget = Budget(engine, KEY, reserve=5, clock=lambda: now[0], sleep=sleep,
                    on_wait=told.append, refresh=lambda: (100, 100, now[0] + 3600))
    budget.observe(6, 100, 1010.0)
    assert budget.acquire(4) == (1, 1)  # only one slot above the reserve: granted singly
    assert budget.acquire(4)[1] == 4  # waited ~10 s for the reset, then a full chunk
    assert told and told[0] == pytest.approx(10.0) and now[0] >= 1010.0


def test_keys_and_headers() -> None:
    assert budget_key("https://api.github.com", token="ghp_x").startswith(
        "api.github.com|token:")
    assert "ghp_x" not in budget_key("https://api.github.com", token="ghp_x")
    assert budget_key("https://ghe.example/api/v3", installation_id=7) == \
        "ghe.example|installation:7"
    assert rate_headers({"X-RateLimit-Remaining": "3", "X-RateLimit-Limit": "5000",
                         "X-RateLimit-Reset": "1700000000"}) == (3, 5000, 1700000000.0)
    assert rate_headers({}) is None


def test_workers_share_the_budget_and_defer_jobs_to_the_reset(db_url: str,
                                                              tmp_path: Path) -> None:
    """Three worker processes drain backfill jobs from the queue on a token with 70 requests an
    hour and a reserve of 10: GitHub never refuses one of them, and the jobs the budget cannot
    pay for wait for the reset (queued, no attempt spent) instead of failing."""
    from bot.jobs import backfill
    from taskeval.github import make_client

    fake = FakeGitHub(rate_limit=70, enforce_rate_limit=True)
    for n in range(1, 13):
        fake.add_pr("octo-org/widgets", n, commits=2,
                    created_at=BASE_TIME.replace(day=1 + n))
    engine = make_engine(db_url)
    init_schema(engine)
    with fake.serve():
        opts = backfill.Options(repository="octo-org/widgets", store_url=db_url, enqueue=True,
                                reserve=10)
        gh = make_client(FAKE_TOKEN, base_url=fake.url)
        summary = backfill.Backfill(opts, gh, engine, token=FAKE_TOKEN,
                                    api_url=fake.url).run()
        assert summary.enqueued == 12
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GITHUB_", "OPENAI_", "TASKEVAL_"))}
        env.update(GITHUB_WEBHOOK_SECRET=SECRET, DATABASE_URL=db_url, GITHUB_TOKEN=FAKE_TOKEN,
                   GITHUB_API_URL=fake.url, TASKEVAL_AI="off", TASKEVAL_POLL_SECONDS="0.1",
                   TASKEVAL_QUEUE_WORKERS="3", TASKEVAL_RATE_RESERVE="10", PYTHONPATH=str(ROOT),
                   # REST's 12 requests a PR spend the 70 of the window (GraphQL's 4 would not).
                   TASKEVAL_API="rest")
        proc = subprocess.Popen([sys.executable, "-m", "taskeval", "worker"], env=env,
                                cwd=tmp_path, stderr=(tmp_path / "workers.log").open("w"))

        def settled() -> list[Any]:
            with engine.connect() as conn:
                found = conn.execute(select(jobs.c.status, jobs.c.attempts, jobs.c.run_after,
                                            jobs.c.last_error)).all()
            return found if all(r.status in ("done", "queued") for r in found) and \
                any(r.status == "done" for r in found) and all(
                r.status == "done" or r.run_after > time.time() + 60 for r in found) else []

        try:
            deadline = time.monotonic() + 120
            rows: list[Any] = []
            while time.monotonic() < deadline and not (rows := settled()):
                time.sleep(0.2)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        assert rows, (tmp_path / "workers.log").read_text()[-3000:]
        assert fake.rate_limited == 0, "GitHub refused nothing: the workers stayed in budget"
        assert fake.count(route="issues.create_comment") == 0, "backfill jobs never comment"
        charged = fake.rate_limit - fake.rate_remaining
        assert charged <= 70 - 10
        done = [r for r in rows if r.status == "done"]
        deferred = [r for r in rows if r.status == "queued"]
        assert done and deferred
        assert all(r.attempts == 0 and "deferred to the rate-limit reset" in r.last_error
                   for r in deferred)
    engine.dispose()


# ------------------------------------------------------------- REST requests and GraphQL points


def _core(engine: Any, *, api: str, rest_reserve: int, graphql_reserve: int) -> Any:
    from bot.jobs.handlers import PipelineCore
    from bot.settings import BotSettings

    return PipelineCore(BotSettings(webhook_secret=SECRET, ai="off", api=api,  # type: ignore[arg-type]
                                    rate_reserve=rest_reserve, graphql_reserve=graphql_reserve),
                        engine)


@pytest.mark.parametrize("spent", ["graphql", "core"])
def test_a_worker_stops_short_of_either_reserve_while_the_other_budget_has_room(
        engine: Any, spent: str) -> None:
    """GitHub's REST requests and GraphQL points are separate budgets of one credential, and
    the store keeps them apart: a worker whose GraphQL points are down to their reserve sends no
    query (and defers the job) although REST has thousands of requests left, and the other way
    round; with both above their reserves it evaluates, each resource charged to its own row."""
    from bot.jobs.handlers import GitHubContext
    from taskeval.github import make_client

    fake = FakeGitHub()
    fake.add_pr("octo-org/widgets", 7, commits=2)
    key = budget_key(fake.url, token=FAKE_TOKEN)
    if spent == "graphql":
        fake.graphql_remaining = 300  # REST: all 5,000 left
    else:
        fake.rate_remaining = 300  # GraphQL: all 5,000 points left
    core = _core(engine, api="graphql", rest_reserve=300, graphql_reserve=300)
    with fake.mock():
        ctx = GitHubContext(make_client(FAKE_TOKEN, base_url=fake.url), budget_key=key)
        with pytest.raises(BudgetExhausted, match="GraphQL points" if spent == "graphql"
                           else "request budget"):
            core.evaluate(ctx, "octo-org/widgets", 7, "pull_request")
    sent = fake.counts()
    if spent == "graphql":
        assert sent["graphql"] == 0 and fake.graphql_remaining == 300, sent
    else:
        assert sum(n for route, n in sent.items() if route not in ("graphql", "rate_limit")) == 0
        assert fake.rate_remaining == 300, sent
    core_row = Budget(engine, key).state()
    graphql_row = Budget(engine, key, resource="graphql").state()
    assert core_row is not None and graphql_row is not None
    rest_sent = sum(n for route, n in sent.items() if route not in ("graphql", "rate_limit"))
    # What the store has left to grant is what GitHub has left (the REST reads sent beside the
    # refused query, the query sent beside the refused REST reads).
    assert (core_row["remaining"], graphql_row["remaining"]) == (
        (5000 - rest_sent, 300) if spent == "graphql" else (300, 5000 - fake.graphql_points))

    # Both budgets with room: the evaluation goes through, each resource charged to its row.
    fake.graphql_remaining = fake.rate_remaining = 5000
    with write(engine) as conn:  # a new window: both rows back at the limit
        conn.execute(update(rate_budgets).values(remaining=5000))
    fake.reset_log()
    points_before = fake.graphql_points
    with fake.mock():
        evaluated = core.evaluate(ctx, "octo-org/widgets", 7, "pull_request")
    result = evaluated.result
    assert result["pullRequest"]["number"] == 7
    core_row = Budget(engine, key).state()
    graphql_row = Budget(engine, key, resource="graphql").state()
    assert core_row is not None and graphql_row is not None
    rest_sent = sum(1 for r in fake.log if r.route not in ("graphql", "rate_limit")
                    and r.status != 304)  # the reads repeated from the first try are free
    # The PR's query and the labels of the issue it fixes (#12), a point each.
    assert fake.graphql_points - points_before == 2
    assert graphql_row["remaining"] == fake.graphql_remaining == 5000 - 2
    assert core_row["remaining"] == fake.rate_remaining == 5000 - rest_sent

    # The comment's write is taken from the same shared budget: one mutation, one point.
    with fake.mock():
        url = core.publish(ctx, "octo-org/widgets", 7, evaluated)
    assert url.startswith("https://") and fake.comment_writes == {"create": 1}
    graphql_row = Budget(engine, key, resource="graphql").state()
    core_row = Budget(engine, key).state()
    assert graphql_row is not None and core_row is not None
    assert graphql_row["remaining"] == fake.graphql_remaining == 5000 - 3
    assert core_row["remaining"] == fake.rate_remaining == 5000 - rest_sent


def test_graphql_headers_never_lower_the_rest_budget(engine: Any) -> None:
    """An answer about the ``graphql`` resource lowers the GraphQL row only; without a GraphQL
    budget the meter counts the query and leaves REST's row alone."""
    rest = Budget(engine, KEY)
    rest.observe(4000, 5000, time.time() + 3600)
    graphql = Budget(engine, KEY, resource="graphql")
    graphql.observe(4000, 5000, time.time() + 3600)
    headers = {"X-RateLimit-Remaining": "12", "X-RateLimit-Limit": "5000",
               "X-RateLimit-Reset": str(int(time.time() + 3600)), "X-RateLimit-Resource": "graphql"}
    for meter in (GateMeter(rest), GateMeter(rest, graphql=graphql)):
        meter.add("graphql", 3)
        meter.seen(headers)
        meter.close()
    assert rest.state()["remaining"] == 4000  # type: ignore[index]
    assert graphql.state()["remaining"] == 12  # type: ignore[index]
