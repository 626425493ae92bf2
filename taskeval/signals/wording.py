"""Counting words for signal reasons, with number agreement.

Every reason that counts things builds its phrases here, so "1 check passes", "2 checks pass",
"1 of 150 commits was", "the only check" and "both checks" come out right everywhere. The table
tests in tests/test_wording.py hold the phrases.
"""

from __future__ import annotations

from collections.abc import Iterable


def number(n: float) -> str:
    """``3`` / ``2.5``: counts print without a trailing ``.0``."""
    if type(n) is int:  # most counts: the same text without the float round trip
        return str(n)
    return str(int(n)) if float(n).is_integer() else str(n)


def noun(n: float, word: str, many: str | None = None) -> str:
    """The bare noun in the form ``n`` takes: ``check`` / ``checks``, ``person`` / ``people``."""
    return word if n == 1 else (many or word + "s")


def agree(n: float, one: str, many: str) -> str:
    """Pick the form that agrees with ``n``: ``agree(n, "passes", "pass")``."""
    return one if n == 1 else many


def plural(n: float, word: str, many: str | None = None) -> str:
    """``1 check``, ``2 checks``, ``0 checks``."""
    return f"{number(n)} {noun(n, word, many)}"


def share(part: float, whole: float, word: str, many: str | None = None) -> str:
    """``1 of 150 commits``, ``2 of 2 checks``. A verb after it agrees with ``part``:
    ``f"{share(k, n, 'commit')} {agree(k, 'was', 'were')} red"``."""
    return f"{number(part)} of {plural(whole, word, many)}"


def all_of(n: float, word: str, many: str | None = None) -> str:
    """``the only check`` (1), ``both checks`` (2), ``all 3 checks``; a verb after it agrees
    with ``n``. Capitalise at the start of a sentence with :func:`sentence`."""
    if n == 1:
        return f"the only {word}"
    if n == 2:
        return f"both {noun(n, word, many)}"
    return f"all {plural(n, word, many)}"


def none_of(n: float, word: str, many: str | None = None) -> str:
    """``none of the 3 checks``, ``neither of the 2 checks``; for 1, ``not the only check``
    would be wrong, so it gives ``the only check`` and the caller negates the verb (use
    :func:`agree`)."""
    if n == 1:
        return f"the only {word}"
    if n == 2:
        return f"neither of the 2 {noun(n, word, many)}"
    return f"none of the {plural(n, word, many)}"


def times(n: int) -> str:
    """``once``, ``twice``, ``3 times``."""
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def names(items: Iterable[str], most: int = 3) -> str:
    """``a, b and c`` / ``a, b, c and 2 more``: short lists for reasons."""
    seq = list(items)
    if len(seq) > most:
        return ", ".join(seq[:most]) + f" and {len(seq) - most} more"
    if len(seq) <= 1:
        return "".join(seq)
    return ", ".join(seq[:-1]) + " and " + seq[-1]


def sentence(text: str) -> str:
    """Capitalise the first letter (and only it)."""
    return text[:1].upper() + text[1:]


def quoted(text: str, limit: int = 60) -> str:
    """Someone's words in a reason: in typographic quotes (no Python ``repr`` escapes), cut at a
    word boundary with an ellipsis when longer than ``limit``."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        cut = flat[:limit - 1]
        space = cut.rfind(" ")
        flat = (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:.-") + "…"
    return f"“{flat}”"


def duration(hours: float, short: bool = False) -> str:
    """A duration in the unit a person would say it in: minutes under an hour, hours under two
    days, then days (``short``: "28 min", "5.6 h", as a table or a one-line summary has room for)."""
    if hours < 1:
        return f"{round(hours * 60)} min" if short else plural(round(hours * 60), "minute")
    if hours < 48:
        return f"{hours:.1f} {'h' if short else 'hours'}"
    return f"{hours / 24:.1f} days"
