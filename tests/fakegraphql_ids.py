"""Global node ids as the fake GitHub and the corpus replay give them (both transports, as
GitHub does): GitHub's newer form, a type prefix (the type's initials: ``IC_`` for an
``IssueComment``, ``PRRT_`` for a ``PullRequestReviewThread``) and an opaque part, here the
object's key encoded, so that ``node(id:)`` and the comment mutations can find the object again.
Imports nothing of the tests package (the corpus replay loads it from the source tree)."""

from __future__ import annotations

import base64
import json
from typing import Any


def node_id(kind: str, *parts: object) -> str:
    prefix = "".join(c for c in kind if c.isupper()) or kind[:1].upper()
    key = json.dumps([kind, *(str(p) for p in parts)]).encode()
    return f"{prefix}_{base64.urlsafe_b64encode(key).decode().rstrip('=')}"


def parse_node_id(value: str) -> list[Any]:
    """``[kind, *parts]`` of an id :func:`node_id` made; ``ValueError`` for any other."""
    _, sep, body = value.partition("_")
    if not sep or not body:
        raise ValueError(value)
    found = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    if not isinstance(found, list) or not found:
        raise ValueError(value)
    return found
