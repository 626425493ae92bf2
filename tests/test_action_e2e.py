"""``python -m action`` as the runner starts it: a subprocess with the runner's environment,
GitHub served by a local fake over HTTP, payloads shaped like GitHub's documented webhooks."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from action.main import run
from taskeval.report import BAND_ICONS
from tests.fakegithub import FAKE_TOKEN, FakeGitHub
from tests.fakeopenai import FakeOpenAI
from tests.processes import transport_env
from tests.test_action_events import DOCUMENTED_EVENTS
from tests.test_action_runner import parse_output_file

ROOT = Path(__file__).resolve().parent.parent
EVENTS = Path(__file__).parent / "events"
REPO = "octo-org/widgets"
PR = 42
MARKER = "<!-- taskeval:evaluation -->"
ACTIONS_BOT = "github-actions[bot]"
# What the runner passes for every input when the workflow sets none (action.yml defaults).
DEFAULT_INPUTS = {
    "github-token": FAKE_TOKEN, "pull-request": "", "config-path": "", "comment": "true",
    "ai": "off", "model": "", "openai-api-key": "", "openai-base-url": "", "fail-under": "0",
    "result-path": "taskeval-result.json", "api": "",  # action.yml's defaults, as the runner passes
}


@dataclass
class ActionRun:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    workspace: Path

    def annotations(self, kind: str) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.startswith(f"::{kind}")]

    def result(self) -> dict[str, Any]:
        return json.loads((self.workspace / self.outputs["result-path"]).read_text())


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    """GitHub as a workflow's GITHUB_TOKEN sees it: an installation token, no GET /user."""
    gh = FakeGitHub(login=ACTIONS_BOT, integration=True)
    gh.add_pr(REPO, PR)
    gh.set_permission(REPO, "mona", "write", role_name="maintain")
    with gh.serve():
        yield gh


def payload(name: str, **comment: Any) -> dict[str, Any]:
    data = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    if comment:
        data["comment"].update(comment)
    return data


def run_action(
    tmp_path: Path, fake: FakeGitHub, event: str, event_payload: object | str,
    inputs: Mapping[str, str] | None = None, extra_env: Mapping[str, str] | None = None,
) -> ActionRun:
    """Start the entrypoint the way a container action runs: cwd = workspace, file commands in
    their own directory, RUNNER_TEMP naming a host path that does not exist in the container."""
    workspace = tmp_path / "workspace"
    commands = tmp_path / "file_commands"
    home = tmp_path / "home"
    for folder in (workspace, commands, home):
        folder.mkdir(exist_ok=True)
    event_file = tmp_path / "event.json"
    text = event_payload if isinstance(event_payload, str) else json.dumps(event_payload)
    event_file.write_text(text, encoding="utf-8")
    output_file = commands / "set_output"
    summary_file = commands / "step_summary"
    output_file.write_text("")
    summary_file.write_text("")
    env = {
        "PATH": "/usr/bin:/bin", "HOME": str(home), "GITHUB_ACTIONS": "true", "CI": "true",
        "GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(event_file),
        "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": fake.url,
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_OUTPUT": str(output_file), "GITHUB_STEP_SUMMARY": str(summary_file),
        "RUNNER_TEMP": "/home/runner/work/_temp", "PYTHONSAFEPATH": "1",
        "PYTHONPATH": str(ROOT),
    }
    merged = {**DEFAULT_INPUTS, **(inputs or {})}
    env.update({f"INPUT_{name.upper()}": value for name, value in merged.items()})
    env.update(transport_env())  # a workflow's env: the transport under test, if one is set
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, "-m", "action"], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return ActionRun(proc.returncode, proc.stdout, proc.stderr,
                     parse_output_file(output_file.read_text()), summary_file.read_text(),
                     workspace)


def taskeval_comments(fake: FakeGitHub) -> list[dict[str, Any]]:
    return [c for c in fake.comments(REPO, PR) if c["body"].startswith(MARKER)]


def mutations(fake: FakeGitHub) -> list[str]:
    """The GraphQL mutations the fake executed, by operation name, in order."""
    return [query.split("(", 1)[0].split()[1] for query, _ in fake.graphql_queries
            if query.startswith("mutation ")]


def reactions(fake: FakeGitHub, comment_id: int) -> list[tuple[str, str]]:
    return [(r["content"], r["user"]["login"]) for r in fake.reactions.get(comment_id, [])]


