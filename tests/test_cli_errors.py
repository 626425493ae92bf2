"""Every command's expected failures, as a user meets them through the real entry point: one line
on stderr, never a traceback, the documented exit code (2 bad input, 3 try again later), and
nothing done or written before the refusal. GitHub is the local fake server (tests/fakegithub.py)
for processes, ``responses`` in process."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from taskeval import cli
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault
from tests.processes import child_env, one_line
from tests.test_cli import REPO, run_cli

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent-pr-482.result.json"
EXAMPLES = ROOT / "examples"



@pytest.fixture
def env(fake: FakeGitHub, tmp_path: Path) -> dict[str, str]:
    return {"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": fake.url,
            "TASKEVAL_CACHE_DIR": str(tmp_path / "cache")}



def run_without(modules: list[str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI entry point in a process where ``modules`` cannot be imported (an install without
    the extra that brings them)."""
    code = ("import sys\n"
            "for name in sys.argv[1].split(','):\n"
            "    sys.modules[name] = None  # import fails, find_spec says absent\n"
            "from taskeval.cli import main\n"
            "sys.exit(main(sys.argv[2:]))\n")
    return subprocess.run([sys.executable, "-c", code, ",".join(modules), *args], env=child_env(),
                          capture_output=True, text=True, timeout=120, cwd=cwd)


# ------------------------------------------------------------------ flags argparse now checks

@pytest.mark.parametrize(("args", "says"), [
    (("score", str(EXAMPLE), "--jobs", "0"), "argument --jobs: must be at least 1, got 0"),
    (("score", str(EXAMPLE), "--jobs", "-2"), "argument --jobs: must be at least 1, got -2"),
    (("score", str(EXAMPLE), "--jobs", "two"), "argument --jobs: expected a whole number"),
    (("calibrate", "--folds", "0"), "argument --folds: must be between 2 and 10, got 0"),
    (("calibrate", "--folds", "1"), "argument --folds: must be between 2 and 10, got 1"),
    (("calibrate", "--folds", "500"), "argument --folds: must be between 2 and 10, got 500"),
    (("calibrate", "--strength", "-1"), "argument --strength: must be at least 0, got -1"),
    (("calibrate", "--strength", "nan"), "argument --strength: must be at least 0, got nan"),
    (("calibrate", "--category", "speed"), "argument --category: invalid choice: 'speed'"),
    (("validate", "--bootstrap", "-5"), "argument --bootstrap: must be between 20 and 10000, got -5"),
    (("outcomes", "--max-requests", "0"), "argument --max-requests: must be at least 1"),
    (("outcomes", "--window-days", "0"), "argument --window-days: must be more than 0"),
    (("frobnicate",), "invalid choice: 'frobnicate'"),
])
def test_bad_flags_are_one_line_naming_the_flag_and_the_rule(args: tuple[str, ...], says: str,
                                                           tmp_path: Path) -> None:
    proc = run_cli(*args, cwd=tmp_path)
    line = one_line(proc)
    assert says in line and "--help" in line
    assert proc.stdout == "" and list(tmp_path.iterdir()) == []  # nothing ran, nothing written


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("command", ["evaluate", "score", "schema", "outcomes", "validate", "calibrate",
                                     "backfill", "dashboard", "serve", "worker"])
def test_every_argument_of_every_command_says_what_it_is(command: str) -> None:
    parser = _parsers()[command]
    undocumented = [a.dest for a in parser._actions
                    if a.help is None and not isinstance(a, argparse._HelpAction)]
    assert undocumented == []


@pytest.mark.parametrize("command", ["outcomes", "validate", "calibrate"])
def test_the_statistics_commands_describe_themselves(command: str) -> None:
    proc = run_cli(command, "--help")
    assert proc.returncode == 0
    described = _parsers()[command].description or ""
    assert len(described) > 100 and " ".join(described.split()[:4]) in " ".join(proc.stdout.split())


def test_calibrate_help_names_the_categories_and_the_defaults() -> None:
    text = " ".join(run_cli("calibrate", "--help").stdout.split())
    assert "{agentPerformance,taskOutcomeQuality,processCompliance}" in text
    assert "(default agentPerformance)" in text and "(default 5; 2 to 10)" in text


