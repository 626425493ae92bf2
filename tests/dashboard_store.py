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

from taskeval.contract import CATEGORIES, band, overall
from taskeval.store.db import evaluations, signals, write
from taskeval.store.export import stored_columns
from taskeval.store.results import rebuild_rollup

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
TASK_TYPES = [("feature", 30), ("fix", 30), ("docs", 15), ("refactor", 8), ("test", 6), ("chore", 4),
              ("ci", 3), ("deps", 2), ("unknown", 2)]
# Per agent: weights of clean / feedback_loop / taken_over (merged) and of agent_failure among closures.
RESCUE = {"copilot": (50, 25, 25), "codex": (60, 25, 15), "claude-code": (65, 25, 10), "devin": (40, 30, 30)}
CLOSURES = ["agent_failure", "superseded", "duplicate", "stale", "declined", "withdrawn", "unknown"]
FAILURE_SHARE = {"copilot": 0.6, "codex": 0.45, "devin": 0.7}
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


def _life(rng: random.Random, agent_id: str, state: str) -> dict[str, Any]:
    """Turns, task type, draft, closure and rescue of one synthetic PR."""
    rescue_w = RESCUE.get(agent_id, (55, 30, 15))
    agent_h = round(rng.lognormvariate(0.0, 1.0), 2)
    people_h = round(rng.lognormvariate(2.0, 1.2), 2)
    draft_h = round(rng.lognormvariate(0.5, 1.0), 2) if rng.random() < 0.3 else 0.0
    rescue = rng.choices(("clean", "feedback_loop", "taken_over"), rescue_w)[0]
    failure = FAILURE_SHARE.get(agent_id, 0.5)
    closure = (rng.choices(CLOSURES, [failure * 100] + [(1 - failure) * 100 / 6] * 6)[0]
               if state == "closed" else None)
    return {
        "task_type": rng.choices([t for t, _ in TASK_TYPES], [w for _, w in TASK_TYPES])[0],
        "draft": state != "merged" and rng.random() < 0.15,
        "agent_hours": agent_h, "people_hours": people_h, "draft_hours": draft_h,
        "first_response": None if rng.random() < 0.1 else round(rng.lognormvariate(1.0, 1.0), 2),
        "rounds": rng.choices((0, 1, 2, 3), (45, 30, 15, 10))[0],
        "merge_hours": round(agent_h + people_h + draft_h, 2),
        "rescue": rescue if state == "merged" else None,
        "people_commits": rng.randint(1, 4) if rescue == "taken_over" else 0,
        "closure": closure,
    }


WEIGHTS = {"agentPerformance": 0.30, "taskOutcomeQuality": 0.45, "processCompliance": 0.25}