# ----------------------------------------------------------------------------------- evaluate


def test_merged_pr_gets_outputs_summary_result_and_one_comment_updated_on_rerun(
    tmp_path: Path, fake: FakeGitHub, transport: str,
) -> None:
    first = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"))
    assert first.code == 0, first.stdout + first.stderr
    result = first.result()
    assert result["repository"] == REPO and result["pullRequest"]["number"] == PR
    assert result["trigger"] == "pull_request"
    scores = {c["category"]: c["finalScore"] for c in result["categoryScores"]}
    assert first.outputs == {
        "evaluated": "true",
        "overall-score": str(result["overallScore"]),
        "overall-band": result["overallBand"],
        "overall-provisional": "false",  # 79 % of the overall's signal weight had data
        "overall-coverage": "0.7892",
        "agent-performance-score": str(scores["agentPerformance"]),
        "task-outcome-quality-score": str(scores["taskOutcomeQuality"]),
        "process-compliance-score": str(scores["processCompliance"]),
        "agent": result["agent"]["id"],
        "agent-operator": result["agent"]["operator"] or "",
        "closure": "",  # merged: no closure, and its rescue class instead
        "rescue": result["rescue"]["class"],
        **{f"{name}-coverage": f"{c['coverage']:g}" for name, c in zip(
            ("agent-performance", "task-outcome-quality", "process-compliance"), result["categoryScores"],
            strict=True)},
        "result-path": "taskeval-result.json",
        "comment-url": first.outputs["comment-url"],
    }
    assert result["agent"]["id"] == "copilot"
    comments = taskeval_comments(fake)
    assert len(comments) == 1
    assert first.outputs["comment-url"] == comments[0]["html_url"]
    assert comments[0]["user"]["login"] == ACTIONS_BOT
    assert first.summary.strip() == comments[0]["body"].strip()
    assert f"{result['overallScore']}/100" in first.summary
    assert "comment created" in first.stdout

    # A re-run of the job updates the same comment instead of adding a second one.
    second = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"))
    assert second.code == 0
    assert len(taskeval_comments(fake)) == 1
    assert second.outputs["comment-url"] == first.outputs["comment-url"]
    assert "comment updated" in second.stdout
    writes = {route: fake.count(route=route) for route in (
        "user", "issues.comments", "issues.create_comment", "issues.update_comment")}
    if transport == "graphql":
        # The comment is written with mutations, found in what the collection read, and the
        # token's login is never asked (GET /user is refused but charged).
        assert mutations(fake) == ["TaskevalAddComment", "TaskevalUpdateComment"]
        assert writes == {"user": 0, "issues.comments": 0, "issues.create_comment": 0,
                          "issues.update_comment": 0}
    else:  # REST asks the login once a run (refused for the Actions token, so its bot's name)
        assert mutations(fake) == []
        assert (writes["user"], writes["issues.create_comment"], writes["issues.update_comment"]) \
            == (2, 1, 1)


@pytest.mark.one_transport
def test_each_run_costs_three_rest_requests_and_three_points(
    tmp_path: Path, fake: FakeGitHub,
) -> None:
    """What the cost model counts (BENCHMARKS.md): the 3 REST reads GraphQL lacks, the query,
    the labels of the issue the PR fixes (#12) and one mutation, so 1,000 requests and 1,000
    points an hour pay for 333 evaluations."""
    costs = []
    for _ in range(2):
        fake.reset_log()
        points = fake.graphql_points
        run = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"),
                         inputs={"api": "graphql"})
        assert run.code == 0, run.stdout + run.stderr
        rest = sorted(r.route for r in fake.log if r.route not in ("graphql", "rate_limit"))
        costs.append((rest, fake.count(route="graphql"), fake.graphql_points - points))
    reads = sorted(["issues.get", "issues.timeline", "actions.runs"])
    assert costs == [(reads, 3, 3), (reads, 3, 3)]


def test_a_marker_comment_by_someone_else_is_left_alone(tmp_path: Path, fake: FakeGitHub) -> None:
    pasted = fake.add_issue_comment(REPO, PR, f"{MARKER}\ncopied from elsewhere", user="mallory")
    for _ in range(2):
        run = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"))
        assert run.code == 0, run.stdout + run.stderr
    assert pasted["body"] == f"{MARKER}\ncopied from elsewhere"
    assert [c["user"]["login"] for c in taskeval_comments(fake)] == ["mallory", ACTIONS_BOT]


