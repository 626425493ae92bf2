"""Faults and oversized input, end to end through the CLI and the Action.

Every GitHub and AI fault the clients can meet is injected at the HTTP boundary (the fake GitHub
and the fake OpenAI server, both over real HTTP) while ``taskeval evaluate`` or the Action's
entrypoint runs. Whatever happens, the run must end with bounded retries and a recorded outcome
(an exit code, one error line or a warning, ``judge.status`` in the result), never a traceback,
a hang, or a second taskeval comment on the PR.

Most tests run the adapters in process with tiny waits (the ``quick`` fixture shortens the same
client settings the production defaults use); a few run real processes with the shipped defaults
to show nothing there depends on the shortcuts.

The GitHub faults here are injected on REST routes (the PR object, its commit pages, reviews,
files, check runs), so every evaluation pins ``--api rest`` (the Action: ``api: rest``); the
GraphQL path's own faults (timeouts, 502, rate limits, refusals, no endpoint) are in
tests/test_graphql.py and tests/test_bot_robustness.py.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import hashlib
import io
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import taskeval.github
from action.main import run as run_action
from taskeval import cli
from taskeval.evidence import EXCERPT_LIMIT, SUBJECT_LIMIT, TRUNCATION_MARKER
from taskeval.judge.config import JudgeConfig
from taskeval.models import GROUP_CAPS, EvaluationResult
from taskeval.pipeline import publish_comment
from taskeval.report import GITHUB_COMMENT_LIMIT, MARKER
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault
from tests.fakeopenai import Action, Fail, FakeOpenAI, Reply, Stall, cite_first, judgement
from tests.processes import child_env
from tests.test_action_e2e import payload as event_payload
from tests.test_action_e2e import run_action as run_action_process
from tests.test_action_runner import parse_output_file

ROOT = Path(__file__).resolve().parent.parent
MERGED_EVENT = ROOT / "tests" / "events" / "pull_request.closed.merged.json"
REPO, PR = "octo-org/widgets", 42  # the PR the documented merged-PR event names
ACTIONS_BOT = "github-actions[bot]"
USER_TOKEN = "ghp_RobustnessUserToken000000000000000000"
USER = "taskeval-user"
GITHUB_RETRIES = 2  # retries after the first try, in the quick client settings
AI_RETRIES = 1
AI_TIMEOUT = 0.5
# retry-after-ms is what the OpenAI client reads first; 10 ms keeps retried AI faults fast.
FAST_RETRY = {"retry-after-ms": "10"}

_MAKE_CLIENT = taskeval.github.make_client
_JUDGE_FROM_ENV = JudgeConfig.from_env.__func__  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------- helpers


@dataclass
class Ran:
    """What one adapter run left behind: exit code, streams, result file, outputs, summary."""

    code: int
    stdout: str
    stderr: str
    result: dict[str, Any] | None
    outputs: dict[str, str] = dataclasses.field(default_factory=dict)
    summary: str = ""

    def errors(self) -> list[str]:
        """The one-line failure reports: ``taskeval: ...`` on stderr, ``::error`` on stdout."""
        cli_lines = [line for line in self.stderr.splitlines() if line.startswith("taskeval: ")
                     and not line.startswith(("taskeval: warning:", "taskeval: comment "))]
        return cli_lines + [line for line in self.stdout.splitlines() if line.startswith("::error")]

    def warnings(self) -> list[str]:
        return [line for line in (self.stderr + "\n" + self.stdout).splitlines()
                if line.startswith(("taskeval: warning:", "::warning"))]


REST = ("--api", "rest")  # see the module docstring


def clean_env(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    """The process environment as a fresh shell with only ``values`` set for taskeval."""
    for key in list(os.environ):
        if key.startswith(("GITHUB_", "GH_", "OPENAI_", "AZURE_", "TASKEVAL_", "INPUT_", "RUNNER_")):
            monkeypatch.delenv(key, raising=False)
    for key, value in values.items():
        monkeypatch.setenv(key, value)


def evaluate_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: FakeGitHub, *args: str,
                 ai: FakeOpenAI | None = None, token: str = USER_TOKEN) -> Ran:
    """``taskeval evaluate REPO#PR --output FILE [args]`` in process, streams captured."""
    env = {"GITHUB_TOKEN": token, "GITHUB_API_URL": fake.url,
           "TASKEVAL_CACHE_DIR": str(tmp_path / "cache")}
    if ai is not None:
        env.update(OPENAI_API_KEY=ai.api_key, OPENAI_BASE_URL=ai.base_url)
    clean_env(monkeypatch, **env)
    output = tmp_path / "cli-result.json"
    output.unlink(missing_ok=True)
    return run_cli(["evaluate", f"{REPO}#{PR}", "--output", str(output), *REST, *args], output)


