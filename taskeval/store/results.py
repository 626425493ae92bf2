"""Stored evaluations, the read API's queries, and the judge cache on the same database.

Every evaluation is kept (history); the row is keyed by repo, PR, head SHA and scorer version and
carries the result JSON verbatim plus the few columns the leaderboard aggregates in SQL.
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import Connection, Engine, case, delete, func, insert, literal, select, text, update
from sqlalchemy.exc import IntegrityError

from taskeval.agent_table import agent_name
from taskeval.contract import PROVISIONAL_BELOW, is_provisional
from taskeval.store.db import (
    PULLS_DOWN,
    ROLLUP_SUMS,
    evaluations,
    judge_cache,
    rollup_agent,
    rollup_author,
    rollup_signals,
    signals,
    write,
)
from taskeval.store.export import epoch_of, pr_facts, stored_columns

_CATEGORY_COLUMNS = {
    "agentPerformance": "agent_performance",
    "taskOutcomeQuality": "task_outcome_quality",
    "processCompliance": "process_compliance",
}


def comment_signature(markdown: str) -> str:
    return hashlib.sha256(markdown.encode()).hexdigest()


def previous_comment(engine: Engine, repo: str, number: int,
                     head_sha: str) -> tuple[str, str] | None:
    """(signature, URL) of the comment last posted for this PR at this head SHA, if any."""
    with engine.connect() as conn:
        row = conn.execute(
            select(evaluations.c.comment_signature, evaluations.c.comment_url)
            .where(evaluations.c.repo == repo, evaluations.c.number == number,
                   evaluations.c.head_sha == head_sha, evaluations.c.comment_url.is_not(None))
            .order_by(evaluations.c.id.desc())
            .limit(1)
        ).first()
    if row is None or row.comment_signature is None:
        return None
    return str(row.comment_signature), str(row.comment_url)


def week_of(epoch: float) -> str:
    """The Monday (UTC) of the week holding ``epoch``, as ``YYYY-MM-DD``: the trend bucket."""
    day = datetime.fromtimestamp(epoch, UTC).date()
    return (day - timedelta(days=day.weekday())).isoformat()


def _clip(value: Any, limit: int) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def facets(result: dict[str, Any]) -> dict[str, Any]:
    """The aggregation columns of a result (agent, PR state and times, week), read defensively:
    a result from before agent attribution has no ``agent`` and gets NULL agent columns."""
    agent = result.get("agent")
    agent = agent if isinstance(agent, dict) else {}
    pull = result.get("pullRequest")
    pull = pull if isinstance(pull, dict) else {}
    facts = pr_facts(result)
    merged = bool(pull.get("merged") or facts.get("merged"))
    state = facts.get("state")
    created = epoch_of(facts.get("createdAt"))
    merged_at = epoch_of(pull.get("mergedAt") or facts.get("mergedAt"))
    closed_at = epoch_of(facts.get("closedAt")) or merged_at
    activity = merged_at or closed_at or created or epoch_of(result.get("evaluatedAt")) or time.time()
    return {
        "owner": str(result.get("repository", "")).split("/", 1)[0][:100],
        "agent_id": _clip(agent.get("id"), 64),
        # A built-in agent by its own name, whatever the stored result says (agent_name).
        "agent_name": _clip(agent_name(_clip(agent.get("id"), 64), _clip(agent.get("name"), 100), own_pr=True),
                            100),
        "operator": _clip(agent.get("operator"), 100),
        "agent_confidence": _clip(agent.get("confidence"), 16),
        "pr_state": "merged" if merged else (state if state in ("open", "closed") else None),
        "pr_created_at": created,
        "merged_at": merged_at,
        "closed_at": closed_at,
        "activity_at": activity,
        "week": week_of(activity),
    }


def store_evaluation(conn: Connection, row: dict[str, Any]) -> int:
    """Insert an ``evaluations`` row as the newest of its PR (``is_latest``), in the caller's
    transaction; returns its id. A concurrent writer of the same PR makes one of the two fail on
    ``uq_evaluations_latest`` (IntegrityError): retry the transaction, it then sees the winner."""
    e = evaluations.c
    replaced = conn.execute(
        select(e.id, *(e[name] for name in (*ROLLUP_COLUMNS, *ROLLUP_SCORES, *ROLLUP_COVERAGES)))
        .where(e.repo == row["repo"], e.number == row["number"], e.is_latest.is_(True))
    ).mappings().all()
    conn.execute(
        update(evaluations)
        .where(e.repo == row["repo"], e.number == row["number"], e.is_latest.is_(True))
        .values(is_latest=False)
    )
    result = conn.execute(insert(evaluations).values(**row, is_latest=True))
    for old in replaced:
        _rollup_add(conn, dict(old), -1)
        s = signals.c
        down = conn.execute(select(s.signal_id, s.category, s.score).where(
            s.evaluation_id == old["id"], text(PULLS_DOWN))).mappings().all()
        _signals_add(conn, dict(old), [dict(d) for d in down], -1)
    _rollup_add(conn, row, 1)
    key = result.inserted_primary_key
    if key is None:
        raise RuntimeError("the database returned no id for the new evaluation")
    evaluation_id = int(key[0])
    rows = signal_rows(evaluation_id, row["result_json"])
    if rows:
        conn.execute(insert(signals), rows)
    _signals_add(conn, row, [r for r in rows if pulls_down(r)], 1)
    return evaluation_id


def pulls_down(signal: dict[str, Any]) -> bool:
    """taskeval.store.db.PULLS_DOWN on one ``signals`` row: conclusive, weighted, scored under 60."""
    score = signal["score"]
    return bool(signal["conclusive"]) and float(signal["weight"]) > 0 and score is not None and score < 60


def _signals_add(conn: Connection, row: dict[str, Any], down: list[dict[str, Any]], sign: int) -> None:
    """Add (or subtract) one latest evaluation's pulled-down signals to/from ``rollup_signals``."""
    r = rollup_signals.c
    key = {name: str(row.get(name) or "") for name in ("repo", "agent_id", "week", "overall_band")}
    for d in down:
        match = [r[name] == value for name, value in key.items()] + [r.signal_id == d["signal_id"]]
        score = int(d["score"])
        done = conn.execute(update(rollup_signals).where(*match)
                            .values(n=r.n + sign, s_score=r.s_score + sign * score)).rowcount
        if sign < 0:
            conn.execute(delete(rollup_signals).where(*match, r.n <= 0))
        elif not done:
            conn.execute(insert(rollup_signals).values(**key, signal_id=d["signal_id"],
                                                       category=d["category"], n=1, s_score=score))


