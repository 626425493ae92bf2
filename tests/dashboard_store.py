"""A synthetic store for the dashboard's tests and benchmark: agents, authors, repositories and
weeks with known scores, written straight into ``evaluations`` and ``signals`` in bulk (then the
dashboard's rollup rebuilt from them).

``fill(engine, n)`` stores ``n`` PRs (plus a second, older evaluation for every 10th PR, so history
and ``is_latest`` matter). With ``full_results`` each row carries a complete, valid result JSON
(made from ``examples/agent-pr-482.result.json``) so the PR page renders its comment; without it
rows carry a small stand-in JSON, which is what a 100,000-row benchmark store can afford.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, insert, text

from bot.db import evaluations, signals, write
from bot.results import rebuild_rollup
from taskeval.contract import CATEGORIES, band, overall

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent-pr-482.result.json"
START = datetime(2025, 1, 6, tzinfo=UTC)  # a Monday

# (agent id, name, weight in the mix, mean score, PR author login)
AGENTS = [
    ("copilot", "GitHub Copilot", 30, 74, "Copilot"),
    ("codex", "OpenAI Codex", 25, 68, "openai-codex[bot]"),
    ("claude-code", "Claude Code", 20, 79, None),
    ("devin", "Devin", 12, 61, "devin-ai-integration[bot]"),
    ("cursor", "Cursor", 8, 70, None),
    ("human", "Human", 5, 77, None),
]
SMALL_AGENT = ("jules", "Jules", 4, 55, "google-labs-jules[bot]")  # always 4 PRs: a small sample
PEOPLE = ["alice", "bob", "carol", "dave", "erin", "frank"]
REPOS = ["octo-org/widgets", "octo-org/gadgets", "octo-org/docs", "secret-org/vault"]
SIGNAL_IDS = [
    ("agent.ci_recovery", "agentPerformance", 2.0), ("agent.red_pushes", "agentPerformance", 1.5),
    ("agent.review_rounds", "agentPerformance", 1.5), ("agent.text_hygiene", "agentPerformance", 2.0),
    ("outcome.ci_head", "taskOutcomeQuality", 4.0), ("outcome.claims", "taskOutcomeQuality", 2.0),
    ("outcome.test_evidence", "taskOutcomeQuality", 2.0), ("process.ci_at_merge", "processCompliance", 3.0),
    ("process.human_approval", "processCompliance", 2.0), ("process.description", "processCompliance", 1.0),
    ("process.docs_with_surface", "processCompliance", 1.0), ("process.change_size", "processCompliance", 1.5),
]


@dataclass
class Stored:
    rows: list[dict[str, Any]]  # every evaluations row written (latest and older)

    def latest(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["is_latest"]]


def _week(moment: datetime) -> str:
    return (moment - timedelta(days=moment.weekday())).strftime("%Y-%m-%d")


def _template() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text(encoding="utf-8"))


def full_result(row: dict[str, Any], sigs: list[dict[str, Any]], template: dict[str, Any]) -> str:
    """A valid result JSON for ``row`` (bundle hash recomputed)."""
    from taskeval.models import EvaluationResult, EvidenceBundle

    data = json.loads(json.dumps(template))
    number, repo = row["number"], row["repo"]
    url = f"https://github.com/{repo}/pull/{number}"
    data["repository"] = repo
    data["headSha"] = row["head_sha"]
    data["evaluatedAt"] = row["evaluated_at"]
    data["pullRequest"].update(number=number, url=url, author=row["author"],
                               title=f"Synthetic change {number} by {row['agent_name'] or row['author']}",
                               merged=row["pr_state"] == "merged")
    data["overallScore"], data["overallBand"] = row["overall_score"], row["overall_band"]
    for cat in data["categoryScores"]:
        value = row[{"agentPerformance": "agent_performance", "taskOutcomeQuality": "task_outcome_quality",
                     "processCompliance": "process_compliance"}[cat["category"]]]
        cat.update(deterministicScore=value, finalScore=value, aiScore=None, band=band(value))
    by_id = {s["signal_id"]: s for s in sigs}
    for s in data["signals"]:
        if s["id"] in by_id:
            mine = by_id[s["id"]]
            s["score"] = mine["score"]
            s["status"] = "ok" if mine["conclusive"] else "inconclusive"
            if not mine["conclusive"]:
                s["score"] = None
    ev = data["evidence"]
    ev["repository"], ev["pullRequest"], ev["headSha"] = repo, number, row["head_sha"]
    ev["facts"]["pull"].update(number=number, url=url, author=row["author"], headSha=row["head_sha"])
    for group in ev["groups"]:
        for item in group["items"]:
            if item.get("url"):
                item["url"] = item["url"].replace("octo-org/widgets", repo).replace("/482", f"/{number}")
    if "agent" in EvaluationResult.model_fields and row["agent_id"]:
        data["agent"] = {"id": row["agent_id"], "name": row["agent_name"], "operator": row["operator"],
                         "confidence": "certain", "evidence": [], "reason": "synthetic"}
    data["bundleHash"] = EvidenceBundle.model_validate(ev).hash()
    return EvaluationResult.model_validate(data).model_dump_json(by_alias=True)


def fill(engine: Engine, n: int, *, seed: int = 7, full_results: bool = False, weeks: int = 40,
         batch: int = 5000) -> Stored:
    """Store ``n`` synthetic PRs; returns every row written, for tests to recompute numbers."""
    rng = random.Random(seed)
    template = _template() if full_results else None
    pool = [a for a in AGENTS for _ in range(a[2])]
    rows: list[dict[str, Any]] = []
    sig_rows: list[dict[str, Any]] = []
    next_id = 1
    small_left = SMALL_AGENT[2]
    for i in range(n):
        agent = SMALL_AGENT if small_left and i % 7 == 3 else rng.choice(pool)
        if agent is SMALL_AGENT:
            small_left -= 1
        agent_id, agent_name, _w, mean, login = agent
        person = PEOPLE[rng.randrange(len(PEOPLE))]
        author = login or person
        repo = REPOS[i % len(REPOS)]
        number = 1000 + i
        when = START + timedelta(days=rng.uniform(0, weeks * 7))
        drift = (when - START).days / (weeks * 7) * 8  # agents improve a little over time
        finals = {c: max(0, min(100, round(rng.gauss(mean + drift, 12)))) for c in CATEGORIES}
        total = overall(finals)
        state = rng.choices(["merged", "closed", "open"], [70, 22, 8])[0]
        versions = 2 if i % 10 == 0 else 1
        for v in range(versions):
            latest = v == versions - 1
            older = 0 if latest else 1
            score = total if latest else max(0, total - 10)
            created = when - timedelta(hours=20)
            row = {
                "id": next_id, "repo": repo, "owner": repo.split("/")[0], "number": number,
                "head_sha": f"{number:08x}{v:032x}", "scorer_version": "1.0.0", "author": author,
                "trigger": "backfill", "evaluated_at": (when + timedelta(hours=older)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "overall_score": score, "overall_band": band(score),
                "agent_performance": finals["agentPerformance"],
                "task_outcome_quality": finals["taskOutcomeQuality"],
                "process_compliance": finals["processCompliance"],
                "judge_status": "off", "job_id": None, "comment_url": None, "comment_signature": None,
                "stored_at": when.timestamp(),
                "agent_id": agent_id, "agent_name": agent_name,
                "operator": person if agent_id != "human" else None, "agent_confidence": "certain",
                "pr_state": state, "pr_created_at": created.timestamp(),
                "merged_at": when.timestamp() if state == "merged" else None,
                "closed_at": when.timestamp() if state != "open" else None,
                "activity_at": when.timestamp(), "week": _week(when), "is_latest": latest,
            }
            sigs = []
            for sid, cat, weight in SIGNAL_IDS:
                base = finals[cat]
                conclusive = not (sid == "process.docs_with_surface" and rng.random() < 0.6)
                sigs.append({"evaluation_id": next_id, "signal_id": sid, "category": cat,
                             "score": max(0, min(100, round(rng.gauss(base, 20)))) if conclusive else None,
                             "conclusive": conclusive, "weight": weight})
            row["result_json"] = (full_result(row, sigs, template) if template is not None else json.dumps(
                {"repository": repo, "pullRequest": {"number": number}, "overallScore": score, "synthetic": True}))
            rows.append(row)
            sig_rows.extend(sigs)
            next_id += 1
    with write(engine) as conn:
        for start in range(0, len(rows), batch):
            conn.execute(insert(evaluations), rows[start:start + batch])
        for start in range(0, len(sig_rows), batch * 10):
            conn.execute(insert(signals), sig_rows[start:start + batch * 10])
        rebuild_rollup(conn)  # rows written in bulk, not through store_evaluation
        if engine.dialect.name == "postgresql":  # ids were given: move the sequence past them
            conn.execute(text("SELECT setval(pg_get_serial_sequence('evaluations', 'id'), "
                              "(SELECT max(id) FROM evaluations))"))
    return Stored(rows)