def run_cli(argv: Sequence[str], output: Path | None = None) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))  # an exception here is a traceback a user would see
    result = json.loads(output.read_text()) if output is not None and output.exists() else None
    return Ran(code, out.getvalue(), err.getvalue(), result)


def evaluate_action(tmp_path: Path, fake: FakeGitHub, inputs: Mapping[str, str] | None = None,
                    env: Mapping[str, str] | None = None) -> Ran:
    """The Action's entrypoint in process, as the runner starts it for a merged PR."""
    workspace, files, home = tmp_path / "workspace", tmp_path / "runner", tmp_path / "home"
    for folder in (workspace, files, home, tmp_path / "temp"):
        folder.mkdir(exist_ok=True)
    (workspace / "taskeval-result.json").unlink(missing_ok=True)
    output, summary = files / "output", files / "summary"
    output.write_text("")
    summary.write_text("")
    environ = {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(MERGED_EVENT), "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": fake.url, "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary), "HOME": str(home),
        "RUNNER_TEMP": str(tmp_path / "temp"),
    }
    given = {"github-token": FAKE_TOKEN, "comment": "true", "ai": "off", "api": "rest",
             **(inputs or {})}
    environ.update({f"INPUT_{name.upper()}": value for name, value in given.items()})
    environ.update(env or {})
    out = io.StringIO()
    code = run_action(environ, out)
    result_file = workspace / "taskeval-result.json"
    result = json.loads(result_file.read_text()) if result_file.exists() else None
    return Ran(code, out.getvalue(), "", result, parse_output_file(output.read_text()),
               summary.read_text())


def marker_comments(fake: FakeGitHub) -> list[dict[str, Any]]:
    return [c for c in fake.comments(REPO, PR) if c["body"].startswith(MARKER)]


def wait_for(condition: Any, seconds: float = 10.0) -> bool:
    """Poll until a background request the client gave up on has reached the fake."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def strings(value: Any) -> Iterator[str]:
    """Every string (keys included) inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def ai_cells(markdown: str) -> list[str]:
    """The 'AI (advisory)' cell of each category row of the comment's score table."""
    rows = [line for line in markdown.splitlines() if line.startswith("| ") and "**" in line]
    return [row.split("|")[5].strip() for row in rows[:3]]


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """The production clients with tiny waits: GitHub 2 retries, no backoff, 1 s timeout (PyGithub
    takes whole seconds), at most 3 s per rate-limit wait; the judge 1 retry and a 0.5 s timeout.
    Production uses the same code with 5 retries, 15 s and 60 s (see docs/reliability.md)."""
    monkeypatch.setattr(taskeval.github, "make_client", functools.partial(
        _MAKE_CLIENT, retries=GITHUB_RETRIES, backoff_factor=0, max_wait=3, timeout=1))

    def from_env(cls: type[JudgeConfig], *args: Any, **kwargs: Any) -> Any:
        config, reason = _JUDGE_FROM_ENV(cls, *args, **kwargs)
        if config is not None:
            config = dataclasses.replace(config, timeout=AI_TIMEOUT, max_retries=AI_RETRIES)
        return config, reason

    monkeypatch.setattr(JudgeConfig, "from_env", classmethod(from_env))
    # A fake server writing to a client that already gave up (a timeout) is not taskeval output.
    monkeypatch.setattr(socketserver.BaseServer, "handle_error", lambda *args: None)


def merged_pr() -> FakeGitHub:
    """A merged agent PR; FAKE_TOKEN is the Actions installation token (no ``GET /user``),
    USER_TOKEN a person's token as the CLI usually has."""
    gh = FakeGitHub(login=ACTIONS_BOT, integration=True)
    gh.add_token(USER_TOKEN, USER)
    gh.add_pr(REPO, PR, commits=4, ci="fail-then-fix")
    return gh


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    """Served in process through ``responses``: the same router, no server to start and stop."""
    gh = merged_pr()
    with gh.mock():
        yield gh


@pytest.fixture
def fake_http() -> Iterator[FakeGitHub]:
    """Served over real HTTP, for faults only a socket has: client timeouts, subprocesses."""
    gh = merged_pr()
    with gh.serve():
        yield gh


