"""Bot configuration, read once from the environment and validated.

A plain frozen dataclass rather than pydantic-settings: the variables are few, their names are part
of the fixed interface (design.md), and every problem must be reported as one readable line naming
the variable, never echoing its value (several are secrets).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar
from urllib.parse import urlsplit

from dashboard.environment import DashboardEnvError, short_secret
from dashboard.environment import read as read_dashboard_env
from taskeval.store.db import DEFAULT_STORE_FILE, default_store, normalise_database_url
from taskeval.transports import Api, default_api

# The SQLite file every command defaults to (taskeval.store.db.default_store: made absolute in
# the working directory), so `taskeval serve` and then `taskeval dashboard` in one folder share it.
DEFAULT_DATABASE_URL = f"sqlite:///{DEFAULT_STORE_FILE}"
# GitHub caps webhook payloads at 25 MB and drops larger ones; anything bigger is not from GitHub.
DEFAULT_MAX_BODY_BYTES = 25 * 1024 * 1024
# GitHub requests each credential keeps unspent for people and CI: 10 % of a user token's hourly
# 5,000 (TASKEVAL_RATE_RESERVE for the workers, --reserve for `taskeval backfill`); the same for
# GraphQL points, a budget of its own (TASKEVAL_GRAPHQL_RESERVE, --graphql-reserve).
DEFAULT_RESERVE = 500

AuthMode = Literal["app", "token", "none"]


class SettingsError(ValueError):
    """A missing or invalid setting; the message names the variable, never its value."""


_N = TypeVar("_N", int, float)


def _number(env: Mapping[str, str], name: str, default: _N, low: _N, kind: Callable[[str], _N],
            high: _N | None = None) -> _N:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError as exc:
        noun = "an integer" if kind is int else "a number"
        raise SettingsError(f"{name} must be {noun}, got {raw!r}") from exc
    if not value >= low:  # also refuses NaN
        raise SettingsError(f"{name} must be at least {low}, got {value}")
    if high is not None and value > high:
        raise SettingsError(f"{name} must be at most {high}, got {value}")
    return value


def _int(env: Mapping[str, str], name: str, default: int, low: int = 1) -> int:
    return _number(env, name, default, low, int)


def _float(env: Mapping[str, str], name: str, default: float, low: float = 0.0,
           high: float | None = None) -> float:
    return _number(env, name, default, low, float, high)


def app_credentials(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(``GITHUB_APP_ID``, the PEM of ``GITHUB_APP_PRIVATE_KEY`` or ``_PATH``), both or neither;
    a half-set or unreadable pair is a :class:`SettingsError` naming the variable."""
    app_id = env.get("GITHUB_APP_ID", "").strip() or None
    key = env.get("GITHUB_APP_PRIVATE_KEY", "").strip() or None
    key_path = env.get("GITHUB_APP_PRIVATE_KEY_PATH", "").strip()
    if key is None and key_path:
        try:
            key = Path(key_path).read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise SettingsError(
                f"GITHUB_APP_PRIVATE_KEY_PATH: cannot read {key_path}: {exc.strerror}"
            ) from exc
    if key is not None and "\n" not in key and "\\n" in key:
        key = key.replace("\\n", "\n")  # a PEM pasted into one env line with \n escapes
    if key is not None and "PRIVATE KEY" not in key:
        raise SettingsError("GITHUB_APP_PRIVATE_KEY(_PATH) does not hold a PEM private key")
    if key is not None and app_id is None:
        raise SettingsError("a GitHub App private key is set but GITHUB_APP_ID is not")
    if app_id is not None and not app_id.isdigit():
        raise SettingsError("GITHUB_APP_ID must be the App's numeric id")
    if app_id is not None and key is None:
        raise SettingsError(
            "GITHUB_APP_ID is set but neither GITHUB_APP_PRIVATE_KEY nor "
            "GITHUB_APP_PRIVATE_KEY_PATH is"
        )
    return app_id, key


