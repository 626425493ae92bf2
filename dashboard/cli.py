"""``taskeval dashboard [--store URL] [--bind HOST:PORT]``: the dashboard over a local store.

The store defaults to ``$DATABASE_URL``, else the SQLite file ``taskeval.db`` in the working
directory (what ``taskeval backfill`` writes). On a loopback address there is no sign-in: whoever
can reach 127.0.0.1 can read the file anyway. It then answers only requests addressed to a
loopback name (``localhost``, 127.0.0.0/8, ``[::1]``, any port) and 421 to any other ``Host``: a
web page elsewhere cannot read it through a DNS name rebound to 127.0.0.1. Any other address
needs ``TASKEVAL_API_TOKEN``, and the dashboard then asks for it (a sign-in form, or
``Authorization: Bearer`` for scripts).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

DEFAULT_BIND = "127.0.0.1:8080"


def store_url(given: str | None, env: dict[str, str] | None = None) -> str:
    """``--store``, else the store ``taskeval backfill`` writes by default."""
    from taskeval.store.db import default_store, normalise_database_url

    return normalise_database_url((given or "").strip() or default_store(env))


def parse_bind(bind: str) -> tuple[str, int]:
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:  # 0: any free port
        raise ValueError(f"--bind must be HOST:PORT, got {bind!r}")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def create_local_app(url: str, *, bind_host: str = "127.0.0.1", env: dict[str, str] | None = None) -> Any:
    """The Flask app ``taskeval dashboard`` serves; raises ValueError when it must refuse."""
    from flask import Flask, redirect

    from dashboard.auth import is_loopback
    from dashboard.core import DashboardConfig, install
    from taskeval.store.access import check_store
    from taskeval.store.db import init_schema, make_engine

    env = dict(os.environ) if env is None else env
    loopback = is_loopback(bind_host)
    if not loopback and not env.get("TASKEVAL_API_TOKEN", "").strip():
        raise ValueError(f"refusing to serve the dashboard on {bind_host} (not a loopback address) without "
                         "a token: set TASKEVAL_API_TOKEN, or bind 127.0.0.1")
    check_store(url, create=False)  # a reader: never a store made in someone else's database
    engine = make_engine(url)
    init_schema(engine)  # an older store is migrated like the bot's
    app = Flask("taskeval-dashboard")
    # GitHub sign-in belongs to the bot; a local dashboard is open (loopback) or asks for the token.
    cfg = DashboardConfig.from_env({k: v for k, v in env.items() if not k.startswith("GITHUB_CLIENT_")},
                                   engine, open_access=loopback, single_process=True)
    # Served over plain HTTP by this process: the cookie is Secure off loopback (a TLS proxy in
    # front, or TASKEVAL_PUBLIC_URL, decides otherwise), and an open loopback dashboard answers
    # only to loopback host names, so no other site's page can read it through DNS rebinding.
    cfg.secure_default = not loopback
    cfg.loopback_hosts_only = loopback
    install(app, cfg)

    @app.get("/")
    def _root() -> Any:
        return redirect("/dashboard/")

    return app


def cmd_dashboard(args: argparse.Namespace) -> int:
    try:
        host, port = parse_bind(args.bind)
    except ValueError as exc:
        print(f"taskeval dashboard: {exc}", file=sys.stderr)
        return 2
    url = store_url(args.store)
    from taskeval.store.db import describe_url

    try:
        app = create_local_app(url, bind_host=host)
    except (ValueError, FileNotFoundError) as exc:
        print(f"taskeval dashboard: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # an unreachable database: say which, never a traceback
        print(f"taskeval dashboard: cannot open the store {describe_url(url)}: {type(exc).__name__}: "
              f"{str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
        return 2
    from werkzeug.serving import make_server

    try:
        server = make_server(host, port, app, threaded=True)
    except OSError as exc:
        print(f"taskeval dashboard: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    shown = f"[{host}]" if ":" in host else host
    print(f"taskeval dashboard: http://{shown}:{server.server_port}/dashboard/ (store: {describe_url(url)}; "
          "Ctrl-C stops)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def add_command(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dashboard", help="serve the dashboard over a local store (default: ./taskeval.db)",
        description="Serve the dashboard (overview, agent and PR pages, CSV export) over the store "
                    "that 'taskeval backfill' or the bot wrote. No sign-in on a loopback address; "
                    "any other --bind needs TASKEVAL_API_TOKEN.",
    )
    parser.add_argument("--store", metavar="URL", default=None,
                        help="database URL (default: $DATABASE_URL, else sqlite:///./taskeval.db)")
    parser.add_argument("--bind", metavar="HOST:PORT", default=DEFAULT_BIND,
                        help=f"listen address (default: {DEFAULT_BIND})")
    parser.set_defaults(func=cmd_dashboard)