ROLLUP_COLUMNS = ("repo", "agent_id", "agent_name", "author", "week", "overall_band", "pr_state")
ROLLUP_SCORES = ("overall_score", "agent_performance", "task_outcome_quality", "process_compliance")
# The coverage of each rolled-up score: under PROVISIONAL_BELOW the grade is provisional.
ROLLUP_COVERAGES = ("overall_coverage", "agent_performance_coverage", "task_outcome_quality_coverage",
                    "process_compliance_coverage")
_COVERAGE_OF = dict(zip(ROLLUP_SCORES, ROLLUP_COVERAGES, strict=True))
_ROLLUP_SUMS = dict(zip(ROLLUP_SCORES, ROLLUP_SUMS, strict=True))  # evaluations column -> sum name
_ROLLUPS = ((rollup_agent, ("repo", "agent_id", "agent_name", "week", "overall_band")),
            (rollup_author, ("repo", "author", "week", "overall_band")))
_STATES = ("merged", "closed", "open")


def _rollup_add(conn: Connection, row: dict[str, Any], sign: int) -> None:
    """Add (``sign=1``) or subtract (``-1``) one latest evaluation to/from both rollups.

    Two writers creating the same new rollup row at once make one of them fail on the primary key
    (IntegrityError), like ``uq_evaluations_latest``: the caller retries the transaction.
    """
    scores = {name: int(row[name]) for name in ROLLUP_SCORES}
    provisional = {name: provisional_coverage(row.get(_COVERAGE_OF[name])) for name in ROLLUP_SCORES}
    for table, keys in _ROLLUPS:
        r = table.c
        key = {name: str(row.get(name) or "") for name in keys}
        match = [r[name] == value for name, value in key.items()]
        changes: dict[str, Any] = {"n": r.n + sign}
        if row.get("pr_state") in _STATES:
            changes[f"p_{row['pr_state']}"] = r[f"p_{row['pr_state']}"] + sign
        for column, name in _ROLLUP_SUMS.items():
            changes[f"s_{name}"] = r[f"s_{name}"] + sign * scores[column]
            changes[f"q_{name}"] = r[f"q_{name}"] + sign * scores[column] * scores[column]
            if provisional[column]:
                changes[f"v_{name}"] = r[f"v_{name}"] + sign
                changes[f"vs_{name}"] = r[f"vs_{name}"] + sign * scores[column]
                changes[f"vq_{name}"] = r[f"vq_{name}"] + sign * scores[column] * scores[column]
        done = conn.execute(update(table).where(*match).values(**changes)).rowcount
        if sign < 0:
            conn.execute(delete(table).where(*match, r.n <= 0))
        elif not done:
            values: dict[str, Any] = {**key, "n": 1}
            for state in _STATES:
                values[f"p_{state}"] = 1 if row.get("pr_state") == state else 0
            for column, name in _ROLLUP_SUMS.items():
                values[f"s_{name}"] = scores[column]
                values[f"q_{name}"] = scores[column] * scores[column]
                flag = int(provisional[column])
                values[f"v_{name}"] = flag
                values[f"vs_{name}"] = flag * scores[column]
                values[f"vq_{name}"] = flag * scores[column] * scores[column]
            conn.execute(insert(table).values(**values))


