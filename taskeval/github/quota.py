"""What GitHub says is left of a credential's rate limits, per resource, and a meter that stops
short of a reserve of it without a shared store (the Action's: one evaluation per process).

The bot's workers and ``taskeval backfill`` share their budgets through the database
(``taskeval.store.budget``); the Action runs alone, so it needs only what GitHub reports: ``GET /rate_limit``
(free) once, then each answer's ``X-RateLimit-*`` headers, less what it has sent since.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from taskeval.github.client import CORE, GRAPHQL, Meter
from taskeval.github.errors import RateLimitError

Seen = tuple[int, int, float]  # (remaining, limit, reset epoch) from an answer's headers


def rate_resource(headers: Mapping[str, Any]) -> str:
    """The resource an answer's rate headers are about (``X-RateLimit-Resource``; ``core`` when
    absent, as on older GHES)."""
    found = {str(k).lower(): str(v) for k, v in headers.items()}
    return found.get("x-ratelimit-resource", CORE).strip().lower() or CORE


def rate_headers(headers: Mapping[str, Any]) -> tuple[int, int, float] | None:
    """(remaining, limit, reset epoch) from an answer's headers, if it has them."""
    found = {str(k).lower(): str(v) for k, v in headers.items()}
    try:
        return (int(found["x-ratelimit-remaining"]), int(found["x-ratelimit-limit"]),
                float(found["x-ratelimit-reset"]))
    except (KeyError, ValueError):
        return None


def rate_limit_now(gh: Any, *, unreachable_raises: bool = False,
                   resource: str = CORE) -> Seen | None:
    """The credential's quota of ``resource`` now, from ``GET /rate_limit`` (free of charge), for
    a PyGithub client ``gh``; None when GitHub does not say. With ``unreachable_raises``, a
    network failure (requests' exception, after the client's retries) is raised instead of
    answered with None."""
    import requests

    headers: dict[str, Any] = {}
    try:
        status, headers, output = gh.requester.requestJson("GET", "/rate_limit")
        if status != 200:
            return None
        quota = json.loads(output)["resources"][resource]
        return int(quota["remaining"]), int(quota["limit"]), float(quota["reset"])
    except requests.RequestException:
        if unreachable_raises:
            raise
        return rate_headers(headers) if resource == CORE else None
    except Exception:  # no body to read: the headers, or the next answers', will tell
        return rate_headers(headers) if resource == CORE else None


class ReserveMeter(Meter):
    """Refuses a request (``RateLimitError``, before it is sent) that would spend a resource
    into its reserve: what GitHub last reported of it, less the requests or points sent since.
    ``quota(resource)`` is asked once per resource (``rate_limit_now``); a resource without a
    reserve is not gated. ``names`` says, per resource, where its reserve was set, for the
    message."""

    def __init__(self, reserves: Mapping[str, int],
                 quota: Callable[[str], Seen | None], names: Mapping[str, str]) -> None:
        super().__init__()
        self.reserves = {k: v for k, v in reserves.items() if v > 0}
        self.names = names
        self.quota = quota
        self._left: dict[str, tuple[int, float]] = {}  # resource -> (left, reset epoch)
        self._gate = threading.Lock()

    def add(self, resource: str = CORE, points: int = 1) -> None:
        reserve = self.reserves.get(resource)
        if reserve is not None:
            with self._gate:
                if resource not in self._left:
                    seen = self.quota(resource)
                    self._left[resource] = (seen[0], seen[2]) if seen else (1 << 30, 0.0)
                left, reset = self._left[resource]
                if left - points < reserve:
                    what = "GraphQL points" if resource == GRAPHQL else "requests"
                    raise RateLimitError(
                        f"GitHub's {what} for this token are down to {left}, and "
                        f"{reserve} are kept in reserve ({self.names[resource]}); try again "
                        "after the reset", status=None, resource="rate",
                        reset_at=datetime.fromtimestamp(reset, UTC) if reset else None)
                self._left[resource] = (left - points, reset)
        super().add(resource, points)

    def seen(self, headers: Mapping[str, Any]) -> None:
        found = rate_headers(headers)
        resource = rate_resource(headers)
        if found is None or resource not in self.reserves:
            return
        with self._gate:
            left, reset = self._left.get(resource, (found[0], found[2]))
            # GitHub's word lowers what is left; a later window starts again from it.
            self._left[resource] = ((found[0], found[2]) if found[2] > reset
                                    else (min(left, found[0]), reset))

    def free(self) -> None:
        super().free()
        with self._gate:
            if CORE in self._left:
                left, reset = self._left[CORE]
                self._left[CORE] = (left + 1, reset)