def test_two_runs_at_once_end_with_one_comment(tmp_path: Path, fake: FakeGitHub) -> None:
    """Two jobs evaluating the PR at the same time (a re-run while the first still runs)."""
    fake.latency = 0.05  # both collections overlap
    runs: list[ActionRun] = []
    jobs = [threading.Thread(target=lambda n=n: runs.append(run_action(
        tmp_path / f"job{n}", fake, "pull_request", payload("pull_request.closed.merged"))))
        for n in range(2)]
    for n, job in enumerate(jobs):
        (tmp_path / f"job{n}").mkdir()
        job.start()
    for job in jobs:
        job.join(timeout=180)
    assert [r.code for r in runs] == [0, 0], [r.stdout for r in runs]
    ours = taskeval_comments(fake)
    assert len(ours) == 1
    assert {r.outputs["comment-url"] for r in runs} == {ours[0]["html_url"]}


def test_over_rest_the_comment_is_written_over_rest(tmp_path: Path, fake: FakeGitHub) -> None:
    for _ in range(2):
        run = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"),
                         inputs={"api": "rest"})
        assert run.code == 0, run.stdout + run.stderr
    assert len(taskeval_comments(fake)) == 1
    assert fake.count(route="issues.create_comment") == 1
    assert fake.count(route="issues.update_comment") == 1
    assert mutations(fake) == []


@pytest.mark.one_transport
def test_the_action_gives_the_same_result_through_either_transport(
    tmp_path: Path, fake: FakeGitHub,
) -> None:
    """The default, GraphQL, and ``api: rest``: the same result but for its time, GraphQL in
    fewer requests (no comment: the first run's would be evidence for the second)."""
    results = {}
    for api in ("graphql", "rest"):
        fake.reset_log()
        inputs = {"comment": "false", "api": api}
        run = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"),
                         inputs=inputs)
        assert run.code == 0, run.stdout + run.stderr
        assert not run.annotations("warning"), run.stdout
        result = run.result()
        result.pop("evaluatedAt")
        results[api] = (result, fake.count(route="graphql"), fake.count())
    (graphql, queries, graphql_requests), (rest, none, rest_requests) = results.values()
    assert graphql == rest
    # The PR's query and the labels of the issue it fixes (#12); none over REST.
    assert (queries, none) == (2, 0) and graphql_requests < rest_requests
    assert taskeval_comments(fake) == []


def test_fail_under_fails_the_step_only_below_the_threshold(tmp_path: Path) -> None:
    gh = FakeGitHub(login=ACTIONS_BOT, integration=True)
    gh.add_pr(REPO, PR, ci="red")  # red CI at merge: far from a perfect score
    with gh.serve():
        failing = run_action(tmp_path, gh, "pull_request", payload("pull_request.closed.merged"),
                             inputs={"fail-under": "100"})
        score = int(failing.outputs["overall-score"])
        assert failing.code == 1
        assert [e for e in failing.annotations("error") if "fail-under" in e] == [
            f"::error title=taskeval below threshold::Overall score {score} "
            f"({failing.outputs['overall-band']}) is below fail-under 100"]
        assert failing.result()["overallScore"] == score  # the result is still written
        assert len(taskeval_comments(gh)) == 1  # and the comment still posted
        at_threshold = run_action(tmp_path, gh, "pull_request",
                                  payload("pull_request.closed.merged"),
                                  inputs={"fail-under": str(score), "comment": "false"})
    assert at_threshold.code == 0
    assert at_threshold.annotations("error") == []
    assert at_threshold.outputs["comment-url"] == ""
    assert gh.count(route="issues.update_comment") == 0


def test_evaluate_command_by_a_maintainer_is_acknowledged_and_evaluated(
    tmp_path: Path, fake: FakeGitHub,
) -> None:
    command = fake.add_issue_comment(REPO, PR, "/evaluate please, after the rebase", user="mona",
                                     author_association="MEMBER")
    event = payload("issue_comment.evaluate.maintainer", id=command["id"], body=command["body"])
    done = run_action(tmp_path, fake, "issue_comment", event)
    assert done.code == 0, done.stdout + done.stderr
    assert fake.count(route="repos.permission") == 1
    assert reactions(fake, command["id"]) == [("eyes", ACTIONS_BOT)]
    assert done.outputs["evaluated"] == "true"
    assert done.result()["trigger"] == "issue_comment"
    assert len(taskeval_comments(fake)) == 1


