"""Load, end to end: signed merged-PR deliveries through ``taskeval serve`` until every job is done.

Starts the fake GitHub (``tests/fakegithub.py``, over HTTP, a fixed latency on every request) and
the real service: ``taskeval serve`` runs gunicorn with the receiver and the queue workers, on a
fresh SQLite file (the default) or on ``--database-url``. Concurrent keep-alive clients, in their own
process, send signed ``pull_request`` ``closed`` (merged) deliveries for ``--prs`` distinct pull
requests, plus duplicates of two kinds: GitHub's redelivery (the same delivery id again) and a
second hook's copy (the same event under a new id). Then the queue is drained.

Reported: acknowledgements per second and the p50/p99 acknowledgement latency seen by the clients;
jobs processed per second; and the effects, checked against the fake GitHub and the database. Each
distinct pull request must have exactly one taskeval comment and exactly one stored result for its
head SHA: a pull request with none is *lost*, one with two is *duplicated*; both must be 0. With
``--kill``, a queue worker is killed with SIGKILL while it runs a job; the supervisor restarts it,
the job's lease expires, another worker redoes it, and the counts must still be 0 and 0.

Everything binds to 127.0.0.1 and is bounded by ``--deliveries`` and ``--max-seconds``.

    python -m benchmarks.bot_load                      # 1,000 deliveries, 200 PRs, 50 clients
    python -m benchmarks.bot_load --kill               # the same, one worker SIGKILLed mid-job
    python -m benchmarks.bot_load --database-url postgresql://postgres@127.0.0.1:54329/bench

A ``--database-url`` database must hold no bot jobs (its bot tables are dropped and recreated);
pass ``--wipe`` to allow that on one that does.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import multiprocessing as mp
import os
import queue
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakegithub import FAKE_TOKEN, FakeGitHub  # noqa: E402

SECRET = "load-webhook-secret-5d1c"
TEMPLATE = ROOT / "tests" / "bot" / "payloads" / "pull_request.closed.merged.json"
MARKER = "<!-- taskeval:evaluation -->"
REPOS = ("octo-org/widgets", "octo-org/gadgets", "octo-org/gizmos", "octo-org/sprockets")
LOGIN = "taskeval-user"  # who the fake says FAKE_TOKEN belongs to


@dataclass(frozen=True)
class Delivery:
    id: str
    repo: str
    number: int
    kind: str  # first | redelivery (same id again) | second-hook (same event, new id)
    body: bytes = field(repr=False)
    signature: str = field(repr=False)


@dataclass
class Config:
    deliveries: int = 1000
    prs: int = 200
    concurrency: int = 50
    latency: float = 0.02  # seconds added to every fake GitHub request
    queue_workers: int = 4
    web_workers: int | None = None  # gunicorn processes; None: bot/web/gunicorn_conf.py's default
    lease_seconds: float = 10.0
    kill: bool = False
    database_url: str | None = None
    wipe: bool = False
    max_seconds: float = 300.0
    seed: int = 7
    log_dir: Path | None = None


@dataclass
class Report:
    database: str
    cpus: int | None
    config: dict[str, Any]
    sent: int = 0
    acknowledged: int = 0
    answers: dict[str, int] = field(default_factory=dict)  # ack status or HTTP status
    send_seconds: float = 0.0
    acks_per_second: float = 0.0
    ack_p50_ms: float = 0.0
    ack_p99_ms: float = 0.0
    ack_max_ms: float = 0.0
    jobs: int = 0
    jobs_done: int = 0
    jobs_dead: int = 0
    drain_seconds: float = 0.0  # from the first delivery sent to the last job finished
    jobs_per_second: float = 0.0
    acked_not_stored: int = 0
    lost: int = 0
    duplicated: int = 0
    lost_prs: list[str] = field(default_factory=list)
    duplicated_prs: list[str] = field(default_factory=list)
    killed: dict[str, Any] | None = None
    github_requests: int = 0
    log: str = ""


# ------------------------------------------------------------------------------ the deliveries


def _sign(body: bytes) -> str:
    return "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def build_fake(prs: int, latency: float) -> tuple[FakeGitHub, list[tuple[str, int, str]]]:
    """The fake GitHub with ``prs`` merged pull requests spread over a few repositories."""
    fake = FakeGitHub()
    pulls = []
    for i in range(prs):
        repo = REPOS[i % len(REPOS)]
        number = 100 + i // len(REPOS)
        pr = fake.add_pr(repo, number, commits=3)
        pulls.append((repo, number, pr.head_sha))
    fake.latency = latency  # set after building: add_pr does not go through HTTP
    return fake, pulls


def plan(pulls: list[tuple[str, int, str]], total: int, seed: int) -> list[Delivery]:
    """One delivery per pull request, then duplicates: half redeliveries, half second-hook
    copies, of randomly chosen pull requests, all shuffled (a duplicate may overtake its
    original, as it can on the network)."""
    rng = random.Random(seed)
    template = json.loads(TEMPLATE.read_text())
    firsts = []
    for repo, number, sha in pulls:
        template["number"] = template["pull_request"]["number"] = number
        template["pull_request"]["head"]["sha"] = sha
        template["repository"]["full_name"] = repo
        template["repository"]["name"] = repo.split("/")[1]
        body = json.dumps(template).encode()
        delivery = f"{hashlib.sha1(f'{repo}#{number}'.encode()).hexdigest()[:8]}-0000-4000-8000-" \
                   f"{number:012d}"
        firsts.append(Delivery(delivery, repo, number, "first", body, _sign(body)))
    out = list(firsts)
    for n in range(max(0, total - len(firsts))):
        original = rng.choice(firsts)
        if n % 2 == 0:
            out.append(Delivery(original.id, original.repo, original.number, "redelivery",
                                original.body, original.signature))
        else:
            out.append(Delivery(f"{original.id[:-4]}{n % 10_000:04d}-hook", original.repo,
                                original.number, "second-hook", original.body,
                                original.signature))
    rng.shuffle(out)
    return out


def _sender(port: int, work: list[tuple[str, bytes, str]], concurrency: int, deadline_s: float,
            go: Any, out: Any) -> None:
    """The load process: ``concurrency`` keep-alive connections taking deliveries in turn."""
    todo: queue.SimpleQueue[tuple[str, bytes, str]] = queue.SimpleQueue()
    for item in work:
        todo.put(item)
    results: list[tuple[str, int, str, float]] = []
    lock = threading.Lock()

    def connect() -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def run() -> None:
        conn = connect()
        mine = []
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            try:
                delivery, body, signature = todo.get_nowait()
            except queue.Empty:
                break
            headers = {"Content-Type": "application/json", "X-GitHub-Event": "pull_request",
                       "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signature,
                       "User-Agent": "GitHub-Hookshot/load"}
            started = time.perf_counter()
            try:
                conn.request("POST", "/webhook", body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                status = response.status
                try:
                    ack = str(json.loads(data).get("status") or status)
                except ValueError:
                    ack = str(status)
                if response.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = connect()
            except (OSError, http.client.HTTPException) as exc:
                status, ack = 0, type(exc).__name__
                conn.close()
                conn = connect()
            mine.append((delivery, status, ack, time.perf_counter() - started))
        conn.close()
        with lock:
            results.extend(mine)

    go.wait()
    threads = [threading.Thread(target=run) for _ in range(concurrency)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put((results, time.perf_counter() - started))


# -------------------------------------------------------------------------------- the service


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(port: int, proc: subprocess.Popen[bytes], limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"taskeval serve exited with {proc.returncode} before it was ready")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                conn.close()
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("taskeval serve did not become healthy")


def start_service(cfg: Config, url: str, fake_url: str, log: Path) -> tuple[subprocess.Popen[bytes],
                                                                            int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "OPENAI_", "TASKEVAL_", "DATABASE_URL", "AZURE_"))}
    env.update(
        PYTHONPATH=str(ROOT), DATABASE_URL=url, GITHUB_WEBHOOK_SECRET=SECRET,
        GITHUB_TOKEN=FAKE_TOKEN, GITHUB_API_URL=fake_url, TASKEVAL_AI="off",
        TASKEVAL_QUEUE_WORKERS=str(cfg.queue_workers), TASKEVAL_POLL_SECONDS="0.1",
        TASKEVAL_LEASE_SECONDS=str(cfg.lease_seconds), TASKEVAL_BACKOFF_SECONDS="2",
        TASKEVAL_SHUTDOWN_GRACE="10",
    )
    if cfg.web_workers:
        env["WEB_CONCURRENCY"] = str(cfg.web_workers)
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskeval", "serve", "--bind", f"127.0.0.1:{port}",
         "--log-level", "warning"],
        env=env, cwd=log.parent, stdout=log.open("ab"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _wait_healthy(port, proc)
    return proc, port


def stop_service(proc: subprocess.Popen[bytes]) -> int | None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def prepare_database(url: str, wipe: bool) -> None:
    from sqlalchemy import func, inspect, select

    from taskeval.store.db import drop_schema, init_schema, jobs, make_engine

    engine = make_engine(url)
    try:
        if not url.startswith("sqlite") and inspect(engine).has_table("jobs") and not wipe:
            with engine.connect() as conn:
                if conn.execute(select(func.count()).select_from(jobs)).scalar_one():
                    raise SystemExit(f"{url.split('@')[-1]} already holds bot jobs; "
                                     "pass --wipe to drop the bot tables there")
        drop_schema(engine)
        init_schema(engine)
    finally:
        engine.dispose()


def _children(pid: int) -> set[int]:
    """Direct children of ``pid`` (Linux /proc): the queue workers ``serve`` started."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def kill_a_busy_worker(engine: Any, serve_pid: int, after_done: int,
                       stop: threading.Event) -> dict[str, Any] | None:
    """Once ``after_done`` jobs are done, SIGKILL a queue worker that is running a job."""
    from sqlalchemy import func, select

    from taskeval.store.db import jobs

    while not stop.wait(0.05):
        with engine.connect() as conn:
            done = conn.execute(select(func.count()).select_from(jobs)
                                .where(jobs.c.status == "done")).scalar_one()
            if done < after_done:
                continue
            running = conn.execute(select(jobs.c.id, jobs.c.leased_by, jobs.c.attempts)
                                   .where(jobs.c.status == "running")).all()
        workers = _children(serve_pid)
        for job_id, leased_by, attempts in running:
            pid = int(str(leased_by).split(":")[1])
            if pid in workers:  # ours: a child of the serve process, never anything else
                os.kill(pid, signal.SIGKILL)
                return {"job": job_id, "pid": pid, "attempt": attempts, "after_done": done}
    return None


