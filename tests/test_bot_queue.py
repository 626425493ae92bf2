"""The durable queue on SQLite and on a real PostgreSQL server (``DATABASE_URL_POSTGRES``)."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, func, select

from bot.jobs import events
from bot.jobs.queue import LeaseLost, Queue
from taskeval.store.db import deliveries, evaluations, jobs
from taskeval.store.results import DbJudgeCache

pytest_plugins = ["tests.bot.fixtures"]

SHA_A = "a" * 40
SHA_B = "b" * 40


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def make_queue(engine: Engine, clock: Clock | None = None, **kw: float) -> Queue:
    return Queue(engine, clock=clock or Clock(), jitter=lambda: 1.0,
                 **{"lease_seconds": 60, "max_attempts": 3, "backoff_seconds": 10, **kw})


def evaluate(number: int = 7, sha: str = SHA_A, repo: str = "octo-org/widgets") -> events.Evaluate:
    return events.Evaluate(repo, number, sha, 99)


def row_count(engine: Engine, table: object) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_jobs_are_claimed_oldest_first_and_one_per_pull_request(engine: Engine) -> None:
    q = make_queue(engine)
    first = q.accept("d1", "pull_request", "closed", evaluate(7, SHA_A)).job_id
    q.accept("d2", "pull_request", "closed", evaluate(7, SHA_B))
    other = q.accept("d3", "pull_request", "closed", evaluate(8, SHA_A)).job_id
    job = q.claim("w1")
    assert job is not None and job.id == first and job.attempts == 1
    nxt = q.claim("w2")
    assert nxt is not None and nxt.id == other  # PR 7 is busy, PR 8 is not
    assert q.claim("w3") is None
    q.complete(first, "w1", note="ok")
    later = q.claim("w3")
    assert later is not None and (later.number, later.head_sha) == (7, SHA_B)


def test_triggers_for_the_same_commit_coalesce_until_the_job_ends(engine: Engine) -> None:
    q = make_queue(engine)
    a = q.accept("d1", "pull_request", "closed", evaluate())
    b = q.accept("d2", "issue_comment", "created", evaluate())
    assert (a.status, b.status, b.job_id) == ("queued", "coalesced", a.job_id)
    job = q.claim("w1")
    assert job is not None
    c = q.accept("d3", "pull_request", "closed", evaluate())  # joins the running job
    assert (c.status, c.job_id) == ("coalesced", a.job_id)
    q.complete(job.id, "w1", note="ok")
    d = q.accept("d4", "pull_request", "closed", evaluate())  # finished: a new request runs anew
    assert d.status == "queued" and d.job_id != a.job_id
    assert q.job(a.job_id)["triggers"] == 3  # type: ignore[index]


def test_redelivery_returns_the_original_outcome(engine: Engine) -> None:
    q = make_queue(engine)
    first = q.accept("same", "pull_request", "closed", evaluate())
    again = q.accept("same", "pull_request", "closed", evaluate(9))
    assert again.status == "duplicate" and again.job_id == first.job_id
    assert "queued: evaluate" in again.message
    assert row_count(engine, jobs) == 1


def test_concurrent_duplicate_deliveries_store_once(engine: Engine) -> None:
    q = make_queue(engine)
    start = threading.Barrier(8)

    def send(_: int) -> tuple[str, int | None]:
        start.wait()
        ack = q.accept("dup-delivery", "pull_request", "closed", evaluate())
        return ack.status, ack.job_id

    with ThreadPoolExecutor(8) as pool:
        acks = list(pool.map(send, range(8)))
    assert Counter(status for status, _ in acks) == {"queued": 1, "duplicate": 7}
    assert len({job for _, job in acks}) == 1
    assert row_count(engine, deliveries) == 1 and row_count(engine, jobs) == 1


def test_concurrent_distinct_deliveries_for_one_commit_make_one_job(engine: Engine) -> None:
    q = make_queue(engine)
    start = threading.Barrier(8)

    def send(i: int) -> int | None:
        start.wait()
        return q.accept(f"delivery-{i}", "pull_request", "closed", evaluate()).job_id

    with ThreadPoolExecutor(8) as pool:
        ids = set(pool.map(send, range(8)))
    assert len(ids) == 1
    assert row_count(engine, deliveries) == 8 and row_count(engine, jobs) == 1
    assert q.job(ids.pop())["triggers"] == 8  # type: ignore[index]


def test_concurrent_claims_never_run_two_jobs_of_one_pull_request(engine: Engine) -> None:
    q = Queue(engine, lease_seconds=60)
    for i in range(4):
        q.accept(f"a{i}", "pull_request", "closed", evaluate(1, f"{i:x}" * 40))
        q.accept(f"b{i}", "pull_request", "closed", evaluate(2, f"{i:x}" * 40))
    start = threading.Barrier(6)

    def claim(i: int) -> int | None:
        start.wait()
        job = q.claim(f"w{i}")
        return job.number if job else None

    with ThreadPoolExecutor(6) as pool:
        claimed = [n for n in pool.map(claim, range(6)) if n is not None]
    assert sorted(claimed) == [1, 2]
    with engine.connect() as conn:
        running = conn.execute(
            select(jobs.c.number, func.count()).where(jobs.c.status == "running")
            .group_by(jobs.c.number)
        ).all()
    assert sorted(running) == [(1, 1), (2, 1)]


def test_an_expired_lease_hands_the_job_to_another_worker(engine: Engine) -> None:
    clock = Clock()
    q = make_queue(engine, clock)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    assert q.claim("dead-worker") is not None
    clock.now += 30
    assert q.heartbeat(job_id, "dead-worker")  # alive: lease now runs to +90
    clock.now += 50
    assert q.claim("w2") is None  # still leased (until +90)
    clock.now += 11
    taken = q.claim("w2")
    assert taken is not None and taken.id == job_id and taken.attempts == 2
    assert "lease expired" in q.job(job_id)["last_error"]  # type: ignore[index]
    with pytest.raises(LeaseLost):
        q.complete(job_id, "dead-worker", note="late")
    assert not q.heartbeat(job_id, "dead-worker")
    assert q.fail(job_id, "dead-worker", "boom", transient=True) == "lost"
    q.complete(job_id, "w2", note="ok")
    assert q.job(job_id)["status"] == "done"  # type: ignore[index]


def test_a_dead_workers_job_is_requeued_once_its_heartbeat_is_stale_not_at_lease_end(
    engine: Engine,
) -> None:
    clock = Clock()
    q = make_queue(engine, clock, lease_seconds=120, worker_stale_seconds=15)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    q.beat("killed", host="h", pid=1, started_at=clock.now)
    q.beat("alive", host="h", pid=2, started_at=clock.now)
    assert q.claim("killed") is not None
    # The killed worker never beats again; its lease (120 s) still runs for minutes.
    clock.now += 14
    q.beat("alive", host="h", pid=2, started_at=clock.now)
    assert q.claim("alive") is None  # within the window the holder may be alive: never taken
    clock.now += 2
    taken = q.claim("alive")
    assert taken is not None and taken.id == job_id and taken.attempts == 2
    row = q.job(job_id)
    assert row is not None and row["leased_by"] == "alive" and row["lease_until"] > clock.now
    assert "stopped heartbeating" in row["last_error"]
    with pytest.raises(LeaseLost):  # should the old one wake up, it can record nothing
        q.complete(job_id, "killed", note="late")
    assert not q.heartbeat(job_id, "killed")
    q.complete(job_id, "alive", note="ok")
    assert q.job(job_id)["status"] == "done"  # type: ignore[index]


def test_a_worker_renewing_its_lease_counts_as_alive_and_keeps_its_job(engine: Engine) -> None:
    clock = Clock()
    q = make_queue(engine, clock, lease_seconds=120, worker_stale_seconds=15)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    q.beat("busy", host="h", pid=1, started_at=clock.now)
    assert q.claim("busy") is not None
    for _ in range(6):  # its presence thread is starved, but the lease heartbeat gets through
        clock.now += 10
        assert q.heartbeat(job_id, "busy")
        assert q.claim("other") is None
    assert q.job(job_id)["leased_by"] == "busy"  # type: ignore[index]


def test_a_job_without_a_presence_row_still_waits_for_its_lease(engine: Engine) -> None:
    clock = Clock()
    q = make_queue(engine, clock, lease_seconds=60, worker_stale_seconds=15)
    q.accept("d1", "pull_request", "closed", evaluate())
    assert q.claim("no-row") is not None  # e.g. a worker from before presence rows
    clock.now += 30
    assert q.claim("other") is None
    clock.now += 31
    assert q.claim("other") is not None


def test_a_job_that_keeps_killing_its_worker_is_dead_lettered(engine: Engine) -> None:
    clock = Clock()
    q = make_queue(engine, clock)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    for attempt in range(3):
        job = q.claim(f"w{attempt}")
        assert job is not None and job.attempts == attempt + 1
        clock.now += 61
    assert q.claim("w9") is None
    row = q.job(job_id)
    assert row is not None and row["status"] == "dead"
    assert "last attempt" in row["last_error"]


def test_transient_failures_back_off_exponentially_then_die(engine: Engine) -> None:
    clock = Clock()
    q = make_queue(engine, clock)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    waits = []
    for _ in range(2):
        job = q.claim("w1")
        assert job is not None
        assert q.fail(job.id, "w1", "GitHub answered 502", transient=True) == "queued"
        row = q.job(job_id)
        assert row is not None
        waits.append(row["run_after"] - clock.now)
        assert q.claim("w1") is None  # not before the backoff
        clock.now = row["run_after"]
    assert waits == [10, 20]
    job = q.claim("w1")
    assert job is not None and job.attempts == 3
    assert q.fail(job.id, "w1", "GitHub answered 502", transient=True) == "dead"
    row = q.job(job_id)
    assert row is not None and row["status"] == "dead"
    assert row["last_error"] == "gave up after 3 attempts: GitHub answered 502"


def test_permanent_failure_dies_at_once_with_the_error(engine: Engine) -> None:
    q = make_queue(engine)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    assert q.claim("w1") is not None
    assert q.fail(job_id, "w1", "pull request octo-org/widgets#7 not found",
                  transient=False) == "dead"
    assert q.job(job_id)["last_error"] == "pull request octo-org/widgets#7 not found"  # type: ignore[index]
    assert q.depth() == {"queued": 0, "running": 0, "done": 0, "dead": 1}


def test_rate_limit_reset_is_respected(engine: Engine) -> None:
    clock = Clock()
    q = make_queue(engine, clock)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    assert q.claim("w1") is not None
    q.fail(job_id, "w1", "rate limited", transient=True, retry_at=clock.now + 900)
    clock.now += 899
    assert q.claim("w1") is None
    clock.now += 1
    assert q.claim("w1") is not None


def test_errors_are_stored_without_secrets_and_bounded(engine: Engine) -> None:
    q = make_queue(engine)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    assert q.claim("w1") is not None
    token = "ghs_" + "A1b2C3d4" * 5
    q.fail(job_id, "w1", f"401 with token {token} " + "x" * 5000, transient=False)
    error = q.job(job_id)["last_error"]  # type: ignore[index]
    assert token not in error and "[redacted]" in error and len(error) <= 2000


def test_released_jobs_run_again_without_spending_an_attempt(engine: Engine) -> None:
    q = make_queue(engine)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    assert q.claim("w1") is not None
    assert q.release(job_id, "w1")
    assert not q.release(job_id, "w1")
    job = q.claim("w2")
    assert job is not None and job.attempts == 1


def test_a_released_job_is_due_the_moment_it_was_released_even_if_the_clock_steps_back(
    engine: Engine,
) -> None:
    class SteppingBack(Clock):  # once stepping, each read 5 s earlier (an NTP correction)
        stepping = False

        def __call__(self) -> float:
            self.now -= 5 if self.stepping else 0
            return self.now

    clock = SteppingBack()
    q = make_queue(engine, clock)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    assert q.claim("w1") is not None
    clock.stepping = True
    assert q.release(job_id, "w1")
    released = clock.now
    with engine.connect() as conn:
        row = conn.execute(select(jobs.c.run_after, jobs.c.updated_at)
                           .where(jobs.c.id == job_id)).one()
    assert row.run_after == row.updated_at == released


def test_completion_stores_the_result_and_queues_the_follow_up_atomically(engine: Engine) -> None:
    q = make_queue(engine)
    cmd = events.Command("octo-org/widgets", 7, 555, "octocat", 99)
    cmd_id = q.accept("d1", "issue_comment", "created", cmd).job_id
    pending = q.accept("d2", "pull_request", "closed", evaluate()).job_id
    job = q.claim("w1")
    assert job is not None and job.id == cmd_id and job.kind == "command"
    follow = q.complete(cmd_id, "w1", note="accepted", follow_up=evaluate())
    assert follow == pending  # same PR and head SHA: coalesced with the queued evaluation
    follow_other = q.accept("d3", "issue_comment", "created",
                            events.Command("octo-org/widgets", 7, 556, "octocat", 99)).job_id
    job = q.claim("w1")
    assert job is not None and job.id == pending
    row = {"repo": "octo-org/widgets", "number": 7, "head_sha": SHA_A, "scorer_version": "1",
           "author": "copilot-swe-agent[bot]", "trigger": "pull_request",
           "evaluated_at": "2026-03-02T10:11:12Z", "overall_score": 80, "overall_band": "strong",
           "agent_performance": 70, "task_outcome_quality": 85, "process_compliance": 82,
           "judge_status": "off", "comment_url": None, "result_json": "{}"}
    q.complete(pending, "w1", note="evaluated", evaluation=row)
    assert row_count(engine, evaluations) == 1
    job = q.claim("w1")
    assert job is not None and job.id == follow_other


def test_lost_lease_stores_nothing(engine: Engine) -> None:
    clock = Clock()
    q = make_queue(engine, clock)
    job_id = q.accept("d1", "pull_request", "closed", evaluate()).job_id
    assert q.claim("w1") is not None
    clock.now += 61
    assert q.claim("w2") is not None
    with pytest.raises(LeaseLost):
        q.complete(job_id, "w1", note="x", evaluation={"repo": "r"})
    assert row_count(engine, evaluations) == 0


def test_judge_cache_round_trip_and_overwrite(engine: Engine) -> None:
    cache = DbJudgeCache(engine)
    assert cache.get("k") is None
    cache.put("k", {"categories": [1]})
    cache.put("k", {"categories": [2]})
    assert cache.get("k") == {"categories": [2]}


def test_old_delivery_ids_are_pruned_but_jobs_stay(engine: Engine) -> None:
    clock = Clock()
    q = make_queue(engine, clock)
    q.accept("old", "pull_request", "closed", evaluate(1))
    clock.now += 10 * 86400
    q.accept("new", "pull_request", "closed", evaluate(2))
    assert q.prune(5 * 86400) == 1
    assert q.accept("new", "pull_request", "closed", evaluate(2)).status == "duplicate"
    assert row_count(engine, jobs) == 2


def _held_first_commit(engine: Engine) -> tuple[threading.Event, list[int]]:
    """Make the first commit wait until released, so the deliveries arriving meanwhile queue up
    behind it; returns (release, commit log)."""
    from sqlalchemy import event

    release, commits = threading.Event(), []

    def on_commit(_conn: object) -> None:
        if not commits:
            release.wait(10)
        commits.append(1)

    event.listen(engine, "commit", on_commit)
    return release, commits


def test_deliveries_arriving_during_a_commit_are_stored_together_and_each_answered(
    engine: Engine,
) -> None:
    q = make_queue(engine)
    release, commits = _held_first_commit(engine)
    sends = [(f"d{i}", evaluate(100 + i)) for i in range(6)] + [("d0", evaluate(100))]
    answers: dict[int, object] = {}

    def send(i: int) -> None:
        delivery, decision = sends[i]
        answers[i] = q.accept(delivery, "pull_request", "closed", decision)

    first = threading.Thread(target=send, args=(0,))
    first.start()
    while not q._committer.locked():  # the first delivery is committing, held
        threading.Event().wait(0.01)
    others = [threading.Thread(target=send, args=(i,)) for i in range(1, len(sends))]
    for t in others:
        t.start()
    while len(q._arrivals) < len(others):  # all waiting behind the held commit
        threading.Event().wait(0.01)
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert len(commits) == 2  # the first alone, then the six that waited, together
    statuses = Counter(a.status for a in answers.values())  # type: ignore[attr-defined]
    assert statuses == {"queued": 6, "duplicate": 1}
    assert row_count(engine, deliveries) == 6 and row_count(engine, jobs) == 6


def test_one_failing_delivery_in_a_group_costs_the_others_nothing(engine: Engine) -> None:
    q = make_queue(engine)
    release, _commits = _held_first_commit(engine)
    errors: list[BaseException] = []

    def bad_step(_conn: object) -> None:
        raise RuntimeError("this delivery cannot be stored")

    def send(delivery: str, number: int, also: object = None) -> None:
        try:
            q.accept(delivery, "pull_request", "closed", evaluate(number), also=also)  # type: ignore[arg-type]
        except RuntimeError as exc:
            errors.append(exc)

    first = threading.Thread(target=send, args=("first", 1))
    first.start()
    while not q._committer.locked():
        threading.Event().wait(0.01)
    group = [threading.Thread(target=send, args=("ok-1", 2)),
             threading.Thread(target=send, args=("bad", 3, bad_step)),
             threading.Thread(target=send, args=("ok-2", 4))]
    for t in group:
        t.start()
    while len(q._arrivals) < len(group):
        threading.Event().wait(0.01)
    release.set()
    for t in [first, *group]:
        t.join(10)
    assert [str(e) for e in errors] == ["this delivery cannot be stored"]
    with engine.connect() as conn:
        stored = set(conn.execute(select(deliveries.c.id)).scalars())
    assert stored == {"first", "ok-1", "ok-2"}  # the failed one is not acknowledged either