@pytest.mark.parametrize(
    ("permission", "role"), [("read", "read"), ("read", "triage"), ("none", "none")])
def test_evaluate_command_without_write_permission_is_refused(
    tmp_path: Path, fake: FakeGitHub, permission: str, role: str,
) -> None:
    fake.set_permission(REPO, "hubot-fan", permission, role_name=role)
    # The association says CONTRIBUTOR; only the permission API decides.
    command = fake.add_issue_comment(REPO, PR, "/evaluate", user="hubot-fan",
                                     author_association="CONTRIBUTOR")
    event = payload("issue_comment.evaluate.readonly", id=command["id"])
    refused = run_action(tmp_path, fake, "issue_comment", event)
    assert refused.code == 0
    notice = " ".join(refused.annotations("notice"))
    assert "needs write, maintain or admin" in notice and f"has '{role}'" in notice
    assert refused.outputs == {"evaluated": "false"}
    assert reactions(fake, command["id"]) == [("confused", ACTIONS_BOT)]
    assert fake.count(route="pulls.get") == 0
    assert taskeval_comments(fake) == []


@pytest.mark.parametrize(
    ("event", "fixture", "reason"),
    [
        ("issue_comment", "issue_comment.evaluate.bot", "written by a bot"),
        ("issue_comment", "issue_comment.own", "taskeval's own evaluation comment"),
        ("pull_request", "pull_request.closed.unmerged", "closed without being merged"),
        ("push", "push", "push ignored"),
    ],
)
def test_events_that_are_not_requests_are_skipped_without_calling_github(
    tmp_path: Path, fake: FakeGitHub, event: str, fixture: str, reason: str,
) -> None:
    skipped = run_action(tmp_path, fake, event, payload(fixture))
    assert skipped.code == 0
    assert any(reason in n for n in skipped.annotations("notice"))
    assert skipped.outputs == {"evaluated": "false"}
    assert f"Skipped: {reason}" in skipped.summary or reason in skipped.summary
    assert fake.log == []


def test_workflow_dispatch_evaluates_the_pr_from_the_form(tmp_path: Path, fake: FakeGitHub) -> None:
    done = run_action(tmp_path, fake, "workflow_dispatch", payload("workflow_dispatch"),
                      inputs={"comment": "false", "result-path": "out/eval.json"})
    assert done.code == 0, done.stdout + done.stderr
    assert done.outputs["result-path"] == "out/eval.json"
    assert (done.workspace / "out" / "eval.json").is_file()
    assert done.result()["trigger"] == "workflow_dispatch"
    assert taskeval_comments(fake) == []


# ------------------------------------------------------------------------------------ failures


@pytest.mark.parametrize("api", ["graphql", "rest"])
def test_read_only_token_still_writes_result_and_outputs_and_names_the_permission(
    tmp_path: Path, api: str,
) -> None:
    """The same error whether the comment's write was refused as a mutation's ``FORBIDDEN``
    (GraphQL) or a ``403`` (REST)."""
    gh = FakeGitHub(login=ACTIONS_BOT, integration=True, permissions={
        "metadata": "read", "contents": "read", "pull_requests": "read", "issues": "read",
        "checks": "read", "actions": "read"})
    gh.add_pr(REPO, PR, fork="contributor")
    with gh.serve():
        forked = run_action(tmp_path, gh, "pull_request", payload("pull_request.closed.merged"),
                            inputs={"api": api})
    assert forked.code == 0
    errors = forked.annotations("error")
    assert len(errors) == 1 and "pull-requests: write" in errors[0], errors
    assert "PRs from forks get a read-only token" in errors[0]
    assert forked.stderr == ""
    if api == "rest":  # PyGithub's own "Request ... failed with 403" lines are debug output
        assert "::debug::github." in forked.stdout
    else:
        assert mutations(gh) == ["TaskevalAddComment"]
    assert forked.outputs["evaluated"] == "true"
    assert forked.outputs["comment-url"] == ""
    assert forked.result()["overallScore"] == int(forked.outputs["overall-score"])
    assert taskeval_comments(gh) == []


