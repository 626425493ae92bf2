"""The store as one row per PR, for spreadsheets and BI tools: ``taskeval export`` and
``GET /api/export``.

Each PR appears once, with its latest evaluation (``is_latest``, as the leaderboard and the
dashboard count it): its scores (overall; per category the final, deterministic and AI score and
the coverage), the agent and operator, the task type, the turns summary (its hours empty when
the timeline was not read: ``turns_partial``), the closure and rescue
classes, and every recorded outcome (``outcome_<kind>``: true, false, or empty when none is
recorded). Rows are read in pages and written as they come, so a store of any size streams.

A result stored before task types has none stored; its task type is computed here from its
evidence and its stored config, as re-scoring it would (taskeval.tasktypes is pure). Older
results without turns, closure or rescue leave those columns empty.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Final, Literal

from sqlalchemy import Engine, select

from taskeval import csvcells
from taskeval.agent_table import agent_name
from taskeval.contract import overall_coverage as weighted_coverage
from taskeval.outcomes import OUTCOMES
from taskeval.store.db import evaluations, outcomes

ExportFormat = Literal["csv", "ndjson"]
FORMATS: Final[tuple[ExportFormat, ...]] = ("csv", "ndjson")
MEDIA_TYPES: Final[dict[ExportFormat, str]] = {"csv": "text/csv; charset=utf-8",
                                                "ndjson": "application/x-ndjson"}

CATEGORIES: Final = (("agentPerformance", "agent_performance"), ("taskOutcomeQuality", "task_outcome_quality"),
                     ("processCompliance", "process_compliance"))
UNKNOWN_WHEN_PARTIAL: Final = frozenset({"agent_hours", "people_hours", "draft_hours"})
TURNS: Final = (("agentHours", "agent_hours"), ("peopleHours", "people_hours"), ("draftHours", "draft_hours"),
                ("firstHumanResponseHours", "first_human_response_hours"), ("rounds", "rounds"))
COLUMNS: Final[tuple[str, ...]] = (
    "repository", "number", "url", "title", "author", "state", "created_at", "merged_at", "closed_at",
    "head_sha", "evaluated_at", "scorer_version", "judge_status",
    "overall_score", "overall_band",
    *(f"{column}_{part}" for _, column in CATEGORIES for part in ("final", "deterministic", "ai", "coverage")),
    "agent_id", "agent_name", "agent_confidence", "operator",
    "task_type", "task_type_source",
    *(column for _, column in TURNS), "turns_partial", "turn_at_end", "draft", "time_to_merge_hours",
    "closure_class", "closure_counts_against_agent", "rescue_class", "commits_by_people",
    "comments_by_people", "overall_coverage",
    *(f"outcome_{kind}" for kind in OUTCOMES),
)
PEOPLE_ROLES: Final = frozenset({"operator", "reviewer", "person"})  # taskeval.models.Role's people
PAGE = 500


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _task_type(result: dict[str, Any]) -> tuple[str | None, str | None]:
    """(type, source): stored, else computed from the stored evidence and config."""
    stored = _dict(result.get("taskType"))
    if stored.get("type"):
        return stored.get("type"), stored.get("source")
    from pydantic import ValidationError

    from taskeval.config import Settings, stored_config
    from taskeval.models import PullFacts
    from taskeval.tasktypes import classify

    try:
        pull = PullFacts.model_validate(_dict(_dict(result.get("evidence")).get("facts")).get("pull"))
        config = result.get("config")
        settings = stored_config(config).settings if config is not None else Settings()
    except ValidationError:
        return None, None
    found = classify(pull, settings)
    return found.type, found.source


def row_of(result: dict[str, Any], recorded: dict[str, bool] | None = None) -> dict[str, Any]:
    """The export row of one stored result; ``recorded``: its PR's outcomes by kind."""
    pull = _dict(result.get("pullRequest"))
    facts = pr_facts(result)
    agent = _dict(result.get("agent"))
    turns = _dict(result.get("turns"))
    closure = _dict(result.get("closure"))
    rescue = _dict(result.get("rescue"))
    merged = bool(pull.get("merged") or facts.get("merged"))
    row: dict[str, Any] = {
        "repository": result.get("repository"), "number": pull.get("number"), "url": pull.get("url"),
        "title": pull.get("title"), "author": pull.get("author"),
        "state": "merged" if merged else facts.get("state"),
        "created_at": facts.get("createdAt"), "merged_at": pull.get("mergedAt") or facts.get("mergedAt"),
        "closed_at": facts.get("closedAt"), "head_sha": result.get("headSha"),
        "evaluated_at": result.get("evaluatedAt"), "scorer_version": result.get("scorerVersion"),
        "judge_status": _dict(result.get("judge")).get("status"),
        "overall_score": result.get("overallScore"), "overall_band": result.get("overallBand"),
    }
    scores = {c.get("category"): c for c in result.get("categoryScores") or () if isinstance(c, dict)}
    for name, column in CATEGORIES:
        cat = _dict(scores.get(name))
        row[f"{column}_final"] = cat.get("finalScore")
        row[f"{column}_deterministic"] = cat.get("deterministicScore")
        row[f"{column}_ai"] = cat.get("aiScore")
        row[f"{column}_coverage"] = cat.get("coverage")
    agent_id = agent.get("id") if isinstance(agent.get("id"), str) else None
    row.update(agent_id=agent.get("id"), agent_confidence=agent.get("confidence"), operator=agent.get("operator"),
               agent_name=agent_name(agent_id, agent.get("name"), own_pr=True) if agent_id else agent.get("name"))
    row["task_type"], row["task_type_source"] = _task_type(result)
    # Without the timeline the turns cannot see drafts, sessions or review requests: the hours
    # are unknown, not the people's whole time (revision 0011; docs/bot.md).
    row["turns_partial"] = bool(turns.get("partial")) if turns else None
    for key, column in TURNS:
        row[column] = None if row["turns_partial"] and column in UNKNOWN_WHEN_PARTIAL else turns.get(key)
    row["turn_at_end"] = turns.get("atEnd")
    row["draft"] = bool(facts["draft"]) and not merged if "draft" in facts else None
    created, merged_at = epoch_of(row["created_at"]), epoch_of(row["merged_at"])
    row["time_to_merge_hours"] = (round((merged_at - created) / 3600, 2)
                                  if merged and created is not None and merged_at is not None else None)
    row["closure_class"] = closure.get("class")
    row["closure_counts_against_agent"] = closure.get("countsAgainstAgent")
    row["rescue_class"] = rescue.get("class")
    row["commits_by_people"] = rescue.get("commitsByPeople")
    row["comments_by_people"] = comments_by_people(result)
    row["overall_coverage"] = overall_coverage(result)
    for kind in OUTCOMES:
        row[f"outcome_{kind}"] = (recorded or {}).get(kind)
    return row


