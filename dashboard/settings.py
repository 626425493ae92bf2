"""The dashboard's settings and the accessor its pages read them by.

Kept apart from :mod:`dashboard.core`, which installs the views: the views read these
settings, so while they lived in core the two modules imported each other. The variables are
read and checked by :mod:`dashboard.environment` (which the bot also runs at start-up).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from flask import current_app, request
from sqlalchemy import Engine

from dashboard.environment import DEFAULT_SESSION_TTL, DashboardEnvError, read

EXTENSION = "taskeval_dashboard"
__all__ = ["DEFAULT_SESSION_TTL", "EXTENSION", "DashboardConfig", "DashboardEnvError", "config", "web_url_for"]


def web_url_for(api_url: str) -> str:
    """GitHub's web root for an API root: github.com for api.github.com, the host for GHES."""
    api_url = api_url.rstrip("/")
    if api_url in ("https://api.github.com", ""):
        return "https://github.com"
    if api_url.endswith("/api/v3"):
        return api_url[: -len("/api/v3")]
    return api_url


@dataclass
class DashboardConfig:
    """What the dashboard needs; ``from_env`` reads the variables the README lists."""

    engine: Engine
    open_access: bool = False  # loopback `taskeval dashboard`: no sign-in
    api_token: str | None = field(default=None, repr=False)
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    api_url: str = "https://api.github.com"
    web_url: str = "https://github.com"
    # TASKEVAL_SESSION_SECRET; None: a random key per process, which only a single-process
    # dashboard (``single_process``: `taskeval dashboard`) may use for sessions.
    session_secret: str | None = field(default=None, repr=False)
    session_ttl: float = DEFAULT_SESSION_TTL
    single_process: bool = False
    # Where people reach it (TASKEVAL_PUBLIC_URL): decides the cookie's Secure flag and the OAuth
    # callback, so neither follows the request's Host header.
    public_url: str | None = None
    # TASKEVAL_TRUSTED_PROXIES: proxies whose X-Forwarded-* the app believes (werkzeug ProxyFix).
    trusted_proxies: int = 0
    # Secure cookie when neither a public URL nor trusted proxies say: the bot, always; the local
    # dashboard, off a loopback bind.
    secure_default: bool = True
    # Answer only requests whose Host names the loopback interface (the open local dashboard:
    # a page elsewhere must not read it through a DNS name rebound to 127.0.0.1).
    loopback_hosts_only: bool = False
    # The engine sessions are written with (sign-in, sign-out); ``engine`` may be a read-only one.
    write_engine: Engine | None = None

    @property
    def oauth(self) -> bool:
        return bool(self.client_id and self.client_secret)

    @property
    def sessions(self) -> bool:
        """Whether a browser can hold a session: a shared key, or a single process."""
        return self.session_secret is not None or self.single_process

    def cookie_secure(self) -> bool:
        """The session cookie's Secure flag, from configuration, never from the Host header: the
        public URL's scheme; else, behind trusted proxies, the scheme they forwarded; else
        :attr:`secure_default`."""
        if self.public_url:
            return self.public_url.startswith("https://")
        if self.trusted_proxies:
            try:
                return request.scheme == "https"
            except RuntimeError:  # outside a request: be strict
                return True
        return self.secure_default

    @classmethod
    def from_env(cls, env: Mapping[str, str], engine: Engine, *, open_access: bool = False,
                 single_process: bool = False, webhook_secret: str | None = None) -> DashboardConfig:
        """Raises :class:`DashboardEnvError` (one line naming the variable) for a value it cannot use."""
        web = read(env, webhook_secret=webhook_secret, sign_in_needs_secret=not single_process)
        api_url = (env.get("GITHUB_API_URL", "").strip() or "https://api.github.com").rstrip("/")
        return cls(
            engine=engine,
            open_access=open_access,
            api_token=env.get("TASKEVAL_API_TOKEN", "").strip() or None,
            client_id=web.client_id,
            client_secret=web.client_secret,
            api_url=api_url,
            web_url=(env.get("GITHUB_WEB_URL", "").strip() or web_url_for(api_url)).rstrip("/"),
            session_secret=web.session_secret,
            session_ttl=web.session_ttl,
            single_process=single_process,
            public_url=web.public_url,
            trusted_proxies=web.trusted_proxies,
        )


def config() -> DashboardConfig:
    return current_app.extensions[EXTENSION]  # type: ignore[no-any-return]