def test_a_pr_that_cannot_be_read_fails_the_step_with_one_error(
    tmp_path: Path, fake: FakeGitHub,
) -> None:
    failed = run_action(tmp_path, fake, "workflow_dispatch", {"inputs": {}},
                        inputs={"pull-request": "999"})
    assert failed.code == 1
    errors = failed.annotations("error")
    assert len(errors) == 1 and f"Could not evaluate {REPO}#999" in errors[0]
    assert failed.outputs == {"evaluated": "false"}
    assert not (failed.workspace / "taskeval-result.json").exists()


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"ai": "maybe"}, "'ai' must be auto, on or off"),
        ({"fail-under": "120"}, "'fail-under' must be an integer 0..100"),
        ({"pull-request": "latest"}, "'pull-request' must be a pull request number"),
        ({"github-token": ""}, "Input 'github-token' is empty"),
    ],
)
def test_unusable_inputs_exit_2_with_the_input_named(
    tmp_path: Path, fake: FakeGitHub, inputs: dict[str, str], message: str,
) -> None:
    bad = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"),
                     inputs=inputs)
    assert bad.code == 2
    assert any(message in e for e in bad.annotations("error"))
    assert fake.log == []


def test_an_unreadable_event_payload_is_a_warning_not_a_crash(
    tmp_path: Path, fake: FakeGitHub,
) -> None:
    broken = run_action(tmp_path, fake, "pull_request", '{"action": "closed", "pull_req')
    assert broken.code == 0
    assert any("not valid JSON" in w for w in broken.annotations("warning"))
    assert any("'unknown' ignored" in n for n in broken.annotations("notice"))


# Conclusive signals weighed at 0 leave the overall resting on 40 % of its weight (agentPerformance
# 36 %, taskOutcomeQuality 50 %, processCompliance 25 %).
THIN_EVIDENCE = "signal_weights:\n" + "".join(f"  {s}: 0\n" for s in (
    "agent.human_intervention", "agent.text_hygiene", "agent.red_pushes", "agent.review_rounds",
    "agent.objections", "outcome.ci_head", "outcome.claims", "outcome.test_evidence",
    "outcome.post_approval_changes", "process.ci_at_merge", "process.human_approval", "process.change_size",
    "process.conventional_commits", "process.task_reference", "process.template_filled"))


def test_a_provisional_overall_is_said_in_the_outputs_and_the_summarys_first_line(
    tmp_path: Path, fake: FakeGitHub, transport: str,
) -> None:
    fake.set_config(REPO, THIN_EVIDENCE)
    done = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"))
    assert done.code == 0, done.stdout + done.stderr
    result = done.result()
    assert not result["config"]["errors"]
    coverage = {c["category"]: c["coverage"] for c in result["categoryScores"]}
    assert coverage["taskOutcomeQuality"] >= 0.5  # not every category is provisional; the overall is
    assert (done.outputs["overall-provisional"], done.outputs["overall-coverage"]) == ("true", "0.3955")
    first = done.summary.splitlines()[1]
    assert first == (f"## taskeval: {result['overallScore']}/100 — {BAND_ICONS[result['overallBand']]} "
                     f"{result['overallBand']} (provisional)")
    assert "Provisional overall: only 40 % of the overall's signal weight had data" in done.summary
    assert f"{first[3:]}" in done.stdout  # the log line says it too
    assert taskeval_comments(fake)[0]["body"].splitlines()[1] == first


def test_config_problems_become_warnings_on_the_config_file(
    tmp_path: Path, fake: FakeGitHub,
) -> None:
    fake.set_config(REPO, "thresholds:\n  comfortable_change_lines: many\n")
    done = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"))
    assert done.code == 0
    warnings = [w for w in done.annotations("warning") if "title=taskeval config" in w]
    assert len(warnings) == 1
    assert "file=.github/taskeval.yml" in warnings[0]
    assert "comfortable_change_lines" in warnings[0]
    assert done.result()["config"]["errors"]


# ------------------------------------------------------------------------------------ AI inputs


