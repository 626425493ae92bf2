"""Evaluate corpus PRs through the replay: the real pipeline (collection over HTTP, bundle,
signals, scoring) with the AI judge off. Used by ``benchmarks/real_corpus.py`` and the CI sample
tests; the CLI path (``taskeval evaluate`` with ``GITHUB_API_URL``) is the same pipeline."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from github import Github

from taskeval.corpus.aidev import PullRecord
from taskeval.github import make_client
from taskeval.models import EvaluationResult
from taskeval.pipeline import Options, evaluate_pull_request
from taskeval.transports import Api

OPTIONS: Final = Options(ai="off", trigger="corpus", env={}, api="rest")  # not the environment's


def client(url: str) -> Github:
    """An anonymous client for the replay at ``url``; no retries (the replay never fails
    transiently, so a retry would only hide a bug)."""
    return make_client(None, base_url=url, retries=0)


def evaluate(gh: Github, pr: PullRecord, api: Api = "rest") -> EvaluationResult:
    """The result for one corpus PR (``.to_json()`` is what ``--output`` writes), collected
    over ``api``: REST unless asked, unlike the commands' default, since the replay executes
    GraphQL in Python (slower than its REST) and gives the same result either way
    (``benchmarks/transport_parity.py``)."""
    options = OPTIONS if api == OPTIONS.api else replace(OPTIONS, api=api)
    return evaluate_pull_request(gh, pr.repository, pr.number, options).result


def as_json(result: EvaluationResult) -> dict[str, Any]:
    return result.model_dump(mode="json", by_alias=True)


def agent_id(result: dict[str, Any]) -> str | None:
    """The attributed agent id, when the result carries attribution."""
    agent = result.get("agent")
    if isinstance(agent, dict) and isinstance(agent.get("id"), str):
        return str(agent["id"])
    return None


def is_partial(result: dict[str, Any]) -> bool:
    """Whether the result says its evidence is partial (a run-audit gap item and a warning)."""
    groups = (result.get("evidence") or {}).get("groups") or []
    audit: dict[str, Any] = next((g for g in groups if g.get("source") == "runAudit"),
                                 {"items": []})
    gaps = [i for i in audit.get("items") or [] if str(i.get("id", "")).startswith(
        "audit:unavailable-")]
    warned = any(str(w).startswith("Partial evidence") for w in result.get("warnings") or [])
    return bool(gaps) and warned