def _sureness(rng: random.Random, row: dict[str, Any]) -> dict[str, Any]:
    """Each category's coverage (about one grade in five under the provisional floor, 0.5) and the
    PR's comments: some by people (the operator, a reviewer), some by the agent and by bots."""
    coverage = {c: 1.0 if rng.random() < 0.55 else round(rng.uniform(0.1, 1.0), 4) for c in WEIGHTS}
    people = rng.choices((0, 1, 2, 3, 5), (30, 30, 20, 12, 8))[0]
    agent_login = f"{row['agent_id'] or 'someone'}[bot]"
    comments = []
    for k in range(people + rng.randint(0, 2)):
        who, is_bot = ((row["operator"] or "alice", False) if k < people and k % 2 == 0 else
                       ("reviewer-rae", False) if k < people else
                       (agent_login, True) if k % 2 else ("ci-helper", False))
        comments.append({"id": row["number"] * 100 + k, "author": who, "authorIsBot": is_bot,
                         "kind": "issue", "createdAt": _iso(row["activity_at"]), "bodyExcerpt": "synthetic"})
    roles = {agent_login: "agent", row["operator"] or "alice": "operator", "reviewer-rae": "reviewer",
             "ci-helper": "ci"}
    return {"coverage": coverage, "comments": comments, "roles": roles}


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _life_result(row: dict[str, Any], life: dict[str, Any]) -> dict[str, Any]:
    """The result JSON's parts that say the PR's life: pullRequest, the PR's own evidence item,
    taskType, turns, and closure or rescue (docs/turns.md)."""
    merged = row["pr_state"] == "merged"
    facts = {"number": row["number"], "state": "open" if row["pr_state"] == "open" else "closed",
             "draft": life["draft"], "merged": merged, "createdAt": _iso(row["pr_created_at"]),
             "mergedAt": _iso(row["merged_at"]), "closedAt": _iso(row["closed_at"])}
    parts: dict[str, Any] = {
        "pullRequest": {"number": row["number"], "merged": merged, "mergedAt": facts["mergedAt"]},
        "evidence": {"groups": [{"source": "taskMetadata",
                                 "items": [{"kind": "pull_request", "facts": facts}]}]},
        "taskType": {"type": life["task_type"], "source": "title", "matched": [], "evidence": [],
                     "reason": "synthetic"},
        "turns": {"agentHours": life["agent_hours"], "peopleHours": life["people_hours"],
                  "draftHours": life["draft_hours"], "firstHumanResponseHours": life["first_response"],
                  "rounds": life["rounds"], "atEnd": "people", "roles": life["sure"]["roles"]},
        "categoryScores": [{"category": c, "weight": w, "coverage": life["sure"]["coverage"][c]}
                           for c, w in WEIGHTS.items()],
        "comments": life["sure"]["comments"],
    }
    if life["rescue"]:
        parts["rescue"] = {"class": life["rescue"], "rounds": life["rounds"],
                           "commitsByPeople": life["people_commits"], "evidence": [], "reason": "synthetic"}
    if life["closure"]:
        parts["closure"] = {"class": life["closure"], "countsAgainstAgent": life["closure"] == "agent_failure",
                            "evidence": [], "reason": "synthetic"}
    return parts


def full_result(row: dict[str, Any], sigs: list[dict[str, Any]], template: dict[str, Any],
                life: dict[str, Any] | None = None) -> str:
    """A valid result JSON for ``row`` (bundle hash recomputed); ``life``: its
    :func:`_life_result` parts."""
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
        if life is not None:
            cat["coverage"] = next(c["coverage"] for c in life["categoryScores"] if c["category"] == cat["category"])
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
    if life is not None:
        data["pullRequest"].update(life["pullRequest"])
        mine = life["evidence"]["groups"][0]["items"][0]["facts"]
        for group in ev["groups"]:
            for item in group["items"]:
                if item.get("kind") == "pull_request":
                    item["facts"].update(mine)
        ev["facts"]["pull"].update({k: v for k, v in mine.items() if k != "number"})
        data["taskType"] = life["taskType"]
        data["turns"] = {**data.get("turns", {}), **life["turns"]}
        ev["facts"]["comments"] = life["comments"]
        data.pop("rescue", None)
        data.pop("closure", None)
        for kind in ("rescue", "closure"):
            if kind in life:
                data[kind] = life[kind]
    data["bundleHash"] = EvidenceBundle.model_validate(ev).hash()
    return EvaluationResult.model_validate(data).model_dump_json(by_alias=True)


def fill(engine: Engine, n: int, *, seed: int = 7, full_results: bool = False, weeks: int = 40,
         batch: int = 5000) -> Stored:
    """Store ``n`` synthetic PRs; returns every row written, for tests to recompute numbers."""
    rng = random.Random(seed)
    life_rng = random.Random(seed * 7919 + 1)  # the PRs' lives: a stream apart, scores unchanged
    sure_rng = random.Random(seed * 104729 + 3)  # coverage and comments: another, lives unchanged
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
        life = _life(life_rng, agent_id, state)
        sure: dict[str, Any] | None = None
        for v in range(versions):
            latest = v == versions - 1
            older = 0 if latest else 1
            score = total if latest else max(0, total - 10)
            created = when - timedelta(hours=life["merge_hours"])
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
            life["sure"] = sure = sure or _sureness(sure_rng, row)
            parts = _life_result(row, life)
            if template is not None:
                row["result_json"] = full_result(row, sigs, template, parts)
            else:
                stand_in = {k: v for k, v in parts.items() if k != "comments"}
                stand_in["evidence"] = {**parts["evidence"], "facts": {"comments": parts["comments"]}}
                row["result_json"] = json.dumps({"repository": repo, "overallScore": score, "synthetic": True,
                                                 **stand_in})
            row.update(stored_columns(json.loads(row["result_json"])))  # as record_from_result does
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
