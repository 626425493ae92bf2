"""The dashboard's environment variables, read and checked without Flask.

The bot checks them at start-up (:mod:`bot.settings`, so ``taskeval serve`` and plain gunicorn
refuse a bad value in one line before any worker boots); :mod:`dashboard.settings` builds the
running configuration from the same reading. Every problem is one line naming the variable and
never its value (several are secrets).

* ``TASKEVAL_SESSION_SECRET`` keys the session cookie. It is a secret of its own: no longer derived
  from the webhook secret, so whoever learns one does not hold the other. GitHub sign-in needs it
  (every gunicorn process and node must share it); it must be at least :data:`MIN_SECRET_CHARS`
  long and differ from the webhook secret.
* ``TASKEVAL_PUBLIC_URL`` is where people reach the dashboard (``https://taskeval.example.com``):
  the cookie is ``Secure`` exactly when it is https, and the OAuth callback is built from it rather
  than from the request's ``Host`` header.
* ``TASKEVAL_TRUSTED_PROXIES`` is how many reverse proxies in front of the bot set
  ``X-Forwarded-For/-Proto/-Host/-Port`` (werkzeug's ``ProxyFix``); without a public URL the
  cookie then follows the scheme those proxies report. 0 (the default): no forwarded header is
  believed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

MIN_SECRET_CHARS = 16
DEFAULT_SESSION_TTL = 8 * 3600.0


class DashboardEnvError(ValueError):
    """A dashboard variable that cannot be used; the message names it, never its value."""


def short_secret(name: str, value: str) -> str | None:
    """Why ``value`` is too short a secret for ``name``, or None when it is long enough."""
    if len(value.strip()) < MIN_SECRET_CHARS:
        return (f"{name} is shorter than {MIN_SECRET_CHARS} characters; use a long random value "
                "(for instance: openssl rand -hex 32)")
    return None


@dataclass(frozen=True)
class WebEnv:
    """What :func:`read` found; ``session_secret`` None: no key of the operator's."""

    session_secret: str | None = field(default=None, repr=False)
    session_ttl: float = DEFAULT_SESSION_TTL
    public_url: str | None = None
    trusted_proxies: int = 0
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)

    @property
    def oauth(self) -> bool:
        return bool(self.client_id and self.client_secret)


def public_url(env: Mapping[str, str]) -> str | None:
    raw = env.get("TASKEVAL_PUBLIC_URL", "").strip().rstrip("/")
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise DashboardEnvError("TASKEVAL_PUBLIC_URL must be the http(s) address people open, such as "
                                f"https://taskeval.example.com, got {raw!r}")
    return raw


def read(env: Mapping[str, str], *, webhook_secret: str | None = None,
         sign_in_needs_secret: bool = True) -> WebEnv:
    """The dashboard's variables from ``env``, checked.

    ``sign_in_needs_secret``: GitHub sign-in without ``TASKEVAL_SESSION_SECRET`` is refused (the
    bot, whose sessions must hold across processes and nodes); the local ``taskeval dashboard`` is
    one process and may key its sessions with a random key of its own."""
    secret = env.get("TASKEVAL_SESSION_SECRET", "").strip() or None
    if secret is not None:
        if problem := short_secret("TASKEVAL_SESSION_SECRET", secret):
            raise DashboardEnvError(problem)
        if webhook_secret and secret == webhook_secret.strip():
            raise DashboardEnvError("TASKEVAL_SESSION_SECRET must be a secret of its own, not "
                                    "GITHUB_WEBHOOK_SECRET")
    client_id = env.get("GITHUB_CLIENT_ID", "").strip() or None
    client_secret = env.get("GITHUB_CLIENT_SECRET", "").strip() or None
    if client_id and client_secret and secret is None and sign_in_needs_secret:
        raise DashboardEnvError("GitHub sign-in (GITHUB_CLIENT_ID) needs TASKEVAL_SESSION_SECRET, a long "
                                "random value of its own shared by every process (openssl rand -hex 32)")
    raw_ttl = env.get("TASKEVAL_SESSION_TTL", "").strip()
    try:
        ttl = float(raw_ttl) if raw_ttl else DEFAULT_SESSION_TTL
    except ValueError as exc:
        raise DashboardEnvError(f"TASKEVAL_SESSION_TTL must be a number of seconds, got {raw_ttl!r}") from exc
    if not ttl > 0:
        raise DashboardEnvError(f"TASKEVAL_SESSION_TTL must be above 0, got {raw_ttl!r}")
    raw_hops = env.get("TASKEVAL_TRUSTED_PROXIES", "").strip()
    if raw_hops and not (raw_hops.isdigit() and int(raw_hops) <= 10):
        raise DashboardEnvError("TASKEVAL_TRUSTED_PROXIES must be the number of proxies in front "
                                f"(0 to 10), got {raw_hops!r}")
    return WebEnv(session_secret=secret, session_ttl=ttl, public_url=public_url(env),
                  trusted_proxies=int(raw_hops or 0), client_id=client_id, client_secret=client_secret)
