"""``taskeval backfill``: the window, restartability (a real process killed mid-run resumes with no
duplicates), comments off by default, the rate budget and --enqueue, against the fake GitHub."""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from bot.jobs import backfill
from taskeval.github import make_client
from taskeval.store.db import DEFAULT_STORE_FILE, evaluations, jobs, make_engine
from taskeval.transports import default_api
from tests.fakegithub import BASE_TIME, FAKE_TOKEN, FakeGitHub
from tests.processes import child_env, ctrl_c_reaches

REPO = "octo-org/widgets"
ROOT = Path(__file__).resolve().parents[1]


def history(fake: FakeGitHub, count: int, *, every_third_unmerged: bool = True) -> None:
    """``count`` closed PRs, one a day; every third closed without merging."""
    for n in range(1, count + 1):
        merged = not (every_third_unmerged and n % 3 == 0)
        fake.add_pr(REPO, n, merged=merged, state="closed", commits=2,
                    created_at=BASE_TIME + timedelta(days=n))


def rows(engine: Engine) -> list[Any]:
    with engine.connect() as conn:
        return conn.execute(select(evaluations).order_by(evaluations.c.id)).all()


def run(fake: FakeGitHub, store: str, stream: io.StringIO | None = None,
        **options: Any) -> backfill.Summary:
    opts = backfill.Options(repository=REPO, store_url=store, ai="off", **options)
    engine = backfill.open_store(store)
    try:
        gh = make_client(FAKE_TOKEN, base_url=fake.url, retries=1, backoff_factor=0.01)
        return backfill.Backfill(opts, gh, engine, token=FAKE_TOKEN, api_url=fake.url,
                                 stream=stream or io.StringIO(), tty=False).run()
    finally:
        engine.dispose()


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'taskeval.db'}"


@pytest.fixture
def served() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    history(fake, 9)
    with fake.serve():
        yield fake


def test_backfill_stores_each_merged_pr_once_and_a_rerun_fetches_nothing(
        served: FakeGitHub, store: str) -> None:
    out = io.StringIO()
    summary = run(served, store, out)
    assert (summary.listed, summary.evaluated, summary.skipped, summary.failed) == (6, 6, 0, {})
    assert summary.exit_code() == 0
    stored = rows(make_engine(store))
    assert sorted(r.number for r in stored) == [1, 2, 4, 5, 7, 8]
    assert {r.trigger for r in stored} == {"backfill"} and all(r.is_latest for r in stored)
    assert {r.pr_state for r in stored} == {"merged"}
    # The fake's PRs are Copilot's: the agent columns come from the result's attribution.
    assert {(r.agent_id, r.agent_confidence) for r in stored} == {("copilot", "certain")}
    assert served.comments(REPO, 1) == [] or all(
        not c["body"].startswith("<!-- taskeval") for c in served.comments(REPO, 1))
    assert served.comment_writes == {}, "no comment without --comment"
    assert "backfill: [6/6]" in out.getvalue()
    assert summary.requests == served.count() - served.count(route="rate_limit")
    if default_api() == "graphql":  # the default (TASKEVAL_API=rest runs the suites over REST)
        # The issue objects come from the repository's issue listing, not one request per PR;
        # each PR's timeline is its own read (docs/backfill.md).
        assert served.count(route="issues.get") == 0 and served.count(route="issues.list") >= 1
    else:  # each PR's issue object, and the issue its body fixes (#12), for its labels
        assert served.count(route="issues.get") == 12
    assert served.count(route="issues.timeline") == 6
    before = served.count(route="issues.timeline") + served.count(route="graphql")
    again = run(served, store)
    assert (again.evaluated, again.skipped) == (0, 6)
    assert served.count(route="issues.timeline") + served.count(route="graphql") == before, \
        "stored PRs are skipped before any detail"
    assert len(rows(make_engine(store))) == 6


def test_backfill_stores_the_same_results_through_either_transport(
        served: FakeGitHub, tmp_path: Path) -> None:
    """The default, GraphQL, and ``--api rest``: each stored result the same but for its time."""
    import json

    stored = {}
    for api in ("graphql", "rest"):
        store = f"sqlite:///{tmp_path / api}.db"
        summary = run(served, store, api=api)
        assert (summary.evaluated, summary.failed) == (6, {})
        stored[api] = {r.number: {k: v for k, v in json.loads(r.result_json).items()
                                  if k != "evaluatedAt"} for r in rows(make_engine(store))}
    assert stored["graphql"] == stored["rest"]


