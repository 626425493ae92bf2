"""The dashboard's settings and the accessor its pages read them by.

Kept apart from :mod:`dashboard.core`, which installs the views: the views read these
settings, so while they lived in core the two modules imported each other.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from flask import current_app
from sqlalchemy import Engine

EXTENSION = "taskeval_dashboard"
DEFAULT_SESSION_TTL = 8 * 3600.0


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
    session_secret: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    session_ttl: float = DEFAULT_SESSION_TTL

    @property
    def oauth(self) -> bool:
        return bool(self.client_id and self.client_secret)

    @classmethod
    def from_env(cls, env: Mapping[str, str], engine: Engine, *, open_access: bool = False,
                 fallback_secret: str | None = None) -> DashboardConfig:
        """``fallback_secret`` (the bot's webhook secret) keys the session cookie when
        ``TASKEVAL_SESSION_SECRET`` is unset, so every node of one bot shares sessions."""
        api_url = (env.get("GITHUB_API_URL", "").strip() or "https://api.github.com").rstrip("/")
        secret = env.get("TASKEVAL_SESSION_SECRET", "").strip()
        if not secret and fallback_secret:
            secret = hmac.new(fallback_secret.encode(), b"taskeval-dashboard-session",
                              hashlib.sha256).hexdigest()
        try:
            ttl = float(env.get("TASKEVAL_SESSION_TTL", "") or DEFAULT_SESSION_TTL)
        except ValueError:
            ttl = DEFAULT_SESSION_TTL
        return cls(
            engine=engine,
            open_access=open_access,
            api_token=env.get("TASKEVAL_API_TOKEN", "").strip() or None,
            client_id=env.get("GITHUB_CLIENT_ID", "").strip() or None,
            client_secret=env.get("GITHUB_CLIENT_SECRET", "").strip() or None,
            api_url=api_url,
            web_url=(env.get("GITHUB_WEB_URL", "").strip() or web_url_for(api_url)).rstrip("/"),
            session_secret=secret or secrets.token_urlsafe(32),
            session_ttl=ttl if ttl > 0 else DEFAULT_SESSION_TTL,
        )


def config() -> DashboardConfig:
    return current_app.extensions[EXTENSION]  # type: ignore[no-any-return]
