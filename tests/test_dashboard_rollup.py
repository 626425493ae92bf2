"""The dashboard's rollups (``dashboard_rollup_agent``/``_author``/``_signals``): kept by ``store_evaluation``
(new PRs, replaced latest evaluations, unattributed results, grades with and without coverage) it
equals a rebuild from ``evaluations``, and the overview's aggregates (provisional grades counted or
left out) and the signals that pull scores down read from it are identical to the scan of
``evaluations``, for randomised stores and filters, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, func, select

from dashboard import queries
from dashboard.queries import UNATTRIBUTED, Filters
from taskeval.contract import band
from taskeval.store.db import evaluations, rollup_agent, rollup_author, rollup_signals, write
from taskeval.store.results import rebuild_rollup, record_from_result, store_evaluation
from tests.dashboard_store import AGENTS, PEOPLE, REPOS, START, fill

pytest_plugins = ["tests.bot.fixtures"]
E = evaluations.c


def _rollup(engine: Engine) -> set[tuple[Any, ...]]:
    with engine.connect() as conn:
        return {(table.name, *(int(v) if not isinstance(v, str) else v for v in row))
                for table in (rollup_agent, rollup_author, rollup_signals) for row in conn.execute(select(table))}


def _evaluate(rng: random.Random, template: dict[str, Any], number: int, repo: str) -> dict[str, Any]:
    result = json.loads(json.dumps(template))
    result["repository"] = repo
    result["pullRequest"]["number"] = number
    result["pullRequest"]["author"] = rng.choice(PEOPLE)
    result["headSha"] = f"{rng.getrandbits(160):040x}"
    sure = rng.random()  # every grade sure, some provisional, or stored before coverage
    for category in result["categoryScores"]:
        category["finalScore"] = rng.randint(0, 100)
        category["coverage"] = (1.0 if sure < 0.4 else None if sure > 0.9 else round(rng.random(), 3))
    for signal in result["signals"]:
        if signal.get("status") == "ok" and isinstance(signal.get("score"), int):
            signal["score"] = rng.randint(0, 100)
    result["overallScore"] = rng.randint(0, 100)
    result["overallBand"] = band(result["overallScore"])
    choice = rng.random()
    if choice < 0.15:
        result.pop("agent", None)  # from before attribution: NULL agent
    elif isinstance(result.get("agent"), dict):
        agent_id, name, *_ = rng.choice(AGENTS)
        result["agent"] = {**result["agent"], "id": agent_id, "name": name}
    return {**record_from_result(result), "stored_at": 0.0}


def _filters(rng: random.Random) -> Filters:
    monday = START + timedelta(weeks=rng.randint(0, 30))
    since = monday.timestamp() if rng.random() < 0.4 else None
    until = (monday + timedelta(weeks=rng.randint(1, 20))).timestamp() if rng.random() < 0.4 else None
    if rng.random() < 0.2 and since is not None:  # not a whole week: the scan answers
        since += 3600 * rng.randint(1, 100)
    return Filters(
        repos=frozenset(rng.sample(REPOS, rng.randint(0, 3))) if rng.random() < 0.3 else None,
        repo=rng.choice(REPOS) if rng.random() < 0.3 else None,
        agent=rng.choice([a[0] for a in AGENTS] + [UNATTRIBUTED]) if rng.random() < 0.3 else None,
        author=rng.choice(PEOPLE) if rng.random() < 0.2 else None,
        band=rng.choice(queries.BANDS) if rng.random() < 0.3 else None,
        since=since, until=until,
    )


def test_rollup_is_kept_by_store_evaluation_and_matches_the_scan(engine: Engine) -> None:
    rng = random.Random(20261130)
    stored = fill(engine, 150, full_results=True, seed=5)
    template = json.loads(stored.latest()[0]["result_json"])
    latest = stored.latest()
    with write(engine) as conn:
        for _ in range(120):
            if rng.random() < 0.6:  # a re-evaluation replaces the PR's latest evaluation
                old = rng.choice(latest)
                row = _evaluate(rng, template, old["number"], old["repo"])
            else:
                row = _evaluate(rng, template, 50_000 + rng.randint(0, 60), rng.choice(REPOS))
            store_evaluation(conn, row)
    kept = _rollup(engine)
    with write(engine) as conn:
        rebuild_rollup(conn)
    assert kept == _rollup(engine)
    assert any(row[0] == rollup_agent.name and row[2] == "" for row in kept)  # unattributed results are in it

    with engine.connect() as conn:
        cases = [Filters()] + [_filters(rng) for _ in range(60)]
        used = 0
        for f in cases:
            for by in ("agent", "author"):
                for exclude in (False, True):
                    fast = queries.groups(conn, f, by, exclude_provisional=exclude)
                    slow = queries.groups(conn, f, by, use_rollup=False, exclude_provisional=exclude)
                    assert fast == slow, (f, by, exclude)
            assert _downs(queries.pull_downs(conn, f, 100)) == _downs(
                queries.pull_downs(conn, f, 100, use_rollup=False)), f
            used += queries.rollup_where(f, "agent") is not None
        visible = Filters(repos=frozenset(REPOS[:2]))
        assert queries.repositories(conn, visible) == sorted(REPOS[:2])
        scan = conn.execute(select(E.agent_id, func.max(E.agent_name)).where(E.is_latest.is_(True))
                            .group_by(E.agent_id)).all()
        choices = {queries.group_key(k, "agent"): str(n or queries._key(k)) for k, n in scan}
        if queries.NO_AGENT in choices:  # human, unknown bot and unattributed: one choice
            choices[queries.NO_AGENT] = queries.NO_AGENT_NAME
        assert queries.agents(conn, Filters()) == sorted(choices.items())
        assert 0 < used < len(cases)  # both paths were exercised


def _downs(found: list[queries.PullDown]) -> list[tuple[Any, ...]]:
    return [(d.signal_id, d.category, d.count, round(d.mean_score, 9), [e["id"] for e in d.examples]) for d in found]


def test_rollup_answers_only_whole_weeks() -> None:
    monday = datetime(2026, 11, 30, tzinfo=UTC).timestamp()
    assert queries.rollup_where(Filters(since=monday, until=monday + 7 * 86400)) is not None
    assert queries.rollup_where(Filters(since=monday + 86400)) is None
    assert queries.rollup_where(Filters(until=monday + 1)) is None
    assert queries.rollup_where(Filters(repo="a/b", agent=UNATTRIBUTED, band="weak")) is not None
    assert queries.rollup_where(Filters(author="alice"), "author") is not None
    assert queries.rollup_where(Filters(author="alice"), "agent") is None
    assert queries.rollup_where(Filters(agent="codex"), "author") is None