ADAPTERS = ("cli", "action")


def evaluate(adapter: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: FakeGitHub,
             ai: FakeOpenAI | None = None) -> Ran:
    """One evaluation with the comment requested, through the named adapter."""
    if adapter == "cli":
        return evaluate_cli(monkeypatch, tmp_path, fake, "--comment", *([] if ai else ["--no-ai"]),
                            ai=ai)
    clean_env(monkeypatch, GITHUB_ACTIONS="true")  # the upsert names github-actions[bot] itself
    inputs = {"ai": "on", "openai-api-key": ai.api_key, "openai-base-url": ai.base_url} if ai else {}
    return evaluate_action(tmp_path, fake, inputs)


# ------------------------------------------------------------------------------ GitHub faults


@dataclass(frozen=True)
class GitHubFault:
    path: str  # under /repos/REPO; "{head}" is the head SHA
    fault: Fault
    times: int
    consumed: int | None  # faulty answers the clients must have taken: first try + retries
    fragment: str | None  # the failure line must say this; None: the evaluation succeeds
    warning: str | None = None


GITHUB_FAULTS = {
    "5xx-once": GitHubFault(f"pulls/{PR}/commits", Fault.server_error(502), 1, 1, None),
    "5xx-persistent": GitHubFault(f"pulls/{PR}/files", Fault.server_error(500), 10,
                                  GITHUB_RETRIES + 1, "GitHub answered 500"),
    "secondary-limit-once": GitHubFault(f"pulls/{PR}/reviews", Fault.secondary_rate_limit(1), 1,
                                        1, None),
    "secondary-limit-persistent": GitHubFault(
        f"pulls/{PR}/reviews", Fault.secondary_rate_limit(1), 10, GITHUB_RETRIES + 1,
        "rate limit"),
    "primary-limit-exhausted": GitHubFault(f"pulls/{PR}", Fault.primary_rate_limit(3600), 1, 1,
                                           "resets at"),
    "timeout": GitHubFault(f"pulls/{PR}/commits", Fault.slow(1.3), 10, GITHUB_RETRIES + 1,
                           "did not answer in time"),
    "truncated-json": GitHubFault(f"pulls/{PR}/reviews", Fault.truncated_json(), 1, 1,
                                  "malformed JSON"),
    "bad-credentials": GitHubFault("", Fault.unauthorized(), 2, None, "rejected the credentials"),
    "checks-forbidden": GitHubFault("commits/{head}/check-runs", Fault.forbidden(), 1, 1, None,
                                    "checks: read"),
}


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("case", list(GITHUB_FAULTS))
def test_github_faults_end_in_a_bounded_recorded_outcome(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest,
    adapter: str, case: str,
) -> None:
    spec = GITHUB_FAULTS[case]
    fake: FakeGitHub = request.getfixturevalue("fake_http" if spec.fault.delay else "fake")
    head = fake.repos[REPO].pulls[PR].data["head"]["sha"]
    path = f"/repos/{REPO}/{spec.path.format(head=head)}".rstrip("/")
    fake.inject(path, spec.fault, times=spec.times)

    ran = evaluate(adapter, monkeypatch, tmp_path, fake)

    if spec.consumed is not None:
        assert spec.times - fake.pending_faults() == spec.consumed, "retries are bounded"
    if spec.fragment is None:
        assert ran.code == 0, ran
        assert ran.result is not None and ran.errors() == []
        assert len(marker_comments(fake)) == 1
        if spec.warning:
            assert any(spec.warning in w for w in ran.warnings()), ran.warnings()
            assert any(spec.warning in w for w in ran.result["warnings"])
        return
    retry_later = spec.fault.status != 401  # the CLI's exit 3: GitHub could not answer, try later
    assert ran.code == ((3 if retry_later else 2) if adapter == "cli" else 1)
    [line] = ran.errors()  # one line, naming what went wrong
    assert spec.fragment in line
    assert "Traceback" not in ran.stdout + ran.stderr
    assert ran.result is None, "no result is written for an evaluation that was not made"
    assert marker_comments(fake) == [] and fake.count(method="POST") == 0
    if adapter == "action":
        assert ran.outputs == {"evaluated": "false"}


