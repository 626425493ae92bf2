"""Dashboard page times over a large store: overview and agent pages, p50/p95, SQLite and PostgreSQL.

    python benchmarks/dashboard_bench.py                        # 100,000 evaluations, SQLite + PostgreSQL
    python benchmarks/dashboard_bench.py --rows 20000 --dialect sqlite --requests 20

The store is synthetic (``tests/dashboard_store.py``): 7 agents, 4 repositories, 40 weeks, every
10th PR evaluated twice, 12 signals per evaluation, each PR with its turns, task type, closure or
rescue (the agent page's cycle times and costs, the comparison) — so 100,000 evaluations are ~90,900 PRs plus
~1.2 million signal rows. Each page is requested through the Flask app in process (routing, SQL,
template, SVG charts: everything but the socket) after one warm-up request; the figure is the
wall time per request. PostgreSQL is ``VACUUM ANALYZE``d after the bulk load (as autovacuum would
leave it), SQLite ``ANALYZE``d. PostgreSQL is ``DATABASE_URL_POSTGRES`` when set, else a throwaway server
started here like ``scripts/test`` does (needs Debian's postgresql package; skipped otherwise).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flask import Flask
from sqlalchemy import Engine, MetaData

from dashboard import queries
from dashboard.core import DashboardConfig, install
from taskeval.store.db import init_schema, make_engine
from tests.dashboard_store import fill

PAGES = [
    ("overview (by agent)", "/dashboard/"),
    ("overview (by author)", "/dashboard/?by=author"),
    ("overview, repo + 3-month filter", "/dashboard/?repo=octo-org/widgets&since=2025-04-01&until=2025-06-30"),
    ("overview, repo + 13 whole weeks", "/dashboard/?repo=octo-org/widgets&since=2025-03-31&until=2025-06-29"),
    ("agent page (largest agent)", "/dashboard/agent/copilot"),
    ("agent page, repo + band filter", "/dashboard/agent/codex?repo=octo-org/gadgets&band=acceptable"),
    ("agent page, task type filter", "/dashboard/agent/copilot?task_type=feature"),
    ("comparison of two agents", "/dashboard/compare?a=copilot&b=codex"),
    ("comparison of two periods", "/dashboard/compare?agent=copilot&a_until=2025-05-31&b_since=2025-06-01"),
    ("agent page cycle-time CSV", "/dashboard/agent/copilot?format=csv&table=cycle"),
    ("overview, provisional left out", "/dashboard/?provisional=exclude"),
    ("agent page, provisional left out", "/dashboard/agent/copilot?provisional=exclude"),
]


@contextmanager
def throwaway_postgres() -> Iterator[str | None]:
    url = os.environ.get("DATABASE_URL_POSTGRES", "").strip()
    if url:
        yield url.replace("postgresql://", "postgresql+psycopg://", 1) if url.startswith("postgresql://") else url
        return
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
    if not bins:
        print("no PostgreSQL binaries (apt-get install postgresql): PostgreSQL not measured", file=sys.stderr)
        yield None
        return
    pg = bins[-1]
    root = Path(tempfile.mkdtemp(prefix="taskeval-dash-pg."))
    root.chmod(0o755)
    as_postgres: list[str] = []
    if os.getuid() == 0:
        subprocess.run(["chown", "postgres", str(root)], check=True)
        as_postgres = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = root / "data"
    try:
        subprocess.run([*as_postgres, str(pg / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
                        "--no-sync"], check=True, capture_output=True)
        subprocess.run([*as_postgres, str(pg / "pg_ctl"), "-D", str(data), "-w", "-l", str(root / "log"), "-o",
                        f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off", "start"],
                       check=True, capture_output=True)
        subprocess.run([*as_postgres, str(pg / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U",
                        "postgres", "bench"], check=True, capture_output=True)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/bench"
    finally:
        subprocess.run([*as_postgres, str(pg / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def _drop_everything(engine: Engine) -> None:
    found = MetaData()
    with engine.begin() as conn:
        found.reflect(conn)
        found.drop_all(conn)


def measure(url: str, rows: int, requests: int) -> dict[str, Any]:
    engine = make_engine(url)
    _drop_everything(engine)
    init_schema(engine)
    prs = round(rows / 1.1)
    start = time.perf_counter()
    evaluations = len(fill(engine, prs, seed=1, full_results=False, batch=10_000).rows)
    fill_s = time.perf_counter() - start
    # The rows fill() returns (100,000 dicts, millions of objects) are dropped before timing: a
    # dashboard process does not hold them, and each full collection of the garbage collector
    # would walk them all (~75 ms each with them alive, measured on the agent page).
    gc.collect()
    if engine.dialect.name == "postgresql":
        # VACUUM as autovacuum leaves a live store: it sets the visibility map, without which an
        # index-only scan of freshly bulk-loaded rows still visits every heap page.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
    else:
        with engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
    app = Flask("bench")
    install(app, DashboardConfig(engine=engine, open_access=True))
    client = app.test_client()
    pages: dict[str, Any] = {}
    for (name, path), cold in [(p, True) for p in PAGES] + [(p, False) for p in PAGES[:1] + PAGES[4:5]]:
        queries.ENABLED = not cold
        name = f"{name}{'' if cold else ', cache warm'}"
        first = client.get(path)
        assert first.status_code == 200, (path, first.status_code)
        times, cpu = [], []
        for _ in range(requests):
            t0, c0 = time.perf_counter(), time.process_time()
            resp = client.get(path)
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            assert resp.status_code == 200
        times.sort()
        cpu.sort()
        pages[name] = {
            "path": path,
            "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 1),
            "max_ms": round(times[-1], 1),
            "cpu_p95_ms": round(cpu[min(len(cpu) - 1, int(0.95 * len(cpu)))], 1),
            "cache": "warm" if not cold else "off (every query runs)",
            "bytes": len(first.data),
        }
        print(f"  {engine.dialect.name:10s} {name:34s} p50 {pages[name]['p50_ms']:7.1f} ms  "
              f"p95 {pages[name]['p95_ms']:7.1f} ms  (this process's CPU p95 {pages[name]['cpu_p95_ms']:.1f} ms)",
              file=sys.stderr, flush=True)
    queries.ENABLED = True
    engine.dispose()
    return {"dialect": engine.dialect.name, "evaluations": evaluations, "prs": prs,
            "fill_seconds": round(fill_s, 1), "requests_per_page": requests, "pages": pages}


def main(argv: list[str] | None = None) -> int:
    # Filling the store is not what is measured: skip the per-commit fsync (reads are unaffected).
    os.environ.setdefault("TASKEVAL_SQLITE_SYNCHRONOUS", "normal")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="stored evaluations (default 100,000)")
    parser.add_argument("--requests", type=int, default=40, help="timed requests per page (default 40)")
    parser.add_argument("--dialect", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--output", metavar="PATH", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    runs = []
    if args.dialect in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="taskeval-dash-") as tmp:
            print(f"SQLite, {args.rows:,} evaluations ...", file=sys.stderr, flush=True)
            runs.append(measure(f"sqlite:///{tmp}/bench.db", args.rows, args.requests))
    if args.dialect in ("postgres", "both"):
        with throwaway_postgres() as url:
            if url:
                print(f"PostgreSQL, {args.rows:,} evaluations ...", file=sys.stderr, flush=True)
                runs.append(measure(url, args.rows, args.requests))
    print(f"load average {os.getloadavg()}", file=sys.stderr)
    report = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "platform": platform.platform(), "load_average_at_end": os.getloadavg()},
              "runs": runs}
    text = json.dumps(report, indent=2)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    print(text)
    worst = max((p["p95_ms"] for r in runs for p in r["pages"].values() if p["cache"] != "warm"), default=0.0)
    print(f"worst cold p95: {worst:.1f} ms (budget 300 ms)", file=sys.stderr)
    return 0 if worst <= 300 else 1


if __name__ == "__main__":
    sys.exit(main())