def comments_by_people(result: dict[str, Any]) -> int | None:
    """How many of the PR's comments (conversation and review-thread comments) people wrote: the
    operator, reviewers and other people as the turns name them (docs/turns.md), never the agent,
    a bot or CI. None for a result without turns (stored before them), whose roles are unknown."""
    turns = _dict(result.get("turns"))
    if not turns:
        return None
    roles = _dict(turns.get("roles"))
    found = 0
    for c in _dict(_dict(result.get("evidence")).get("facts")).get("comments") or ():
        if not isinstance(c, dict) or not c.get("author") or c.get("authorIsBot"):
            continue
        if roles.get(c["author"], "person") in PEOPLE_ROLES:
            found += 1
    return found


def overall_coverage(result: dict[str, Any]) -> float | None:
    """The share of the overall score's weight that was conclusive
    (:func:`taskeval.contract.overall_coverage` on the stored categories). Below
    ``PROVISIONAL_BELOW`` the overall is provisional. None when a category has no coverage
    (results stored before coverage)."""
    found: dict[str, float | None] = {}
    for c in result.get("categoryScores") or ():
        if isinstance(c, dict) and isinstance(c.get("category"), str):
            coverage = c.get("coverage")
            found[c["category"]] = float(coverage) if isinstance(coverage, int | float) else None
    return weighted_coverage(found)


