"""Every command's expected failures, as a user meets them through the real entry point: one line
on stderr, never a traceback, the documented exit code (2 bad input, 3 try again later), and
nothing done or written before the refusal. GitHub is the local fake server (tests/fakegithub.py)
for processes, ``responses`` in process."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskeval import cli
from tests.fakegithub import FAKE_TOKEN, FakeGitHub
from tests.test_cli import REPO, run_cli


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    gh = FakeGitHub()
    with gh.serve():
        yield gh


@pytest.fixture
def env(fake: FakeGitHub, tmp_path: Path) -> dict[str, str]:
    return {"GITHUB_TOKEN": FAKE_TOKEN, "GITHUB_API_URL": fake.url,
            "TASKEVAL_CACHE_DIR": str(tmp_path / "cache")}


def one_line(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The one stderr line of a refused command (which exits with ``code``)."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("taskeval"), proc.stderr
    return lines[0]


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
