"""Stored evaluations, the read API's queries, and the judge cache on the same database.

Every evaluation is kept (history); the row is keyed by repo, PR, head SHA and scorer version and
carries the result JSON verbatim plus the few columns the leaderboard aggregates in SQL.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from bot.db import evaluations, judge_cache, write

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
    }


def latest(engine: Engine, repo: str, number: int) -> dict[str, Any] | None:
    """The newest stored result of one pull request."""
    with engine.connect() as conn:
        text = conn.execute(
            select(evaluations.c.result_json)
            .where(evaluations.c.repo == repo, evaluations.c.number == number)
            .order_by(evaluations.c.id.desc())
            .limit(1)
        ).scalar()
    return json.loads(text) if text is not None else None


def history(engine: Engine, repo: str, number: int, limit: int = 100) -> list[dict[str, Any]]:
    """Stored results of one pull request, newest first."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(evaluations.c.result_json)
            .where(evaluations.c.repo == repo, evaluations.c.number == number)
            .order_by(evaluations.c.id.desc())
            .limit(limit)
        ).scalars().all()
    return [json.loads(text) for text in rows]


def leaderboard(engine: Engine, repo: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
    """Authors (agents included) ranked by mean overall score over their evaluated PRs.

    Each PR counts once, with its latest evaluation, so re-running ``/evaluate`` does not weigh a
    PR more. Ties go to the author with more evaluations, then alphabetically, so the order is
    stable.
    """
    newest = select(func.max(evaluations.c.id).label("id"))
    if repo is not None:
        newest = newest.where(evaluations.c.repo == repo)
    newest_ids = newest.group_by(evaluations.c.repo, evaluations.c.number).subquery()
    count = func.count().label("count")
    mean = func.avg(evaluations.c.overall_score).label("mean")
    query = (
        select(
            evaluations.c.author, count, mean,
            func.avg(evaluations.c.agent_performance).label("ap"),
            func.avg(evaluations.c.task_outcome_quality).label("toq"),
            func.avg(evaluations.c.process_compliance).label("pc"),
        )
        .join(newest_ids, evaluations.c.id == newest_ids.c.id)
        .group_by(evaluations.c.author)
        .order_by(mean.desc(), count.desc(), evaluations.c.author)
        .limit(limit)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return [
        {
            "rank": rank,
            "author": row.author,
            "count": int(row.count),
            "meanOverall": round(float(row.mean), 1),
            "meanCategories": {
                "agentPerformance": round(float(row.ap), 1),
                "taskOutcomeQuality": round(float(row.toq), 1),
                "processCompliance": round(float(row.pc), 1),
            },
        }
        for rank, row in enumerate(rows, start=1)
    ]


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
