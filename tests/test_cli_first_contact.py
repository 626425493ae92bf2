"""What a new user hits first with the CLI, as a real process against the fake GitHub server:
expected failures end in one line and exit 2, never a traceback, and they are found before the
evaluation does any work."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from taskeval.models import SCHEMA_VERSION
from taskeval.report import MARKER
from tests.fakegithub import FAKE_TOKEN, FakeGitHub
from tests.processes import one_line
from tests.test_cli import REPO, run_cli

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agent-pr-482.result.json"
APP_TOKEN = "ghs_InstallationTokenForTheCli0000000000000"



@pytest.fixture
def env(fake: FakeGitHub, tmp_path: Path) -> dict[str, str]:
    return {"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": fake.url, "TASKEVAL_CACHE_DIR": str(tmp_path / "cache")}



# ------------------------------------------------------------------ --output (item 3)

def _unwritable_outputs(tmp_path: Path) -> list[tuple[str, str]]:
    a_file = tmp_path / "a-file.json"
    a_file.write_text("{}")
    return [
        (str(tmp_path), "is a directory"),
        ("/tmp", "is a directory"),
        ("/etc/passwd/x.json", "/etc/passwd is not a directory"),
        (str(a_file / "deeper" / "x.json"), "is not a directory"),
    ]


@pytest.mark.parametrize("case", range(4))
def test_score_output_that_cannot_be_written_is_one_line(tmp_path: Path, case: int) -> None:
    path, says = _unwritable_outputs(tmp_path)[case]
    proc = run_cli("score", str(EXAMPLE), "--no-ai", "--output", path)
    one_line(proc, prefix="taskeval: ")
    assert says in proc.stderr and "--output" in proc.stderr
    assert proc.stdout == ""


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_output_in_a_read_only_directory_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    proc = run_cli("score", str(EXAMPLE), "--no-ai", "--output", str(locked / "r.json"))
    one_line(proc, prefix="taskeval: ")
    assert "permission denied" in proc.stderr


def test_evaluate_checks_output_before_any_github_call(fake: FakeGitHub, env: dict[str, str],
                                                      tmp_path: Path) -> None:
    fake.add_pr(REPO, 9)
    proc = run_cli("evaluate", f"{REPO}#9", "--no-ai", "--output", str(tmp_path), env=env)
    one_line(proc, prefix="taskeval: ")
    assert fake.log == []  # no request: nothing was evaluated for nothing


def test_schema_output_to_a_directory_is_refused(tmp_path: Path) -> None:
    one_line(run_cli("schema", "config", "--output", str(tmp_path)), prefix="taskeval: ")


def test_output_into_a_new_directory_still_works(tmp_path: Path) -> None:
    out = tmp_path / "new" / "dir" / "r.json"
    proc = run_cli("score", str(EXAMPLE), "--no-ai", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["overallScore"] >= 0


# ------------------------------------------------------------------ GITHUB_API_URL (item 3)

@pytest.mark.parametrize("url", ["ghes.example.com/api/v3", "ftp://ghes.example.com/api/v3", "https://"])
def test_malformed_github_api_url_is_one_line(url: str, tmp_path: Path) -> None:
    proc = run_cli("evaluate", "octo-org/widgets#1", "--no-ai",
                   env={"GITHUB_TOKEN": "ghp_x", "GITHUB_API_URL": url})
    one_line(proc, prefix="taskeval: ")
    assert "GITHUB_API_URL" in proc.stderr and "https://ghes.example.com/api/v3" in proc.stderr


# ------------------------------------------------------------------ newer schemaVersion (item 5)

@pytest.mark.parametrize("where", ["result", "bundle"])
def test_a_result_from_a_newer_taskeval_is_refused_naming_both_versions(tmp_path: Path, where: str) -> None:
    data = json.loads(EXAMPLE.read_text())
    newer = str(int(SCHEMA_VERSION) + 1)
    if where == "result":
        data["schemaVersion"] = newer
        path = tmp_path / "newer.result.json"
    else:
        data = data["evidence"]
        data["schemaVersion"] = newer
        path = tmp_path / "newer.bundle.json"
    path.write_text(json.dumps(data))
    proc = run_cli("score", str(path), "--no-ai")
    one_line(proc, prefix="taskeval: ")
    assert f"schemaVersion {newer}" in proc.stderr and f"schemaVersion {SCHEMA_VERSION}" in proc.stderr
    assert "newer taskeval" in proc.stderr and proc.stdout == ""


def test_a_result_of_this_schema_version_still_rescores() -> None:
    proc = run_cli("score", str(EXAMPLE), "--no-ai")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schemaVersion"] == SCHEMA_VERSION


# ------------------------------------------------------------------ --comment-as (item 2)

def _app_token_env(fake: FakeGitHub, env: dict[str, str]) -> dict[str, str]:
    fake.add_token(APP_TOKEN, "my-app[bot]", integration=True)
    return {**env, "GITHUB_TOKEN": APP_TOKEN}


@pytest.mark.one_transport
def test_comment_over_rest_with_an_app_token_outside_actions_names_the_flag_before_evaluating(
    fake: FakeGitHub, env: dict[str, str]
) -> None:
    fake.add_pr(REPO, 11)
    proc = run_cli("evaluate", f"{REPO}#11", "--no-ai", "--comment", "--api", "rest",
                   env=_app_token_env(fake, env))
    one_line(proc, prefix="taskeval: ")
    assert "--comment-as LOGIN" in proc.stderr and "TASKEVAL_COMMENT_AS" in proc.stderr
    assert "own_login" not in proc.stderr
    assert proc.stdout == ""
    assert not [c for c in fake.comments(REPO, 11) if c["body"].startswith(MARKER)]
    assert not [r for r in fake.log if r.route != "user"]  # only GET /user was asked


@pytest.mark.parametrize("how", ["flag", "env"])
def test_comment_as_posts_and_then_updates_the_one_comment(
    fake: FakeGitHub, env: dict[str, str], how: str
) -> None:
    fake.add_pr(REPO, 12)
    app_env = _app_token_env(fake, env)
    args = ["--comment-as", "my-app[bot]"] if how == "flag" else []
    if how == "env":
        app_env["TASKEVAL_COMMENT_AS"] = "my-app[bot]"
    for expected in ("created", "updated"):
        proc = run_cli("evaluate", f"{REPO}#12", "--no-ai", "--comment", *args, env=app_env)
        assert proc.returncode == 0, proc.stderr
        assert f"comment {expected}" in proc.stderr
    ours = [c for c in fake.comments(REPO, 12) if c["body"].startswith(MARKER)]
    assert len(ours) == 1 and ours[0]["user"]["login"] == "my-app[bot]"
    assert not [r for r in fake.log if r.route == "user"]  # the login was given: /user not asked


@pytest.mark.one_transport
def test_over_graphql_an_app_token_needs_no_comment_as(fake: FakeGitHub, env: dict[str, str]) -> None:
    """The read says which marker comments the token wrote (``viewerDidAuthor``): no login is
    asked, named or guessed, and the second run updates the first run's comment."""
    fake.add_pr(REPO, 14)
    app_env = _app_token_env(fake, env)
    for expected in ("created", "updated"):
        proc = run_cli("evaluate", f"{REPO}#14", "--no-ai", "--comment", "--api", "graphql",
                       env=app_env)
        assert proc.returncode == 0, proc.stderr
        assert f"comment {expected}" in proc.stderr
    ours = [c for c in fake.comments(REPO, 14) if c["body"].startswith(MARKER)]
    assert len(ours) == 1 and ours[0]["user"]["login"] == "my-app[bot]"
    assert not [r for r in fake.log if r.route == "user"]


