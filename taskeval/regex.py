"""Regular expressions from a repository's config, run in linear time.

A repository's ``.github/taskeval.yml`` is untrusted input: a pattern such as ``(a+)+$`` takes
Python's backtracking ``re`` minutes on a 30-character title, holding the interpreter lock, so a
config could freeze every worker that evaluates one of its PRs. Every pattern a config gives is
compiled with RE2 (Google's linear-time engine, through its maintained binding ``google-re2``):
matching takes time proportional to the text, whatever the pattern. RE2 has no lookaround and no
backreferences, and its ``\\w``, ``\\d`` and ``\\b`` are ASCII; a pattern it cannot take is
refused when the config is loaded (:func:`untrusted_problem`), named among the config errors, and
the defaults apply.

The built-in patterns (the config's defaults and the agent table's) are taskeval's own, reviewed
and tested: they keep Python's ``re``, whose lookarounds some of them use. A config that repeats
one word for word gets the same.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any, TypeAlias, cast

# Python ``re`` flags a config pattern may be compiled with, and their RE2 spelling.
_INLINE = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
_SUPPORTED = re.IGNORECASE | re.MULTILINE | re.DOTALL


class LinearPattern:
    """A pattern compiled by RE2, answering like ``re.Pattern`` where taskeval asks.

    ``pattern`` and ``flags`` are the source and the ``re`` flags it was asked for, so code that
    reads a pattern's literal text (the prefilters of ``taskeval.signals.hygiene``) reads it the
    same way for both engines."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, source: str, flags: int = 0) -> None:
        if flags & ~_SUPPORTED:
            raise ValueError(f"flags {flags!r} are not supported for config patterns")
        import re2  # only when a config gives a pattern of its own

        prefix = "".join(letter for flag, letter in _INLINE if flags & flag)
        self._compiled = re2.compile(f"(?{prefix}){source}" if prefix else source, _options())
        self.pattern = source
        self.flags = flags

    # RE2's match objects answer group(), start(), end() and span() as ``re.Match`` does, which
    # is all taskeval reads of a match; typed as ``re.Match`` so callers need not tell them apart.
    def search(self, string: str, /) -> re.Match[str] | None:
        return cast("re.Match[str] | None", self._compiled.search(string))

    def finditer(self, string: str, /) -> Iterator[re.Match[str]]:
        return cast("Iterator[re.Match[str]]", self._compiled.finditer(string))

    def __repr__(self) -> str:
        return f"LinearPattern({self.pattern!r}, {self.flags!r})"


# A compiled config pattern: Python's for taskeval's own, RE2's for a repository's.
Pattern: TypeAlias = "re.Pattern[str] | LinearPattern"


def _options() -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False  # the error is raised, and reported as a config error
    return options


def untrusted_problem(source: str) -> str | None:
    """Why RE2 cannot take ``source``, in one line; None when it can."""
    import re2

    try:
        re2.compile(source, _options())
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        text = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
        return (f"RE2 (the linear-time engine that runs a repository's patterns; no lookaround or "
                f"backreferences) cannot take it: {text}")
    except (TypeError, ValueError) as exc:  # a NUL or lone surrogate in the text
        return f"not a pattern RE2 can take: {exc}"
    return None


@functools.lru_cache(maxsize=1024)
def compile_pattern(source: str, flags: int, trusted: frozenset[str]) -> Pattern:
    """``source`` compiled for matching: with ``re`` when it is one of ``trusted`` (taskeval's
    own patterns), else with RE2. One object per pattern, so the caches keyed by patterns find it
    again. Raises ``re2.error`` for a pattern a loaded config could not hold."""
    if source in trusted:
        return re.compile(source, flags)
    return LinearPattern(source, flags)
