"""The container action: runner environment + event -> pipeline -> file, outputs, summary, comment.

Exit codes: 0 evaluated (or skipped with a notice, or evaluated but the comment could not be
posted); 1 the evaluation could not be made, or ``fail-under`` was set and the score is below it;
2 an input is unusable. Every failure path prints one ``::error::`` line, never a traceback.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from action.events import Decision, decide
from action.inputs import ActionInputs, InputError
from action.runner import LogBridge, Runner
from taskeval import command
from taskeval.config import CONFIG_PATH

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2
# The Action has no input naming the account its token posts as: GitHub names it for a personal
# access token, and the workflow's own token is github-actions[bot].
LOGIN_HINT = ("the Action knows the account only for the workflow's own token (github-actions[bot]) or a "
              "personal access token: pass one of those as github-token")
CATEGORY_OUTPUTS = {
    "agentPerformance": "agent-performance-score",
    "taskOutcomeQuality": "task-outcome-quality-score",
    "processCompliance": "process-compliance-score",
}
COVERAGE_OUTPUTS = {c: name.removesuffix("-score") + "-coverage" for c, name in CATEGORY_OUTPUTS.items()}
OUTPUT_NAMES = (
    "evaluated", "overall-score", "overall-band", "overall-provisional", "overall-coverage",
    *CATEGORY_OUTPUTS.values(), "agent",
    "agent-operator", "closure", "rescue", *COVERAGE_OUTPUTS.values(), "result-path", "comment-url",
)


@dataclass(frozen=True)
class Context:
    """The runner environment the entrypoint reads, validated once."""

    event_name: str
    payload: object
    payload_problem: str | None
    repository: str
    workspace: Path
    inputs: ActionInputs


def _load_payload(env: Mapping[str, str]) -> tuple[object, str | None]:
    path = env.get("GITHUB_EVENT_PATH", "")
    if not path:
        return {}, "GITHUB_EVENT_PATH is not set"
    try:
        return json.loads(Path(path).read_text(encoding="utf-8")), None
    except OSError as exc:
        return {}, f"cannot read the event payload {path}: {exc.strerror or exc}"
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return {}, f"the event payload {path} is not valid JSON: {exc}"


def _repository(env: Mapping[str, str], payload: object) -> str:
    repo = env.get("GITHUB_REPOSITORY", "").strip()
    if not repo and isinstance(payload, Mapping):
        full = payload.get("repository")
        repo = full.get("full_name", "") if isinstance(full, Mapping) else ""
    return repo if isinstance(repo, str) else ""


def _cache_dir(env: Mapping[str, str]) -> str:
    """Where the judge caches verdicts: ``$RUNNER_TEMP`` when it exists in this container (a
    JavaScript-style run), else ``$HOME``, which the runner mounts from
    ``${{ runner.temp }}/_github_home`` and so can be kept with ``actions/cache``."""
    temp = env.get("RUNNER_TEMP", "")
    if temp and Path(temp).is_dir():
        return str(Path(temp) / "taskeval-cache")
    home = env.get("HOME") or str(Path.home())
    return str(Path(home) / ".cache" / "taskeval")


def pipeline_env(env: Mapping[str, str], inputs: ActionInputs) -> dict[str, str]:
    """The environment the core sees: the runner's, with the AI inputs mapped to the core's
    variable names. An empty input never overrides a variable the step already set."""
    out = {k: v for k, v in env.items() if not k.startswith("INPUT_")}
    for value, key in (
        (inputs.openai_api_key, "OPENAI_API_KEY"),
        (inputs.openai_base_url, "OPENAI_BASE_URL"),
        (inputs.model, "TASKEVAL_MODEL"),
    ):
        if value:
            out[key] = value
    out.setdefault("TASKEVAL_CACHE_DIR", _cache_dir(env))
    return out


def _resolve(workspace: Path, path: str) -> Path:
    target = Path(path)
    return target if target.is_absolute() else workspace / target


def _host_path(workspace: Path, path: str) -> str:
    """The result path as later steps on the host can use it: relative to the workspace when
    it lies inside it (the container sees the workspace at another absolute path)."""
    target = Path(path)
    if not target.is_absolute():
        return path
    try:
        return str(target.relative_to(workspace))
    except ValueError:
        return path


def _skip(runner: Runner, reason: str) -> int:
    runner.notice(reason, title="taskeval skipped")
    runner.set_outputs({"evaluated": "false"})
    runner.append_summary(f"### taskeval\n\nSkipped: {reason}\n")
    return EXIT_OK


def _annotate(runner: Runner, result: Any, inputs: ActionInputs) -> None:
    """Config problems and degraded parts of the evaluation as warnings on the run."""
    config_errors: list[str] = list(result.config.errors)
    source: str = result.config.source
    file = CONFIG_PATH if source.startswith("repo:") else (
        str(inputs.config_path) if inputs.config_path else None)
    for err in config_errors:
        runner.warning(f"{err} (evaluated with the default settings)", title="taskeval config",
                       file=file)
    for warning in result.warnings:
        if any(err in warning for err in config_errors):
            continue
        runner.warning(warning, title="taskeval evaluation degraded")


def _check_commenter(runner: Runner, gh: Any, repository: str, decision: Decision) -> int | None:
    """Gate ``/evaluate`` on the commenter's repository permission; None means go ahead."""
    from taskeval.github import GitHubError, collaborator_permission

    login = decision.commenter or ""
    try:
        permission = collaborator_permission(gh, repository, login)
    except (GitHubError, ValueError) as exc:
        runner.error(f"Could not check @{login}'s permission on {repository}, so the /evaluate "
                     f"command was not run: {exc}", title="taskeval failed")
        return EXIT_FAILED
    answer = command.answer(login, permission, repository)
    _react(runner, gh, repository, decision.comment_id, answer.reaction)
    return None if answer.accepted else _skip(runner, answer.reason)


