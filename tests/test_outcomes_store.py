"""The bot's outcomes table: one row per (repository, PR, outcome), written by many workers at once.

Each test runs on SQLite and, with ``DATABASE_URL_POSTGRES``, on PostgreSQL (tests/bot/fixtures).
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, func, select

from taskeval.outcomes import OutcomeRecord
from taskeval.store.db import outcomes, write
from taskeval.store.outcomes import read_outcomes, upsert, write_outcomes

pytest_plugins = ["tests.bot.fixtures"]

REPO = "acme/widgets"


def _rec(value: bool, detail: str, number: int = 7, outcome: str = "reverted") -> OutcomeRecord:
    return OutcomeRecord(REPO, number, outcome, value, [f"pr:{number}"], detail, "scan")


T1, T2 = _rec(True, "reverted by #12"), _rec(True, "reverted by commit fff0000")
F1, F2 = _rec(False, "no later revert found"), _rec(False, "still no revert")

# (the batches written one after another, what the table holds at the end: value and detail)
WRITES = [
    ([[F1]], (False, F1.detail)),
    ([[T1]], (True, T1.detail)),
    ([[F1], [T1]], (True, T1.detail)),  # a revert seen later is recorded
    ([[T1], [F1]], (True, T1.detail)),  # a scan that no longer sees it does not undo it
    ([[T1], [T2]], (True, T2.detail)),  # a true replaces a true: the latest evidence
    ([[F1], [F2]], (False, F2.detail)),  # a false replaces a false
    ([[T1, F1]], (True, T1.detail)),  # the same within one batch
    ([[F1, T1]], (True, T1.detail)),
    ([[T1, T2, F1]], (True, T2.detail)),
]


@pytest.mark.parametrize(("batches", "expected"), WRITES)
def test_a_recorded_true_is_never_overwritten_by_a_false(
        engine: Engine, batches: list[list[OutcomeRecord]], expected: tuple[bool, str]) -> None:
    for batch in batches:
        assert write_outcomes(engine, batch) == len(batch)
    stored = read_outcomes(engine)
    assert [(r.number, r.outcome, r.value, r.detail) for r in stored] == [(7, "reverted", *expected)]


def test_one_row_per_pr_and_outcome(engine: Engine) -> None:
    write_outcomes(engine, [_rec(False, "a", 1), _rec(True, "b", 1, "rejected"), _rec(True, "c", 2)])
    write_outcomes(engine, [_rec(True, "d", 1), _rec(False, "e", 2)])
    got = {(r.number, r.outcome): (r.value, r.detail) for r in read_outcomes(engine)}
    assert got == {(1, "reverted"): (True, "d"), (1, "rejected"): (True, "b"), (2, "reverted"): (True, "c")}


def test_workers_writing_the_same_outcomes_at_once_never_fail(engine: Engine) -> None:
    """Eight workers, each on its own connection, write the same 60 outcomes (true or false at
    random, each in its own order) at the same moment, several rounds: none fails (no
    IntegrityError, no deadlock), one row per key remains, and it is true exactly when some
    worker wrote true.

    The PostgreSQL run is the real check of the race. On SQLite, taskeval.store.db.write serialises the
    writers with a file lock, so no two upserts ever overlap and this half cannot catch it: it
    stays as a smoke test of the SQLite dialect's statement under many threads."""
    keys = [(n, kind) for n in range(20) for kind in ("reverted", "follow_up_fix", "rejected")]
    workers, rounds = 8, 5
    rng = random.Random(5)
    plans = [[[(n, kind, rng.random() < 0.15) for n, kind in rng.sample(keys, len(keys))]
              for _ in range(rounds)] for _ in range(workers)]
    start = threading.Barrier(workers)

    def work(plan: list[list[tuple[int, str, bool]]]) -> int:
        written = 0
        for batch in plan:
            start.wait(timeout=60)  # every round starts together
            with write(engine) as conn:
                written += upsert(conn, [_rec(v, f"value {v}", n, kind) for n, kind, v in batch])
        return written

    with ThreadPoolExecutor(workers) as pool:
        done = list(pool.map(work, plans))
    assert done == [rounds * len(keys)] * workers
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(outcomes)).scalar_one() == len(keys)
    wrote_true = {(n, kind) for plan in plans for batch in plan for n, kind, v in batch if v}
    got = {(r.number, r.outcome): r.value for r in read_outcomes(engine)}
    assert got == {k: k in wrote_true for k in keys}
    assert 0 < len(wrote_true) < len(keys)  # both kinds of key are exercised