# -------------------------------------------------------------------------------- the checks


def effects(fake: FakeGitHub, engine: Any, pulls: list[tuple[str, int, str]]) -> tuple[
        list[str], list[str]]:
    """(lost, duplicated) pull requests: exactly one comment and one stored result each."""
    from sqlalchemy import func, select

    from taskeval.store.db import evaluations

    with engine.connect() as conn:
        results = Counter({(r.repo, r.number, r.head_sha): r.n for r in conn.execute(
            select(evaluations.c.repo, evaluations.c.number, evaluations.c.head_sha,
                   func.count().label("n"))
            .group_by(evaluations.c.repo, evaluations.c.number, evaluations.c.head_sha))})
    lost, duplicated = [], []
    for repo, number, sha in pulls:
        comments = sum(1 for c in fake.comments(repo, number)
                       if c["body"].startswith(MARKER) and c["user"]["login"] == LOGIN)
        stored = results[(repo, number, sha)]
        name = f"{repo}#{number}"
        if comments == 0 or stored == 0:
            lost.append(f"{name} (comments {comments}, results {stored})")
        elif comments > 1 or stored > 1:
            duplicated.append(f"{name} (comments {comments}, results {stored})")
    return lost, duplicated


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else 0.0


# ---------------------------------------------------------------------------------- the run


