"""The scorer against people's reading: the labelled set of docs/labels/ (docs/labelling.md).

    python benchmarks/labelled_set.py collect --output-dir /tmp/labelled
    python benchmarks/labelled_set.py report --results /tmp/labelled [--json out.json]

``collect`` evaluates every labelled PR through the real pipeline over the AIDev-pop replay (AI
off); ``report`` re-scores those results with the scorer in this tree and compares them with the
labels (taskeval/corpus/labels.py says what each figure is). Reads the data from
TASKEVAL_CORPUS_DIR or ../shared/data/aidev-pop-v1; says so and stops when it is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from taskeval.corpus import aidev
from taskeval.corpus.labels import LABELS, SECOND, collect, read_labels, report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="evaluate the labelled PRs through the replay")
    c.add_argument("--output-dir", type=Path, required=True)
    c.add_argument("--workers", type=int, default=4)
    r = sub.add_parser("report", help="compare re-scored results with the labels")
    r.add_argument("--results", type=Path, required=True)
    r.add_argument("--json", type=Path, default=None, help="also write the figures here")
    for p in (c, r):
        p.add_argument("--labels", type=Path, default=LABELS)
    args = parser.parse_args(argv)
    if not aidev.is_corpus_dir(aidev.default_data_dir()):
        print(f"labelled_set: no AIDev-pop data at {aidev.default_data_dir()}; nothing to do",
              file=sys.stderr)
        return 2
    labels = read_labels(args.labels)
    if args.command == "collect":
        return collect(labels, args.output_dir, args.workers)
    figures = report(labels, args.results, read_labels(SECOND) if SECOND.is_file() else [])
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