def provisional_coverage(coverage: Any) -> bool:
    """Whether a grade with this coverage is provisional (taskeval.contract.is_provisional on a
    stored column): under PROVISIONAL_BELOW; a result from before coverage (None) is not."""
    return is_provisional(None if coverage is None else float(coverage))


def provisional_sql(column: Any) -> Any:
    """:func:`provisional_coverage` in SQL: NULL coverage is not provisional."""
    return column < PROVISIONAL_BELOW


def rebuild_rollup(conn: Connection) -> None:
    """Recompute the dashboard's rollups from the latest evaluations (after rows were written or
    rewritten without :func:`store_evaluation`: bulk loads, repairs)."""
    e = evaluations.c
    for table, key_names in _ROLLUPS:
        keys = [func.coalesce(e[name], literal("")).label(name) for name in key_names]
        sums: list[Any] = [func.count().label("n")]
        names = ["n"]
        for state in _STATES:
            sums.append(func.sum(case((e.pr_state == state, 1), else_=0)))
            names.append(f"p_{state}")
        for column, name in _ROLLUP_SUMS.items():
            sums += [func.sum(e[column]), func.sum(e[column] * e[column])]
            names += [f"s_{name}", f"q_{name}"]
            flag = case((provisional_sql(e[_COVERAGE_OF[column]]), 1), else_=0)
            sums += [func.sum(flag), func.sum(flag * e[column]), func.sum(flag * e[column] * e[column])]
            names += [f"v_{name}", f"vs_{name}", f"vq_{name}"]
        query = select(*keys, *sums).where(e.is_latest.is_(True)).group_by(*keys)
        conn.execute(delete(table))
        conn.execute(insert(table).from_select([*key_names, *names], query))
    s = signals.c
    keys = [func.coalesce(e[name], literal("")).label(name) for name in ("repo", "agent_id", "week", "overall_band")]
    query = (select(*keys, s.signal_id, func.max(s.category), func.count(), func.sum(s.score))
             .select_from(evaluations.join(signals, (s.evaluation_id == e.id) & text(PULLS_DOWN)))
             .where(e.is_latest.is_(True)).group_by(*keys, s.signal_id))
    conn.execute(delete(rollup_signals))
    conn.execute(insert(rollup_signals).from_select(
        ["repo", "agent_id", "week", "overall_band", "signal_id", "category", "n", "s_score"], query))


