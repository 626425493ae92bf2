"""One cache for pure functions of long-lived objects that are expensive to hash.

A batch re-score passes the same settings, rule tables and pattern tuples for every file; hashing
them (a dozen frozen rules, tuples of compiled patterns) on every lookup cost more than the work
cached. These are looked up by the identity of the arguments instead, each kept alive with its
answer so an id is never reused while it is cached.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])


def by_identity(func: _F, size: int = 256) -> _F:
    """``func`` answering again for the very same arguments (``is``) without being called.
    Holds at most ``size`` answers; the arguments must not change while they are cached."""
    seen: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}

    @functools.wraps(func)
    def cached(*args: Any) -> Any:
        key = tuple(map(id, args))
        hit = seen.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], args, strict=True)):
            return hit[1]
        value = func(*args)
        if len(seen) >= size:
            seen.clear()
        seen[key] = (args, value)
        return value

    return cached  # type: ignore[return-value]
