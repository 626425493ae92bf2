"""An in-memory GitHub REST API for tests and benchmarks, served two ways.

``FakeGitHub`` holds repositories, pull requests and everything around them as the JSON GitHub
documents, routes requests through one pure-ish ``handle(method, path, query, headers, body)``, and
is reachable either in-process through ``responses`` (``with fake.mock():``) or over real HTTP from
a local ``ThreadingHTTPServer`` (``with fake.serve():``, for subprocess tests; put ``fake.url`` in
``GITHUB_API_URL``). Both transports go through the same router, so a test sees the same pages,
``Link`` headers, rate-limit headers and error bodies either way.

    fake = FakeGitHub()
    pr = fake.add_pr("octo-org/widgets", 482, commits=3, ci="fail-then-fix")
    with fake.mock():                       # base URL: fake.url (a GHES-style /api/v3 root)
        raw = collect(make_client(FAKE_TOKEN, base_url=fake.url), pr.repo, pr.number)
    assert fake.count(route="pulls.commits") == 1

Faults are queued per path prefix (``fake.inject("/repos/o/r/commits", Fault.server_error())``)
and consumed one per matching request. Every request is logged (method, path, query, status,
route, who) for assertions such as "no request per commit" or "exactly one comment".

Payload URLs are written against a placeholder API root and rewritten to the serving URL on the
way out, so PyGithub objects that follow ``url`` fields stay on the fake.

This module is the fake's face (``FakeGitHub``, its state, faults, log and transports, and the
names tests import); ``FakeGitHub`` is assembled from mixins of its own modules: the router
(``tests/fakegithub_routes.py``), the builders tests call (``tests/fakegithub_builders.py``) and
GitHub's payloads (``tests/fakegithub_payloads.py``), over the small parts they share
(``tests/fakegithub_parts.py``: types, constants, the routes table), which imports none of them.
"""

from __future__ import annotations

import functools
import itertools
import re
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

import responses
from github.Requester import Requester

from tests import fakegraphql
from tests.fakegithub_builders import Builders
from tests.fakegithub_parts import (
    ACTIONS_PERMISSIONS,
    BASE_TIME,
    FakeApp,
    Fault,
    Identity,
    LoggedRequest,
    Permissions,
    _error_body,
    _Repo,
)
from tests.fakegithub_payloads import Payloads
from tests.fakegithub_routes import Router
from tests.fakegraphql import GRAPHQL_LIMIT

__all__ = ["ACTIONS_PERMISSIONS", "BASE_TIME", "FAKE_TOKEN", "MOCK_URL", "FakeGitHub", "Fault",
           "app_key_pair"]

FAKE_TOKEN: Final = "ghp_FakeToken0000000000000000000000000000"
MOCK_URL: Final = "https://github.fake.test/api/v3"  # GHES-shaped: a host and a path prefix


