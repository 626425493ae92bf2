"""Every regular expression of the package against worst-case text: which grow faster than the text.

    python benchmarks/pattern_worst_case.py [--length 8000] [--slow 0.05]

PR titles, bodies, comments, reviews, commit messages and trailers are anyone's words, and the
package's own patterns run on Python's backtracking ``re`` (a repository's config patterns run on
RE2 instead: tests/test_untrusted_patterns.py). This finds the package's patterns, the compiled
ones of every module (and the phrase rules' patterns in module tables) and the literals written
inline in ``re.search(...)``-style calls, and times each over long runs of one character or a
short unit (dots, spaces, newlines, links, ``#1``, ...) at ``--length`` characters and at twice
that. A pattern whose time grows about fourfold when the text doubles reads in quadratic time.
Printed: every pairing slower than ``--slow`` seconds at the longer length, with the growth, and
how many pairings were timed. What each input is cut to before a pattern sees it in an evaluation
(bodies 8,000 characters, comments 500, trailer values 160: taskeval/evidence/vocabulary.py)
decides whether a slow pairing matters; BENCHMARKS.md says which ones were looked at.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import pkgutil
import re
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import taskeval

PACKAGE = Path(taskeval.__file__).resolve().parent
CALLS = frozenset({"search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer", "compile"})
FLAGS = {"I": re.I, "IGNORECASE": re.I, "M": re.M, "MULTILINE": re.M, "S": re.S, "DOTALL": re.S,
         "X": re.X, "VERBOSE": re.X, "A": re.A, "ASCII": re.A}
# One character or a short unit, repeated: the shapes that make nested or adjacent quantifiers
# over the same characters backtrack.
UNITS = (".", " ", "\n", "\t", "a", "0", "_", "-", "*", "`", "#", "<", ">", "(", "[", "/", ":", "@", '"', "'",
         "a ", "a.", "a-", ". ", "\n \n", "http://", "#1 ", "1. ", "- [ ", "```\n", "<!--", "not ", "the ")


def module_patterns() -> Iterator[tuple[str, re.Pattern[str]]]:
    """The compiled patterns each module holds at its top level, or in a tuple or list of them
    (or of objects with a ``pattern``, as the reader's rules are)."""
    for info in pkgutil.walk_packages(taskeval.__path__, "taskeval."):
        if info.name.endswith("__main__") or ".migrations." in info.name:
            continue  # importing runs them: the CLI, Alembic's migrations (which hold no text patterns)
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            many = isinstance(value, tuple | list)
            for i, item in enumerate(value if many else (value,)):
                found = getattr(item, "pattern", item)
                if isinstance(found, re.Pattern) and isinstance(found.pattern, str):
                    yield f"{info.name}.{name}" + (f"[{i}]" if many else ""), found


def _flags(call: ast.Call) -> int:
    """The ``re`` flags named anywhere in the call's arguments (``re.I | re.M``)."""
    out = 0
    for node in ast.walk(call):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "re":
            out |= FLAGS.get(node.attr, 0)
    return out


def inline_patterns() -> Iterator[tuple[str, re.Pattern[str]]]:
    """The string literals given as the pattern of an ``re.<call>(...)`` in the package's source."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                    and node.func.attr in CALLS and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                try:
                    yield where, re.compile(node.args[0].value, _flags(node))
                except re.error:
                    continue


def seconds(pattern: re.Pattern[str], text: str) -> float:
    started = time.perf_counter()
    pattern.search(text)
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--length", type=int, default=8000, help="the shorter text's length (the longer is twice)")
    parser.add_argument("--slow", type=float, default=0.05, help="report pairings slower than this at the longer")
    args = parser.parse_args(argv)
    patterns = dict(module_patterns())
    patterns.update(inline_patterns())
    timed = 0
    for where, pattern in patterns.items():
        for unit in UNITS:
            short = unit * (args.length // len(unit))
            timed += 1
            long = seconds(pattern, short * 2)
            if long > args.slow:
                growth = long / max(seconds(pattern, short), 1e-9)
                times = len(short) * 2 // len(unit)
                print(f"{long:8.3f} s  x{growth:4.1f} when doubled  {where}  on {unit!r} * {times}")
    print(f"{len(patterns)} patterns, {timed} pairings timed at {args.length} and {args.length * 2} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
