"""Webhook acknowledgement: throughput, p50/p99 latency and lost deliveries under concurrent load.

Starts real gunicorn three times with the same settings (``bot/web/gunicorn_conf.py``): once serving the bot
(signature check, event rules, delivery + job committed to the database before the 202) and once
serving a bare Flask endpoint that reads the body and answers 202, and once serving a durable bare
endpoint that checks the signature and commits each delivery to SQLite (WAL, ``synchronous=FULL``)
before its 202, as the bot's default store does. Concurrent keep-alive clients
send signed ``pull_request`` ``closed`` (merged) deliveries, each with its own delivery id and PR,
so every one is a new job. The bot/bare ratio is the cost of durability and checking; bot/durable
is what the bot costs beyond storing the delivery at all.

Afterwards every delivery that was answered 202 is looked up in the database: one missing is a
lost delivery (must be 0). Everything binds to 127.0.0.1 and is bounded by ``--requests`` and
``--max-seconds``.

    python -m benchmarks.webhook_bench                       # SQLite file (the default store)
    python -m benchmarks.webhook_bench --database-url postgresql+psycopg://postgres@127.0.0.1:54329/bench
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import http.client
import json
import multiprocessing as mp
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SECRET = "bench-webhook-secret"
PAYLOAD = ROOT / "tests" / "bot" / "payloads" / "pull_request.closed.merged.json"


def bare_app() -> Any:
    """The baseline: the same route on the same gunicorn, doing nothing but read and answer."""
    from flask import Flask, jsonify, request

    app = Flask("bare")

    @app.post("/webhook")
    def webhook() -> Any:
        request.get_data(cache=False)
        return jsonify(message="accepted"), 202

    return app


def durable_app() -> Any:
    """The durable baseline: check the signature, then commit the delivery (its id, event and
    arrival time, as the bot's row holds; not the body) to SQLite (WAL, ``synchronous=FULL``, as
    the bot's default store; also when the bot runs on PostgreSQL) before answering 202. What the bot adds on
    top of this is its own cost: event rules, the job, coalescing, the ORM."""
    import sqlite3

    from flask import Flask, jsonify, request

    from bot.web.webhook import signature_ok

    path = os.environ["BENCH_DURABLE_DB"]
    secret = os.environ["GITHUB_WEBHOOK_SECRET"]
    local = threading.local()

    def conn() -> sqlite3.Connection:
        found = getattr(local, "conn", None)
        if found is None:
            found = local.conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
            found.execute("PRAGMA journal_mode=WAL")
            found.execute("PRAGMA synchronous=FULL")
            found.execute("CREATE TABLE IF NOT EXISTS deliveries (id TEXT PRIMARY KEY, "
                          "event TEXT NOT NULL, received_at REAL NOT NULL)")
        return found

    app = Flask("durable")

    @app.get("/healthz")
    def healthz() -> Any:
        conn()
        return jsonify(ok=True)

    @app.post("/webhook")
    def webhook() -> Any:
        body = request.get_data(cache=False)
        if not signature_ok(secret, body, request.headers.get("X-Hub-Signature-256")):
            return jsonify(error="bad signature"), 401
        db = conn()
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO deliveries VALUES (?, ?, ?)",  # what the bot's row holds
                   (request.headers.get("X-GitHub-Delivery"), request.headers.get("X-GitHub-Event"),
                    time.time()))
        db.execute("COMMIT")
        return jsonify(message="stored"), 202

    return app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(port: int, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            conn.close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"gunicorn on port {port} did not start")


def start_gunicorn(app: str, port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "python:bot.web.gunicorn_conf", "--bind",
         f"127.0.0.1:{port}", "--log-level", "warning", app],
        env=env, cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
    )
    _wait_ready(port)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


# ------------------------------------------------------------------------------ load generation


def _bodies(prefix: str, start: int, count: int) -> list[tuple[str, bytes, str]]:
    template = json.loads(PAYLOAD.read_text())
    out = []
    for i in range(start, start + count):
        template["number"] = template["pull_request"]["number"] = i + 1
        template["pull_request"]["head"]["sha"] = hashlib.sha1(f"{prefix}{i}".encode()).hexdigest()
        body = json.dumps(template).encode()
        sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        out.append((f"{prefix}-{i:07d}", body, sig))
    return out


def _client_process(port: int, prefix: str, start: int, count: int, threads: int,
                    go: Any, deadline_s: float, out: Any) -> None:
    """One load process: ``threads`` keep-alive connections, each sending its share in turn."""
    work = _bodies(prefix, start, count)
    shares = [work[i::threads] for i in range(threads)]
    results: list[tuple[str, int, float]] = []
    lock = threading.Lock()

    def run(share: list[tuple[str, bytes, str]]) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        local = []
        end = time.monotonic() + deadline_s
        for delivery, body, sig in share:
            if time.monotonic() > end:
                break
            headers = {"Content-Type": "application/json", "X-GitHub-Event": "pull_request",
                       "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sig}
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/webhook", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status = response.status
                if response.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            except OSError:
                status = 0
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            local.append((delivery, status, time.perf_counter() - t0))
        conn.close()
        with lock:
            results.extend(local)

    go.wait()
    workers = [threading.Thread(target=run, args=(s,)) for s in shares]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    out.put(results)


def load(port: int, prefix: str, requests: int, concurrency: int, processes: int,
         max_seconds: float) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    per = requests // processes
    procs = []
    for p in range(processes):
        count = per if p < processes - 1 else requests - per * (processes - 1)
        proc = ctx.Process(target=_client_process,
                           args=(port, prefix, p * per, count, concurrency // processes, go,
                                 max_seconds, out))
        proc.start()
        procs.append(proc)
    time.sleep(1.0)  # let the clients build and sign their payloads before the clock starts
    t0 = time.perf_counter()
    go.set()
    results: list[tuple[str, int, float]] = []
    for _ in procs:
        results.extend(out.get())
    wall = time.perf_counter() - t0
    for proc in procs:
        proc.join()
    latencies = sorted(r[2] for r in results)
    ok = [r[0] for r in results if r[1] == 202]

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000

    return {
        "sent": len(results), "acknowledged": len(ok),
        "errors": sum(1 for r in results if r[1] != 202), "wall_s": round(wall, 2),
        "throughput_rps": round(len(results) / wall, 1),
        "p50_ms": round(pct(0.50), 2), "p99_ms": round(pct(0.99), 2),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 2), "acked_ids": ok,
    }


def lost(database_url: str, acked: list[str]) -> int:
    """Acknowledged deliveries that are not in the database."""
    from sqlalchemy import select

    from taskeval.store.db import deliveries, make_engine

    engine = make_engine(database_url)
    with engine.connect() as conn:
        stored = set(conn.execute(select(deliveries.c.id)).scalars())
    engine.dispose()
    return sum(1 for d in acked if d not in stored)


def durable_lost(path: Path, acked: list[str]) -> int:
    """Deliveries the durable baseline acknowledged but did not store."""
    import sqlite3

    with sqlite3.connect(path) as conn:
        stored = {row[0] for row in conn.execute("SELECT id FROM deliveries")}
    return sum(1 for d in acked if d not in stored)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--database-url", help="default: a fresh SQLite file")
    parser.add_argument("--sqlite-synchronous", choices=["full", "normal"], default="full")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.requests > 50_000 or args.max_seconds > 300:
        parser.error("keep it bounded: at most 50,000 requests and 300 seconds")

    from taskeval.store.db import drop_schema, init_schema, make_engine, normalise_database_url

    tmp = Path(tempfile.mkdtemp(prefix="webhook-bench-"))
    url = normalise_database_url(args.database_url or f"sqlite:///{tmp / 'bench.sqlite3'}")
    engine = make_engine(url)
    drop_schema(engine)
    init_schema(engine)
    engine.dispose()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TASKEVAL_"))}
    env.update(GITHUB_WEBHOOK_SECRET=SECRET, DATABASE_URL=url, PYTHONPATH=str(ROOT),
               TASKEVAL_SQLITE_SYNCHRONOUS=args.sqlite_synchronous,
               BENCH_DURABLE_DB=str(tmp / "durable.sqlite3"))
    database = url.split(":")[0] + (f" synchronous={args.sqlite_synchronous}"
                                     if url.startswith("sqlite") else "")
    report: dict[str, Any] = {"cpus": os.cpu_count(), "database": database,
                              "requests": args.requests, "concurrency": args.concurrency}
    for name, app in (("bare", "benchmarks.webhook_bench:bare_app()"),
                      ("durable", "benchmarks.webhook_bench:durable_app()"),
                      ("bot", "bot.app:create_app()")):
        port = _free_port()
        proc = start_gunicorn(app, port, env, tmp / f"{name}.log")
        try:
            load(port, f"warm-{name}", 200, args.concurrency, args.client_processes, 30)
            report[name] = load(port, f"{name}", args.requests, args.concurrency,
                                args.client_processes, args.max_seconds)
        finally:
            stop(proc)
    report["bot"]["lost"] = lost(url, report["bot"].pop("acked_ids"))
    report["bare"].pop("acked_ids")
    report["durable"]["lost"] = durable_lost(tmp / "durable.sqlite3",
                                             report["durable"].pop("acked_ids"))
    for base in ("bare", "durable"):
        report[f"ratio_throughput_{base}"] = round(report["bot"]["throughput_rps"]
                                                   / report[base]["throughput_rps"], 2)
        report[f"ratio_p50_{base}"] = round(report["bot"]["p50_ms"] / report[base]["p50_ms"], 2)
        report[f"ratio_p99_{base}"] = round(report["bot"]["p99_ms"] / report[base]["p99_ms"], 2)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['database']}, {args.requests} signed deliveries, "
              f"{args.concurrency} connections, {report['cpus']} CPUs")
        print("| endpoint | req/s | p50 ms | p99 ms | errors | lost |")
        print("|---|---:|---:|---:|---:|---:|")
        for name in ("bare", "durable", "bot"):
            r = report[name]
            print(f"| {name} | {r['throughput_rps']} | {r['p50_ms']} | {r['p99_ms']} | "
                  f"{r['errors']} | {r.get('lost', '-')} |")
        for base in ("bare", "durable"):
            print(f"bot/{base}: throughput {report[f'ratio_throughput_{base}']}, "
                  f"p50 {report[f'ratio_p50_{base}']}x, p99 {report[f'ratio_p99_{base}']}x")
    return 1 if report["bot"]["lost"] or report["bot"]["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
