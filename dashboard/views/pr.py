"""One PR: its evaluations, the stored comment as GitHub renders it, and the result JSON."""

from __future__ import annotations

import re
from typing import Any

from flask import (
    Response,
    abort,
    request,
    url_for,
)
from markupsafe import Markup

from dashboard import queries
from dashboard.queries import Filters
from dashboard.render import comment_html
from dashboard.settings import config
from dashboard.views.common import _REPO_RE, Column, Table, _tables_or_page, dashboard, viewer
from dashboard.views.detail import _score_columns
from taskeval.agent_table import agent_name
from taskeval.contract import PROVISIONAL_BELOW, is_provisional
from taskeval.store.results import readable


@dashboard.get("/pr/<owner>/<repo>/<int:number>")
def pr(owner: str, repo: str, number: int) -> Any:
    full = f"{owner}/{repo}"
    if not _REPO_RE.match(full):
        abort(404)
    cfg = config()
    f = Filters(repos=viewer().repos)
    with cfg.engine.connect() as conn:
        history = queries.pr_history(conn, f, full, number)
        if not history:
            abort(404, f"no stored evaluation of {full}#{number} that you can read")
        try:
            chosen_id = int(request.args.get("evaluation", history[0]["id"]))
        except ValueError:
            chosen_id = history[0]["id"]
        if chosen_id not in {h["id"] for h in history}:
            chosen_id = history[0]["id"]
        stored = queries.result_json(conn, f, chosen_id)
    assert stored is not None  # it is one of this PR's rows, which the viewer may read
    found = readable(stored[1])
    result = found if found is not None else {}
    # A damaged row (not a JSON object): its history and the JSON as stored are still shown.
    markdown, problem = _comment_markdown(result) if found is not None else (
        "", "this stored result is not a JSON object; the result JSON is what was stored")
    html, renderer = comment_html(markdown) if markdown else (Markup(""), "none")
    evidence = _evidence_links(result)
    tables = [Table("history", "Every stored evaluation of this PR", [
        Column("Evaluation", lambda h: h["id"], lambda h: Markup('<a href="{}">#{}</a>{}').format(
            url_for("dashboard.pr", owner=owner, repo=repo, number=number, evaluation=h["id"]), h["id"],
            Markup(" (shown)") if h["id"] == chosen_id else ""), key="id"),
        Column("Evaluated", lambda h: h["evaluated_at"], key="evaluatedAt"),
        Column("Head", lambda h: h["head_sha"], lambda h: Markup("<code>{}</code>").format(h["head_sha"][:7]),
               key="headSha"),
        Column("Scorer", lambda h: h["scorer_version"], key="scorerVersion"),
        Column("Trigger", lambda h: h["trigger"], key="trigger"),
        *_score_columns(),
        Column("Judge", lambda h: h["judge_status"], key="judge"),
        Column("Comment", lambda h: h["comment_url"], lambda h: _http_link(h["comment_url"], "posted")
               if h["comment_url"] else None, key="commentUrl"),
        Column("JSON", lambda h: None, lambda h: Markup('<a href="{}" download>result.json</a>').format(
            url_for("dashboard.result", evaluation_id=h["id"])), key="_json"),
    ], history)]
    latest = history[0]
    pull = result.get("pullRequest") or {}
    return _tables_or_page(tables, f"taskeval-{owner}-{repo}-{number}", "dashboard/pr.html",
                           full=full, number=number, latest=latest, chosen_id=chosen_id, pull=pull,
                           agent=_agent(result), comment=html, renderer=renderer,
                           comment_problem=problem, evidence=evidence, title=f"{full}#{number}",
                           pr_url=_safe_url(pull.get("url")), ending=_ending(result),
                           provisional_below=PROVISIONAL_BELOW,
                           overall_coverage=latest.get("overall_coverage"),
                           overall_provisional=is_provisional(latest.get("overall_coverage")),
                           coverage=[(c.get("category"), c.get("coverage"), c.get("signalsConclusive"),
                                      c.get("signalsTotal")) for c in result.get("categoryScores") or []
                                     if c.get("coverage") is not None])


def _agent(result: dict[str, Any]) -> dict[str, Any]:
    """The result's agent, a built-in one by its own name whatever the stored result says."""
    agent = result.get("agent")
    if not isinstance(agent, dict):
        return {}
    agent_id = agent.get("id") if isinstance(agent.get("id"), str) else None
    name = agent.get("name") if isinstance(agent.get("name"), str) else None
    return {**agent, "name": agent_name(agent_id, name, own_pr=True)}


def _ending(result: dict[str, Any]) -> dict[str, Any] | None:
    """Why the PR ended (closure) or whether its merge needed a rescue, and whose time it was, for
    the PR page's summary (docs/turns.md); None for a result stored before they existed."""
    closure, rescue, turns = result.get("closure"), result.get("rescue"), result.get("turns")
    if not (closure or rescue or turns):
        return None
    found = closure or rescue or {}
    return {"kind": "closure" if closure else ("rescue" if rescue else None), "class": found.get("class"),
            "reason": found.get("reason"), "against": bool(closure and closure.get("countsAgainstAgent")),
            "turns": turns or {}}


@dashboard.get("/evaluation/<int:evaluation_id>.json")
def result(evaluation_id: int) -> Any:
    with config().engine.connect() as conn:
        stored = queries.result_json(conn, Filters(repos=viewer().repos), evaluation_id)
    if stored is None:
        abort(404)
    repo, text, number = stored
    name = f"{repo.replace('/', '-')}-{number}-evaluation-{evaluation_id}.json"
    return Response(text, mimetype="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


def _comment_markdown(result: dict[str, Any]) -> tuple[str, str | None]:
    """The PR comment as taskeval renders it from this stored result, or why it cannot."""
    from pydantic import ValidationError

    from taskeval.models import EvaluationResult
    from taskeval.report import render_comment

    try:
        return render_comment(EvaluationResult.model_validate(result)), None
    except (ValidationError, ValueError, KeyError, TypeError) as exc:
        return "", (f"this stored result does not match the current result schema "
                    f"({type(exc).__name__}); the JSON below is what was stored")


def _safe_url(url: Any) -> str | None:
    return url if isinstance(url, str) and re.match(r"^https?://", url) else None


def _http_link(url: Any, text: str) -> Markup | str:
    safe = _safe_url(url)
    return Markup('<a href="{}" rel="noopener noreferrer">{}</a>').format(safe, text) if safe else text


def _evidence_links(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    groups = ((result.get("evidence") or {}).get("groups")) or []
    for group in groups:
        if not isinstance(group, dict):
            continue
        items = [{"id": str(i.get("id", "")), "label": str(i.get("label", ""))[:200],
                  "url": _safe_url(i.get("url"))}
                 for i in group.get("items") or [] if isinstance(i, dict)]
        out.append({"source": str(group.get("source", "")), "items": items,
                    "total": group.get("total"), "omitted": group.get("omitted")})
    return out


# --- sign-in --------------------------------------------------------------------------------------