@pytest.mark.one_transport  # the fallback from GraphQL
def test_a_fallback_to_rest_that_cannot_tell_the_login_keeps_the_result(
    fake: FakeGitHub, env: dict[str, str], tmp_path: Path,
) -> None:
    """A server without GraphQL: the evaluation falls back to REST, which needs the login to
    find the comment; GitHub refuses /user to an App token, so the comment is not posted, the
    flag is named, and the result is printed and written all the same."""
    fake.add_pr(REPO, 15)
    fake.graphql_enabled = False
    out = tmp_path / "result.json"
    proc = run_cli("evaluate", f"{REPO}#15", "--no-ai", "--comment", "--api", "graphql", "--output", str(out),
                   env=_app_token_env(fake, env))
    assert proc.returncode == 1, proc.stderr  # the evaluation ran; its side effect did not
    assert "could not post the comment" in proc.stderr and "--comment-as LOGIN" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads(out.read_text())["pullRequest"]["number"] == 15
    assert MARKER in proc.stdout  # the comment's text, printed
    assert not [c for c in fake.comments(REPO, 15) if c["body"].startswith(MARKER)]


@pytest.mark.parametrize(("api", "asked"), [("rest", [200]), ("graphql", [])])
def test_a_personal_token_still_finds_its_login_by_itself(
    fake: FakeGitHub, env: dict[str, str], api: str, asked: list[int],
) -> None:
    fake.add_pr(REPO, 13)
    proc = run_cli("evaluate", f"{REPO}#13", "--no-ai", "--comment", "--api", api, env=env)
    assert proc.returncode == 0, proc.stderr
    assert [r.status for r in fake.log if r.route == "user"] == asked
    assert len([c for c in fake.comments(REPO, 13) if c["body"].startswith(MARKER)]) == 1


def test_comment_as_must_be_a_login(fake: FakeGitHub, env: dict[str, str]) -> None:
    proc = run_cli("evaluate", f"{REPO}#1", "--comment", "--comment-as", "not a login!", env=env)
    one_line(proc, prefix="taskeval: ")
    assert "--comment-as must be a GitHub login" in proc.stderr and fake.log == []


def test_comment_without_a_token_fails_before_the_evaluation(fake: FakeGitHub, env: dict[str, str]) -> None:
    fake.add_pr(REPO, 14)
    anonymous = {k: v for k, v in env.items() if k != "GITHUB_TOKEN"}
    proc = run_cli("evaluate", f"{REPO}#14", "--no-ai", "--comment", env=anonymous)
    one_line(proc, prefix="taskeval: ")
    assert "GITHUB_TOKEN" in proc.stderr and fake.log == [] and proc.stdout == ""


def test_schema_piped_into_head_ends_quietly() -> None:
    import subprocess
    import sys

    proc = subprocess.run(f"{sys.executable} -m taskeval schema config | head -c 10",
                          shell=True, capture_output=True, text=True, timeout=60)
    assert proc.stdout == '{\n  "$defs' and "Traceback" not in proc.stderr


def test_inside_actions_the_workflow_token_posts_as_github_actions_bot(
    fake: FakeGitHub, env: dict[str, str]
) -> None:
    fake.add_pr(REPO, 15)
    fake.add_token("ghs_WorkflowToken000000000000000000000000", "github-actions[bot]", integration=True)
    actions = {**env, "GITHUB_TOKEN": "ghs_WorkflowToken000000000000000000000000", "GITHUB_ACTIONS": "true"}
    proc = run_cli("evaluate", f"{REPO}#15", "--no-ai", "--comment", env=actions)
    assert proc.returncode == 0, proc.stderr
    ours = [c for c in fake.comments(REPO, 15) if c["body"].startswith(MARKER)]
    assert [c["user"]["login"] for c in ours] == ["github-actions[bot]"]
