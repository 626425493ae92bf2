"""Load a directory of result JSON files into a store: now ``taskeval load``, kept for the
benchmarks' own instructions:

    python -m benchmarks.real_corpus --output-dir /tmp/results
    taskeval load /tmp/results --store sqlite:///taskeval.db     # or: python -m benchmarks.load_results ...
    taskeval dashboard --store sqlite:///taskeval.db

See ``taskeval load --help`` and taskeval/store/load.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taskeval.cli import main as taskeval_main


def main(argv: list[str] | None = None) -> int:
    return taskeval_main(["load", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
