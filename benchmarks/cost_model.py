"""What one evaluation costs: GitHub requests, rate-limit budget and AI tokens, by PR size.

Each PR size (1, 10, 100 and 1,000 commits) is served by the local fake GitHub over real HTTP, and
evaluated with the comment posted and the AI judge on (the local OpenAI-compatible fake), three
ways: the CLI with a personal token, the Action with its installation token (``GITHUB_TOKEN``),
and the bot's path with an App installation token. The PR is scaled realistically: every commit
touches one file and gets one CI workflow run; two check runs at the head, one review, one review
comment and two conversation comments.

Rate-limit budget is read the way a client sees it, from the ``X-RateLimit-Used`` header of a
``GET /rate_limit`` probe before and after (GitHub does not charge for that endpoint, and neither
does the fake). Prompt tokens are counted exactly with tiktoken when it
is installed (see benchmarks/judge_tokens.py), else estimated at 4 characters per token. Run from
the repository root:

    python -m benchmarks.cost_model            # markdown tables
    python -m benchmarks.cost_model --json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from action.main import run as run_action
from benchmarks.judge_tokens import token_counter
from taskeval import cli
from taskeval.github import make_client
from taskeval.judge import FileCache
from taskeval.pipeline import Options, evaluate_pull_request, publish_comment
from tests.fakegithub import ACTIONS_PERMISSIONS, FakeGitHub
from tests.fakeopenai import FakeOpenAI

REPO = "octo-org/widgets"
# The model bills REST's request budget, so each adapter collects over REST (GraphQL, the
# default, spends points of a budget of its own: docs/collection.md).
REST = ("--api", "rest")
SIZES = (1, 10, 100, 1000)
PAT = "ghp_CostModelPersonalToken000000000000000"
ACTIONS_TOKEN = "ghs_CostModelActionsToken00000000000000"
APP_TOKEN = "ghs_CostModelInstallationToken000000000"
APP_LOGIN = "taskeval[bot]"
EVENT = Path(__file__).resolve().parents[1] / "tests" / "events" / "pull_request.closed.merged.json"
# Documented primary limits per hour (docs.github.com, "Rate limits for the REST API").
LIMITS = {
    "cli": [("personal access token", 5_000)],
    "action": [("GITHUB_TOKEN, per repository", 1_000),
               ("GITHUB_TOKEN, GitHub Enterprise Cloud", 15_000)],
    "app": [("installation, minimum", 5_000), ("installation, most (users/repos)", 12_500),
            ("installation on GitHub Enterprise Cloud", 15_000)],
}


@dataclass
class Cost:
    adapter: str
    commits: int
    requests: int  # every HTTP request the server saw for the evaluation, comment included
    collection: int  # the part RawCollection counted (collection only)
    comment: int
    rerun: int  # requests of a second evaluation, which updates the comment instead
    budget_used: int  # X-RateLimit-Used after - before
    prompt_tokens: int  # counted with the tokenizer below
    prompt_tokens_reported: int | None  # usage the (fake) server reported
    completion_tokens_reported: int | None
    prompt_chars: int
    judge_status: str


def build(size: int, token: str, login: str, integration: bool, number: int) -> FakeGitHub:
    fake = FakeGitHub(token=None)
    fake.add_token(token, login, integration=integration,
                   permissions=ACTIONS_PERMISSIONS if integration else None)
    files = [{"filename": f"src/widgets/module_{n:04d}.py" if n % 3 else f"tests/test_{n:04d}.py",
              "additions": 12, "deletions": 3} for n in range(max(size, 1))]
    fake.add_pr(REPO, number, commits=size, ci="fail-then-fix", files=files)
    return fake


def used(fake: FakeGitHub, token: str) -> int:
    answer = requests.get(f"{fake.url}/rate_limit", headers={"Authorization": f"token {token}"},
                          timeout=10)
    return int(answer.headers["X-RateLimit-Used"])


@contextlib.contextmanager
def environ(values: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    for key in [k for k in os.environ if k.startswith(("GITHUB_", "OPENAI_", "TASKEVAL_"))]:
        del os.environ[key]
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def via_cli(fake: FakeGitHub, model: FakeOpenAI, folder: Path, number: int) -> dict[str, Any]:
    output = folder / "cli.json"
    with environ({"GITHUB_TOKEN": PAT, "GITHUB_API_URL": fake.url, "OPENAI_API_KEY": model.api_key,
                  "OPENAI_BASE_URL": model.base_url, "TASKEVAL_CACHE_DIR": str(folder / "c")}), \
            contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["evaluate", f"{REPO}#{number}", "--comment", "--output", str(output),
                         *REST])
    if code != 0:
        raise SystemExit(f"the CLI failed with exit code {code}")
    return json.loads(output.read_text())


def via_action(fake: FakeGitHub, model: FakeOpenAI, folder: Path, number: int) -> dict[str, Any]:
    workspace = folder / "workspace"
    workspace.mkdir(exist_ok=True)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
           "GITHUB_EVENT_PATH": str(EVENT), "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": fake.url,
           "GITHUB_WORKSPACE": str(workspace), "HOME": str(folder), "RUNNER_TEMP": str(folder),
           "INPUT_GITHUB-TOKEN": ACTIONS_TOKEN, "INPUT_AI": "on", "INPUT_COMMENT": "true",
           "INPUT_OPENAI-API-KEY": model.api_key, "INPUT_OPENAI-BASE-URL": model.base_url,
           "INPUT_PULL-REQUEST": str(number), "INPUT_API": "rest", "GITHUB_OUTPUT": str(folder / "out"),
           "GITHUB_STEP_SUMMARY": str(folder / "summary")}
    with environ({"GITHUB_ACTIONS": "true"}):
        code = run_action(env, io.StringIO())
    if code != 0:
        raise SystemExit(f"the Action failed with exit code {code}")
    return json.loads((workspace / "taskeval-result.json").read_text())


def via_app(fake: FakeGitHub, model: FakeOpenAI, folder: Path, number: int) -> dict[str, Any]:
    """The bot's path: an installation client, the pipeline, and the upsert with the App's login
    (the installation-token exchange happens once an hour and is left out)."""
    gh = make_client(APP_TOKEN, base_url=fake.url)
    options = Options(ai="on", trigger="pull_request", cache=FileCache(folder / "c"), api="rest",
                      env={"OPENAI_API_KEY": model.api_key, "OPENAI_BASE_URL": model.base_url})
    evaluation = evaluate_pull_request(gh, REPO, number, options)
    publish_comment(gh, REPO, number, evaluation.markdown, own_login=APP_LOGIN)
    return json.loads(evaluation.result.to_json())


def _comment_requests(log: list[Any]) -> int:
    """The requests that post the comment: learning the token's login (``GET /user``, which the CLI
    sends before collecting, so a missing login fails before the work), writing it, and every
    listing of the conversation comments but the first (that one is evidence)."""
    listings = sum(1 for request in log if request.route == "issues.comments")
    own = sum(1 for request in log
              if request.route in ("user", "issues.create_comment", "issues.update_comment"))
    return own + max(0, listings - 1)


ADAPTERS: dict[str, tuple[str, str, bool, Callable[..., dict[str, Any]]]] = {
    "cli": (PAT, "mona", False, via_cli),
    "action": (ACTIONS_TOKEN, "github-actions[bot]", True, via_action),
    "app": (APP_TOKEN, APP_LOGIN, True, via_app),
}


def measure(adapter: str, size: int, count: Callable[[str], int]) -> Cost:
    token, login, integration, evaluate = ADAPTERS[adapter]
    number = 42  # the PR the documented merged-PR event names
    fake = build(size, token, login, integration, number)
    with tempfile.TemporaryDirectory() as folder, fake.serve(), FakeOpenAI() as model:
        before = used(fake, token)
        fake.reset_log()
        result = evaluate(fake, model, Path(folder), number)
        log = list(fake.log)
        after = used(fake, token)
        prompt = "".join(m["content"] for m in model.requests[-1].body["messages"])
        fake.reset_log()
        evaluate(fake, model, Path(folder), number)  # the judge's cache answers this time
        rerun = sum(1 for r in fake.log if r.route != "rate_limit")
    comment = _comment_requests(log)
    judge = result["judge"]
    return Cost(adapter, size, len(log), len(log) - comment, comment, rerun, after - before,
                count(prompt), judge["promptTokens"], judge["completionTokens"], len(prompt),
                judge["status"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    args = parser.parse_args(argv)
    tokenizer, count = token_counter()
    costs = [measure(adapter, size, count) for adapter in ADAPTERS for size in args.sizes]
    for cost in costs:
        if cost.requests != cost.budget_used:
            raise SystemExit(f"{cost}: the server saw {cost.requests} requests but the budget "
                             f"moved by {cost.budget_used}")
        if cost.judge_status != "ok":
            raise SystemExit(f"{cost}: the judge did not answer")
    if args.json:
        print(json.dumps({"tokenizer": tokenizer, "costs": [asdict(c) for c in costs]}, indent=2))
        return 0
    print(f"Prompt tokens: {tokenizer}\n")
    print("| adapter | commits | requests (collection + comment) | re-run | rate-limit budget used | "
          "prompt tokens | prompt chars | completion tokens (fake) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for c in costs:
        print(f"| {c.adapter} | {c.commits:,} | {c.requests} ({c.collection} + {c.comment}) | "
              f"{c.rerun} | {c.budget_used} | {c.prompt_tokens:,} | {c.prompt_chars:,} | "
              f"{c.completion_tokens_reported} |")
    print("\n| adapter | documented limit per hour | evaluations/hour at 1 / 10 / 100 / 1,000 "
          "commits |")
    print("|---|---|---|")
    for adapter, limits in LIMITS.items():
        per_size = {c.commits: c.requests for c in costs if c.adapter == adapter}
        for name, limit in limits:
            rates = " / ".join(f"{math.floor(limit / per_size[s]):,}" for s in args.sizes
                               if s in per_size)
            print(f"| {adapter} | {name}: {limit:,} | {rates} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
