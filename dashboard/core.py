"""How the dashboard is installed on a Flask app. Its settings are :mod:`dashboard.settings`,
re-exported here for the callers of ``install``; the views import them from there, never from
this module, which imports the views."""

from __future__ import annotations

import secrets
from typing import Any

from flask import Flask, Response, request
from sqlalchemy import Engine, create_engine, event

from dashboard.auth import DashboardSessions, is_loopback
from dashboard.settings import EXTENSION, DashboardConfig, config

__all__ = ["DashboardConfig", "config", "install", "read_engine"]


def read_engine(engine: Engine) -> Engine:
    """An engine for the dashboard's reads.

    The bot's SQLite engine opens every transaction with ``BEGIN IMMEDIATE`` (the write lock), right
    for the queue but wrong for a page that only reads: it would queue behind every webhook. A
    SQLite file gets a second, plain engine (WAL readers never block the writer); an in-memory
    database and PostgreSQL keep the given one.
    """
    url = engine.url
    if engine.dialect.name != "sqlite" or not url.database or url.database == ":memory:" \
            or url.database.startswith("file::memory:"):
        return engine
    reader = create_engine(url, connect_args={"check_same_thread": False, "timeout": 5.0})

    @event.listens_for(reader, "connect")
    def _connect(dbapi_conn: object, _record: object) -> None:
        cur = dbapi_conn.cursor()  # type: ignore[attr-defined]
        cur.execute("PRAGMA busy_timeout=5000")
        cur.execute("PRAGMA query_only=ON")
        cur.close()

    return reader


def install(app: Flask, cfg: DashboardConfig, *, url_prefix: str = "/dashboard") -> None:
    """Register the dashboard on ``app`` (the bot's or the local one)."""
    from dashboard.views import dashboard

    cfg.write_engine = cfg.write_engine or cfg.engine
    cfg.engine = read_engine(cfg.engine)
    app.extensions[EXTENSION] = cfg
    # Without TASKEVAL_SESSION_SECRET a random key: sessions then live in this process only, which
    # the single-process local dashboard can use and the bot never offers (DashboardConfig.sessions).
    app.secret_key = cfg.session_secret or secrets.token_urlsafe(32)
    app.session_interface = DashboardSessions()
    app.config.update(
        SESSION_COOKIE_NAME="taskeval_dashboard",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_PATH=url_prefix,
        PERMANENT_SESSION_LIFETIME=int(cfg.session_ttl),
    )
    if cfg.trusted_proxies:
        from werkzeug.middleware.proxy_fix import ProxyFix

        n = cfg.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n, x_port=n)  # type: ignore[method-assign]
    if cfg.loopback_hosts_only:
        app.before_request(_loopback_host_only)
    app.register_blueprint(dashboard, url_prefix=url_prefix)


def _loopback_host_only() -> Any:
    """421 for a request whose Host is not a loopback name (``localhost``, 127.0.0.0/8, ``[::1]``,
    with any port): the open local dashboard must not answer a page that reached 127.0.0.1
    through a DNS name of its own (DNS rebinding), which would read it as same-origin."""
    if is_loopback(request.host):
        return None
    return Response("taskeval dashboard: this local dashboard answers only at localhost, 127.0.0.1 "
                    "or [::1]\n", 421, mimetype="text/plain")