def signal_rows(evaluation_id: int, result: dict[str, Any] | str) -> list[dict[str, Any]]:
    """The ``signals`` rows of one result: id, category, score, conclusive, weight per signal (the
    first of a repeated id). What the dashboard's "signals that pull this agent down" counts."""
    if isinstance(result, str):
        try:
            result = json.loads(result)
        except ValueError:
            return []
    if not isinstance(result, dict):
        return []
    out: dict[str, dict[str, Any]] = {}
    for s in result.get("signals") or ():
        if not isinstance(s, dict) or not isinstance(s.get("id"), str) or s["id"] in out:
            continue
        score = s.get("score")
        score = int(score) if isinstance(score, int | float) and not isinstance(score, bool) else None
        try:
            weight = float(s.get("weight") or 0.0)
        except (TypeError, ValueError):
            weight = 0.0
        out[s["id"]] = {
            "evaluation_id": evaluation_id, "signal_id": s["id"][:64],
            "category": str(s.get("category") or "")[:32], "score": score,
            "conclusive": s.get("status") == "ok" and score is not None, "weight": weight,
        }
    return list(out.values())


def record_from_result(result: dict[str, Any], *, comment_url: str | None = None,
                       signature: str | None = None) -> dict[str, Any]:
    """Columns of an ``evaluations`` row from a result JSON object (the contract's camelCase)."""
    finals = {c["category"]: c["finalScore"] for c in result["categoryScores"]}
    missing = [name for name in _CATEGORY_COLUMNS if name not in finals]
    if missing:
        raise ValueError(f"result lacks category scores for {missing}")
    pull = result["pullRequest"]
    return {
        "repo": result["repository"],
        "number": int(pull["number"]),
        "head_sha": result["headSha"],
        "scorer_version": result["scorerVersion"],
        "author": pull["author"],
        "trigger": result.get("trigger"),
        "evaluated_at": result["evaluatedAt"],
        "overall_score": int(result["overallScore"]),
        "overall_band": result["overallBand"],
        **{column: int(finals[name]) for name, column in _CATEGORY_COLUMNS.items()},
        "judge_status": (result.get("judge") or {}).get("status"),
        "comment_url": comment_url,
        "comment_signature": signature if comment_url else None,
        "result_json": json.dumps(result, ensure_ascii=False, separators=(",", ":")),
        **facets(result),
        **stored_columns(result),
    }


def readable(text: str | None) -> dict[str, Any] | None:
    """A stored result's JSON text as the object it must be; None for a damaged row (not JSON,
    or JSON that is not an object: written by hand, or by another program), which every reader
    skips, as the export does."""
    try:
        value = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def latest(engine: Engine, repo: str, number: int) -> dict[str, Any] | None:
    """The newest readable stored result of one pull request (:func:`readable`)."""
    found = history(engine, repo, number, limit=1)
    return found[0] if found else None