@functools.cache
def app_key_pair(private_format: str = "PKCS8") -> tuple[str, str]:
    """(private PEM, public PEM) of an RSA key for a fake GitHub App; generated once per format
    ("PKCS8" or "TraditionalOpenSSL") because 2048-bit generation is slow."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM,
                                getattr(serialization.PrivateFormat, private_format),
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class FakeGitHub(Router, Builders, Payloads):
    """GitHub's REST API for one test: state, router, fault injection and a request log
    (the router, builders and payloads are its mixins, one module each)."""

    def __init__(
        self,
        token: str | None = FAKE_TOKEN,
        *,
        login: str = "taskeval-user",
        integration: bool = False,
        permissions: Permissions | None = None,
        latency: float = 0.0,
        html_base: str = "https://github.com",
        rate_limit: int = 5000,
        rate_window: float = 3600.0,
        enforce_rate_limit: bool = False,
    ) -> None:
        self.url = MOCK_URL
        self.prefix = ""
        self.html_base = html_base.rstrip("/")
        self.latency = latency
        self.rate_limit = rate_limit
        self.rate_remaining = rate_limit
        self.rate_window = rate_window
        self.rate_reset = int(time.time() + rate_window)
        # Like GitHub: once the window's quota is spent, 403 with X-RateLimit-Remaining 0 until
        # the reset; off by default, where the count floors at 0 and requests still succeed.
        self.enforce_rate_limit = enforce_rate_limit
        self.rate_limited = 0  # requests refused for the primary limit
        self.not_modified = 0  # conditional GETs answered 304 (not charged)
        # App installation tokens live this long (GitHub: one hour); a token used after its
        # expiry is refused with 401, as GitHub refuses it.
        self.installation_token_ttl = 3600.0
        self.token_expiry: dict[str, float] = {}
        self.expired_uses = 0  # requests refused for an expired installation token
        # The GraphQL API (tests/fakegraphql.py): its own budget of points, in the same window.
        self.graphql_enabled = True  # False: no GraphQL endpoint (404), as on some GHES setups
        self.graphql_limit = GRAPHQL_LIMIT
        self.graphql_remaining = GRAPHQL_LIMIT
        self.graphql_points = 0  # points charged so far
        self.graphql_max_page: int | None = None  # a bigger `first`/`last` times out
        self.graphql_queries: list[tuple[str, dict[str, Any]]] = []  # every executed query
        # Conversation-comment writes made, by action (create/update/delete), whichever API
        # made them: what a PR's readers see happen, whatever the transport.
        self.comment_writes: Counter[str] = Counter()
        self.tokens: dict[str, Identity] = {}
        if token is not None:
            self.add_token(token, login, integration=integration, permissions=permissions)
        self.repos: dict[str, _Repo] = {}
        self.apps: dict[int, FakeApp] = {}
        self.reactions: dict[int, list[dict[str, Any]]] = {}
        self.log: list[LoggedRequest] = []
        self.credentials_seen: set[str] = set()  # every Authorization credential presented
        self._faults: dict[str, deque[Fault]] = {}
        self._lock = threading.RLock()
        self._ids = itertools.count(1_000_001)
        self._request_ids = itertools.count(1)

    # -------------------------------------------------------------------------- fault injection

    def inject(self, prefix: str, *faults: Fault, times: int = 1, exact: bool = False) -> None:
        """Queue faults for requests whose path (relative to the API root) starts with
        ``prefix`` (is ``prefix`` with ``exact``: ``/issues/7`` but not ``/issues/7/comments``);
        each request consumes one. The longest matching prefix wins, an exact one first."""
        with self._lock:
            key = (prefix.rstrip("/") or "/") + ("$" if exact else "")
            queue = self._faults.setdefault(key, deque())
            for _ in range(times):
                queue.extend(faults)

    def clear_faults(self) -> int:
        """Drop every queued fault (an outage ends); returns how many were dropped."""
        with self._lock:
            dropped = self.pending_faults()
            self._faults.clear()
            return dropped

    def pending_faults(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._faults.values())

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            keys = sorted((k for k, q in self._faults.items() if q and (
                path == k.removesuffix("$") if k.endswith("$") else
                path == k or path.startswith(k.rstrip("/") + "/") or k == "/")),
                key=len, reverse=True)
            for key in keys:
                queue = self._faults[key]
                for fault in list(queue):
                    if fault.method is None or fault.method == method:
                        queue.remove(fault)
                        return fault
            return None

    # ---------------------------------------------------------------------------------- the log

    def count(self, *, route: str | None = None, method: str | None = None,
              prefix: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.log if (route is None or r.route == route)
                       and (method is None or r.method == method)
                       and (prefix is None or r.path.startswith(prefix)))

    def counts(self) -> Counter[str]:
        """Requests per route, e.g. ``{"pulls.commits": 3, "repos.get": 1}``."""
        with self._lock:
            return Counter(r.route for r in self.log)

    def reset_log(self) -> None:
        with self._lock:
            self.log.clear()

    # ------------------------------------------------------------------------------ transports

    @contextmanager
    def mock(self, base_url: str = MOCK_URL) -> Iterator[FakeGitHub]:
        """Serve in-process through ``responses``: every requests call to ``base_url`` reaches
        the router; anything else fails loudly (``responses`` refuses unknown URLs)."""
        self.url = base_url.rstrip("/")
        root = urlsplit(self.url)
        prefix = root.path.rstrip("/")
        fakegraphql.schema()  # built once a process (~2 s), not inside a client's timeout

        graphql_path = Requester.get_graphql_prefix(prefix)

        def callback(request: Any) -> tuple[int, dict[str, str], bytes]:
            parts = urlsplit(request.url)
            path = parts.path[len(prefix):] if parts.path.startswith(prefix) else parts.path
            if parts.path == graphql_path:
                path = "/graphql"
            status, headers, payload = self.handle(
                request.method, path, parse_qs(parts.query), dict(request.headers), request.body)
            return status, headers, self.encode(payload)

        with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
            # PyGithub spells out default ports (https://host:443/...), so the port is optional.
            port = f"(?::{root.port or (443 if root.scheme == 'https' else 80)})?"
            pattern = re.compile(f"{re.escape(root.scheme)}://{re.escape(root.hostname or '')}"
                                 f"{port}{re.escape(prefix)}(?:[/?].*)?$")
            for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
                rsps.add_callback(method, pattern, callback=callback,
                                  content_type="application/json")
            if not graphql_path.startswith(prefix + "/"):  # GHES: /api/graphql beside /api/v3
                rsps.add_callback("POST", re.compile(
                    f"{re.escape(root.scheme)}://{re.escape(root.hostname or '')}{port}"
                    f"{re.escape(graphql_path)}$"), callback=callback,
                    content_type="application/json")
            yield self

    @contextmanager
    def serve(self, prefix: str = "") -> Iterator[FakeGitHub]:
        """Serve over real HTTP on 127.0.0.1 (an ephemeral port) from a background thread;
        ``fake.url`` is the API root to put in ``GITHUB_API_URL``."""
        fake = self
        root = prefix.rstrip("/")
        graphql_path = Requester.get_graphql_prefix(root)
        fakegraphql.schema()  # built once a process (~2 s), not inside a client's timeout

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if parts.path == graphql_path:
                    status, headers, payload = fake.handle(
                        self.command, "/graphql", {}, dict(self.headers.items()), body)
                elif root and not parts.path.startswith(root):
                    status, headers, payload = 404, fake._headers({}), _error_body(
                        "Not Found", 404)
                else:
                    status, headers, payload = fake.handle(
                        self.command, parts.path[len(root):], parse_qs(parts.query),
                        dict(self.headers.items()), body)
                data = fake.encode(payload)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the fake keeps its own log

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)
                # a client that timed out or was killed hung up: nothing to report

        server = Server(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        # A short poll interval: shutdown() waits for the serve loop to notice.
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                  name="fakegithub", daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}{root}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
