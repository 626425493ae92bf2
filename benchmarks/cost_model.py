"""What one evaluation costs: GitHub requests, GraphQL points, rate-limit budget and AI tokens, by
PR size and transport; and what a backfill of typical PRs costs per PR.

Each PR size (5, 150 and 1,000 commits) is served by the local fake GitHub over real HTTP, and
evaluated with the comment posted and the AI judge on (the local OpenAI-compatible fake), three
ways: the CLI with a personal token, the Action with its installation token (``GITHUB_TOKEN``),
and the bot's path with an App installation token; each over REST and over GraphQL (``--api``).
The PR is scaled realistically: every commit touches one file and gets one CI workflow run; two
check runs at the head, one review, one review comment and two conversation comments.

The comment is written the way each adapter writes it: over REST when the PR was collected over
REST, and by the Action and the CLI with GraphQL mutations (their points from the GraphQL budget,
no ``GET /user`` needed) when it was collected over GraphQL; the bot's path writes over REST.

REST budget is read the way a client sees it, from the ``X-RateLimit-Used`` header of a
``GET /rate_limit`` probe before and after (GitHub does not charge for that endpoint, and neither
does the fake); GraphQL points are what the fake charged by GitHub's formula (its ``rateLimit {
cost }``), a budget of its own. Prompt tokens are counted exactly with tiktoken when it is
installed (see benchmarks/judge_tokens.py), else estimated at 4 characters per token.

Over GraphQL what a PR costs depends on who made it: GraphQL's timeline lacks the session events
of GitHub's Copilot agent, so a PR Copilot authored or was assigned reads REST's timeline (one
request more). Each size is therefore measured for a person's PR and for a Copilot PR
(``--authors``), and the hourly figures are given for a mix of agents (``--copilot-shares``: the
share of Copilot PRs), from the two measured costs weighted by that share.

The backfill part runs ``taskeval backfill`` (``bot.jobs.backfill``, no AI, no comment) over typical
PRs (1 to 10 commits with a CI run on each, up to 30 review items: reviews, review comments and
conversation comments, 0 to 30 of them across the PRs) with each transport and each share of
Copilot PRs, and divides the hour's budgets by what a PR cost. Run from the repository root:

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
from taskeval.github.etags import shared_cache
from taskeval.github.writes import COMMENT_MUTATIONS, REST_CREATE_REQUESTS
from taskeval.judge import FileCache
from taskeval.pipeline import Options, evaluate_pull_request, publish_comment
from tests.fakegithub import ACTIONS_PERMISSIONS, FakeGitHub
from tests.fakegraphql import query_cost
from tests.fakeopenai import FakeOpenAI

REPO = "octo-org/widgets"
SIZES = (5, 150, 1000)
APIS = ("rest", "graphql")
BACKFILL_PRS = 60
# A person's PR, and one by GitHub's Copilot agent (its REST login; its GraphQL one differs).
AUTHORS = {"person": "alice", "copilot": "Copilot"}
COPILOT_SHARES = (0.0, 0.3, 1.0)
PAT = "ghp_CostModelPersonalToken000000000000000"
ACTIONS_TOKEN = "ghs_CostModelActionsToken00000000000000"
APP_TOKEN = "ghs_CostModelInstallationToken000000000"
APP_LOGIN = "taskeval[bot]"
EVENT = Path(__file__).resolve().parents[1] / "tests" / "events" / "pull_request.closed.merged.json"
# Documented primary limits per hour (docs.github.com, "Rate limits for the REST API").
# (name, REST requests, GraphQL points) per hour ("Rate limits for the GraphQL API": 5,000 points
# for a user or installation, scaling with an installation's users and repositories like REST's,
# 10,000 on Enterprise Cloud, 1,000 per repository for GITHUB_TOKEN).
LIMITS = {
    "cli": [("personal access token", 5_000, 5_000)],
    "action": [("GITHUB_TOKEN, per repository", 1_000, 1_000),
               ("GITHUB_TOKEN, GitHub Enterprise Cloud", 15_000, 1_000)],
    "app": [("installation, minimum", 5_000, 5_000),
            ("installation, most (users/repos)", 12_500, 12_500),
            ("installation on GitHub Enterprise Cloud", 15_000, 10_000)],
}
TODAY_ACTIONS = 62  # evaluations an hour on GITHUB_TOKEN over REST before GraphQL (16 requests)


@dataclass
class Cost:
    adapter: str
    api: str
    author: str  # a key of AUTHORS
    commits: int
    requests: int  # every REST request the server saw for the evaluation, comment included
    collection: int  # the part RawCollection counted (collection only)
    comment: int
    rerun: int  # REST requests of a second evaluation, which updates the comment instead
    rerun_charged: int  # ... less the 304s of its conditional reads, which GitHub does not charge
    budget_used: int  # X-RateLimit-Used after - before
    not_modified: int  # 304s among the first evaluation's requests
    graphql_queries: int  # POST /graphql
    points: int  # GraphQL points charged
    comment_queries: int  # ... of which the comment's (mutations, and the listing's further pages)
    comment_points: int
    prompt_tokens: int  # counted with the tokenizer below
    prompt_tokens_reported: int | None  # usage the (fake) server reported
    completion_tokens_reported: int | None
    prompt_chars: int
    judge_status: str


def build(size: int, token: str, login: str, integration: bool, number: int,
          author: str = AUTHORS["person"]) -> FakeGitHub:
    fake = FakeGitHub(token=None)
    fake.add_token(token, login, integration=integration,
                   permissions=ACTIONS_PERMISSIONS if integration else None)
    files = [{"filename": f"src/widgets/module_{n:04d}.py" if n % 3 else f"tests/test_{n:04d}.py",
              "additions": 12, "deletions": 3} for n in range(max(size, 1))]
    fake.add_pr(REPO, number, commits=size, ci="fail-then-fix", files=files, author=author)
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


def via_cli(fake: FakeGitHub, model: FakeOpenAI, folder: Path, number: int,
            api: str) -> dict[str, Any]:
    output = folder / "cli.json"
    with environ({"GITHUB_TOKEN": PAT, "GITHUB_API_URL": fake.url, "OPENAI_API_KEY": model.api_key,
                  "OPENAI_BASE_URL": model.base_url, "TASKEVAL_CACHE_DIR": str(folder / "c")}), \
            contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = cli.main(["evaluate", f"{REPO}#{number}", "--comment", "--output", str(output),
                         "--api", api])
    if code != 0:
        raise SystemExit(f"the CLI failed with exit code {code}")
    return json.loads(output.read_text())


def via_action(fake: FakeGitHub, model: FakeOpenAI, folder: Path, number: int,
               api: str) -> dict[str, Any]:
    workspace = folder / "workspace"
    workspace.mkdir(exist_ok=True)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
           "GITHUB_EVENT_PATH": str(EVENT), "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": fake.url,
           "GITHUB_WORKSPACE": str(workspace), "HOME": str(folder), "RUNNER_TEMP": str(folder),
           "INPUT_GITHUB-TOKEN": ACTIONS_TOKEN, "INPUT_AI": "on", "INPUT_COMMENT": "true",
           "INPUT_OPENAI-API-KEY": model.api_key, "INPUT_OPENAI-BASE-URL": model.base_url,
           "INPUT_PULL-REQUEST": str(number), "GITHUB_OUTPUT": str(folder / "out"),
           "GITHUB_STEP_SUMMARY": str(folder / "summary"), "INPUT_API": api}
    with environ({"GITHUB_ACTIONS": "true"}):
        code = run_action(env, io.StringIO())
    if code != 0:
        raise SystemExit(f"the Action failed with exit code {code}")
    return json.loads((workspace / "taskeval-result.json").read_text())


def via_app(fake: FakeGitHub, model: FakeOpenAI, folder: Path, number: int,
            api: str) -> dict[str, Any]:
    """The bot's path (``bot.jobs.handlers.PipelineCore``): an installation client, the pipeline, and
    the upsert with the App's login and what the collection read for the comment (the
    installation-token exchange happens once an hour and is left out)."""
    gh = make_client(APP_TOKEN, base_url=fake.url)
    options = Options(ai="on", trigger="pull_request", cache=FileCache(folder / "c"), api=api,  # type: ignore[arg-type]
                      env={"OPENAI_API_KEY": model.api_key, "OPENAI_BASE_URL": model.base_url})
    evaluation = evaluate_pull_request(gh, REPO, number, options)
    publish_comment(gh, REPO, number, evaluation.markdown, own_login=APP_LOGIN,
                    seed=evaluation.comment_seed)
    return json.loads(evaluation.result.to_json())


def _comment_requests(log: list[Any], api: str) -> int:
    """The requests that post the comment: learning the token's login (``GET /user``, which the CLI
    sends before collecting, so a missing login fails before the work), writing it, and every
    listing of the conversation comments but the first over REST (that one is evidence; over
    GraphQL the evidence's comments come in the query, so every REST listing is the comment's)."""
    listings = sum(1 for request in log if request.route == "issues.comments")
    own = sum(1 for request in log
              if request.route in ("user", "issues.create_comment", "issues.update_comment"))
    return own + (max(0, listings - 1) if api == "rest" else listings)


ADAPTERS: dict[str, tuple[str, str, bool, Callable[..., dict[str, Any]]]] = {
    "cli": (PAT, "mona", False, via_cli),
    "action": (ACTIONS_TOKEN, "github-actions[bot]", True, via_action),
    "app": (APP_TOKEN, APP_LOGIN, True, via_app),
}


def _rest(log: list[Any]) -> list[Any]:
    return [r for r in log if r.route not in ("rate_limit", "graphql")]


def _fresh_process() -> None:
    """Forget the ETags earlier measurements kept: each starts as a new process would (a fake
    served again may get the same port, so the same URLs, and the same fixture content)."""
    cache = shared_cache()
    if cache is not None:
        cache.clear()


def measure(adapter: str, api: str, size: int, count: Callable[[str], int],
            author: str = "person") -> Cost:
    _fresh_process()
    token, login, integration, evaluate = ADAPTERS[adapter]
    number = 42  # the PR the documented merged-PR event names
    fake = build(size, token, login, integration, number, AUTHORS[author])
    with tempfile.TemporaryDirectory() as folder, fake.serve(), FakeOpenAI() as model:
        before = used(fake, token)
        points = fake.graphql_points
        fake.reset_log()
        sent = len(fake.graphql_queries)
        result = evaluate(fake, model, Path(folder), number, api)
        log = list(fake.log)
        comment_queries = [query_cost(q, v)[0] for q, v in fake.graphql_queries[sent:]
                           if q.startswith("mutation ") or q in COMMENT_MUTATIONS]
        after = used(fake, token)
        points = fake.graphql_points - points
        prompt = "".join(m["content"] for m in model.requests[-1].body["messages"])
        fake.reset_log()
        evaluate(fake, model, Path(folder), number, api)  # the judge's cache answers this time
        rerun = len(_rest(fake.log))
        rerun_charged = sum(1 for r in _rest(fake.log) if r.status != 304)
    if result.get("warnings") and api == "graphql" and any(
            "GraphQL was" in w for w in result["warnings"]):
        raise SystemExit(f"{adapter}: GraphQL fell back to REST: {result['warnings'][0]}")
    rest = _rest(log)
    comment = _comment_requests(rest, api)
    judge = result["judge"]
    queries = sum(1 for r in log if r.route == "graphql")
    not_modified = sum(1 for r in rest if r.status == 304)
    return Cost(adapter, api, author, size, len(rest), len(rest) - comment, comment, rerun, rerun_charged,
                after - before, not_modified, queries, points, len(comment_queries),
                sum(comment_queries), count(prompt),
                judge["promptTokens"], judge["completionTokens"], len(prompt), judge["status"])


@dataclass
class BackfillCost:
    api: str
    copilot_share: float  # of the PRs, those GitHub's Copilot agent authored
    prs: int
    evaluated: int
    requests: int  # REST requests the server saw, the listing included
    charged: int  # ... less the 304s (the config file, read again for every PR over REST)
    graphql_queries: int
    points: int
    batches: list[int]

    def per_hour(self, rest_limit: int, points_limit: int) -> int:
        """PRs an hour of these budgets pays for: the scarcer of the two decides."""
        rates = [rest_limit * self.prs / self.charged] if self.charged else []
        if self.points:
            rates.append(points_limit * self.prs / self.points)
        return math.floor(min(rates)) if rates else 0


def is_copilot(n: int, share: float) -> bool:
    """Whether typical PR ``n`` (from 1) is a Copilot PR, so that any first ``k`` PRs hold
    ``share`` of them, rounded down: spread evenly, not bunched."""
    return int(n * share + 1e-9) != int((n - 1) * share + 1e-9)


def typical_prs(fake: FakeGitHub, prs: int, copilot_share: float = 0.0) -> None:
    """``prs`` typical merged PRs (see the module docstring): PR ``n`` has 1 + n % 10 commits,
    each with a CI run, and (7 n) % 31 review items: a fifth of them reviews, two fifths review
    comments, the rest conversation comments."""
    from datetime import timedelta

    from tests.fakegithub import BASE_TIME

    for n in range(1, prs + 1):
        items = (7 * n) % 31
        reviews, notes = items // 5, 2 * items // 5
        author = AUTHORS["copilot" if is_copilot(n, copilot_share) else "person"]
        fake.add_pr(REPO, n, commits=1 + n % 10, ci="fail-then-fix", author=author,
                    created_at=BASE_TIME + timedelta(hours=7 * n),
                    reviews=[{"user": "octocat", "state": "APPROVED" if i == reviews - 1 else
                              "COMMENTED", "body": f"review {i}"} for i in range(reviews)],
                    review_comments=[{"user": "octocat", "body": f"note {i}", "path": "src/a.py"}
                                     for i in range(notes)],
                    issue_comments=[{"user": "octocat" if i % 2 else author, "body": f"comment {i}"}
                                    for i in range(items - reviews - notes)])


def typical_backfill(api: str, prs: int, copilot_share: float = 0.0) -> BackfillCost:
    """``taskeval backfill`` over ``prs`` typical merged PRs (see the module docstring), a
    ``copilot_share`` of them by GitHub's Copilot agent."""
    _fresh_process()
    from bot.jobs.backfill import Backfill
    from bot.jobs.backfill import Options as BackfillOptions
    from taskeval.store.db import init_schema, make_engine

    fake = FakeGitHub(token=None)
    fake.add_token(PAT, "mona")
    typical_prs(fake, prs, copilot_share)
    with tempfile.TemporaryDirectory() as folder, fake.serve(), \
            contextlib.redirect_stderr(io.StringIO()):
        url = f"sqlite:///{Path(folder) / 'store.db'}"
        engine = make_engine(url)
        init_schema(engine)
        gh = make_client(PAT, base_url=fake.url)
        job = Backfill(BackfillOptions(repository=REPO, store_url=url, ai="off", api=api),  # type: ignore[arg-type]
                       gh, engine, token=PAT, api_url=fake.url, stream=io.StringIO(), tty=False)
        summary = job.run()
        engine.dispose()
    if summary.failed or summary.evaluated != prs:
        raise SystemExit(f"backfill over {api} did not evaluate every PR: {summary.lines()}")
    rest = len(_rest(fake.log))
    if rest + sum(1 for r in fake.log if r.route == "graphql") != summary.requests:
        raise SystemExit(f"backfill over {api}: the server saw {len(fake.log)} requests, the "
                         f"run counted {summary.requests}")
    charged = sum(1 for r in _rest(fake.log) if r.status != 304)
    return BackfillCost(api, copilot_share, prs, summary.evaluated, rest, charged,
                        sum(1 for r in fake.log if r.route == "graphql"), fake.graphql_points,
                        list(job.batches))


