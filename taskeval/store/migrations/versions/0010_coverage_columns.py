"""How sure each grade is, as columns, and the rollups that count provisional grades and the
signals that pulled scores down; the comments people wrote on each PR.

* ``evaluations``: ``overall_coverage`` and ``<category>_coverage`` (the share of the grade's signal
  weight that was conclusive; the overall's is the categories' weighted by their contract weights)
  and ``people_comments``, filled from the stored result JSON of existing rows. The derivation is a
  frozen copy of ``taskeval.store.export.row_of``'s for these columns, so re-running this revision never
  depends on later code.
* ``dashboard_rollup_agent``/``_author``: per score, the count, sum and sum of squares of the PRs
  whose grade was provisional (coverage under 0.5, ``taskeval.contract.PROVISIONAL_BELOW`` when
  this revision was written), so the overview says how many PRs a mean rests on were provisional,
  and leaves them out on request, from the rollup. Refilled from the latest evaluations.
* ``dashboard_rollup_signals``: the pulled-down signals (conclusive, weighted, under 60) of the
  latest evaluations per repository, agent, week, band and signal, so the agent page's "signals
  that pull the score down" no longer joins every PR's signals (~125 ms for 27,500 PRs).
* ``ix_evaluations_dash_agent``/``_author`` and ``ix_evaluations_turns`` are rebuilt with the new
  columns (and the agent index with the task type) so the scans stay index-only.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_BATCH = 500
FLOOR = 0.5  # taskeval.contract.PROVISIONAL_BELOW at this revision
PULLS_DOWN = "conclusive AND weight > 0 AND score < 60"
CATEGORIES = (("agentPerformance", "agent_performance"), ("taskOutcomeQuality", "task_outcome_quality"),
              ("processCompliance", "process_compliance"))
COVERAGES = ("overall_coverage", *(f"{column}_coverage" for _n, column in CATEGORIES))
SCORES = (("overall_score", "overall", "overall_coverage"),
          *((column, column, f"{column}_coverage") for _n, column in CATEGORIES))
PEOPLE_ROLES = ("operator", "reviewer", "person")
ROLLUPS = (("dashboard_rollup_agent", ("repo", "agent_id", "agent_name")),
           ("dashboard_rollup_author", ("repo", "author")))
STATES = ("merged", "closed", "open")
_DASH = ["week", "overall_score", "overall_band", "agent_performance", "task_outcome_quality",
         "process_compliance", "pr_state", "activity_at", "repo", "agent_name"]
_TURNS_OLD = ["repo", "task_type", "pr_state", "draft_at_end", "rescue_class", "closure_class",
              "closure_against", "people_commits", "rounds", "agent_performance", "first_response_hours",
              "agent_hours", "people_hours", "draft_hours", "merge_hours", "week", "activity_at", "author",
              "overall_band"]
_TURNS_NEW = [*_TURNS_OLD[:10], "agent_performance_coverage", "people_comments", *_TURNS_OLD[10:]]
INDEXES = (  # (name, columns before, columns after)
    ("ix_evaluations_dash_agent", ["is_latest", "agent_id", *_DASH],
     ["is_latest", "agent_id", *_DASH, "task_type", *COVERAGES]),
    ("ix_evaluations_dash_author", ["is_latest", "author", *_DASH, "agent_id"],
     ["is_latest", "author", *_DASH, "agent_id", *COVERAGES]),
    ("ix_evaluations_turns", ["is_latest", "agent_id", *_TURNS_OLD], ["is_latest", "agent_id", *_TURNS_NEW]),
)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _coverage(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def derive(result: dict[str, Any]) -> dict[str, Any]:
    """The new columns of one row, from its result JSON (defensive: old results lack parts)."""
    scores = {c.get("category"): c for c in result.get("categoryScores") or () if isinstance(c, dict)}
    out: dict[str, Any] = {}
    total = weights = 0.0
    complete = bool(scores)
    for name, column in CATEGORIES:
        cat = _dict(scores.get(name))
        coverage, weight = _coverage(cat.get("coverage")), _coverage(cat.get("weight"))
        out[f"{column}_coverage"] = coverage
        if coverage is None or weight is None:
            complete = False
        else:
            total, weights = total + weight * coverage, weights + weight
    out["overall_coverage"] = round(total / weights, 4) if complete and weights else None
    turns = _dict(result.get("turns"))
    if turns:
        roles = _dict(turns.get("roles"))
        comments = _dict(_dict(result.get("evidence")).get("facts")).get("comments") or ()
        out["people_comments"] = sum(
            1 for c in comments if isinstance(c, dict) and c.get("author") and not c.get("authorIsBot")
            and roles.get(c["author"], "person") in PEOPLE_ROLES)
    else:
        out["people_comments"] = None
    return out


def _fill_columns(conn: sa.Connection) -> None:
    names = [*COVERAGES, "people_comments"]
    table = sa.table("evaluations", sa.column("id", sa.Integer), sa.column("result_json", sa.Text),
                     *(sa.column(n, sa.Float) for n in COVERAGES), sa.column("people_comments", sa.Integer))
    update = (sa.update(table).where(table.c.id == sa.bindparam("b_id"))
              .values({n: sa.bindparam(n) for n in names}))
    last = 0
    while True:
        rows = conn.execute(sa.select(table.c.id, table.c.result_json).where(table.c.id > last)
                            .order_by(table.c.id).limit(_BATCH)).all()
        if not rows:
            break
        params = []
        for row in rows:
            try:
                result = json.loads(row.result_json)
            except (TypeError, ValueError):
                result = {}
            params.append({"b_id": row.id, **derive(_dict(result))})
        conn.execute(update, params)
        last = rows[-1].id


def _evaluations() -> Any:
    return sa.table(
        "evaluations", sa.column("id", sa.Integer), sa.column("is_latest", sa.Boolean),
        sa.column("pr_state", sa.String), sa.column("week", sa.String), sa.column("overall_band", sa.String),
        *(sa.column(name, sa.String) for name in ("repo", "agent_id", "agent_name", "author")),
        *(sa.column(score, sa.Integer) for score, _s, _c in SCORES),
        *(sa.column(c, sa.Float) for c in COVERAGES),
    )


def _refill_rollups(conn: sa.Connection) -> None:
    """Every rollup row again from the latest evaluations (a frozen copy of
    ``taskeval.store.results.rebuild_rollup``), now with the provisional sums."""
    e = _evaluations().c
    for name, key_names in ROLLUPS:
        table = sa.table(name, *(sa.column(k) for k in (*key_names, "week", "overall_band", "n")),
                         *(sa.column(f"p_{s}") for s in STATES),
                         *(sa.column(f"{kind}_{sum_name}") for _c, sum_name, _v in SCORES
                           for kind in ("s", "q", "v", "vs", "vq")))
        keys = [sa.func.coalesce(e[k], sa.literal("")).label(k) for k in (*key_names, "week", "overall_band")]
        sums: list[Any] = [sa.func.count()]
        names = ["n"]
        for state in STATES:
            sums.append(sa.func.sum(sa.case((e.pr_state == state, 1), else_=0)))
            names.append(f"p_{state}")
        for column, sum_name, coverage in SCORES:
            flag = sa.case((e[coverage] < FLOOR, 1), else_=0)
            sums += [sa.func.sum(e[column]), sa.func.sum(e[column] * e[column]), sa.func.sum(flag),
                     sa.func.sum(flag * e[column]), sa.func.sum(flag * e[column] * e[column])]
            names += [f"{kind}_{sum_name}" for kind in ("s", "q", "v", "vs", "vq")]
        query = sa.select(*keys, *sums).where(e.is_latest == sa.true()).group_by(*keys)
        conn.execute(sa.delete(table))
        conn.execute(sa.insert(table).from_select([*key_names, "week", "overall_band", *names], query))


def _fill_signals(conn: sa.Connection, table: Any) -> None:
    evaluations = _evaluations()
    signals = sa.table("signals", sa.column("evaluation_id", sa.Integer), sa.column("signal_id", sa.String),
                       sa.column("category", sa.String), sa.column("score", sa.Integer))
    e, s = evaluations.c, signals.c
    keys = [sa.func.coalesce(e[k], sa.literal("")).label(k) for k in ("repo", "agent_id", "week", "overall_band")]
    query = (sa.select(*keys, s.signal_id, sa.func.max(s.category), sa.func.count(), sa.func.sum(s.score))
             .select_from(evaluations.join(signals, sa.and_(s.evaluation_id == e.id, sa.text(PULLS_DOWN))))
             .where(e.is_latest == sa.true()).group_by(*keys, s.signal_id))
    conn.execute(sa.insert(table).from_select(
        ["repo", "agent_id", "week", "overall_band", "signal_id", "category", "n", "s_score"], query))


def upgrade() -> None:
    conn = op.get_bind()
    for name in COVERAGES:
        op.add_column("evaluations", sa.Column(name, sa.Float))
    op.add_column("evaluations", sa.Column("people_comments", sa.Integer))
    _fill_columns(conn)
    for name, _keys in ROLLUPS:
        for _c, sum_name, _v in SCORES:
            for kind in ("v", "vs", "vq"):
                op.add_column(name, sa.Column(f"{kind}_{sum_name}", sa.BigInteger, nullable=False,
                                              server_default=sa.text("0")))
    _refill_rollups(conn)
    table = op.create_table(
        "dashboard_rollup_signals",
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("agent_id", sa.String(64), nullable=False),
        sa.Column("week", sa.String(10), nullable=False),
        sa.Column("overall_band", sa.String(16), nullable=False),
        sa.Column("signal_id", sa.String(64), nullable=False),
        sa.Column("category", sa.String(32), nullable=False),
        sa.Column("n", sa.BigInteger, nullable=False),
        sa.Column("s_score", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("agent_id", "repo", "week", "overall_band", "signal_id",
                                name="pk_dashboard_rollup_signals"),
    )
    _fill_signals(conn, table)
    for name, _before, after in INDEXES:
        op.drop_index(name, table_name="evaluations")
        op.create_index(name, "evaluations", after)


def downgrade() -> None:
    for name, before, _after in INDEXES:
        op.drop_index(name, table_name="evaluations")
        op.create_index(name, "evaluations", before)
    op.drop_table("dashboard_rollup_signals")
    for name, _keys in ROLLUPS:
        for _c, sum_name, _v in SCORES:
            for kind in ("v", "vs", "vq"):
                op.drop_column(name, f"{kind}_{sum_name}")
    op.drop_column("evaluations", "people_comments")
    for name in reversed(COVERAGES):
        op.drop_column("evaluations", name)