def run(cfg: Config) -> Report:
    """Start everything, send, drain, check, stop; the report says what happened."""
    from sqlalchemy import func, select

    from taskeval.store.db import deliveries, jobs, make_engine, normalise_database_url

    work = Path(tempfile.mkdtemp(prefix="bot-load-")) if cfg.log_dir is None else cfg.log_dir
    work.mkdir(parents=True, exist_ok=True)
    url = normalise_database_url(cfg.database_url or f"sqlite:///{work / 'bot.sqlite3'}")
    prepare_database(url, cfg.wipe)
    report = Report(database=url.split(":")[0].split("+")[0], cpus=os.cpu_count(),
                    config={k: str(v) if isinstance(v, Path) else v
                            for k, v in asdict(cfg).items() if k != "database_url"},
                    log=str(work / "serve.log"))
    fake, pulls = build_fake(cfg.prs, cfg.latency)
    planned = plan(pulls, cfg.deliveries, cfg.seed)
    engine = make_engine(url)
    ctx = mp.get_context("spawn")
    with fake.serve():
        proc, port = start_service(cfg, url, fake.url, work / "serve.log")
        stop_killer = threading.Event()
        killed: list[dict[str, Any] | None] = []
        killer = None
        try:
            if cfg.kill:
                killer = threading.Thread(target=lambda: killed.append(kill_a_busy_worker(
                    engine, proc.pid, max(1, cfg.prs // 4), stop_killer)), daemon=True)
                killer.start()
            go, out = ctx.Event(), ctx.Queue()
            sender = ctx.Process(target=_sender, args=(
                port, [(d.id, d.body, d.signature) for d in planned], cfg.concurrency,
                cfg.max_seconds, go, out))
            sender.start()
            time.sleep(0.5)  # the process is up and holds its work before the clock starts
            first_sent = time.time()
            go.set()
            sent, report.send_seconds = out.get(timeout=cfg.max_seconds + 60)
            sender.join(30)

            deadline = time.monotonic() + cfg.max_seconds
            while time.monotonic() < deadline:
                with engine.connect() as conn:
                    pending = conn.execute(select(func.count()).select_from(jobs).where(
                        jobs.c.status.in_(("queued", "running")))).scalar_one()
                if pending == 0:
                    break
                time.sleep(0.2)
        finally:
            stop_killer.set()
            if killer is not None:
                killer.join(5)
            stop_service(proc)
        report.github_requests = len(fake.log)
        lost, duplicated = effects(fake, engine, pulls)

    latencies = [r[3] for r in sent]
    report.sent = len(sent)
    report.answers = dict(Counter(r[2] for r in sent))
    acked = [r[0] for r in sent if r[1] in (200, 202)]
    report.acknowledged = len(acked)
    report.acks_per_second = round(len(acked) / report.send_seconds, 1) if sent else 0.0
    report.ack_p50_ms = round(_pct(latencies, 0.50), 2)
    report.ack_p99_ms = round(_pct(latencies, 0.99), 2)
    report.ack_max_ms = round(max(latencies) * 1000, 2) if latencies else 0.0
    with engine.connect() as conn:
        stored = set(conn.execute(select(deliveries.c.id)).scalars())
        rows = conn.execute(select(jobs.c.status, jobs.c.finished_at, jobs.c.id,
                                   jobs.c.attempts, jobs.c.last_error)).all()
    engine.dispose()
    report.acked_not_stored = sum(1 for d in set(acked) if d not in stored)
    report.jobs = len(rows)
    report.jobs_done = sum(1 for r in rows if r.status == "done")
    report.jobs_dead = sum(1 for r in rows if r.status == "dead")
    finished = [r.finished_at for r in rows if r.finished_at]
    if finished:
        report.drain_seconds = round(max(finished) - first_sent, 2)
        report.jobs_per_second = round(report.jobs_done / report.drain_seconds, 1)
    report.lost, report.duplicated = len(lost), len(duplicated)
    report.lost_prs, report.duplicated_prs = lost[:10], duplicated[:10]
    if killed and killed[0] is not None:
        target = next((r for r in rows if r.id == killed[0]["job"]), None)
        report.killed = {**killed[0], "final_status": target.status if target else None,
                         "final_attempts": target.attempts if target else None}
    elif cfg.kill:
        report.killed = {"job": None, "note": "no running job was found to kill"}
    return report


def ok(report: Report) -> bool:
    """The run's verdict: every delivery answered and stored, every PR evaluated exactly once."""
    killed = report.killed
    return (report.acknowledged == report.sent == report.config["deliveries"]
            and report.acked_not_stored == 0 and report.lost == 0 and report.duplicated == 0
            and report.jobs_dead == 0 and report.jobs_done == report.jobs
            and (killed is None or killed.get("job") is not None))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Config()
    parser.add_argument("--deliveries", type=int, default=defaults.deliveries)
    parser.add_argument("--prs", type=int, default=defaults.prs)
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency)
    parser.add_argument("--latency", type=float, default=defaults.latency,
                        help="seconds added to every fake GitHub request (default 0.02)")
    parser.add_argument("--queue-workers", type=int, default=defaults.queue_workers)
    parser.add_argument("--web-workers", type=int, default=None)
    parser.add_argument("--lease-seconds", type=float, default=defaults.lease_seconds)
    parser.add_argument("--kill", action="store_true",
                        help="SIGKILL a queue worker while it runs a job")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL") or None,
                        help="default: $DATABASE_URL, else a fresh SQLite file")
    parser.add_argument("--wipe", action="store_true",
                        help="allow dropping the bot tables of a database that holds jobs")
    parser.add_argument("--max-seconds", type=float, default=defaults.max_seconds)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.deliveries > 20_000 or args.max_seconds > 900 or args.concurrency > 200:
        parser.error("keep it bounded: at most 20,000 deliveries, 900 seconds, 200 clients")
    if args.prs > args.deliveries:
        parser.error("--prs cannot exceed --deliveries (each PR gets at least one delivery)")
    cfg = Config(deliveries=args.deliveries, prs=args.prs, concurrency=args.concurrency,
                 latency=args.latency, queue_workers=args.queue_workers,
                 web_workers=args.web_workers, lease_seconds=args.lease_seconds, kill=args.kill,
                 database_url=args.database_url, wipe=args.wipe, max_seconds=args.max_seconds,
                 seed=args.seed)
    report = run(cfg)
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        print(f"{report.database}, {report.sent} deliveries ({cfg.prs} PRs), {cfg.concurrency} "
              f"clients, fake GitHub +{cfg.latency * 1000:.0f} ms, {cfg.queue_workers} queue "
              f"workers, {report.cpus} CPUs" + (", one worker SIGKILLed" if cfg.kill else ""))
        print(f"answers: {report.answers}")
        print(f"acks/s {report.acks_per_second}  p50 {report.ack_p50_ms} ms  p99 "
              f"{report.ack_p99_ms} ms  max {report.ack_max_ms} ms")
        print(f"jobs {report.jobs} (done {report.jobs_done}, dead {report.jobs_dead}) in "
              f"{report.drain_seconds} s: {report.jobs_per_second} jobs/s; "
              f"{report.github_requests} GitHub requests")
        print(f"acknowledged but not stored {report.acked_not_stored}; lost {report.lost}; "
              f"duplicated {report.duplicated}")
        if report.killed:
            print(f"killed: {report.killed}")
        for name in report.lost_prs + report.duplicated_prs:
            print(f"  {name}")
        print(f"service log: {report.log}")
    return 0 if ok(report) else 1


if __name__ == "__main__":
    sys.exit(main())