# ------------------------------------------------------------------ a missing extra

@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "r.json").write_text(EXAMPLE.read_text())
    return folder


@pytest.mark.parametrize(("blocked", "command", "extra"), [
    (["flask"], ["dashboard"], "dashboard needs the bot extra (flask is not installed): pip install 'taskeval[bot]'"),
    (["sqlalchemy"], ["dashboard"], "dashboard needs the bot extra (sqlalchemy is not installed)"),
    (["sqlalchemy"], ["backfill", REPO], "backfill needs the bot extra (sqlalchemy is not installed)"),
    (["numpy"], ["validate"], "validate needs the validate extra (numpy is not installed): "
                              "pip install 'taskeval[validate]'"),
    (["matplotlib"], ["validate"], "validate needs the validate extra (matplotlib is not installed)"),
    (["scipy"], ["calibrate"], "calibrate needs the validate extra (scipy is not installed)"),
    (["sqlalchemy"], ["validate", "--store", "sqlite:///x.db"], "validate needs the bot extra (sqlalchemy"),
])
def test_a_missing_extra_is_named_before_anything_is_written(
        blocked: list[str], command: list[str], extra: str, results: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    args = [*command]
    if command[0] in ("validate", "calibrate") and "--store" not in command:
        args += ["--results", str(results)]
    if command[0] == "validate":
        args += ["--output-dir", str(out)]
    proc = run_without(blocked, *args, cwd=tmp_path)
    assert one_line(proc) == f"taskeval: {extra}" or extra in one_line(proc)
    assert not out.exists() and not (tmp_path / "taskeval.db").exists() and not (tmp_path / "x.db").exists()


# ------------------------------------------------------------------ backfill

def test_backfill_of_a_repository_that_does_not_exist_is_bad_input(fake: FakeGitHub, env: dict[str, str],
                                                                  tmp_path: Path) -> None:
    proc = run_cli("backfill", "nobody/nothing", "--store", f"sqlite:///{tmp_path / 's.db'}", env=env)
    assert one_line(proc) == ("taskeval backfill: repository nobody/nothing not found, or the token "
                              "cannot see it")
    assert proc.stdout == ""


def test_backfill_that_cannot_reach_github_stops_at_the_first_request(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A closed port: one line, exit 3 (try again), and the listing does not spend another round
    of retries on the same dead address after the rate-limit lookup did."""
    import requests
    import responses

    monkeypatch.setenv("GITHUB_TOKEN", FAKE_TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", "https://api.github.com")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add(responses.GET, re.compile(r"https://api\.github\.com/.*"),
                 body=requests.ConnectionError("Connection refused"))
        code = cli.main(["backfill", REPO, "--store", f"sqlite:///{tmp_path / 's.db'}"])
        calls = [c.request.url for c in mock.calls]
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 3
    assert err == [f"taskeval backfill: could not reach GitHub for repository {REPO} (ConnectionError)"]
    assert len(calls) == 1 and "/rate_limit" in calls[0]


# ------------------------------------------------------------------ outcomes

@pytest.mark.parametrize(("repo", "fault", "code", "says"), [
    ("nobody/nothing", None, 2, "taskeval: repository nobody/nothing not found, or the token cannot see it"),
    ("notarepo", None, 2, "taskeval: expected a repository as OWNER/NAME, got 'notarepo'"),
    (REPO, Fault.unauthorized(), 2, "taskeval: GitHub rejected the credentials"),
])
def test_outcomes_of_a_repository_github_will_not_show(
        fake: FakeGitHub, env: dict[str, str], tmp_path: Path, repo: str, fault: Fault | None, code: int,
        says: str) -> None:
    fake.add_pr(REPO, 1)
    if fault is not None:
        fake.inject(f"/repos/{REPO}", fault, exact=True)
    proc = run_cli("outcomes", repo, env=env, cwd=tmp_path)
    line = one_line(proc, code)
    assert line.startswith(says) and "{" not in line  # a sentence, not GitHub's raw JSON
    assert not (tmp_path / "outcomes.jsonl").exists()


# ------------------------------------------------------------------ validate's sources

def _sources(tmp_path: Path) -> dict[str, tuple[list[str], dict[str, str], str]]:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"repository": "a/b", "pullRequest": 1, "outcome": "rejected", "value": true}\n{not json\n')
    keyless = tmp_path / "keyless.jsonl"
    keyless.write_text('{"repository": "a/b", "outcome": "rejected", "value": true}\n')
    empty_db = tmp_path / "empty.db"
    empty_db.write_bytes(b"")
    not_db = tmp_path / "text.db"
    not_db.write_text("hello, this is not SQLite\n" * 40)
    none = tmp_path / "none.db"
    return {
        "missing outcomes file": (["--outcomes", str(tmp_path / "nope.jsonl")], {},
                                  f"taskeval: --outcomes {tmp_path / 'nope.jsonl'}: no such file"),
        "outcomes directory": (["--outcomes", str(tmp_path)], {}, f"--outcomes {tmp_path} is a directory"),
        "malformed outcomes line": (["--outcomes", str(bad)], {}, f"--outcomes {bad}:2: not an outcome record"),
        "outcome record without its PR": (["--outcomes", str(keyless)], {},
                                          f"--outcomes {keyless}:1: not an outcome record (missing 'pullRequest')"),
        "missing results": (["--results", str(tmp_path / "gone")], {},
                            f"--results {tmp_path / 'gone'}: no such file or directory"),
        "store file that does not exist": (["--store", f"sqlite:///{none}"], {}, f"--store: no store at {none}"),
        "empty database": (["--store", f"sqlite:///{empty_db}"], {}, "holds no taskeval store (an empty database)"),
        "not a database": (["--store", f"sqlite:///{not_db}"], {}, "cannot open the store"),
        "store that is no URL": (["--store", "my-store"], {}, "--store 'my-store' is not a database URL"),
        "DATABASE_URL that is no URL": ([], {"DATABASE_URL": "prod database"},
                                        "DATABASE_URL 'prod database' is not a database URL"),
    }


SOURCE_CASES = ["missing outcomes file", "outcomes directory", "malformed outcomes line",
                "outcome record without its PR", "missing results", "store file that does not exist",
                "empty database", "not a database", "store that is no URL", "DATABASE_URL that is no URL"]


@pytest.mark.parametrize("case", SOURCE_CASES)
@pytest.mark.parametrize("command", ["validate", "calibrate"])
def test_a_source_that_cannot_be_read_is_one_line_and_creates_nothing(
        command: str, case: str, results: Path, tmp_path: Path) -> None:
    args, env, says = _sources(tmp_path)[case]
    out = tmp_path / "report"
    before = sorted(p.name for p in tmp_path.iterdir())
    full = [command, *args]
    if "--results" not in args and "--store" not in args and not env:
        full += ["--results", str(results)]
    if command == "validate":
        full += ["--output-dir", str(out), "--bootstrap", "20"]
    proc = run_cli(*full, env=env, cwd=tmp_path)
    assert says in one_line(proc)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no report, no new database


# ------------------------------------------------------------------ score --config

# Every way a config file can fail to parse or validate (taskeval.config.parse_config's errors).
BROKEN_CONFIGS = [
    ("thresholds:\n  comfortable_change_lines: lots\n",
     "thresholds.comfortable_change_lines: Input should be a valid integer"),
    ("thresholds: [unclosed\n", "not valid YAML at line 2"),
    ("- just\n- a list\n", "top level must be a mapping, got list"),
    ("treshold:\n  comfortable_change_lines: 100\n", "treshold: unknown key"),
    ("signal_weights:\n  process.change_size: 11\n", "must be within 0..10"),
    ("# padding\n" * 20_000, "larger than"),
]


@pytest.mark.parametrize(("text", "says"), BROKEN_CONFIGS)
@pytest.mark.parametrize("how", ["score", "score batch", "evaluate"])
def test_a_config_file_the_user_names_must_parse(text: str, says: str, how: str, fake: FakeGitHub,
                                                 env: dict[str, str], tmp_path: Path) -> None:
    """Refused before any work (exit 2, one line naming the file and the problem, nothing
    written, GitHub not asked), never a run on the defaults."""
    bad = tmp_path / "bad.yml"
    bad.write_text(text)
    out = tmp_path / "out"
    if how == "evaluate":
        fake.add_pr(REPO, 3)
        proc = run_cli("evaluate", f"{REPO}#3", "--no-ai", "--config", str(bad), "--output",
                       str(out / "r.json"), env=env)
    elif how == "score":
        proc = run_cli("score", str(EXAMPLE), "--no-ai", "--config", str(bad), "--output", str(out / "r.json"))
    else:
        proc = run_cli("score", str(EXAMPLES), "--no-ai", "--config", str(bad), "--output-dir", str(out))
    line = one_line(proc)
    assert line.startswith(f"taskeval: --config {bad}: ") and says in line, line
    assert proc.stdout == "" and not out.exists() and fake.log == []


@pytest.mark.parametrize("batch", [False, True])
def test_misspelt_signal_ids_in_a_named_config_are_warned_on_stderr(batch: bool, tmp_path: Path) -> None:
    config = tmp_path / "taskeval.yml"
    config.write_text("signal_weights:\n  process.chnage_size: 2\ndisabled_signals: [outcome.ci_hed]\n")
    args = [str(EXAMPLES), "--output-dir", str(tmp_path / "out")] if batch else [str(EXAMPLE)]
    proc = run_cli("score", *args, "--no-ai", "--config", str(config))
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "do not exist" in line]
    assert warned == [f"taskeval: warning: --config {config} names signals that do not exist (typo?): "
                      "outcome.ci_hed, process.chnage_size; 'taskeval schema config' and docs/signals.md "
                      "list them"]
    if not batch:
        assert json.loads(proc.stdout)["config"]["errors"] == []  # the rest of the file applies


@pytest.mark.parametrize("command", ["score", "evaluate"])
def test_config_that_is_a_directory_is_named_as_one(command: str, fake: FakeGitHub, env: dict[str, str],
                                                   tmp_path: Path) -> None:
    target = str(EXAMPLE) if command == "score" else f"{REPO}#1"
    proc = run_cli(command, target, "--no-ai", "--config", str(tmp_path), env=env)
    assert one_line(proc) == (f"taskeval: --config {tmp_path} is a directory; give the config file itself, "
                              f"e.g. {tmp_path / '.github' / 'taskeval.yml'}")
    assert fake.log == [] and proc.stdout == ""


# ------------------------------------------------------------------ evaluate's PR URL

@pytest.mark.parametrize(("ref", "api", "says"), [
    ("https://gitlab.com/a/b/pull/5", None, "is not a pull request on 127.0.0.1:"),
    ("https://github.com/octo-org/widgets/pull/5", None, "is not a pull request on 127.0.0.1:"),
    ("https://gitlab.com/a/b/pull/5", "https://api.github.com",
     "taskeval: https://gitlab.com/a/b/pull/5 is not a pull request on github.com; for GitHub Enterprise "
     "Server set GITHUB_API_URL=https://HOST/api/v3"),
    ("https://github.com/a/b/pull/5", "https://ghes.example.com/api/v3",
     "taskeval: https://github.com/a/b/pull/5 is not a pull request on ghes.example.com "
     "(GITHUB_API_URL is https://ghes.example.com/api/v3)"),
])
def test_a_pull_request_url_on_another_host_is_refused(
        ref: str, api: str | None, says: str, fake: FakeGitHub, env: dict[str, str]) -> None:
    proc = run_cli("evaluate", ref, "--no-ai", env={**env, **({"GITHUB_API_URL": api} if api else {})})
    assert says in one_line(proc)
    assert fake.log == []  # never sent to GitHub as OWNER/REPO#N


@pytest.mark.parametrize(("api", "host"), [
    ("https://api.github.com", "github.com"),
    ("https://ghes.example.com/api/v3", "ghes.example.com"),
    ("https://api.octocorp.ghe.com", "octocorp.ghe.com"),
    ("http://127.0.0.1:8123", "127.0.0.1:8123"),
])
def test_the_web_host_of_each_kind_of_github(api: str, host: str) -> None:
    assert cli.web_host(api) == host
    cli.check_pr_host(f"https://{host}/o/r/pull/1", api)  # its own URLs are accepted
    cli.check_pr_host(f"https://www.{host}/o/r/pull/1", api)
