"""The inputs/outputs tables in the docs, generated from ``action.yml`` so they cannot drift.

``python -m action.docs`` rewrites the block between the markers in every file given (default
``docs/action.md`` and ``README.md`` where it holds the markers); ``--check`` only reports drift
and exits 1, which is what the test and CI rely on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
START = "<!-- action-reference:start (generated from action.yml by `python -m action.docs`) -->"
END = "<!-- action-reference:end -->"
DEFAULT_FILES = ("docs/action.md", "README.md")


def _cell(text: object) -> str:
    flat = " ".join(str(text).split())
    return flat.replace("|", "\\|")


def _default(value: object) -> str:
    if value is None or value == "":
        return "—"
    return f"`{_cell(value)}`"


def render_reference(meta: Mapping[str, Any]) -> str:
    """The markdown block (markers included) describing every input and output."""
    lines = [START, "", "| Input | Default | Description |", "|---|---|---|"]
    for name, spec in (meta.get("inputs") or {}).items():
        required = " **Required.**" if spec.get("required") else ""
        lines.append(f"| `{name}` | {_default(spec.get('default'))} | "
                     f"{_cell(spec.get('description', ''))}{required} |")
    lines += ["", "| Output | Description |", "|---|---|"]
    for name, spec in (meta.get("outputs") or {}).items():
        lines.append(f"| `{name}` | {_cell(spec.get('description', ''))} |")
    lines += ["", END]
    return "\n".join(lines)


def load_metadata(path: Path = ROOT / "action.yml") -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level is not a mapping")
    return data


def replace_block(text: str, block: str) -> str | None:
    """``text`` with the marked block replaced by ``block``; None when it has no markers."""
    start = text.find(START)
    end = text.find(END, start + 1 if start >= 0 else 0)
    if start < 0 or end < 0:
        return None
    return text[:start] + block + text[end + len(END):]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m action.docs", description=__doc__)
    parser.add_argument("files", nargs="*", help=f"default: {' '.join(DEFAULT_FILES)}")
    parser.add_argument("--check", action="store_true", help="report drift, change nothing")
    args = parser.parse_args(argv)
    block = render_reference(load_metadata())
    files = [Path(f) for f in args.files] or [ROOT / f for f in DEFAULT_FILES]
    stale = []
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        updated = replace_block(text, block)
        if updated is None or updated == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(updated, encoding="utf-8")
    for path in stale:
        verb = "is out of date with" if args.check else "regenerated from"
        print(f"{path}: inputs/outputs table {verb} action.yml", file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
