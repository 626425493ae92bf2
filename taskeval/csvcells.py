"""One rule for every CSV taskeval writes (``taskeval export``, ``GET /api/export``, the
dashboard's tables): no cell becomes a spreadsheet formula.

PR titles, agent names, logins and labels come from whoever opened the PR. A spreadsheet runs a
cell starting with ``=``, ``+``, ``-`` or ``@`` as a formula (``=HYPERLINK(...)``, ``+1+cmd|...``),
and some also after a leading tab or carriage return. OWASP's rule for CSV injection: such a cell
is prefixed with a single quote, which the spreadsheet shows as text and does not run.

Numbers stay numbers: an ``int`` or ``float`` is written as it is, a negative one included (a
spreadsheet reads ``-3`` as minus three, not as a formula), and so is text that is nothing but a
decimal number (``-0.5``, ``+2``, ``-1e3``): it evaluates to that number and can call nothing.
``None`` is an empty cell and a boolean is ``true``/``false``, as the export documents.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any, Final, Protocol

# What a spreadsheet may take as the start of a formula (OWASP, "CSV Injection").
FORMULA_STARTS: Final = frozenset("=+-@\t\r")
_PLAIN_NUMBER: Final = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def cell(value: Any) -> str | int | float:
    """``value`` as a CSV cell no spreadsheet runs as a formula."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return value
    text = str(value)
    if text[:1] in FORMULA_STARTS and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


class _Stream(Protocol):
    def write(self, text: str, /) -> Any: ...


class Writer:
    """``csv.writer`` whose every cell goes through :func:`cell`, headers included."""

    def __init__(self, stream: _Stream, *, lineterminator: str = "\r\n") -> None:
        self._writer = csv.writer(stream, lineterminator=lineterminator)

    def writerow(self, values: Iterable[Any]) -> None:
        self._writer.writerow([cell(v) for v in values])


def writer(stream: _Stream, *, lineterminator: str = "\r\n") -> Writer:
    """A CSV writer (RFC 4180 quoting) that escapes formula cells: the one every CSV of the
    project is written with (a test holds the project to it)."""
    return Writer(stream, lineterminator=lineterminator)
