"""The ``taskeval`` command as users run it: a real process against a local fake GitHub."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from taskeval.models import EvaluationResult
from taskeval.report import MARKER
from tests.fakegithub import FAKE_TOKEN, FakeGitHub
from tests.processes import child_env

REPO = "octo-org/widgets"


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taskeval", *args],
        env=child_env(**(env or {})),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )



@pytest.fixture
def env(fake: FakeGitHub, tmp_path: Path) -> dict[str, str]:
    return {"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": fake.url, "TASKEVAL_CACHE_DIR": str(tmp_path / "cache")}


def test_evaluate_prints_comment_and_writes_a_valid_result(
    fake: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    fake.add_pr(REPO, 482, commits=4, ci="fail-then-fix")
    out = tmp_path / "out" / "result.json"
    proc = run_cli("evaluate", f"{REPO}#482", "--output", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(MARKER)
    assert "Traceback" not in proc.stderr
    result = EvaluationResult.model_validate_json(out.read_text())
    assert result.repository == REPO and result.pull_request.number == 482
    assert next(g.source for g in result.evidence.groups) == "taskMetadata"
    assert result.judge.status == "off"  # no AI key: deterministic only, and it says why
    assert all(c.ai_score is None and c.final_score == c.deterministic_score for c in result.category_scores)
    assert f"{result.overall_score}/100" in proc.stdout
    assert fake.comments(REPO, 482) == [] or all(not c["body"].startswith(MARKER) for c in fake.comments(REPO, 482))


def test_comment_is_created_once_then_updated(fake: FakeGitHub, env: dict[str, str]) -> None:
    fake.add_pr(REPO, 7, commits=2)
    first = run_cli("evaluate", f"{fake.url}/{REPO}/pull/7", "--comment", env=env)  # its web URL
    assert first.returncode == 0, first.stderr
    assert "comment created" in first.stderr
    second = run_cli("evaluate", f"{REPO}#7", "--comment", "--no-ai", env=env)
    assert second.returncode == 0, second.stderr
    assert "comment updated" in second.stderr
    ours = [c for c in fake.comments(REPO, 7) if c["body"].startswith(MARKER)]
    assert len(ours) == 1


def test_evaluate_gives_the_same_result_through_either_transport(
    fake: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    """``--api graphql`` (the default) and ``--api rest``: the same result file but for its time."""
    fake.add_pr(REPO, 482, commits=4, ci="fail-then-fix")
    results = []
    for api in ("graphql", "rest"):
        out = tmp_path / f"{api}.json"
        proc = run_cli("evaluate", f"{REPO}#482", "--no-ai", "--api", api, "--output", str(out),
                       env=env)
        assert proc.returncode == 0, proc.stderr
        assert "GraphQL" not in proc.stderr  # no fallback
        result = json.loads(out.read_text())
        result.pop("evaluatedAt")
        results.append(result)
    assert results[0] == results[1]


def test_collection_makes_one_request_per_page_for_150_commits(fake: FakeGitHub, env: dict[str, str]) -> None:
    """No N+1: 150 commits cost two commit pages, not 150 commit requests (GraphQL, the default:
    the first query holds 50 of them and one node(id:) query the other 100, one more the labels
    of the issue the PR fixes; REST still reads what GraphQL lacks, one request a page)."""
    fake.add_pr(REPO, 150, commits=150)
    fake.reset_log()
    proc = run_cli("evaluate", f"{REPO}#150", "--no-ai", "--api", "graphql", env=env)
    assert proc.returncode == 0, proc.stderr
    assert dict(fake.counts()) == {"graphql": 3, "issues.get": 1, "issues.timeline": 2,
                                   "actions.runs": 2}
    fake.reset_log()
    proc = run_cli("evaluate", f"{REPO}#150", "--no-ai", "--api", "rest", env=env)
    assert proc.returncode == 0, proc.stderr
    # REST: one request per page of each resource: 150 commits, their 150 workflow runs and the
    # timeline that lists the commits are two pages each; the PR's issue object (the App it was
    # opened through) is one request, and the issue the PR fixes (#12, for its labels) one more
    assert dict(fake.counts()) == {
        "repos.get": 1,
        "pulls.get": 1,
        "issues.get": 2,
        "pulls.commits": 2,
        "actions.runs": 2,
        "pulls.reviews": 1,
        "pulls.review_comments": 1,
        "issues.comments": 1,
        "issues.timeline": 2,
        "pulls.files": 1,
        "checks.list": 1,
        "repos.contents": 1,
    }


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("evaluate", f"{REPO}#999"), "999"),
        (("evaluate", "nobody/nothing#1"), "nobody/nothing"),
        (("evaluate", "not a pr reference"), "not a pr reference"),
        (("evaluate", f"{REPO}#1", "--config", "/nonexistent/taskeval.yml"), "/nonexistent/taskeval.yml"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    fake: FakeGitHub, env: dict[str, str], args: tuple[str, ...], fragment: str
) -> None:
    fake.add_pr(REPO, 1)
    proc = run_cli(*args, env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_token_is_a_clear_error_without_the_token(fake: FakeGitHub, env: dict[str, str]) -> None:
    fake.add_pr(REPO, 3)
    secret = "ghp_WrongToken1234567890abcdefghijklmnop"
    proc = run_cli("evaluate", f"{REPO}#3", env={**env, "GITHUB_TOKEN": secret})
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert secret not in proc.stderr + proc.stdout
    assert "credentials" in proc.stderr.lower() or "token" in proc.stderr.lower()


def test_missing_token_still_reads_a_public_repo(fake: FakeGitHub, env: dict[str, str]) -> None:
    fake.add_pr(REPO, 5)
    anonymous = {k: v for k, v in env.items() if k != "GITHUB_TOKEN"}
    proc = run_cli("evaluate", f"{REPO}#5", "--no-ai", env=anonymous)
    assert proc.returncode == 0, proc.stderr
    assert "GITHUB_TOKEN is not set" in proc.stderr
    assert proc.stdout.startswith(MARKER)
    refused = run_cli("evaluate", f"{REPO}#5", "--no-ai", "--comment", env=anonymous)
    assert refused.returncode == 2 and "--comment needs a token" in refused.stderr
    assert refused.stdout == ""  # refused before the evaluation, not after it


def test_a_blank_github_token_falls_back_to_gh_token(fake: FakeGitHub, env: dict[str, str]) -> None:
    fake.add_pr(REPO, 6)
    proc = run_cli("evaluate", f"{REPO}#6", "--no-ai", env={**env, "GITHUB_TOKEN": " ", "GH_TOKEN": FAKE_TOKEN})
    assert proc.returncode == 0, proc.stderr
    assert "GITHUB_TOKEN is not set" not in proc.stderr  # read with GH_TOKEN, not anonymously
    # Which variable wins, and what counts as blank: tests/test_github_client.py's table of env_token.


def test_broken_repo_config_is_reported_and_defaults_apply(
    fake: FakeGitHub, env: dict[str, str], tmp_path: Path
) -> None:
    fake.add_pr(REPO, 9, config_text="thresholds:\n  comfortable_change_lines: lots\n")
    out = tmp_path / "r.json"
    proc = run_cli("evaluate", f"{REPO}#9", "--no-ai", "--output", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["config"]["source"] == "repo:.github/taskeval.yml"
    assert any("thresholds.comfortable_change_lines" in e for e in result["config"]["errors"])
    assert "thresholds.comfortable\\_change\\_lines" in proc.stdout  # named in the comment too
    assert "Config problem" in proc.stderr


def test_score_is_byte_identical_and_offline(fake: FakeGitHub, env: dict[str, str], tmp_path: Path) -> None:
    fake.add_pr(REPO, 11, commits=6, ci="red")
    stored = tmp_path / "stored.json"
    assert run_cli("evaluate", f"{REPO}#11", "--no-ai", "--output", str(stored), env=env).returncode == 0
    offline = {"GITHUB_API_URL": "http://127.0.0.1:9", "TASKEVAL_CACHE_DIR": env["TASKEVAL_CACHE_DIR"]}
    first = run_cli("score", str(stored), "--no-ai", env=offline)
    second = run_cli("score", str(stored), "--no-ai", env=offline)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    original = json.loads(stored.read_text())
    rescored = json.loads(first.stdout)
    assert rescored["trigger"] == "rescore"
    assert rescored["evaluatedAt"] == original["evaluatedAt"]
    assert [c["finalScore"] for c in rescored["categoryScores"]] == [
        c["finalScore"] for c in original["categoryScores"]
    ]
    # a bare bundle re-scores too
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps(original["evidence"]))
    from_bundle = run_cli("score", str(bundle), "--no-ai", env=offline)
    assert from_bundle.returncode == 0, from_bundle.stderr
    assert json.loads(from_bundle.stdout)["overallScore"] == original["overallScore"]


def test_score_with_local_config_changes_the_result(fake: FakeGitHub, env: dict[str, str], tmp_path: Path) -> None:
    fake.add_pr(REPO, 12, commits=3)
    stored = tmp_path / "stored.json"
    assert run_cli("evaluate", f"{REPO}#12", "--no-ai", "--output", str(stored), env=env).returncode == 0
    cfg = tmp_path / "cfg.yml"
    cfg.write_text("disabled_signals: [process.conventional_commits]\n")
    proc = run_cli("score", str(stored), "--no-ai", "--config", str(cfg), env={})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["config"]["source"] == f"file:{cfg}"
    assert "process.conventional_commits" not in {s["id"] for s in data["signals"]}


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d["evidence"].pop("groups"), "evidence.groups"),
        (lambda d: d["evidence"]["groups"][1].__setitem__("total", -1), "evidence.groups.1.total"),
        (lambda d: d["evidence"]["groups"].reverse(), "groups must be exactly"),
        (lambda d: d["evidence"]["facts"]["pull"].__setitem__("number", "many"), "evidence.facts.pull.number"),
        (lambda d: d.__setitem__("bundleHash", "0" * 64), "bundleHash does not match"),
    ],
)
def test_score_names_the_bad_field(
    fake: FakeGitHub, env: dict[str, str], tmp_path: Path, mutate, fragment: str
) -> None:
    fake.add_pr(REPO, 13)
    stored = tmp_path / "stored.json"
    assert run_cli("evaluate", f"{REPO}#13", "--no-ai", "--output", str(stored), env=env).returncode == 0
    data = json.loads(stored.read_text())
    mutate(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    proc = run_cli("score", str(bad), "--no-ai", env={})
    assert proc.returncode == 2
    assert fragment in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("content", "fragment"), [("{not json", "not valid JSON"), ("[1, 2]", "expected a JSON object")]
)
def test_score_rejects_non_bundles(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    proc = run_cli("score", str(path), env={})
    assert proc.returncode == 2 and fragment in proc.stderr


def test_schema_describes_the_result() -> None:
    proc = run_cli("schema", env={})
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    for key in ("schemaVersion", "scorerVersion", "overallScore", "categoryScores", "evidence", "bundleHash", "judge"):
        assert key in schema["properties"], key


def test_serve_without_the_bot_extra_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A core-only install (the Action image ships no bot/) still lists `serve`, and running it
    names the missing extra."""
    from taskeval import cli

    monkeypatch.setitem(sys.modules, "bot.cli", None)  # its entry point cannot be loaded
    assert "serve" in cli.build_parser().format_help()
    assert cli.main(["serve"]) == 2
    assert "pip install 'taskeval[bot]'" in capsys.readouterr().err