# ----------------------------------------------------------------------- writing the comment


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_5xx_answer_to_the_comment_post_is_not_resent(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: FakeGitHub, adapter: str,
) -> None:
    """GitHub may have stored the comment before it failed, so the POST is never repeated; the
    evaluation still stands (result file, outputs) and the next run posts the one comment."""
    fake.inject(f"/repos/{REPO}/issues/{PR}/comments", Fault.server_error(500).on("POST"))

    ran = evaluate(adapter, monkeypatch, tmp_path, fake)

    assert fake.count(route="issues.create_comment") == 1
    assert ran.code == (1 if adapter == "cli" else 0)  # the Action reports it and goes on
    [line] = ran.errors()
    assert "comment" in line and "500" in line
    assert ran.result is not None
    assert marker_comments(fake) == []

    again = evaluate(adapter, monkeypatch, tmp_path, fake)
    assert again.code == 0 and again.errors() == []
    assert len(marker_comments(fake)) == 1


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_comment_post_that_times_out_after_github_stored_it_is_updated_next_time(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_http: FakeGitHub,
    adapter: str,
) -> None:
    fake = fake_http
    fake.inject(f"/repos/{REPO}/issues/{PR}/comments", Fault.slow(1.3).on("POST"))

    first = evaluate(adapter, monkeypatch, tmp_path, fake)

    assert first.result is not None and len(first.errors()) == 1
    assert "did not answer in time" in first.errors()[0]
    assert wait_for(lambda: len(marker_comments(fake)) == 1), "the slow POST reached GitHub"
    second = evaluate(adapter, monkeypatch, tmp_path, fake)
    assert second.code == 0 and second.errors() == []
    assert len(marker_comments(fake)) == 1, "updated in place, never a second comment"
    assert fake.count(route="issues.create_comment") == 1
    assert fake.count(route="issues.update_comment") == 1


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_when_existing_comments_cannot_be_listed_nothing_is_posted(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: FakeGitHub, adapter: str,
) -> None:
    """Our comment sits on page 2 of 150 conversation comments; when that page fails while
    looking for it, posting a new one would duplicate it, so nothing is posted."""
    login = USER if adapter == "cli" else ACTIONS_BOT
    for n in range(150):
        body = f"{MARKER}\nold evaluation" if n == 120 else f"comment {n}"
        fake.add_issue_comment(REPO, PR, body, user=login if n == 120 else "octocat")
    page_two = {"seen": 0}
    handle = fake.handle

    def failing_second_listing(method: str, path: str, query: Any = None, headers: Any = None,
                               body: Any = None) -> tuple[int, dict[str, str], Any]:
        pages = (query or {}).get("page", ["1"])
        if method == "GET" and path.endswith(f"/issues/{PR}/comments") and pages[0] == "2":
            page_two["seen"] += 1
            if page_two["seen"] > 1:  # collection read it; the comment lookup cannot
                return handle(method, f"/fault{path}", query, headers, body)
        return handle(method, path, query, headers, body)

    fake.inject(f"/fault/repos/{REPO}/issues/{PR}/comments", Fault.server_error(502), times=10)
    fake.handle = failing_second_listing  # type: ignore[method-assign]

    ran = evaluate(adapter, monkeypatch, tmp_path, fake)

    assert ran.result is not None
    [line] = ran.errors()
    assert "502" in line
    assert fake.count(method="POST") == 0 and fake.count(method="PATCH") == 0
    assert [c["body"] for c in marker_comments(fake)] == [f"{MARKER}\nold evaluation"]


def test_two_evaluations_racing_on_one_pr_leave_one_comment(fake: FakeGitHub) -> None:
    both_listed = threading.Barrier(2, timeout=5)
    handle = fake.handle

    def racing(method: str, path: str, query: Any = None, headers: Any = None,
               body: Any = None) -> tuple[int, dict[str, str], Any]:
        if method == "POST" and path.endswith(f"/issues/{PR}/comments"):
            with contextlib.suppress(threading.BrokenBarrierError):
                both_listed.wait()  # each run has looked for the comment before either posts
        return handle(method, path, query, headers, body)

    fake.handle = racing  # type: ignore[method-assign]
    gh = _MAKE_CLIENT(USER_TOKEN, base_url=fake.url, retries=0)
    runs = [threading.Thread(target=publish_comment, args=(gh, REPO, PR, f"evaluation {n}"),
                             kwargs={"own_login": USER}) for n in range(2)]
    for thread in runs:
        thread.start()
    for thread in runs:
        thread.join(timeout=30)
    assert len(marker_comments(fake)) == 1


# ---------------------------------------------------------------------------------- AI faults