def test_window_state_and_limit(served: FakeGitHub, store: str) -> None:
    # PR n merged on BASE_TIME + n days (+ a little): keep days 3..7.
    since = (BASE_TIME + timedelta(days=3)).date().isoformat()
    until = (BASE_TIME + timedelta(days=8)).date().isoformat()
    summary = run(served, store, since=backfill.parse_day(since), until=backfill.parse_day(until),
                  state="closed")
    assert summary.listed == 5
    assert sorted(r.number for r in rows(make_engine(store))) == [3, 4, 5, 6, 7]
    assert {r.pr_state for r in rows(make_engine(store)) if r.number == 6} == {"closed"}
    limited = run(served, store, state="all", limit=2)
    assert limited.listed == 2 and limited.evaluated == 2  # the newest two: 9 and 8


def test_progress_counts_the_stored_prs_as_done(served: FakeGitHub, store: str) -> None:
    run(served, store, limit=2)  # the newest two merged PRs: 8 and 7
    out = io.StringIO()
    summary = run(served, store, out, parallel=1)
    assert (summary.evaluated, summary.skipped) == (4, 2)
    steps = [line for line in out.getvalue().splitlines() if line.startswith("backfill: [")]
    assert [line.split("]")[0] for line in steps] == [f"backfill: [{n}/6" for n in range(3, 7)]


def test_listing_stops_at_the_window(store: str) -> None:
    fake = FakeGitHub()
    history(fake, 230, every_third_unmerged=False)
    with fake.serve():
        since = backfill.parse_day((BASE_TIME + timedelta(days=225)).date().isoformat())
        summary = run(fake, store, since=since, parallel=2)
        assert summary.listed == 6
        # Newest update first: the first page already reaches past --since; no second page.
        assert fake.count(route="pulls.list") == 1


@pytest.mark.parametrize(("api", "logins_asked", "mutations"), [
    ("graphql", 0, 2),  # viewerDidAuthor in the batch read finds ours: no GET /user
    ("rest", 1, 0),  # asked once, before any work, not once per PR
])
def test_comment_on_request(served: FakeGitHub, store: str, api: str, logins_asked: int,
                            mutations: int) -> None:
    summary = run(served, store, comment=True, limit=2, api=api)
    assert summary.evaluated == 2
    assert served.comment_writes == {"create": 2}
    stored = rows(make_engine(store))
    assert len(stored) == 2 and all(r.comment_url for r in stored)
    for r in stored:
        ours = [c for c in served.comments(REPO, r.number) if c["body"].startswith("<!-- taskeval")]
        assert [c["html_url"] for c in ours] == [r.comment_url]
    assert served.count(route="user") == logins_asked
    assert sum(q.startswith("mutation TaskevalAddComment") for q, _ in served.graphql_queries) \
        == mutations
    # The writes are counted (and taken from the shared budget) like the reads: every request
    # the run sent is in its summary but the free /rate_limit reads and the login's.
    assert summary.requests == served.count() - served.count(route="rate_limit") - logins_asked


def test_failures_are_reported_with_reasons_and_the_rest_goes_on(
        served: FakeGitHub, store: str) -> None:
    from tests.fakegithub import Fault

    served.inject(f"/repos/{REPO}/pulls/4", Fault(404, {"message": "Not Found"}))
    summary = run(served, store, parallel=1, api="rest")  # the fault is on REST's PR object
    assert summary.evaluated == 5 and list(summary.failed) == [4]
    assert "not found" in summary.failed[4]
    assert summary.exit_code() == 1
    assert any("failed x1" in line for line in summary.lines())


def test_budget_spent_with_no_wait_stops_without_exceeding_it(store: str) -> None:
    fake = FakeGitHub(rate_limit=45, enforce_rate_limit=True)
    history(fake, 9, every_third_unmerged=False)
    with fake.serve():
        # REST's budget: 12 requests a PR spend it within the run; GraphQL's batches read the
        # nine PRs with 13 (its own budget's reserve: tests/test_rate_budget.py).
        summary = run(fake, store, reserve=10, wait=False, parallel=2, api="rest")
        assert summary.stopped and "reserve of 10" in summary.stopped
        assert summary.exit_code() == 3
        assert fake.rate_limited == 0, "no request beyond the budget reached GitHub"
        assert fake.rate_limit - fake.rate_remaining <= 45 - 10
        done = summary.evaluated
        assert 1 <= done < 9
        assert len(rows(make_engine(store))) == done