# The evaluations columns (revisions 0008, 0010) the dashboard aggregates on, by export column: written
# with each evaluation from its export row, so the page, the API and the CSV count the same values.
STORED: Final[dict[str, str]] = {
    "task_type": "task_type", "draft": "draft_at_end",
    "first_human_response_hours": "first_response_hours", "agent_hours": "agent_hours",
    "people_hours": "people_hours", "draft_hours": "draft_hours", "time_to_merge_hours": "merge_hours",
    "rounds": "rounds", "closure_class": "closure_class", "closure_counts_against_agent": "closure_against",
    "rescue_class": "rescue_class", "commits_by_people": "people_commits",
    # revision 0010: what the provisional counts and the people's comments aggregate
    "comments_by_people": "people_comments", "overall_coverage": "overall_coverage",
    **{f"{column}_coverage": f"{column}_coverage" for _name, column in CATEGORIES},
}


def epoch_of(value: Any) -> float | None:
    """An ISO 8601 time of a result as epoch seconds (UTC when it names no zone); None if unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def pr_facts(result: dict[str, Any]) -> dict[str, Any]:
    """The facts of the PR's own evidence item (state, createdAt, closedAt, ...), if present."""
    evidence = result.get("evidence")
    for group in (evidence.get("groups") or ()) if isinstance(evidence, dict) else ():
        if isinstance(group, dict) and group.get("source") == "taskMetadata":
            for item in group.get("items") or ():
                if isinstance(item, dict) and item.get("kind") == "pull_request":
                    facts = item.get("facts")
                    return facts if isinstance(facts, dict) else {}
    return {}


def stored_columns(result: dict[str, Any]) -> dict[str, Any]:
    """The evaluations row's turn, closure, rescue and task-type columns of one result: its
    export row's values (:func:`row_of`), so both read the result one way."""
    row = row_of(result)
    return {column: row[key] for key, column in STORED.items()}


def _outcomes(engine: Engine, repo: str | None) -> dict[tuple[str, int], dict[str, bool]]:
    query = select(outcomes.c.repo, outcomes.c.number, outcomes.c.outcome, outcomes.c.value)
    if repo is not None:
        query = query.where(outcomes.c.repo == repo)
    found: dict[tuple[str, int], dict[str, bool]] = defaultdict(dict)
    with engine.connect() as conn:
        for r in conn.execute(query):
            found[(r.repo, int(r.number))][r.outcome] = bool(r.value)
    return found


def rows(engine: Engine, repo: str | None = None) -> Iterator[dict[str, Any]]:
    """One row per PR of the store (``repo``: of that repository only), by repository and number.
    Read a page at a time (keyset on the evaluation id order), so neither the database nor this
    process holds the whole store at once."""
    recorded = _outcomes(engine, repo)
    e = evaluations.c
    after: tuple[str, int] | None = None
    while True:
        query = (select(e.repo, e.number, e.result_json).where(e.is_latest.is_(True))
                 .order_by(e.repo, e.number).limit(PAGE))
        if repo is not None:
            query = query.where(e.repo == repo)
        if after is not None:
            query = query.where((e.repo > after[0]) | ((e.repo == after[0]) & (e.number > after[1])))
        with engine.connect() as conn:
            page = conn.execute(query).all()
        for r in page:
            try:
                result = json.loads(r.result_json)
            except ValueError:
                continue  # a damaged row: the API and the dashboard skip it too
            yield row_of(_dict(result), recorded.get((r.repo, int(r.number))))
        if len(page) < PAGE:
            return
        after = (page[-1].repo, int(page[-1].number))


def csv_chunks(found: Iterator[dict[str, Any]], *, header: bool = True) -> Iterator[str]:
    """CSV text (RFC 4180, a header line first), a few rows per chunk; a title or a name that a
    spreadsheet would run as a formula is written as text (``taskeval.csvcells``)."""
    buf = io.StringIO()
    writer = csvcells.writer(buf)
    if header:
        writer.writerow(COLUMNS)
    for n, row in enumerate(found, start=1):
        writer.writerow(row[c] for c in COLUMNS)
        if n % 100 == 0:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


def ndjson_chunks(found: Iterator[dict[str, Any]]) -> Iterator[str]:
    """One JSON object per line, the CSV's columns as keys (null where the CSV is empty)."""
    for row in found:
        yield json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n"


def chunks(engine: Engine, fmt: ExportFormat, repo: str | None = None) -> Iterator[str]:
    found = rows(engine, repo)
    return csv_chunks(found) if fmt == "csv" else ndjson_chunks(found)
