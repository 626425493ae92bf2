"""One GitHub rate budget per credential and resource, kept in the bot's database and shared by
every process that uses the credential: ``taskeval backfill`` runs and queue workers on any node.

GitHub counts REST requests (resource ``core``) and GraphQL points (resource ``graphql``: a query
costs its connections' page requests divided by 100, at least 1, as ``rateLimit { cost }``
reports) in separate budgets of the same credential, each with its own ``X-RateLimit-*`` headers
(``X-RateLimit-Resource`` names which). So there is one row per (credential, resource): a GraphQL
query takes its expected points from the ``graphql`` row, a REST request one slot from ``core``,
and what an answer reports lowers the row of the resource it names.

GitHub gives a token (or an App installation) a number of requests per window (``X-RateLimit-
Limit``, typically 5,000 an hour) and says on every answer how many are left
(``X-RateLimit-Remaining``) and when the window ends (``X-RateLimit-Reset``). A row of
``rate_budgets`` holds what is left *to grant*: before a request is sent, its sender takes a slot,
in chunks of a few, with one atomic statement::

    UPDATE rate_budgets SET remaining = remaining - :n
    WHERE key = :key AND resource = :resource AND "window" = :window
      AND remaining - :n >= :reserve

PostgreSQL re-checks the ``WHERE`` under the row lock and SQLite runs writers one at a time, so
no two processes can both take the last slots. ``reserve`` slots are never granted: they are left
for the credential's other users (people, CI). Unused slots of a chunk are given back. What GitHub
reports lowers the row (``remaining = min(remaining, observed)``), so requests others made with the
same credential are accounted for; a new window resets it. Every request taskeval sends for
collection goes through a :class:`GateMeter`, so the requests sent in a window never exceed the
slots granted, which never exceed ``limit - reserve`` (give or take the chunks in flight when
someone outside taskeval spends at the same moment).

When the budget is spent the taker waits for the reset (``on_wait`` is told the seconds left,
once a second, for a countdown) or, with ``wait=False``, raises :class:`BudgetExhausted`.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import Connection, Engine, case, insert, select, update
from sqlalchemy.exc import IntegrityError

from taskeval.github.client import CORE, GRAPHQL, Meter
from taskeval.github.quota import Seen, rate_headers, rate_limit_now, rate_resource
from taskeval.store.db import rate_budgets, write

__all__ = ["Budget", "BudgetExhausted", "GateMeter", "Seen", "budget_key", "rate_headers",
           "rate_limit_now", "rate_resource"]
from taskeval.github.errors import RateLimitError

DEFAULT_LIMIT = 5000  # GitHub's for a user token; the first answer's headers correct it
WINDOW_SECONDS = 3600.0
CHUNK = 4  # slots taken per database round trip


class BudgetExhausted(RateLimitError):
    """The budget (less the reserve) is spent and the caller chose not to wait for the reset."""


def budget_key(api_url: str, *, token: str | None = None, installation_id: int | None = None) -> str:
    """The budget's name: the API host and the credential (a hash of a token, never the token)."""
    host = urlsplit(api_url).netloc or api_url
    if installation_id is not None:
        return f"{host}|installation:{installation_id}"
    if token:
        return f"{host}|token:{hashlib.sha256(token.encode()).hexdigest()[:16]}"
    return f"{host}|anonymous"