def _react(runner: Runner, gh: Any, repository: str, comment_id: int | None, content: str) -> None:
    from taskeval.github import GitHubError, add_reaction

    if comment_id is None:
        return
    try:
        add_reaction(gh, repository, comment_id, content)
    except GitHubError as exc:
        runner.warning(f"Could not add the '{content}' reaction to the /evaluate comment: {exc}")


def _write_result(runner: Runner, ctx: Context, text: str) -> str | None:
    target = _resolve(ctx.workspace, ctx.inputs.result_path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:
        runner.error(f"Could not write the result to {ctx.inputs.result_path}: "
                     f"{exc.strerror or exc}", title="taskeval")
        return None
    return _host_path(ctx.workspace, ctx.inputs.result_path)


def _reserve_meter(gh: Any, inputs: ActionInputs) -> Any:
    """A meter that stops the evaluation and its comment short of the reserves the workflow
    sets (REST requests, GraphQL points), which the token's other users (later steps, other
    workflows of the repository) keep; None when no reserve is set. GitHub's own word is read
    once, from ``GET /rate_limit`` (free), then from every answer."""
    from taskeval.github.quota import ReserveMeter, rate_limit_now

    reserves = {"core": inputs.rate_reserve, "graphql": inputs.graphql_reserve}
    if not any(reserves.values()):
        return None
    names = {"core": "input 'rate-reserve' or TASKEVAL_RATE_RESERVE",
             "graphql": "input 'graphql-reserve' or TASKEVAL_GRAPHQL_RESERVE"}
    return ReserveMeter(reserves, lambda resource: rate_limit_now(gh, resource=resource), names)


def evaluate(runner: Runner, ctx: Context, decision: Decision, env: Mapping[str, str]) -> int:
    from taskeval.github import AuthError, GitHubError, api_url, make_client
    from taskeval.judge.cache import FileCache
    from taskeval.pipeline import Options, evaluate_pull_request, publish_comment
    from taskeval.report import headline, overall_coverage, overall_provisional

    inputs = ctx.inputs
    number = decision.pull_number
    assert number is not None
    gh = make_client(inputs.github_token, base_url=api_url(env))
    if decision.commenter is not None:
        gated = _check_commenter(runner, gh, ctx.repository, decision)
        if gated is not None:
            return gated

    core_env = pipeline_env(env, inputs)
    config = inputs.config_path
    options = Options(
        ai=inputs.ai,
        config_path=_resolve(ctx.workspace, str(config)) if config else None,
        trigger=ctx.event_name or "action",
        env=core_env,
        github_token=inputs.github_token,
        # Explicit, because the judge's default cache reads the process environment, not ours.
        cache=FileCache(core_env["TASKEVAL_CACHE_DIR"]),
        api=inputs.api,
    )
    meter = _reserve_meter(gh, inputs)
    runner.info(f"taskeval: evaluating {ctx.repository}#{number} ({decision.reason})")
    try:
        evaluation = evaluate_pull_request(gh, ctx.repository, number, options, meter=meter)
    except GitHubError as exc:
        runner.error(f"Could not evaluate {ctx.repository}#{number}: {exc}",
                     title="taskeval failed")
        if decision.comment_id is not None:
            _react(runner, gh, ctx.repository, decision.comment_id, "confused")
        runner.set_outputs({"evaluated": "false"})
        return EXIT_FAILED
    result = evaluation.result

    result_path = _write_result(runner, ctx, result.to_json())
    outputs = {
        "evaluated": "true",
        "overall-score": str(result.overall_score),
        "overall-band": result.overall_band,
        "overall-provisional": "true" if overall_provisional(result) else "false",
        "overall-coverage": "" if (coverage := overall_coverage(result)) is None else f"{coverage:g}",
        **{CATEGORY_OUTPUTS[c.category]: str(c.final_score) for c in result.category_scores},
        "agent": result.agent.id if result.agent else "",
        "agent-operator": (result.agent.operator or "") if result.agent else "",
        "closure": result.closure.class_ if result.closure else "",
        "rescue": result.rescue.class_ if result.rescue else "",
        **{COVERAGE_OUTPUTS[c.category]: "" if c.coverage is None else f"{c.coverage:g}"
           for c in result.category_scores},
        "result-path": result_path or "",
        "comment-url": "",
    }
    runner.append_summary(evaluation.markdown)
    _annotate(runner, result, inputs)

    if inputs.comment:
        try:
            # Over GraphQL the collection already found our comment (``viewerDidAuthor``), and
            # the mutations are paid from the GraphQL budget: no `GET /user`, no REST listing.
            url, created = publish_comment(gh, ctx.repository, number, evaluation.markdown,
                                           seed=evaluation.comment_seed, meter=meter, login_hint=LOGIN_HINT)
        except AuthError as exc:
            hint = ""
            if result.evidence.facts.pull.is_fork and ctx.event_name == "pull_request":
                hint = (" PRs from forks get a read-only token under pull_request; see the "
                        "fork-PR notes on pull_request_target.")
            runner.error(f"The evaluation is in the result file and outputs, but the PR comment "
                         f"could not be posted: {exc}.{hint}", title="taskeval comment not posted")
        except Exception as exc:  # a side effect: the evaluation itself still stands
            runner.error(f"The PR comment could not be posted ({type(exc).__name__}: {exc})",
                         title="taskeval comment not posted")
        else:
            outputs["comment-url"] = url
            runner.info(f"taskeval: comment {'created' if created else 'updated'}: {url}")
    runner.set_outputs(outputs)
    runner.info(f"{headline(result)}")

    if result_path is None:
        return EXIT_FAILED
    if inputs.fail_under and result.overall_score < inputs.fail_under:
        runner.error(f"Overall score {result.overall_score} ({result.overall_band}) is below "
                     f"fail-under {inputs.fail_under}", title="taskeval below threshold")
        return EXIT_FAILED
    return EXIT_OK


def run(env: Mapping[str, str], out: TextIO | None = None) -> int:
    """The whole entrypoint against an explicit environment (so tests need no monkeypatching)."""
    runner = Runner(env, out)
    try:
        inputs = ActionInputs.from_env(env)
    except InputError as exc:
        runner.error(str(exc), title="taskeval input")
        return EXIT_INPUT
    runner.mask(inputs.github_token)
    runner.mask(inputs.openai_api_key)

    payload, problem = _load_payload(env)
    ctx = Context(
        event_name=env.get("GITHUB_EVENT_NAME", "").strip(),
        payload=payload,
        payload_problem=problem,
        repository=_repository(env, payload),
        workspace=Path(env.get("GITHUB_WORKSPACE") or os.getcwd()),
        inputs=inputs,
    )
    if problem:
        runner.warning(f"{problem}; deciding from the event name and inputs alone")

    from taskeval.report import MARKER

    try:
        decision = decide(ctx.event_name, payload, inputs.pull_request, MARKER)
    except InputError as exc:
        runner.error(str(exc), title="taskeval input")
        return EXIT_INPUT
    if not decision.evaluate:
        return _skip(runner, decision.reason)
    if "/" not in ctx.repository:
        runner.error("GITHUB_REPOSITORY is not set (expected OWNER/REPO)", title="taskeval input")
        return EXIT_INPUT
    if not inputs.github_token:
        runner.error("Input 'github-token' is empty; pass ${{ github.token }} or a token with "
                     "pull-requests: write", title="taskeval input")
        return EXIT_INPUT
    return evaluate(runner, ctx, decision, env)


def main(env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """``python -m action``: :func:`run`, with anything unexpected turned into one error line."""
    env = dict(os.environ) if env is None else env
    runner = Runner(env, out)
    import taskeval.github  # noqa: F401 - makes PyGithub's logger an ordinary one before bridging

    LogBridge.install(runner)
    try:
        return run(env, out)
    except KeyboardInterrupt:
        runner.error("Interrupted", title="taskeval failed")
        return EXIT_FAILED
    except Exception as exc:  # the last line of defence: no traceback in the log
        runner.error(f"taskeval stopped unexpectedly ({type(exc).__name__}: {exc}); the result "
                     "was not produced. Re-run with debug logging for details.",
                     title="taskeval failed")
        for line in traceback.format_exc().splitlines():
            runner.debug(line)
        return EXIT_FAILED
