"""Evaluate every AIDev-pop PR through a running replay and store one result file per PR, for
``taskeval validate``. Uses only ``taskeval.github.make_client`` and ``taskeval.pipeline`` (which
every taskeval version has), so the same script scores the corpus with an older checkout too
(``PYTHONPATH=<old tree> python benchmarks/validity_corpus.py ...``) for a before/after figure.

    python -m taskeval.corpus.replay --port 8765 &        # serve the corpus
    python benchmarks/validity_corpus.py --api http://127.0.0.1:8765 --output-dir out/after
    taskeval validate --results out/after --corpus ../shared/data/aidev-pop-v1 \
        --baseline out/before --output-dir out/validity

Resumable: a PR whose result file exists is skipped. Failures are listed, not fatal.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from taskeval.github import make_client
from taskeval.pipeline import Options, evaluate_pull_request

AGENTS = ("Claude_Code", "Copilot", "Cursor", "Devin", "OpenAI_Codex")
_REPO = re.compile(r"^https?://[^/]+/(?:repos/)?([^/\s]+)/([^/\s]+?)(?:\.git)?/?$")


def corpus_prs(data: Path, limit: int | None) -> list[tuple[str, int]]:
    csv.field_size_limit(2**31 - 1)
    out = []
    for agent in AGENTS:
        path = data / agent / "prs.csv"
        if not path.is_file():
            continue
        with path.open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows[:limit]:
            m = _REPO.match(row.get("repo_url") or "")
            if m:
                out.append((f"{m.group(1)}/{m.group(2)}", int(row["number"])))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", required=True, help="the replay's URL")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/aidev-pop-v1"))
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--limit", type=int, default=None, help="first N PRs per agent")
    args = parser.parse_args(argv)
    if not (args.data / "Copilot" / "prs.csv").is_file():
        print(f"{args.data} is not the AIDev-pop folder; nothing to do", file=sys.stderr)
        return 2
    args.output_dir.mkdir(parents=True, exist_ok=True)
    todo = [(r, n) for r, n in corpus_prs(args.data, args.limit)
            if not (args.output_dir / f"{r.replace('/', '__')}__{n}.json").exists()]
    gh = make_client(None, base_url=args.api, retries=0)
    options = Options(ai="off", trigger="corpus", env={}, evaluated_at="2026-01-01T00:00:00Z")
    failures: list[str] = []
    started = time.monotonic()

    def one(item: tuple[str, int]) -> None:
        repo, number = item
        try:
            result = evaluate_pull_request(gh, repo, number, options).result
        except Exception as exc:  # listed, not fatal: the count of failures is the figure
            failures.append(f"{repo}#{number}: {type(exc).__name__}: {exc}")
            return
        (args.output_dir / f"{repo.replace('/', '__')}__{number}.json").write_text(
            result.to_json(), encoding="utf-8")

    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        for n, _ in enumerate(pool.map(one, todo), 1):
            if n % 500 == 0:
                print(f"{n}/{len(todo)} in {time.monotonic() - started:.0f}s", file=sys.stderr)
    print(f"{len(todo) - len(failures)} evaluated, {len(failures)} failed, "
          f"{time.monotonic() - started:.0f}s")
    for line in failures[:20]:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