AI_FAULTS: dict[str, tuple[list[Action], str, str, int]] = {
    # name: (server script, judge.status, judge.error fragment, requests the judge may send)
    "timeout": ([Stall(1.0), Stall(1.0)], "error", "did not answer within", AI_RETRIES + 1),
    "429": ([Fail(429, "Rate limit reached", "requests", "rate_limit_exceeded",
                  headers=FAST_RETRY)] * 2, "error", "HTTP 429", AI_RETRIES + 1),
    "5xx": ([Fail(503, "Service unavailable", headers=FAST_RETRY)] * 2, "error", "HTTP 503",
            AI_RETRIES + 1),
    "refusal": ([Reply(None, refusal="I can't help with grading this.")], "error", "refused", 1),
    "length": ([Reply('{"categories": [', finish_reason="length")], "error",
               "finish_reason: length", 1),
    "bad-json": ([Reply("Sure! Here are my scores: 80, 80, 80")], "rejected", "not valid JSON", 1),
    "out-of-range": ([Reply(judgement(101, ["pr:42"]))], "rejected", "less than or equal to 100",
                     1),
    "invented-citations": ([Reply(judgement(95, ["pr:999", "review:31337"]))], "rejected",
                           "cited no valid evidence", 1),
}


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("case", list(AI_FAULTS))
def test_ai_faults_leave_deterministic_scores_and_say_why(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: FakeGitHub,
    adapter: str, case: str,
) -> None:
    script, status, fragment, requests = AI_FAULTS[case]
    with FakeOpenAI().script(*script) as model:
        ran = evaluate(adapter, monkeypatch, tmp_path, fake, ai=model)
        sent = len(model.requests)

    assert ran.code == 0 and ran.errors() == [], ran
    assert sent == requests, "retries are bounded"
    assert ran.result is not None
    judge = ran.result["judge"]
    assert judge["status"] == status and fragment in judge["error"]
    for category in ran.result["categoryScores"]:
        assert category["aiScore"] is None
        assert category["finalScore"] == category["deterministicScore"]
    assert any("AI judge" in w for w in ran.warnings()), "the degradation is visible in the log"
    [comment] = marker_comments(fake)
    assert ai_cells(comment["body"]) == ["—", "—", "—"]


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_an_unreachable_ai_endpoint_is_an_error_status_not_a_failure(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: FakeGitHub, adapter: str,
) -> None:
    with FakeOpenAI() as model:
        pass  # started and stopped: its port now refuses connections
    ran = evaluate(adapter, monkeypatch, tmp_path, fake, ai=model)

    assert ran.code == 0 and ran.result is not None
    assert ran.result["judge"]["status"] == "error"
    assert "could not connect" in ran.result["judge"]["error"]
    assert len(marker_comments(fake)) == 1


def test_a_429_then_an_answer_is_retried_into_a_blended_score(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: FakeGitHub,
) -> None:
    script = (Fail(429, "slow down", "requests", "rate_limit_exceeded", headers=FAST_RETRY),
              Reply(cite_first(90)))
    with FakeOpenAI().script(*script) as model:
        ran = evaluate("cli", monkeypatch, tmp_path, fake, ai=model)
        assert len(model.requests) == 2
    assert ran.code == 0 and ran.result is not None and ran.result["judge"]["status"] == "ok"
    assert [c["aiScore"] for c in ran.result["categoryScores"]] == [90, 90, 90]


# ---------------------------------------------------- real processes, production defaults


def process_env(**values: str) -> dict[str, str]:
    return child_env(PYTHONPATH=str(ROOT), **values)


