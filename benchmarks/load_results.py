"""Load a directory of result JSON files into a store (the bot's schema), e.g. the real-corpus run:

    python -m benchmarks.real_corpus --output-dir /tmp/results
    python -m benchmarks.load_results /tmp/results --store sqlite:///taskeval.db
    taskeval dashboard --store sqlite:///taskeval.db

Every ``*.json`` under DIR that is a taskeval result is stored as ``taskeval backfill`` would store
it (``taskeval.store.results.store_evaluation``: the dashboard's columns, ``is_latest``, the signals rows). A
result already stored at the same repository, PR, head SHA and scorer version is skipped, so a
second run adds nothing. Files that are not results are counted and named, never fatal.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import select

from dashboard.cli import store_url
from taskeval.store.db import describe_url, evaluations, init_schema, make_engine, write
from taskeval.store.results import record_from_result, store_evaluation


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--store", metavar="URL", default=None,
                        help="database URL (default: $DATABASE_URL, else sqlite:///./taskeval.db)")
    parser.add_argument("--batch", type=int, default=200, help="results per transaction")
    args = parser.parse_args(argv)
    if not args.directory.is_dir():
        print(f"load_results: {args.directory} is not a directory", file=sys.stderr)
        return 2
    url = store_url(args.store)
    engine = make_engine(url)
    init_schema(engine)
    with engine.connect() as conn:
        known = {tuple(r) for r in conn.execute(select(evaluations.c.repo, evaluations.c.number,
                                                       evaluations.c.head_sha, evaluations.c.scorer_version))}
    start = time.perf_counter()
    stored = skipped = 0
    bad: list[str] = []
    pending: list[dict[str, object]] = []

    def flush() -> None:
        with write(engine) as conn:
            for row in pending:
                store_evaluation(conn, row)
        pending.clear()

    for path in sorted(args.directory.rglob("*.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
            row = {**record_from_result(result), "stored_at": time.time()}
        except (ValueError, KeyError, TypeError) as exc:
            bad.append(f"{path}: {type(exc).__name__}: {exc}"[:300])
            continue
        key = (row["repo"], row["number"], row["head_sha"], row["scorer_version"])
        if key in known:
            skipped += 1
            continue
        known.add(key)
        pending.append(row)
        stored += 1
        if len(pending) >= args.batch:
            flush()
    if pending:
        flush()
    print(f"load_results: stored {stored}, skipped {skipped} already stored, {len(bad)} not results, "
          f"in {time.perf_counter() - start:.1f} s into {describe_url(url)}", file=sys.stderr)
    for line in bad[:20]:
        print(f"  not a result: {line}", file=sys.stderr)
    engine.dispose()
    return 0 if stored or skipped else 1


if __name__ == "__main__":
    sys.exit(main())
