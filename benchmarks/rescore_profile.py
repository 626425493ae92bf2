"""Where re-scoring spends its time: cProfile over repeated re-scores of one stored file.

The detector caches are cleared before every re-score, so repeated runs of one file cost what
a new file of the same shape costs. Run from the repository root:

    python -m benchmarks.rescore_profile examples/agent-pr-482.bundle.json --repeat 200 --top 30
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taskeval.evidence import vocabulary
from taskeval.pipeline import Options, rescore_file
from taskeval.signals import hygiene, rework


def clear_caches() -> None:
    for module in (hygiene, vocabulary, rework):
        for value in vars(module).values():
            if hasattr(value, "cache_clear"):
                value.cache_clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    args = parser.parse_args(argv)
    options = Options(ai="off", env={})
    for _ in range(10):  # warm: imports, compiled patterns, pydantic schemas
        rescore_file(args.file, options).to_json()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.repeat):
        clear_caches()
        rescore_file(args.file, options).to_json()
    profile.disable()
    pstats.Stats(profile).sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