@pytest.mark.one_transport  # the fallback from GraphQL to REST
def test_a_fallback_that_cannot_name_the_account_stores_results_and_stops_once(
    store: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No GraphQL on the server, an App token GitHub will not name (GET /user refused) and no
    TASKEVAL_COMMENT_AS: the comment cannot find ours. The PRs evaluated are stored without a
    comment, GET /user is asked once, and the run stops saying what to set, instead of failing
    every PR the same way."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("TASKEVAL_COMMENT_AS", raising=False)
    token = "ghs_InstallationToken0000000000000000000000"
    fake = FakeGitHub(token=None)
    fake.add_token(token, "my-app[bot]", integration=True)
    history(fake, 9)
    fake.graphql_enabled = False
    with fake.serve():
        opts = backfill.Options(repository=REPO, store_url=store, ai="off", comment=True,
                                api="graphql", parallel=1)
        engine = backfill.open_store(store)
        try:
            gh = make_client(token, base_url=fake.url, retries=1, backoff_factor=0.01)
            summary = backfill.Backfill(opts, gh, engine, token=token, api_url=fake.url,
                                        stream=io.StringIO(), tty=False).run()
        finally:
            engine.dispose()
    assert summary.stopped is not None and "comments not posted" in summary.stopped
    assert "TASKEVAL_COMMENT_AS" in summary.stopped and "--comment-as" not in summary.stopped  # what backfill reads
    assert summary.failed == {}
    stored = rows(make_engine(store))
    assert 1 <= len(stored) == summary.evaluated and all(r.comment_url is None for r in stored)
    assert fake.comment_writes == {} and fake.count(route="user") == 1


@pytest.mark.one_transport  # the budget's wait, whichever transport spends it
def test_budget_waits_for_the_reset_with_a_countdown(store: str) -> None:
    fake = FakeGitHub(rate_limit=40, rate_window=3.0, enforce_rate_limit=True)
    history(fake, 8, every_third_unmerged=False)
    with fake.serve():
        out = io.StringIO()
        # REST: 12 requests a PR spend the 40 of a window within the run (GraphQL's 4 do not).
        summary = run(fake, store, out, reserve=5, parallel=2, api="rest")
        assert (summary.evaluated, summary.failed, summary.stopped) == (8, {}, None)
        assert fake.rate_limited == 0
        assert "waiting" in out.getvalue() and "for the reset" in out.getvalue()


def test_secondary_limit_pauses_and_retries_the_pr(served: FakeGitHub, store: str) -> None:
    from tests.fakegithub import Fault

    for _ in range(3):  # more than the client's retries: backfill itself must wait and retry
        served.inject(f"/repos/{REPO}/pulls/8", Fault.secondary_rate_limit(1))
    summary = run(served, store, parallel=1, api="rest")  # the limit is on REST's PR object
    assert (summary.evaluated, summary.failed) == (6, {})


def test_enqueue_puts_jobs_on_the_queue_once(served: FakeGitHub, store: str) -> None:
    summary = run(served, store, enqueue=True)
    assert (summary.enqueued, summary.evaluated) == (6, 0)
    again = run(served, store, enqueue=True)
    assert (again.enqueued, again.skipped) == (0, 6)
    engine = make_engine(store)
    with engine.connect() as conn:
        queued = conn.execute(select(jobs.c.number, jobs.c.trigger, jobs.c.status)).all()
    assert sorted(n for n, _, _ in queued) == [1, 2, 4, 5, 7, 8]
    assert {(t, s) for _, t, s in queued} == {("backfill", "queued")}
    # No PR is read: over GraphQL only the labels of the issues they link, for the jobs'
    # payloads (tests/test_backfill_enqueue.py), and no PR's own query.
    assert served.count(route="pulls.get") == 0
    assert not [q for q, _ in served.graphql_queries if "TaskevalPullRequest" in q]


def _env(fake: FakeGitHub, tmp: Path) -> dict[str, str]:
    env = child_env()
    env.update(PYTHONPATH=str(ROOT), GITHUB_TOKEN=FAKE_TOKEN, GITHUB_API_URL=fake.url,
               TASKEVAL_CACHE_DIR=str(tmp / "cache"))
    return env


@pytest.mark.one_transport  # a signal's handling and the store's, not collection
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "Ctrl-C"])
def test_a_killed_run_resumes_with_no_duplicates(tmp_path: Path, how: signal.Signals) -> None:
    fake = FakeGitHub(latency=0.03)
    history(fake, 24, every_third_unmerged=False)
    store = tmp_path / "taskeval.db"
    with fake.serve():
        argv = [sys.executable, "-m", "taskeval", "backfill", REPO, "--no-ai", "--parallel", "2"]
        proc = subprocess.Popen(argv, cwd=tmp_path, env=_env(fake, tmp_path),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ctrl_c_reaches)
        engine = make_engine(f"sqlite:///{store}")
        deadline = time.monotonic() + 120
        stored_then = 0
        while time.monotonic() < deadline and proc.poll() is None:
            if store.exists():
                try:
                    with engine.connect() as conn:
                        stored_then = conn.execute(
                            select(func.count()).select_from(evaluations)).scalar_one()
                except Exception:  # the schema is being created
                    stored_then = 0
            if stored_then >= 4:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        proc.send_signal(how)
        out, err = proc.communicate(timeout=60)
        if how == signal.SIGINT:
            assert proc.returncode == 130, err.decode()
            assert b"run the same command again" in out
        else:
            assert proc.returncode == -signal.SIGKILL
        kept = {r.number for r in rows(engine)}
        first = len(kept)
        assert 4 <= first < 24
        mark = len(fake.log)
        again = subprocess.run(argv, cwd=tmp_path, env=_env(fake, tmp_path),
                               capture_output=True, timeout=300)
        assert again.returncode == 0, again.stderr.decode()
        assert f"evaluated {24 - first}, skipped {first}".encode() in again.stdout
        stored = rows(engine)
        assert sorted(r.number for r in stored) == list(range(1, 25)), "each PR exactly once"
        assert sum(r.is_latest for r in stored) == 24
        # A PR's timeline is read once per evaluation, over either transport (GraphQL lacks it).
        fetched = {int(q.path.rsplit("/", 2)[1]) for q in fake.log[mark:]
                   if q.route == "issues.timeline"}
        assert fetched == set(range(1, 25)) - kept, "the resumed run fetched only what was missing"
        engine.dispose()


