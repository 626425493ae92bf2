"""One scrubber for every message that leaves the process: errors, warnings, logs, comments,
and the bot's log lines, stored errors and HTTP answers.

Token *shapes* (GitHub, OpenAI, JWT, bearer and ``token`` headers, PEM private keys) are always
redacted; so are the exact secrets the process was configured with, registered where they enter
(client factories, the bot's settings), because classic 40-hex tokens, GHES tokens, webhook
secrets or proxy keys have no recognisable shape.
"""

from __future__ import annotations

import re
import threading
from typing import Final

_SHAPES: Final = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9_]{8,}|github_pat_[A-Za-z0-9_]{8,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
    r"|sk-[A-Za-z0-9_*.\-]{4,}|(?i:bearer)\s+\S+|(?i:token)\s+[A-Za-z0-9_.=-]{16,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
    re.DOTALL,
)
_known: set[str] = set()
_lock = threading.Lock()
MIN_SECRET_LENGTH: Final = 8  # shorter values would redact ordinary words


def register_secret(*values: str | None, min_length: int = MIN_SECRET_LENGTH) -> None:
    """Remember configured credentials so :func:`redact` removes them wherever they are echoed.

    ``min_length`` lowers the floor for values an operator set explicitly (the bot's webhook
    secret and API token), where a short value is still a secret."""
    with _lock:
        for value in values:
            if value and len(value.strip()) >= min_length:
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