def history(engine: Engine, repo: str, number: int, limit: int = 100) -> list[dict[str, Any]]:
    """Readable stored results of one pull request, newest first (:func:`readable`)."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(evaluations.c.result_json)
            .where(evaluations.c.repo == repo, evaluations.c.number == number)
            .order_by(evaluations.c.id.desc())
        ).scalars()
        out = []
        for text in rows:
            value = readable(text)
            if value is not None:
                out.append(value)
                if len(out) >= limit:
                    break
    return out


LeaderboardBy = Literal["agent", "author"]
UNATTRIBUTED = "unattributed"  # agent_id NULL: stored before results named their agent


def leaderboard(engine: Engine, repo: str | None = None, limit: int = 100,
                by: LeaderboardBy = "agent", *, exclude_provisional: bool = False) -> list[dict[str, Any]]:
    """Agents (``by="agent"``, each agent id) or PR authors (``by="author"``) ranked by the one rule
    the dashboard's overview also follows (:mod:`taskeval.store.ranking`): by mean overall score,
    only where the 95 % intervals separate (shared ranks flagged ``rankShared``), never for a
    group whose mean rests on fewer than 10 PRs nor for the PRs where no agent was found
    (``human``, ``unknown-bot``, unattributed). Aggregated in SQL.

    Each PR counts once, with its latest evaluation (``is_latest``), so re-running ``/evaluate``
    does not weigh a PR more. Each entry also counts the PRs merged, closed unmerged and still open,
    and per mean how many PRs had a provisional grade in it (coverage under ``PROVISIONAL_BELOW``)
    and how many the mean rests on; ``exclude_provisional`` leaves those out of each mean (as the
    dashboard's switch does), and the ranking follows.
    """
    from taskeval.config import HUMAN_ID, UNKNOWN_BOT_ID
    from taskeval.store.ranking import Standing, mean_ci, rank

    e = evaluations
    key = e.c.agent_id if by == "agent" else e.c.author
    count = func.count().label("count")
    measures = {"overall": (e.c.overall_score, e.c.overall_coverage),
                **{name: (e.c[column], e.c[f"{column}_coverage"]) for name, column in _CATEGORY_COLUMNS.items()}}

    def counted(score: Any, coverage: Any) -> Any:
        return case((provisional_sql(coverage), None), else_=score) if exclude_provisional else score

    def state(name: str) -> Any:
        return func.sum(case((e.c.pr_state == name, 1), else_=0)).label(name)

    means = {name: func.avg(counted(score, coverage)).label(f"m_{name}")
             for name, (score, coverage) in measures.items()}
    unsure = {name: func.sum(case((provisional_sql(coverage), 1), else_=0)).label(f"v_{name}")
              for name, (_score, coverage) in measures.items()}
    overall = counted(*measures["overall"])
    spread = (func.count(overall).label("n_overall"), func.sum(overall).label("s_overall"),
              func.sum(overall * overall).label("q_overall"))
    query = (
        select(key.label("key"), func.max(e.c.agent_name).label("name"), count, *means.values(),
               *unsure.values(), *spread, state("merged"), state("closed"), state("open"))
        .where(e.c.is_latest.is_(True))
        .group_by(key)
    )
    if repo is not None:
        query = query.where(e.c.repo == repo)
    with engine.connect() as conn:
        rows = conn.execute(query).mappings().all()

    def rounded(value: Any) -> float | None:
        return None if value is None else round(float(value), 1)

    standings = []
    for row in rows:
        entry: dict[str, Any] = {"rank": None, "rankShared": False}
        if by == "agent":
            entry["agent"] = row["key"]
            # Where PRs of several repositories meet, a repository's own agent goes by its id.
            entry["agentName"] = (agent_name(row["key"], row["name"], own_pr=False) if row["key"] is not None
                                  else UNATTRIBUTED)
        else:
            entry["author"] = row["key"]
        n = int(row["count"])
        provisional = {name: int(row[f"v_{name}"] or 0) for name in measures}
        spread_of = mean_ci(int(row["n_overall"] or 0), row["s_overall"], row["q_overall"])
        entry.update({
            "count": n,
            "meanOverall": rounded(row["m_overall"]),
            "overallInterval": {"low": rounded(spread_of.low), "high": rounded(spread_of.high)},
            "meanCategories": {name: rounded(row[f"m_{name}"]) for name in _CATEGORY_COLUMNS},
            "prStates": {"merged": int(row["merged"] or 0), "closed": int(row["closed"] or 0),
                         "open": int(row["open"] or 0)},
            "provisional": provisional,
            "restsOn": {name: n - v if exclude_provisional else n for name, v in provisional.items()},
            "provisionalLeftOut": exclude_provisional,
        })
        no_agent = by == "agent" and (row["key"] is None or row["key"] in (HUMAN_ID, UNKNOWN_BOT_ID))
        standings.append(Standing(key=str(row["key"] or ""), overall=spread_of,
                                  rests_on=int(row["n_overall"] or 0), count=n, no_agent=no_agent, item=entry))
    entries = []
    for standing in rank(standings)[:limit]:
        entry = standing.item
        entry.update(rank=standing.rank, rankShared=standing.tied, smallSample=standing.small)
        if by == "agent":
            entry["noAgentFound"] = standing.no_agent
        entries.append(entry)
    return entries


class DbJudgeCache:
    """``taskeval.judge.JudgeCache`` on the bot's database, so every worker node shares answers."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, key: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            text = conn.execute(
                select(judge_cache.c.value).where(judge_cache.c.key == key)
            ).scalar()
        if text is None:
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        now = time.time()
        try:
            with write(self.engine) as conn:
                conn.execute(insert(judge_cache).values(key=key, value=data, stored_at=now))
        except IntegrityError:
            with write(self.engine) as conn:
                conn.execute(update(judge_cache).where(judge_cache.c.key == key)
                             .values(value=data, stored_at=now))