def test_ai_inputs_reach_the_judge_and_the_key_never_leaks(tmp_path: Path, fake: FakeGitHub) -> None:
    key = "sk-test-action-secret-9f8e7d6c5b4a"
    with FakeOpenAI(api_key=key) as model_server:
        done = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"),
                          inputs={"ai": "on", "openai-api-key": key,
                                  "openai-base-url": model_server.base_url,
                                  "model": "judge-model-x"})
        sent = model_server.requests
    assert done.code == 0, done.stdout + done.stderr
    assert len(sent) == 1
    assert sent[0].body["model"] == "judge-model-x"
    assert sent[0].headers["authorization"] == f"Bearer {key}"
    assert done.result()["judge"]["status"] == "ok"
    assert [c["aiScore"] for c in done.result()["categoryScores"]] == [80, 80, 80]
    assert f"::add-mask::{key}" in done.stdout
    stdout_without_mask = done.stdout.replace(f"::add-mask::{key}", "")
    comment = taskeval_comments(fake)[0]["body"]
    for text in (stdout_without_mask, done.stderr, done.summary, comment,
                 (done.workspace / "taskeval-result.json").read_text()):
        assert key not in text
    assert FAKE_TOKEN not in stdout_without_mask.replace(f"::add-mask::{FAKE_TOKEN}", "")


def test_ai_on_without_any_endpoint_is_a_degraded_warning(tmp_path: Path, fake: FakeGitHub) -> None:
    # A GHES-style API URL: GitHub Models is not offered there, and no OpenAI key is given.
    done = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"),
                      inputs={"ai": "on"})
    assert done.code == 0
    assert done.result()["judge"]["status"] == "error"
    assert any("title=taskeval evaluation degraded" in w and "AI judge" in w
               for w in done.annotations("warning"))


# -------------------------------------------------------------------- every event, in process


@pytest.mark.parametrize("event", DOCUMENTED_EVENTS)
def test_every_documented_event_type_ends_cleanly(tmp_path: Path, event: str) -> None:
    """Each event with a payload of the common webhook shape: a notice or a run, never a crash.
    Nothing may be requested from GitHub here (no PR is named)."""
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps({
        "action": "created", "repository": {"full_name": REPO}, "sender": {"login": "mona"},
        "installation": {"id": 1},
    }))
    out = io.StringIO()
    env = {"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": str(event_file),
           "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": "http://127.0.0.1:9",
           "GITHUB_WORKSPACE": str(tmp_path), "GITHUB_OUTPUT": str(tmp_path / "out"),
           "INPUT_GITHUB-TOKEN": FAKE_TOKEN}
    code = run(env, out)
    assert code == 0
    assert "::notice title=taskeval skipped::" in out.getvalue()
    assert parse_output_file((tmp_path / "out").read_text()) == {"evaluated": "false"}


@pytest.mark.parametrize(("spent", "how"), [("graphql", "env"), ("core", "env"),
                                            ("graphql", "input"), ("core", "input")])
def test_the_action_stops_short_of_the_reserve_the_workflow_keeps(
    tmp_path: Path, fake: FakeGitHub, spent: str, how: str,
) -> None:
    """TASKEVAL_RATE_RESERVE / TASKEVAL_GRAPHQL_RESERVE in the step's env, or the inputs
    rate-reserve / graphql-reserve: the GITHUB_TOKEN's
    budget (1,000 requests and 1,000 points an hour per repository) is shared with the
    workflow's other steps, so the Action sends nothing that would spend into what they keep,
    whichever of the two budgets is low, and says so in one line."""
    if spent == "graphql":
        fake.graphql_remaining = 100
    else:
        fake.rate_remaining = 100
    before = (fake.rate_remaining, fake.graphql_remaining)
    reserves = {"rate-reserve": "100", "graphql-reserve": "100"}
    done = run_action(tmp_path, fake, "pull_request", payload("pull_request.closed.merged"),
                      inputs={"api": "graphql", **(reserves if how == "input" else {})},
                      extra_env={"TASKEVAL_RATE_RESERVE": "100", "TASKEVAL_GRAPHQL_RESERVE": "100"}
                      if how == "env" else {})
    assert done.code == 1 and done.outputs.get("evaluated") == "false"
    errors = done.annotations("error")
    name = "TASKEVAL_GRAPHQL_RESERVE" if spent == "graphql" else "TASKEVAL_RATE_RESERVE"
    assert len(errors) == 1 and name in errors[0] and "reserve" in errors[0], done.stdout
    if spent == "graphql":
        assert fake.graphql_queries == [] and fake.graphql_remaining == before[1]
    else:
        assert fake.rate_remaining == before[0]
    assert taskeval_comments(fake) == []
