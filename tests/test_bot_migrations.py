"""Schema migrations of the bot database: a fresh database, one made before migrations existed
(created here with that code's own DDL, rows in it), concurrent start-ups, and the models agreeing
with the migrations. Each runs on SQLite and, with DATABASE_URL_POSTGRES, on PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, func, inspect, select, text
from sqlalchemy.exc import IntegrityError

from taskeval.store import migrations
from taskeval.store.db import drop_schema, evaluations, init_schema, jobs, judge_cache, make_engine, metadata, write
from taskeval.store.results import record_from_result, store_evaluation
from tests.bot.helpers import run_together

pytest_plugins = ["tests.bot.fixtures"]

OLD_DDL = Path(__file__).parent / "bot" / "schemas_pre_alembic"
NEW_COLUMNS = {"owner", "agent_id", "agent_name", "operator", "agent_confidence", "pr_state",
               "pr_created_at", "merged_at", "closed_at", "activity_at", "week", "is_latest"}


@pytest.fixture
def empty(db_url: str) -> Any:
    """An engine on a database with no tables at all."""
    engine = make_engine(db_url)
    drop_schema(engine)
    yield engine
    engine.dispose()


def old_schema(engine: Engine) -> None:
    """The schema exactly as the pre-migration ``init_schema`` (``create_all``) made it."""
    sql = (OLD_DDL / f"{engine.dialect.name}.sql").read_text(encoding="utf-8")
    with write(engine) as conn:
        for statement in sql.split(";\n"):
            lines = [ln for ln in statement.splitlines() if not ln.startswith("--")]
            if "".join(lines).strip():
                conn.exec_driver_sql("\n".join(lines))


def a_result(number: int, *, agent: dict[str, Any] | None, merged: bool, sha: str = "a" * 40,
             created: str = "2025-03-04T09:00:00Z", closed: str | None = "2025-03-06T12:00:00Z",
             overall: int = 70) -> dict[str, Any]:
    names = ("agentPerformance", "taskOutcomeQuality", "processCompliance")
    facts = {"number": number, "state": "closed" if closed else "open", "merged": merged,
             "createdAt": created, "closedAt": closed, "mergedAt": closed if merged else None}
    data: dict[str, Any] = {
        "schemaVersion": "1", "scorerVersion": "2026.11.1", "repository": "octo-org/widgets",
        "pullRequest": {"number": number, "title": "t", "url": "u", "author": "alice",
                        "merged": merged, "mergedAt": closed if merged else None},
        "headSha": sha, "evaluatedAt": "2026-11-30T07:00:00Z", "trigger": "backfill",
        "overallScore": overall, "overallBand": "acceptable",
        "categoryScores": [{"category": n, "finalScore": overall} for n in names],
        "evidence": {"groups": [{"source": "taskMetadata", "total": 1, "omitted": 0, "items": [
            {"id": f"pr:{number}", "kind": "pull_request", "label": "t", "facts": facts}]}]},
        "judge": {"status": "off"},
    }
    if agent is not None:
        data["agent"] = agent
    return data


OLD_COLUMNS = ("repo", "number", "head_sha", "scorer_version", "author", "trigger", "evaluated_at",
               "overall_score", "overall_band", "agent_performance", "task_outcome_quality",
               "process_compliance", "judge_status", "comment_url", "comment_signature",
               "result_json")


def insert_old(engine: Engine, data: dict[str, Any]) -> None:
    """A row as the pre-migration code stored it (only the old columns)."""
    row = {k: v for k, v in record_from_result(data).items() if k in OLD_COLUMNS}
    cols = ", ".join(f'"{k}"' for k in (*row, "stored_at"))
    marks = ", ".join(f":{k}" for k in (*row, "stored_at"))
    with write(engine) as conn:
        conn.execute(text(f"INSERT INTO evaluations ({cols}) VALUES ({marks})"),
                     {**row, "stored_at": 1.0})


def test_one_head_and_a_fresh_database_matches_the_models(empty: Engine) -> None:
    assert len(migrations.heads()) == 1, "parent new revisions on the current head"
    assert migrations.quick_head() == migrations.head()
    assert init_schema(empty)[-1] == migrations.head()
    with empty.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
        assert migrations.current(conn) == migrations.head()
    assert diff == [], f"taskeval/store/db.py and taskeval/store/migrations disagree: {diff}"
    assert init_schema(empty) == [], "a second start migrates nothing"


def test_a_pre_migration_database_is_adopted_and_upgraded_with_its_data(empty: Engine) -> None:
    old_schema(empty)
    claude = {"id": "claude-code", "name": "Claude Code", "operator": "alice",
              "confidence": "likely", "evidence": ["pr:1"], "reason": "footer"}
    insert_old(empty, a_result(1, agent=claude, merged=True, sha="1" * 40, overall=50))
    insert_old(empty, a_result(1, agent=claude, merged=True, sha="2" * 40, overall=80))
    insert_old(empty, a_result(2, agent=None, merged=False))  # before attribution existed
    insert_old(empty, a_result(3, agent={"id": "human", "name": "Human"}, merged=False,
                               closed=None, created="2025-03-09T23:00:00Z"))
    with write(empty) as conn:
        conn.execute(judge_cache.insert().values(key="k", value="{}", stored_at=1.0))
    with empty.connect() as conn:
        assert migrations.current(conn) is None
    applied = init_schema(empty)
    assert applied[0] == "0002" and applied[-1] == migrations.head()
    with empty.connect() as conn:
        assert migrations.current(conn) == migrations.head()
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
        rows = {(r.number, r.head_sha[0]): r for r in conn.execute(
            select(evaluations).order_by(evaluations.c.id))}
        assert conn.execute(select(func.count()).select_from(judge_cache)).scalar_one() == 1
    names = {c["name"] for c in inspect(empty).get_columns("evaluations")}
    assert names >= NEW_COLUMNS
    indexes = {i["name"] for i in inspect(empty).get_indexes("evaluations")}
    assert {"ix_evaluations_agent_time", "ix_evaluations_author_time", "ix_evaluations_repo_time",
            "ix_evaluations_week", "uq_evaluations_latest", "ix_evaluations_key"} <= indexes
    old, new = rows[(1, "1")], rows[(1, "2")]
    assert (old.is_latest, new.is_latest) == (False, True)
    assert (new.agent_id, new.agent_name, new.operator, new.agent_confidence) == (
        "claude-code", "Claude Code", "alice", "likely")
    assert (new.pr_state, new.owner, new.overall_score) == ("merged", "octo-org", 80)
    closed = 1741262400.0  # 2025-03-06T12:00:00Z
    assert (new.merged_at, new.closed_at, new.activity_at) == (closed, closed, closed)
    assert new.pr_created_at == 1741078800.0 and new.week == "2025-03-03"
    assert json.loads(new.result_json)["headSha"] == "2" * 40  # the data is untouched
    unattributed = rows[(2, "a")]
    assert (unattributed.agent_id, unattributed.agent_name, unattributed.pr_state) == (
        None, None, "closed")
    assert unattributed.is_latest
    still_open = rows[(3, "a")]
    assert (still_open.agent_id, still_open.pr_state, still_open.merged_at) == ("human", "open", None)
    # Opened on Sunday 9 March: its week is the one starting Monday 3 March.
    assert (still_open.activity_at, still_open.week) == (1741561200.0, "2025-03-03")
    # The upgraded store is written like a new one.
    with write(empty) as conn:
        store_evaluation(conn, {**record_from_result(a_result(2, agent=claude, merged=False,
                                                              sha="3" * 40)), "stored_at": 2.0})
    with empty.connect() as conn:
        latest = conn.execute(select(evaluations.c.head_sha).where(
            evaluations.c.number == 2, evaluations.c.is_latest.is_(True))).scalars().all()
    assert latest == ["3" * 40]


def test_a_partial_pre_migration_database_is_completed_first(empty: Engine) -> None:
    old_schema(empty)
    with write(empty) as conn:
        conn.exec_driver_sql("DROP TABLE judge_cache")  # an older start-up never made it
    init_schema(empty)
    assert "judge_cache" in inspect(empty).get_table_names()


def test_the_newest_evaluation_of_a_pr_is_unique(engine: Engine) -> None:
    row = {**record_from_result(a_result(9, agent=None, merged=True)), "stored_at": 1.0}
    with write(engine) as conn:
        store_evaluation(conn, row)
        store_evaluation(conn, row)
    with pytest.raises(IntegrityError), write(engine) as conn:
        conn.execute(evaluations.insert().values(**row, is_latest=True))
    with engine.connect() as conn:
        flags = conn.execute(select(evaluations.c.is_latest).order_by(evaluations.c.id)).all()
    assert [f[0] for f in flags] == [False, True]


def test_downgrade_to_the_baseline_and_back(empty: Engine) -> None:
    from alembic import command

    init_schema(empty)
    with write(empty) as conn:
        command.downgrade(migrations.config(conn), migrations.BASELINE)
    names = {c["name"] for c in inspect(empty).get_columns("evaluations")}
    assert not names & NEW_COLUMNS
    init_schema(empty)
    assert {c["name"] for c in inspect(empty).get_columns("evaluations")} >= NEW_COLUMNS


def _start(url: str, barrier: Any, queue: Any) -> None:
    engine = make_engine(url)
    barrier.wait()
    try:
        queue.put(("ok", init_schema(engine)))
    except Exception as exc:  # reported to the parent
        queue.put(("error", repr(exc)))
    finally:
        engine.dispose()


@pytest.mark.parametrize("legacy", [False, True], ids=["fresh", "pre-migration"])
def test_concurrent_start_ups_migrate_once(empty: Engine, db_url: str, legacy: bool) -> None:
    if legacy:
        old_schema(empty)
    n = 4
    outcomes = run_together(_start, db_url, n)
    assert all(status == "ok" for status, _ in outcomes), outcomes
    applied = sorted((len(revs) for _, revs in outcomes), reverse=True)
    assert applied[0] > 0 and applied[1:] == [0] * (n - 1), "exactly one process migrates"
    with empty.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
        assert conn.execute(select(func.count()).select_from(jobs)).scalar_one() == 0


def test_rate_budgets_gain_a_resource_and_keep_their_rows(empty: Engine) -> None:
    """From revision 0008 (one budget per credential): the existing row is the REST (``core``)
    budget it was, and the same credential can then hold a ``graphql`` budget beside it."""
    from alembic import command

    from taskeval.store.db import rate_budgets

    with write(empty) as conn:
        command.upgrade(migrations.config(conn), "0008")
        conn.execute(text('INSERT INTO rate_budgets (key, "limit", remaining, reset_at, "window", '
                          "updated_at) VALUES ('h|token:1', 5000, 1234, 99.0, 3, 1.0)"))
    assert init_schema(empty) == ["0009", "0010", "0011", "0012"]
    with write(empty) as conn:
        conn.execute(rate_budgets.insert().values(key="h|token:1", resource="graphql", limit=5000,
                                                  remaining=4999, reset_at=99.0, window=1,
                                                  updated_at=1.0))
    with empty.connect() as conn:
        rows = {r.resource: r for r in conn.execute(select(rate_budgets))}
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
    assert (rows["core"].key, rows["core"].remaining, rows["core"].window) == ("h|token:1", 1234, 3)
    assert rows["graphql"].remaining == 4999
    with pytest.raises(IntegrityError), write(empty) as conn:  # still one row per budget
        conn.execute(rate_budgets.insert().values(key="h|token:1", resource="graphql", limit=1,
                                                  remaining=1, reset_at=1.0, window=1,
                                                  updated_at=1.0))
    with write(empty) as conn:
        command.downgrade(migrations.config(conn), "0008")
    with empty.connect() as conn:
        kept = conn.execute(text("SELECT key, remaining FROM rate_budgets")).all()
    assert [tuple(r) for r in kept] == [("h|token:1", 1234)]


def test_upgrade_from_0008_fills_coverage_people_comments_and_the_rollups(empty: Engine) -> None:
    """A store at revision 0008 (evaluations, signals and rollups, no coverage columns) gains each
    grade's coverage, the people's comments, the provisional sums and the pulled-down signals'
    rollup from its stored results: the same rows ``store_evaluation`` and a rebuild write today."""
    from taskeval.store.db import rollup_agent, rollup_author, rollup_signals, signals
    from taskeval.store.results import rebuild_rollup, signal_rows

    with write(empty) as conn:
        migrations.upgrade(conn, "0008")
    result = json.loads((Path(__file__).resolve().parents[1] / "examples" / "agent-pr-482.result.json").read_text())
    unsure: dict[str, Any] = json.loads(json.dumps(result))
    unsure["pullRequest"]["number"] = 483
    unsure["categoryScores"][0]["coverage"] = 0.2  # agentPerformance provisional
    unsure["categoryScores"][1]["coverage"] = 0.6  # taskOutcomeQuality is not
    unsure["categoryScores"][2]["coverage"] = 0.1  # processCompliance is
    before: dict[str, Any] = json.loads(json.dumps(result))  # stored before coverage and turns
    before["pullRequest"]["number"] = 484
    before.pop("turns", None)
    for cat in before["categoryScores"]:
        for key in ("coverage", "signalsConclusive", "signalsTotal"):
            cat.pop(key, None)
    later = {"overall_coverage", "agent_performance_coverage", "task_outcome_quality_coverage",
             "process_compliance_coverage", "people_comments"}
    ids = []
    with empty.begin() as conn:
        for data, latest in ((result, False), (result, True), (unsure, True), (before, True)):
            row = {k: v for k, v in record_from_result(data).items() if k not in later}
            ids.append(conn.execute(evaluations.insert().values(**row, stored_at=0.0, is_latest=latest))
                       .inserted_primary_key[0])
        for eid, data in zip(ids, (result, result, unsure, before), strict=True):
            conn.execute(signals.insert(), signal_rows(eid, data))
        row = {k: v for k, v in record_from_result(result).items() if k not in later}
        conn.execute(evaluations.insert().values(**{**row, "number": 485, "result_json": "not json"},
                                                 stored_at=0.0, is_latest=True))
    assert "0010" in init_schema(empty)
    with empty.connect() as conn:
        got = {r.id: r for r in conn.execute(select(evaluations))}
    new, provisional, old = got[ids[1]], got[ids[2]], got[ids[3]]
    assert (new.agent_performance_coverage, new.task_outcome_quality_coverage,
            new.process_compliance_coverage) == (0.7143, 1.0, 0.9259)
    assert new.overall_coverage == pytest.approx(0.3 * 0.7143 + 0.45 + 0.25 * 0.9259, abs=1e-4)
    assert new.people_comments == 2  # the operator's two comments; the agent's reply is not a person's
    assert provisional.overall_coverage == pytest.approx(0.06 + 0.27 + 0.025, abs=1e-4)  # 0.355: provisional
    assert (old.overall_coverage, old.agent_performance_coverage, old.people_comments) == (None, None, None)
    assert all(getattr(got[max(got)], c) is None for c in later)  # the damaged row: nothing derived

    def rollups() -> set[tuple[Any, ...]]:
        with empty.connect() as conn:
            return {(t.name, *row) for t in (rollup_agent, rollup_author, rollup_signals)
                    for row in conn.execute(select(t))}

    migrated = rollups()
    with write(empty) as conn:
        rebuild_rollup(conn)
    assert migrated == rollups()  # the revision's frozen copy counts as today's code does
    with empty.connect() as conn:
        v = conn.execute(select(func.sum(rollup_agent.c.v_agent_performance), func.sum(rollup_agent.c.v_overall),
                                func.sum(rollup_agent.c.n))).one()
        pulled = conn.execute(select(func.sum(rollup_signals.c.n))).scalar()
    assert tuple(v) == (1, 1, 4)  # the unsure PR's agentPerformance and overall; four latest PRs
    down = sum(1 for data in (result, unsure, before) for s in signal_rows(0, data)
               if s["conclusive"] and s["weight"] > 0 and s["score"] < 60)
    assert pulled == down  # the latest evaluations' pulled-down signals, the older one's not


def test_upgrade_to_0011_leaves_the_hours_of_a_pr_without_its_timeline_empty(empty: Engine) -> None:
    """A PR whose timeline was not read had its whole life counted as the people's move; from 0011
    its hours are unknown (empty), the others keep theirs, and the downgrade puts them back."""
    result = json.loads((Path(__file__).resolve().parents[1] / "examples" / "agent-pr-482.result.json").read_text())
    blind: dict[str, Any] = json.loads(json.dumps(result))
    blind["pullRequest"]["number"] = 483
    blind["turns"]["partial"] = True
    hours = (result["turns"]["agentHours"], result["turns"]["peopleHours"], result["turns"]["draftHours"])
    with write(empty) as conn:
        migrations.upgrade(conn, "0010")
    with empty.begin() as conn:
        for data in (result, blind):  # stored as revision 0010's code stored them: hours kept
            row = {**record_from_result(data), "agent_hours": hours[0], "people_hours": hours[1],
                   "draft_hours": hours[2]}
            conn.execute(evaluations.insert().values(**row, stored_at=0.0, is_latest=True))
    assert init_schema(empty) == ["0011", "0012"]

    def stored() -> dict[int, tuple[Any, ...]]:
        with empty.connect() as conn:
            return {r.number: (r.agent_hours, r.people_hours, r.draft_hours)
                    for r in conn.execute(select(evaluations))}

    assert stored() == {482: hours, 483: (None, None, None)}
    assert stored()[483] == tuple(record_from_result(blind)[c] for c in ("agent_hours", "people_hours",
                                                                         "draft_hours"))
    from alembic import command

    with write(empty) as conn:
        command.downgrade(migrations.config(conn), "0010")
    assert stored() == {482: hours, 483: hours}