@dataclass(frozen=True)
class BotSettings:
    """Everything the receiver, the workers and the API read from the environment."""

    webhook_secret: str = field(repr=False)
    database_url: str = DEFAULT_DATABASE_URL
    api_token: str | None = field(default=None, repr=False)
    api_url: str = "https://api.github.com"
    app_id: str | None = None
    private_key: str | None = field(default=None, repr=False)
    app_slug: str | None = None
    github_token: str | None = field(default=None, repr=False)
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    lease_seconds: float = 120.0
    # A worker silent this long is gone and its running jobs are requeued (None: derived from
    # the lease, 16 s at the default; see bot.jobs.presence.alive_window).
    worker_stale_seconds: float | None = None
    max_attempts: int = 5
    backoff_seconds: float = 30.0
    backoff_max_seconds: float = 3600.0
    poll_seconds: float = 1.0
    queue_workers: int = 2
    shutdown_grace_seconds: float = 20.0
    # How long a delivery waits for the store's write lock before the receiver answers 503.
    store_wait_seconds: float = 3.0
    # How long one job may run before its worker gives it up (requeued with backoff, or dead).
    job_timeout_seconds: float = 900.0
    delivery_retention_days: float = 30.0
    rate_reserve: int = DEFAULT_RESERVE
    graphql_reserve: int = DEFAULT_RESERVE
    ai: Literal["auto", "on", "off"] = "auto"
    api: Api = field(default_factory=default_api)  # TASKEVAL_API: how collection reads GitHub
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def auth_mode(self) -> AuthMode:
        if self.app_id and self.private_key:
            return "app"
        if self.github_token:
            return "token"
        return "none"

    def secrets(self) -> list[str]:
        """Values that must never reach a log line, a stored error or an HTTP answer."""
        from sqlalchemy.engine import make_url

        try:
            db_password = make_url(self.database_url).password
        except Exception:  # an unparsable URL has no password to protect
            db_password = None
        values = [self.webhook_secret, self.api_token, self.private_key, self.github_token,
                  self.env.get("OPENAI_API_KEY"), str(db_password) if db_password else None,
                  self.env.get("GITHUB_CLIENT_SECRET"), self.env.get("TASKEVAL_SESSION_SECRET")]
        return [v for v in values if v and len(v) >= 4]

    def require_github_auth(self) -> None:
        """Workers call GitHub; refuse to start them without credentials."""
        if self.auth_mode == "none":
            raise SettingsError(
                "no GitHub credentials: set GITHUB_APP_ID with GITHUB_APP_PRIVATE_KEY or "
                "GITHUB_APP_PRIVATE_KEY_PATH (App mode), or GITHUB_TOKEN (token mode)"
            )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *,
                 receives_webhooks: bool = True) -> BotSettings:
        """``receives_webhooks=False`` (queue workers, which never see a delivery) does not
        require GITHUB_WEBHOOK_SECRET; the web server always does."""
        env = dict(os.environ if env is None else env)
        secret = env.get("GITHUB_WEBHOOK_SECRET", "")
        if not secret.strip() and receives_webhooks:
            raise SettingsError(
                "GITHUB_WEBHOOK_SECRET is not set; the bot refuses to accept unsigned deliveries"
            )
        if secret.strip() and (problem := short_secret("GITHUB_WEBHOOK_SECRET", secret)):
            raise SettingsError(problem)
        try:  # the dashboard's variables: its session key, sign-in, public URL, proxies
            read_dashboard_env(env, webhook_secret=secret, sign_in_needs_secret=receives_webhooks)
        except DashboardEnvError as exc:
            raise SettingsError(str(exc)) from exc
        api_url = (env.get("GITHUB_API_URL", "").strip() or "https://api.github.com").rstrip("/")
        parts = urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SettingsError(f"GITHUB_API_URL must be an http(s) URL such as "
                                f"https://ghes.example.com/api/v3, got {api_url!r}")
        app_id, key = app_credentials(env)
        ai = env.get("TASKEVAL_AI", "auto").strip().lower() or "auto"
        try:
            api = default_api(env)
        except ValueError as exc:
            raise SettingsError(str(exc)) from exc
        if ai not in ("auto", "on", "off"):
            raise SettingsError(f"TASKEVAL_AI must be auto, on or off, got {ai!r}")
        sync = env.get("TASKEVAL_SQLITE_SYNCHRONOUS", "full").strip().lower() or "full"
        if sync not in ("full", "normal"):
            raise SettingsError(f"TASKEVAL_SQLITE_SYNCHRONOUS must be full or normal, got {sync!r}")
        lease = _float(env, "TASKEVAL_LEASE_SECONDS", 120.0, low=1.0)
        stale: float | None = None
        if env.get("TASKEVAL_WORKER_STALE_SECONDS", "").strip():
            # Floor: a worker beats every quarter of the window, at most every 5 s, and a
            # database blip of a second or two must not make a live worker look dead.
            stale = _float(env, "TASKEVAL_WORKER_STALE_SECONDS", 0.0, low=2.0)
        return cls(
            webhook_secret=secret,
            database_url=normalise_database_url(default_store(env)),
            api_token=env.get("TASKEVAL_API_TOKEN", "").strip() or None,
            api_url=api_url,
            app_id=app_id,
            private_key=key,
            app_slug=env.get("GITHUB_APP_SLUG", "").strip() or None,
            github_token=(env.get("GITHUB_TOKEN", "").strip() or None),
            max_body_bytes=_int(env, "TASKEVAL_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, low=1024),
            lease_seconds=lease,
            worker_stale_seconds=stale,
            max_attempts=_int(env, "TASKEVAL_MAX_ATTEMPTS", 5),
            backoff_seconds=_float(env, "TASKEVAL_BACKOFF_SECONDS", 30.0),
            backoff_max_seconds=_float(env, "TASKEVAL_BACKOFF_MAX_SECONDS", 3600.0),
            poll_seconds=_float(env, "TASKEVAL_POLL_SECONDS", 1.0, low=0.01),
            queue_workers=_int(env, "TASKEVAL_QUEUE_WORKERS", 2),
            shutdown_grace_seconds=_float(env, "TASKEVAL_SHUTDOWN_GRACE", 20.0),
            store_wait_seconds=_float(env, "TASKEVAL_STORE_WAIT_SECONDS", 3.0, low=0.1, high=8.0),
            job_timeout_seconds=_float(env, "TASKEVAL_JOB_TIMEOUT_SECONDS", 900.0, low=5.0),
            delivery_retention_days=_float(env, "TASKEVAL_DELIVERY_RETENTION_DAYS", 30.0,
                                           low=7.0),
            rate_reserve=_int(env, "TASKEVAL_RATE_RESERVE", DEFAULT_RESERVE, low=0),
            graphql_reserve=_int(env, "TASKEVAL_GRAPHQL_RESERVE", DEFAULT_RESERVE, low=0),
            ai=ai,  # type: ignore[arg-type]
            api=api,
            env=env,
        )