def taskeval_process(*args: str, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m taskeval`` with the shipped settings; a hang fails the test at 60 s."""
    if args[:1] == ("evaluate",):
        args = (*args, *REST)
    return subprocess.run([sys.executable, "-m", "taskeval", *args], env=dict(env),
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(
    ("fault", "fragment"),
    [(Fault.truncated_json(), "malformed JSON"), (Fault.unauthorized(), "rejected the credentials")],
    ids=["truncated-json", "bad-credentials"],
)
def test_cli_process_reports_a_github_fault_in_one_line(
    fake_http: FakeGitHub, tmp_path: Path, fault: Fault, fragment: str,
) -> None:
    fake = fake_http
    fake.inject(f"/repos/{REPO}/pulls/{PR}/reviews", fault)
    fake.inject(f"/repos/{REPO}/pulls/{PR}/files", fault)
    env = process_env(GITHUB_TOKEN=USER_TOKEN, GITHUB_API_URL=fake.url,
                      TASKEVAL_CACHE_DIR=str(tmp_path))
    proc = taskeval_process("evaluate", f"{REPO}#{PR}", "--comment", "--no-ai", env=env)
    assert proc.returncode == (2 if fault.status == 401 else 3)
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("taskeval: ") and fragment in line
    assert marker_comments(fake) == []


needs_slow = pytest.mark.skipif(os.environ.get("TASKEVAL_SLOW") != "1",
                                reason="long-running: set TASKEVAL_SLOW=1")


@pytest.mark.slow
@needs_slow
def test_cli_process_gives_up_on_a_5xx_storm_after_six_tries_with_shipped_settings(
    fake_http: FakeGitHub, tmp_path: Path,
) -> None:
    """The production client: the first try and 5 retries with 0, 1, 2, 4 and 8 s of backoff
    (about 15 s), then one line and exit 3 (try again later)."""
    fake = fake_http
    fake.inject(f"/repos/{REPO}/pulls/{PR}/files", Fault.server_error(503), times=20)
    env = process_env(GITHUB_TOKEN=USER_TOKEN, GITHUB_API_URL=fake.url,
                      TASKEVAL_CACHE_DIR=str(tmp_path))
    proc = taskeval_process("evaluate", f"{REPO}#{PR}", "--no-ai", env=env)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert 20 - fake.pending_faults() == 6
    assert "GitHub answered 503" in proc.stderr.splitlines()[-1]


def test_cli_process_reports_an_exhausted_rate_limit_in_one_line(
    fake_http: FakeGitHub, tmp_path: Path,
) -> None:
    fake = fake_http
    fake.inject(f"/repos/{REPO}/pulls/{PR}", Fault.primary_rate_limit(3600))
    env = process_env(GITHUB_TOKEN=USER_TOKEN, GITHUB_API_URL=fake.url,
                      TASKEVAL_CACHE_DIR=str(tmp_path))
    proc = taskeval_process("evaluate", f"{REPO}#{PR}", "--no-ai", env=env)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert fake.count(route="pulls.get") == 1, "an hour-long wait fails fast instead of sleeping"
    [line] = proc.stderr.splitlines()
    assert "rate limit" in line and "resets at" in line


@pytest.mark.parametrize(
    ("script", "status", "requests"),
    [([Reply(judgement(250, ["pr:42"]))], "rejected", 1), ([Reply("not json at all")], "rejected", 1),
     ([Reply(None, refusal="No.")], "error", 1),
     ([Fail(500, "The server had an error")] * 3, "error", 3)],  # the shipped 2 retries
    ids=["out-of-range", "bad-json", "refusal", "5xx"],
)
def test_cli_process_survives_a_broken_judge_with_shipped_settings(
    fake_http: FakeGitHub, tmp_path: Path, script: list[Action], status: str, requests: int,
) -> None:
    fake = fake_http
    output = tmp_path / "result.json"
    with FakeOpenAI().script(*script) as model:
        env = process_env(GITHUB_TOKEN=USER_TOKEN, GITHUB_API_URL=fake.url,
                          OPENAI_API_KEY=model.api_key, OPENAI_BASE_URL=model.base_url,
                          TASKEVAL_CACHE_DIR=str(tmp_path / "cache"))
        proc = taskeval_process("evaluate", f"{REPO}#{PR}", "--comment", "--output", str(output),
                                env=env)
        assert len(model.requests) == requests
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout.startswith(MARKER)
    result = json.loads(output.read_text())
    assert result["judge"]["status"] == status
    assert all(c["finalScore"] == c["deterministicScore"] for c in result["categoryScores"])
    assert len(marker_comments(fake)) == 1


def _failing_mutations(fake: FakeGitHub, status: int) -> list[str]:
    """Answer every GraphQL mutation ``status`` without making it (queries are answered); the
    mutations asked are listed."""
    handle = fake.handle
    asked: list[str] = []

    def failing(method: str, path: str, query: Any = None, headers: Any = None,
                body: Any = None) -> tuple[int, dict[str, str], Any]:
        text = json.loads(body or b"{}").get("query", "") if path.endswith("/graphql") else ""
        if method.upper() == "POST" and text.startswith("mutation "):
            asked.append(text.split("(", 1)[0].split()[1])
            return status, {"Content-Type": "application/json"}, {"message": "Server Error"}
        return handle(method, path, query, headers, body)

    fake.handle = failing  # type: ignore[method-assign]
    return asked


@pytest.mark.parametrize("api", ["graphql", "rest"])
def test_action_process_reports_a_failed_comment_post_once_and_keeps_the_result(
    fake_http: FakeGitHub, tmp_path: Path, api: str,
) -> None:
    fake = fake_http
    fake.inject(f"/repos/{REPO}/issues/{PR}/comments", Fault.server_error(502).on("POST"))
    asked = _failing_mutations(fake, 502)
    done = run_action_process(tmp_path, fake, "pull_request",
                              event_payload("pull_request.closed.merged"), inputs={"api": api})
    assert done.code == 0  # the evaluation stands; the comment is a side effect
    # Never resent, over either transport (GitHub may have stored it before failing).
    assert (fake.count(route="issues.create_comment"), asked) == (
        (0, ["TaskevalAddComment"]) if api == "graphql" else (1, []))
    assert [a for a in done.annotations("error") if "comment" in a.lower()] != []
    assert done.outputs["evaluated"] == "true" and done.result()["overallScore"] >= 0
    assert marker_comments(fake) == []


# --------------------------------------------------------- listings that change between pages


def _shifting(fake: FakeGitHub, mode: str) -> None:
    """Change the PR's commit list right after page 1 of it is served (a push, or a force-push
    that rewrote history, racing the collection)."""
    pull = fake.repos[REPO].pulls[PR]
    handle = fake.handle
    done: list[bool] = []

    def racing(method: str, path: str, query: Any = None, headers: Any = None,
               body: Any = None) -> tuple[int, dict[str, str], Any]:
        answer = handle(method, path, query, headers, body)
        page = ((query or {}).get("page") or ["1"])[0]
        if path.endswith(f"/pulls/{PR}/commits") and page == "1" and not done:
            done.append(True)
            new = copy.deepcopy(pull.commits[-1])
            new["sha"] = hashlib.sha1(f"{mode}-commit".encode()).hexdigest()
            if mode == "push":
                pull.commits.append(new)
            elif mode == "rewrite-prepend":
                pull.commits.insert(0, new)
            else:
                pull.commits.pop(0)
        return answer

    fake.handle = racing  # type: ignore[method-assign]


@pytest.fixture
def long_pr() -> Iterator[FakeGitHub]:
    gh = FakeGitHub()
    gh.add_token(USER_TOKEN, USER)
    gh.add_pr(REPO, PR, commits=150, ci="green")
    with gh.mock():
        yield gh


@pytest.mark.parametrize("mode", ["push", "rewrite-prepend", "rewrite-drop"])
def test_a_commit_list_changing_between_pages_still_gives_a_valid_evaluation(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, long_pr: FakeGitHub, mode: str,
) -> None:
    _shifting(long_pr, mode)
    ran = evaluate_cli(monkeypatch, tmp_path, long_pr, "--no-ai")
    assert ran.code == 0 and ran.result is not None
    result = EvaluationResult.model_validate(ran.result)
    ids = [item.id for group in result.evidence.groups for item in group.items]
    assert len(ids) == len(set(ids)), "evidence IDs stay unique"
    assert long_pr.count(route="pulls.commits") == 2


def test_a_commit_seen_on_two_pages_is_counted_once(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, long_pr: FakeGitHub,
) -> None:
    _shifting(long_pr, "rewrite-prepend")
    ran = evaluate_cli(monkeypatch, tmp_path, long_pr, "--no-ai")
    assert ran.result is not None
    shas = [c["sha"] for c in ran.result["evidence"]["facts"]["commits"]]
    assert len(shas) == len(set(shas))


@pytest.mark.parametrize("mode", ["push", "rewrite-drop"])
def test_a_pr_that_changed_during_collection_says_so(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, long_pr: FakeGitHub, mode: str,
) -> None:
    _shifting(long_pr, mode)
    ran = evaluate_cli(monkeypatch, tmp_path, long_pr, "--no-ai")
    assert ran.result is not None
    warnings = " ".join(ran.result["warnings"])
    assert "changed" in warnings and "250" not in warnings


# ---------------------------------------------------------------- huge and binary-looking input


BIG_BODY_CHARS = 10_000_000
BIG_MESSAGE_CHARS = 1_000_000
BINARY_TEXT = ("NUL\x00byte, bell\x07, ANSI \x1b[31mred\x1b[0m, BOM \ufeff, RTL \u202egnp.exe\u202c, "
               "isolate \u2066x\u2069, C1 \x85\x9b")
HIDDEN = "\x00\x07\x1b\ufeff\u202e\u202c\u2066\u2069\x9b"


@pytest.fixture
def huge_pr() -> Iterator[FakeGitHub]:
    """3,000 commits (GitHub lists 250), a 10 MB body, a 1 MB commit message, binary-looking
    text in the title and commit subjects, and one CI run per commit."""
    gh = FakeGitHub()
    gh.add_token(USER_TOKEN, USER)
    gh.add_pr(REPO, PR, commits=3000, ci="green", title=f"Huge {BINARY_TEXT}",
              body=("Fixes #12. " + "All tests pass. " * 8 + BINARY_TEXT + "\n")
              + "x" * BIG_BODY_CHARS)
    commits = gh.repos[REPO].pulls[PR].commits
    commits[249]["commit"]["message"] = "feat: the last one listed\n\n" + "m" * BIG_MESSAGE_CHARS
    commits[248]["commit"]["message"] = f"fix: {BINARY_TEXT} " + "s" * 400 + "\n\nbody"
    with gh.mock():
        yield gh


def test_huge_and_binary_looking_input_stays_within_every_cap(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, huge_pr: FakeGitHub,
) -> None:
    ran = evaluate_cli(monkeypatch, tmp_path, huge_pr, "--no-ai", "--comment")

    assert ran.code == 0 and ran.result is not None, ran.stderr
    result = EvaluationResult.model_validate(ran.result)
    [comment] = marker_comments(huge_pr)
    assert len(comment["body"]) < GITHUB_COMMENT_LIMIT and comment["body"] == ran.stdout
    groups = {g.source: g for g in result.evidence.groups}
    assert all(len(g.items) <= GROUP_CAPS[g.source] for g in groups.values())
    assert (len(groups["commits"].items), groups["commits"].total,
            groups["commits"].omitted) == (20, 3000, 2980)
    assert len(result.evidence.facts.commits) == 250  # what GitHub lists
    for group in groups.values():
        for item in group.items:
            assert len(item.excerpt or "") <= EXCERPT_LIMIT
            if group.source == "commits":
                assert len(item.label) <= SUBJECT_LIMIT
    assert all(len(c.subject) <= SUBJECT_LIMIT for c in result.evidence.facts.commits)
    last = groups["commits"].items[-1]
    assert last.excerpt is not None and last.excerpt.endswith(TRUNCATION_MARKER)
    assert groups["taskMetadata"].items[0].excerpt.endswith(TRUNCATION_MARKER)  # type: ignore[union-attr]
    assert len(json.dumps(ran.result)) < 1_000_000, "the stored result stays small: no raw blobs"
    for text in [*strings(ran.result), comment["body"]]:
        assert not any(ch in text for ch in HIDDEN), "control and bidi characters are removed"
    assert any("250 of 3000" in w for w in result.warnings)
    # GitHub's timeline is unbounded (one event per commit): the first 1,000 are kept, and said so.
    assert result.evidence.facts.timeline is not None and len(result.evidence.facts.timeline) == 1000
    assert any("the first 1000 were kept" in w for w in result.warnings)


@pytest.mark.parametrize("where", ["title", "body", "commit-message"])
def test_escaped_invalid_surrogates_from_github_do_not_crash(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, where: str,
) -> None:
    gh = FakeGitHub()
    gh.add_token(USER_TOKEN, USER)
    lone = "half of an emoji \ud83d, a stray low half \udfff"
    gh.add_pr(REPO, PR, title=lone if where == "title" else "Fine title",
              body=lone if where == "body" else None)
    if where == "commit-message":
        gh.repos[REPO].pulls[PR].commits[0]["commit"]["message"] = f"fix: {lone}\n\n{lone}"
    with gh.mock():
        ran = evaluate_cli(monkeypatch, tmp_path, gh, "--no-ai")
    assert ran.code == 0 and ran.result is not None
    assert "\ufffd" in json.dumps(ran.result, ensure_ascii=False)


def test_a_closed_port_for_github_is_a_one_line_failure(
    quick: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clean_env(monkeypatch, GITHUB_TOKEN=USER_TOKEN, GITHUB_API_URL=f"http://127.0.0.1:{port}")
    ran = run_cli(["evaluate", f"{REPO}#{PR}", "--no-ai"])
    assert ran.code == 3
    [line] = ran.errors()
    assert "could not reach GitHub" in line
