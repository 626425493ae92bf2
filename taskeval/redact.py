"""One scrubber for every message that leaves the process: errors, warnings, logs, comments.

Token *shapes* (GitHub, OpenAI, JWT, bearer headers) are always redacted; so are the exact secrets
the process was configured with, registered where they enter (client factories), because classic
40-hex tokens, GHES tokens or proxy keys have no recognisable shape.
"""

from __future__ import annotations

import re
import threading
from typing import Final

_SHAPES: Final = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9_]{8,}|github_pat_[A-Za-z0-9_]{8,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
    r"|sk-[A-Za-z0-9_*.\-]{4,}|(?i:bearer)\s+\S+"
)
_known: set[str] = set()
_lock = threading.Lock()
MIN_SECRET_LENGTH: Final = 8  # shorter values would redact ordinary words


def register_secret(*values: str | None) -> None:
    """Remember configured credentials so :func:`redact` removes them wherever they are echoed."""
    with _lock:
        for value in values:
            if value and len(value.strip()) >= MIN_SECRET_LENGTH:
                _known.add(value.strip())
                # A PEM key can be echoed line by line; each long line is secret on its own.
                _known.update(line for line in value.splitlines() if len(line) >= 40 and "-----" not in line)


def redact(text: str, *extra: str | None) -> str:
    """``text`` without registered secrets, ``extra`` secrets or anything shaped like a credential."""
    with _lock:
        secrets = sorted(_known | {e for e in extra if e and len(e) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, "[redacted]")
    return _SHAPES.sub("[redacted]", text)