def test_without_database_url_backfill_writes_the_file_the_dashboard_reads(
    served: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dashboard.cli import store_url

    done = subprocess.run([sys.executable, "-m", "taskeval", "backfill", REPO, "--no-ai", "--limit", "2"],
                          cwd=tmp_path, env=_env(served, tmp_path), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DATABASE_URL", raising=False)
    url = store_url(None)  # what `taskeval dashboard` opens with no --store and no DATABASE_URL
    assert url == backfill.Options(REPO).store_url == f"sqlite:///{tmp_path / DEFAULT_STORE_FILE}"
    engine = make_engine(url)
    try:
        assert len(rows(engine)) == 2
    finally:
        engine.dispose()


def test_cli_explains_bad_input(tmp_path: Path) -> None:
    from taskeval.cli import main

    assert main(["backfill", "not a repo", "--store", f"sqlite:///{tmp_path}/x.db"]) == 2
    assert main(["backfill", REPO, "--since", "yesterday"]) == 2
    assert main(["backfill", REPO, "--limit", "0"]) == 2


def test_parse_day() -> None:
    assert backfill.parse_day("2025-03-04") == datetime(2025, 3, 4, tzinfo=UTC)
    assert backfill.parse_day("2025-03-04T10:00:00Z") == datetime(2025, 3, 4, 10, tzinfo=UTC)


def test_progress_bar_on_a_terminal_and_lines_otherwise() -> None:
    tty = io.StringIO()
    bar = backfill.Progress(4, tty, tty=True)
    bar.step(7, "evaluated", "80 (strong)")
    bar.waiting(75.2, "rate budget spent")
    assert "\r[#######" in tty.getvalue() and "1/4" in tty.getvalue()
    assert "waiting 1:16 for the reset" in tty.getvalue()
    plain = io.StringIO()
    lines = backfill.Progress(4, plain, tty=False)
    lines.step(7, "failed", "PR #7 not found")
    lines.waiting(75.2, "rate budget spent")
    assert plain.getvalue().splitlines() == [
        "backfill: [1/4] #7 failed: PR #7 not found",
        "backfill: rate budget spent: waiting 75 s for the reset"]