class Budget:
    """The shared budget of one credential and resource (one ``rate_budgets`` row)."""

    def __init__(
        self,
        engine: Engine,
        key: str,
        *,
        resource: str = CORE,
        reserve: int = 0,
        wait: bool = True,
        on_wait: Callable[[float], None] | None = None,
        refresh: Callable[[], tuple[int, int, float] | None] | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.engine = engine
        self.key = key
        self.resource = resource
        self.reserve = max(0, reserve)
        self.wait = wait
        self.on_wait = on_wait
        self.refresh = refresh  # GET /rate_limit (free of charge) after a wait
        self.clock = clock
        self.sleep = sleep
        self.granted = 0
        self.waited = 0.0
        self._exists = False
        self._count = threading.Lock()

    # ------------------------------------------------------------------ the row

    def _row(self) -> Any:
        b = rate_budgets
        return (b.c.key == self.key) & (b.c.resource == self.resource)

    def _ensure(self) -> None:
        if self._exists:
            return
        with self.engine.connect() as conn:
            there = conn.execute(select(rate_budgets.c.key)
                                 .where(self._row())).first() is not None
        if not there:
            # Start from what GitHub says now (GET /rate_limit is free), not from a guess.
            seen = self.refresh() if self.refresh is not None else None
            now = self.clock()
            remaining, limit, reset = seen if seen is not None and seen[2] > now else (
                DEFAULT_LIMIT, DEFAULT_LIMIT, now + WINDOW_SECONDS)
            try:
                with write(self.engine) as conn:
                    if conn.execute(select(rate_budgets.c.key)
                                    .where(self._row())).first() is None:
                        conn.execute(insert(rate_budgets).values(
                            key=self.key, resource=self.resource, limit=limit, remaining=remaining, reset_at=reset,
                            window=1, updated_at=now))
            except IntegrityError:
                pass  # another process made it first
        self._exists = True

    def state(self) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(rate_budgets).where(self._row())).first()
        return dict(row._mapping) if row is not None else None

    def _apply(self, conn: Connection, now: float, seen: Seen | None) -> None:
        """What GitHub said: lower the row to it in the same window; adopt a newer window."""
        if seen is None or seen[2] <= now:
            return  # nothing, or an answer from a window that is over
        remaining, limit, reset = seen
        b = rate_budgets
        conn.execute(
            update(b).where(self._row(), b.c.reset_at > now)
            .values(remaining=case((b.c.remaining > remaining, remaining), else_=b.c.remaining),
                    limit=limit, reset_at=reset, updated_at=now))
        conn.execute(  # the row's window is over: this answer starts the new one
            update(b).where(self._row(), b.c.reset_at <= now)
            .values(remaining=remaining, limit=limit, reset_at=reset, window=b.c.window + 1,
                    updated_at=now))

    def observe(self, remaining: int, limit: int, reset: float) -> None:
        self._ensure()
        with write(self.engine) as conn:
            self._apply(conn, self.clock(), (remaining, limit, reset))

    # ------------------------------------------------------------------ granting

    def _take(self, n: int, seen: Seen | None) -> tuple[int | None, float]:
        """(window, reset) on success, (None, reset) when the budget cannot grant ``n`` now."""
        now = self.clock()
        b = rate_budgets
        with write(self.engine) as conn:
            self._apply(conn, now, seen)
            row = conn.execute(select(b.c.reset_at, b.c.window)
                               .where(self._row())).first()
            if row is None:
                return None, 0.0
            window, reset = int(row.window), float(row.reset_at)
            if reset <= now:  # a new window: start from the limit until GitHub says more
                window, reset = window + 1, now + WINDOW_SECONDS
                conn.execute(update(b).where(self._row(), b.c.window == row.window)
                             .values(remaining=b.c.limit, reset_at=reset, window=window,
                                     updated_at=now))
            taken = conn.execute(
                update(b).where(self._row(), b.c.window == window,
                                b.c.remaining - n >= self.reserve)
                .values(remaining=b.c.remaining - n, updated_at=now)
            )
            return (window if taken.rowcount == 1 else None), reset

    def acquire(self, n: int = CHUNK, seen: Seen | None = None) -> tuple[int, int]:
        """Take ``n`` slots (a single one at the very end of a window); returns (window, slots
        granted). ``seen``: the latest rate headers to apply first. Waits for the reset, or raises
        :class:`BudgetExhausted`."""
        self._ensure()
        while True:
            for size in (n, 1) if n > 1 else (n,):
                window, reset = self._take(size, seen)
                seen = None
                if window is not None:
                    with self._count:
                        self.granted += size
                    return window, size
            if reset == 0.0:
                self._exists = False
                self._ensure()
                continue
            now = self.clock()
            if not self.wait:
                what = "GraphQL points" if self.resource == GRAPHQL else (
                    "request" if self.resource == CORE else f"{self.resource} request")
                raise BudgetExhausted(
                    f"the GitHub {what} budget ({self.key.split('|', 1)[-1]}) is spent down to "
                    f"its reserve of {self.reserve}; it resets in {reset - now:.0f} s",
                    status=None, resource="rate", reset_at=datetime.fromtimestamp(reset, UTC))
            self._wait_until(reset)
            if self.refresh is not None:
                seen = self.refresh()

    def _wait_until(self, reset: float) -> None:
        while (left := reset - self.clock()) > 0:
            if self.on_wait is not None:
                self.on_wait(left)
            step = min(1.0, left + 0.05)
            self.sleep(step)
            with self._count:
                self.waited += step

    def release(self, n: int, window: int, seen: Seen | None = None) -> None:
        """Give back ``n`` unused slots of ``window`` (nothing if that window is over)."""
        if n <= 0 and seen is None:
            return
        self._ensure()
        b = rate_budgets
        with write(self.engine) as conn:
            now = self.clock()
            if n > 0:  # first the refund, then GitHub's word, which knows nothing of our slots
                back = b.c.remaining + n
                conn.execute(update(b).where(self._row(), b.c.window == window)
                             .values(remaining=case((back > b.c.limit, b.c.limit), else_=back),
                                     updated_at=now))
            self._apply(conn, now, seen)


