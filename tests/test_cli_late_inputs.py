"""Inputs a command took and then ignored or checked only after its work: each is now one clear
line on stderr, exit 2, before any work (no GitHub request, no store, no report). And a store
file a failed first run created is not left behind. Real processes against the fake GitHub."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault
from tests.processes import one_line
from tests.test_cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "examples" / "agent-pr-482.result.json"
REPO = "octo-org/widgets"



def _cases(tmp: Path) -> dict[str, tuple[list[str], str]]:
    (tmp / "package.json").write_text(json.dumps({"name": "left-pad", "version": "1.3.0"}))
    (tmp / "notes").mkdir()
    (tmp / "notes" / "a.json").write_text("[1, 2]")
    report = ["--output-dir", str(tmp / "report"), "--bootstrap", "20"]
    return {
        "validate --corpus that is no corpus": (
            ["validate", "--results", str(RESULT), "--corpus", str(tmp / "notes"), *report],
            f"--corpus {tmp / 'notes'} is not the AIDev corpus folder"),
        "validate --corpus that does not exist": (
            ["validate", "--results", str(RESULT), "--corpus", str(tmp / "gone"), *report],
            f"--corpus {tmp / 'gone'}: no such directory"),
        "validate --results holding no result": (
            ["validate", "--results", "package.json", *report], "--results package.json: no taskeval result there"),
        "calibrate --results holding no result": (
            ["calibrate", "--results", str(tmp / "notes")], f"--results {tmp / 'notes'}: no taskeval result there"),
        "outcomes --since that is no date": (
            ["outcomes", REPO, "--since", "yesterday"],
            "argument --since: expected a date as YYYY-MM-DD (or ISO 8601), got 'yesterday'"),
        "outcomes --since without a repository to scan": (
            ["outcomes", "--results", str(RESULT), "--since", "2025-01-01"],
            "--since limits the scan of OWNER/REPO's history"),
        "outcomes scan with --results holding no result": (
            ["outcomes", REPO, "--results", "package.json"], "--results package.json: no taskeval result there"),
        "outcomes scan with a --corpus that is no corpus": (
            ["outcomes", REPO, "--corpus", str(tmp / "notes")], "is not the AIDev corpus folder"),
        "outcomes scan with a missing --outcomes file": (
            ["outcomes", REPO, "--outcomes", str(tmp / "gone.jsonl")],
            f"--outcomes {tmp / 'gone.jsonl'}: no such file"),
        "backfill --since after --until": (
            ["backfill", REPO, "--since", "2025-03-01", "--until", "2025-01-31"],
            "--since 2025-03-01 is after --until 2025-01-31"),
    }


CASES = ["validate --corpus that is no corpus", "validate --corpus that does not exist",
         "validate --results holding no result", "calibrate --results holding no result",
         "outcomes --since that is no date", "outcomes --since without a repository to scan",
         "outcomes scan with --results holding no result", "outcomes scan with a --corpus that is no corpus",
         "outcomes scan with a missing --outcomes file", "backfill --since after --until"]


@pytest.mark.parametrize("case", CASES)
def test_an_input_that_cannot_be_used_is_refused_before_any_work(case: str, fake: FakeGitHub,
                                                                 tmp_path: Path) -> None:
    argv, says = _cases(tmp_path)[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = run_cli(*argv, env={"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": fake.url}, cwd=tmp_path)
    assert says in one_line(proc)
    assert fake.log == []  # GitHub was not asked
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no store, report, outcomes file


@pytest.mark.parametrize("failure", ["unreachable", "no such repository", "server error"])
def test_a_failed_first_backfill_leaves_no_store_behind(failure: str, fake: FakeGitHub, tmp_path: Path) -> None:
    url = "http://127.0.0.1:9" if failure == "unreachable" else fake.url
    if failure == "server error":
        fake.add_pr(REPO, 1)
        fake.inject(f"/repos/{REPO}/pulls", Fault.server_error(502), times=20)
    proc = run_cli("backfill", REPO, "--no-ai", cwd=tmp_path,
                   env={"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": url})
    assert proc.returncode in (2, 3), proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no taskeval.db, no -wal, no lock


def test_a_failed_backfill_keeps_a_store_it_did_not_create(fake: FakeGitHub, tmp_path: Path) -> None:
    assert run_cli("load", str(RESULT), cwd=tmp_path).returncode == 0
    proc = run_cli("backfill", REPO, "--no-ai", cwd=tmp_path,
                   env={"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": "http://127.0.0.1:9"})
    assert proc.returncode == 3, proc.stderr
    assert (tmp_path / "taskeval.db").is_file()
    assert run_cli("export", cwd=tmp_path).stdout.count("\n") == 2  # the loaded result is still there


def test_a_busy_port_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_cli("serve", "--no-workers", "--bind", f"127.0.0.1:{port}", cwd=tmp_path,
                       env={"GITHUB_WEBHOOK_SECRET": "test-webhook-secret-7f3a"})
    assert one_line(proc) == f"taskeval serve: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert list(tmp_path.iterdir()) == []  # no store made for a service that never started