def _per_hour(limit: int, points_limit: int, requests: float, points: float) -> float:
    rates = [limit / requests] if requests else []
    if points:
        rates.append(points_limit / points)
    return min(rates) if rates else math.inf


def _rate(limit: int, points_limit: int, cost: Cost, copilot: Cost | None = None,
          share: float = 0.0) -> int:
    """Evaluations an hour of these budgets, for a mix of PRs a ``share`` of which cost what
    ``copilot`` did (a Copilot PR) and the rest what ``cost`` did. An evaluation that wrote its
    comment with GraphQL mutations would have written it over REST where that lasts longer
    (``writes.comment_over_graphql``: the POST and the listing after it, ``REST_CREATE_REQUESTS``,
    instead of the mutation's points), so the better of the two is what the adapter gets."""
    mix = [(cost, 1.0 - share), (copilot or cost, share)]
    requests = sum(c.budget_used * w for c, w in mix)
    points = sum(c.points * w for c, w in mix)
    rate = _per_hour(limit, points_limit, requests, points)
    if cost.comment_queries:
        rate = max(rate, _per_hour(limit, points_limit,
                                   requests + REST_CREATE_REQUESTS,
                                   points - sum(c.comment_points * w for c, w in mix)))
    return math.floor(rate)


def _share(value: float) -> str:
    return f"{value * 100:.0f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--api", choices=APIS, nargs="*", default=list(APIS))
    parser.add_argument("--backfill-prs", type=int, default=BACKFILL_PRS, metavar="N",
                        help="typical PRs the backfill part evaluates (0: skip it)")
    parser.add_argument("--copilot-shares", type=float, nargs="*", default=list(COPILOT_SHARES),
                        metavar="SHARE", help="shares of Copilot PRs the hourly figures and the "
                        "backfill are given for (0 to 1)")
    args = parser.parse_args(argv)
    tokenizer, count = token_counter()
    # Over REST a PR costs the same whoever made it (the timeline is always read); over GraphQL
    # a Copilot PR reads REST's timeline besides.
    costs = [measure(adapter, api, size, count, author) for api in args.api for adapter in ADAPTERS
             for size in args.sizes
             for author in (AUTHORS if api == "graphql" else ("person",))]
    for cost in costs:
        if cost.requests - cost.not_modified != cost.budget_used:
            raise SystemExit(f"{cost}: the server saw {cost.requests} REST requests "
                             f"({cost.not_modified} answered 304) but the budget moved by "
                             f"{cost.budget_used}")
        if cost.judge_status != "ok":
            raise SystemExit(f"{cost}: the judge did not answer")
    fills = [typical_backfill(api, args.backfill_prs, share) for api in args.api
             for share in (args.copilot_shares if api == "graphql" else args.copilot_shares[:1])] \
        if args.backfill_prs > 0 else []
    if args.json:
        print(json.dumps({"tokenizer": tokenizer, "costs": [asdict(c) for c in costs],
                          "backfill": [asdict(f) for f in fills]}, indent=2))
        return 0
    print(f"Prompt tokens: {tokenizer}\n")
    print("| adapter | api | PR by | commits | REST requests (collection + comment) | GraphQL queries "
          "(comment) | points (comment) | REST budget used (304s) | re-run: REST requests, "
          "charged | prompt tokens | prompt chars | completion tokens (fake) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in costs:
        by = "anyone" if c.api == "rest" else c.author
        print(f"| {c.adapter} | {c.api} | {by} | {c.commits:,} | {c.requests} ({c.collection} + "
              f"{c.comment}) | {c.graphql_queries} ({c.comment_queries}) | {c.points} "
              f"({c.comment_points}) | {c.budget_used} "
              f"({c.not_modified}) | {c.rerun}, {c.rerun_charged} | "
              f"{c.prompt_tokens:,} | {c.prompt_chars:,} | {c.completion_tokens_reported} |")
    sizes = " / ".join(f"{s:,}" for s in args.sizes)
    print(f"\n| adapter | documented limits per hour (REST / GraphQL points) | api | Copilot PRs | "
          f"evaluations/hour at {sizes} commits |")
    print("|---|---|---|---:|---|")
    for adapter, limits in LIMITS.items():
        for name, limit, points_limit in limits:
            for api in args.api:
                mine = [c for c in costs if c.adapter == adapter and c.api == api]
                person = {c.commits: c for c in mine if c.author == "person"}
                copilot = {c.commits: c for c in mine if c.author == "copilot"}
                for share in (args.copilot_shares if api == "graphql" else [None]):
                    rates = " / ".join(
                        f"{_rate(limit, points_limit, person[s], copilot.get(s), share or 0.0):,}"
                        for s in args.sizes if s in person)
                    print(f"| {adapter} | {name}: {limit:,} / {points_limit:,} | {api} | "
                          f"{'any' if share is None else _share(share)} | {rates} |")
    if fills:
        print(f"\nBackfill of {args.backfill_prs} typical PRs (no AI, no comment):\n")
        print("| api | Copilot PRs | REST requests (charged) | charged per PR | GraphQL queries | "
              "points | per PR | batch sizes | PRs/hour, installation (5,000 + 5,000) | "
              "PRs/hour, GITHUB_TOKEN (1,000 + 1,000) |")
        print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
        for f in fills:
            print(f"| {f.api} | {_share(f.copilot_share)} | {f.requests} ({f.charged}) | "
                  f"{f.charged / f.prs:.2f} | "
                  f"{f.graphql_queries} | "
                  f"{f.points} | {f.points / f.prs:.2f} | {', '.join(map(str, f.batches)) or '-'} "
                  f"| {f.per_hour(5_000, 5_000):,} | {f.per_hour(1_000, 1_000):,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