class _Held:
    """The slots one meter holds of one budget: their window, how many, the latest headers."""

    def __init__(self) -> None:
        self.window = 0
        self.slots = 0
        self.seen: Seen | None = None


class GateMeter(Meter):
    """A request meter that takes budget slots before each request (``add``): one of ``budget``
    (``core``) for a REST request, the query's expected points of ``graphql`` for a GraphQL
    query, and tells each budget what GitHub reported about its resource (``seen``, applied with
    the next chunk and at ``close``). Without a ``graphql`` budget GraphQL queries are counted
    but not gated; their headers never touch the REST budget."""

    def __init__(self, budget: Budget, chunk: int = CHUNK, *,
                 graphql: Budget | None = None) -> None:
        super().__init__()
        self.budget = budget
        self.budgets: dict[str, Budget] = {CORE: budget}
        if graphql is not None:
            self.budgets[GRAPHQL] = graphql
        self.chunk = chunk
        self._held = {resource: _Held() for resource in self.budgets}
        self._gate = threading.Lock()

    def _pop_seen(self, held: _Held) -> Seen | None:
        with self._lock:
            seen, held.seen = held.seen, None
        return seen

    def add(self, resource: str = CORE, points: int = 1) -> None:
        budget = self.budgets.get(resource)
        if budget is not None:
            held = self._held[resource]
            with self._gate:
                while held.slots < points:
                    window, got = budget.acquire(max(self.chunk, points - held.slots),
                                                 self._pop_seen(held))
                    if window != held.window:  # slots of a window that is over are void
                        held.window, held.slots = window, 0
                    held.slots += got
                held.slots -= points
        super().add(resource, points)

    def free(self) -> None:
        """A 304: GitHub did not charge the slot the request took; it is this meter's again."""
        super().free()
        with self._gate:
            self._held[CORE].slots += 1

    def seen(self, headers: Mapping[str, Any]) -> None:
        found = rate_headers(headers)
        held = self._held.get(rate_resource(headers))
        if found is None or held is None:
            return
        with self._lock:
            if held.seen is None or found[0] < held.seen[0] or found[2] > held.seen[2]:
                held.seen = found

    def close(self) -> None:
        """Report what was seen and give back the slots not used."""
        with self._gate:
            for resource, held in self._held.items():
                self.budgets[resource].release(held.slots, held.window, self._pop_seen(held))
                held.slots = 0
