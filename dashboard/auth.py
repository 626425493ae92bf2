"""Who is looking, and which repositories they may see.

Three ways in, checked in this order on every dashboard request:

1. **Open** — ``taskeval dashboard`` bound to a loopback address: the person at the keyboard owns
   the SQLite file anyway, so there is no sign-in.
2. **API token** — ``Authorization: Bearer $TASKEVAL_API_TOKEN`` (scripts, CSV downloads), or a
   session started by typing the token into the sign-in form. Sees every repository.
3. **Sign in with GitHub** — the App's OAuth web flow. After the code exchange the dashboard asks
   GitHub which repositories the user can read (``GET /user/installations`` and each
   installation's ``/repositories``; ``GET /user/repos`` for an OAuth App's token), keeps the ones
   that have stored evaluations in the signed session cookie, and forgets the user's token. The
   list is re-read at the next sign-in, at the latest after ``TASKEVAL_SESSION_TTL`` seconds.

Sessions are Flask's signed cookies, keyed by ``TASKEVAL_SESSION_SECRET``: HttpOnly, SameSite=Lax,
Secure as the configuration says (:meth:`DashboardConfig.cookie_secure`: the public URL's scheme,
never the request's Host). A signed-in session is also a row of ``dashboard_sessions`` in the
store, found by the random id its cookie carries: signing out deletes the row, so a copied cookie
stops working in every process at once. Every POST carries the session's CSRF token.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import requests
from flask import Flask, Request, current_app, session
from flask.sessions import SecureCookieSessionInterface
from sqlalchemy import Engine, delete, insert, select

from taskeval.store.db import dashboard_sessions, write

GITHUB_TIMEOUT = 10.0
MAX_PAGES = 50  # 5,000 repositories per source; enough for a dashboard, bounded for a sign-in


@dataclass(frozen=True)
class Viewer:
    """The signed-in person (or script): ``repos`` None means every repository."""

    kind: str  # open | token | github
    login: str | None = None
    repos: frozenset[str] | None = None


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost`` (a ``host[:port]`` or a bare host)."""
    host = host.strip()
    if host.startswith("["):
        host = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class DashboardSessions(SecureCookieSessionInterface):
    """Flask's signed cookie, marked Secure as the dashboard's configuration says (never as the
    Host header says). Only the dashboard's pages have a session: the webhook and the API never
    read or set the cookie (and a delivery does not pay for opening one)."""

    def open_session(self, app: Flask, request: Request) -> Any:
        if not request.path.startswith(app.config.get("SESSION_COOKIE_PATH") or "/"):
            return self.make_null_session(app)
        return super().open_session(app, request)

    def get_cookie_secure(self, app: Flask) -> bool:
        from dashboard.settings import EXTENSION

        cfg = current_app.extensions.get(EXTENSION)
        return True if cfg is None else bool(cfg.cookie_secure())


def token_fingerprint(token: str) -> str:
    """Kept in a token session instead of the token; a changed token ends such sessions."""
    return hashlib.sha256(b"taskeval-dashboard:" + token.encode()).hexdigest()[:32]


def token_matches(given: str, token: str) -> bool:
    """Whether ``given`` is the configured API token (compared in constant time)."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def bearer_matches(req: Request, token: str | None) -> bool | None:
    """None when there is no bearer header; else whether it carries ``token``."""
    header = req.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, given = header.partition(" ")
    return token is not None and scheme.lower() == "bearer" and token_matches(given.strip(), token)


def csrf_token() -> str:
    token = session.get("csrf")
    if not isinstance(token, str) or len(token) < 32:
        token = secrets.token_urlsafe(32)
        session["csrf"] = token
    return token


def csrf_ok(given: str | None) -> bool:
    expected = session.get("csrf")
    return bool(given and isinstance(expected, str)
                and hmac.compare_digest(given.encode(), expected.encode()))


def _session_key(sid: str) -> str:
    """The store keeps the SHA-256 of a session id, never the id a cookie carries."""
    return hashlib.sha256(b"taskeval-dashboard-session:" + sid.encode()).hexdigest()


def start_session(kind: str, *, login: str | None, repos: list[str] | None, ttl: float,
                  engine: Engine, token_fp: str | None = None) -> None:
    """A fresh session (new CSRF token: nothing from before sign-in carries over), recorded in the
    store so that signing out ends it for every process; expired records are swept here."""
    session.clear()
    sid = secrets.token_urlsafe(32)
    now = time.time()
    with write(engine) as conn:
        conn.execute(delete(dashboard_sessions).where(dashboard_sessions.c.expires_at < now))
        conn.execute(insert(dashboard_sessions).values(id=_session_key(sid), kind=kind,
                                                       login=(login or "")[:100] or None,
                                                       created_at=now, expires_at=now + ttl))
    session.update(kind=kind, login=login, repos=repos, exp=now + ttl, sid=sid,
                   csrf=secrets.token_urlsafe(32))
    if token_fp:
        session["tk"] = token_fp


def end_session(engine: Engine) -> None:
    """Sign out: the store forgets the session (a copy of the cookie opens nothing any more)."""
    sid = session.get("sid")
    session.clear()
    if isinstance(sid, str) and sid:
        with write(engine) as conn:
            conn.execute(delete(dashboard_sessions).where(dashboard_sessions.c.id == _session_key(sid)))


def _recorded(engine: Engine, sid: object) -> bool:
    """Whether the store still holds this session, unexpired."""
    if not isinstance(sid, str) or not sid:
        return False
    with engine.connect() as conn:
        expires = conn.execute(select(dashboard_sessions.c.expires_at)
                               .where(dashboard_sessions.c.id == _session_key(sid))).scalar()
    return expires is not None and float(expires) >= time.time()


def session_viewer(api_token: str | None, engine: Engine) -> Viewer | None:
    kind = session.get("kind")
    if kind not in ("token", "github") or float(session.get("exp") or 0) < time.time():
        return None
    if kind == "token" and (not api_token or session.get("tk") != token_fingerprint(api_token)):
        return None
    if not _recorded(engine, session.get("sid")):
        return None  # signed out (here or in another process), or from before sessions were stored
    if kind == "token":
        return Viewer("token")
    repos = session.get("repos")
    if not isinstance(repos, list):
        return None
    return Viewer("github", login=str(session.get("login") or ""), repos=frozenset(map(str, repos)))


def safe_next(target: str | None, prefix: str) -> str | None:
    """A same-site path under the dashboard, or None (no open redirects, and nothing that
    cannot be a ``Location`` header: a line break or another control character)."""
    if not target or not target.startswith(prefix) or target.startswith("//") or "\\" in target:
        return None
    if not target.isprintable():
        return None
    parts = urlsplit(target)
    return target if not parts.scheme and not parts.netloc else None


# --- GitHub ---------------------------------------------------------------------------------------

class GitHubSignInError(Exception):
    """The OAuth exchange or a repository listing failed; the message is safe to show."""


def authorize_url(web_url: str, client_id: str, redirect_uri: str, state: str) -> str:
    query = urlencode({"client_id": client_id, "redirect_uri": redirect_uri, "state": state,
                       "allow_signup": "false"})
    return f"{web_url}/login/oauth/authorize?{query}"


def exchange_code(web_url: str, client_id: str, client_secret: str, code: str,
                  redirect_uri: str) -> str:
    """The user's access token for ``code`` (POST /login/oauth/access_token)."""
    try:
        resp = requests.post(
            f"{web_url}/login/oauth/access_token",
            data={"client_id": client_id, "client_secret": client_secret, "code": code,
                  "redirect_uri": redirect_uri},
            headers={"Accept": "application/json"}, timeout=GITHUB_TIMEOUT,
        )
        body: Any = resp.json() if resp.content else {}
    except (requests.RequestException, ValueError) as exc:
        raise GitHubSignInError(f"GitHub did not answer the sign-in ({type(exc).__name__})") from exc
    token = body.get("access_token") if isinstance(body, dict) else None
    if resp.status_code != 200 or not isinstance(token, str) or not token:
        reason = body.get("error_description") or body.get("error") if isinstance(body, dict) else None
        raise GitHubSignInError(f"GitHub refused the sign-in: {reason or f'HTTP {resp.status_code}'}")
    return token


def _get(api_url: str, url: str, token: str) -> requests.Response:
    if not url.startswith(api_url + "/"):  # a Link header never sends the token elsewhere
        raise GitHubSignInError("GitHub answered with a link to another host")
    try:
        return requests.get(url, headers={"Authorization": f"Bearer {token}",
                                          "Accept": "application/vnd.github+json",
                                          "X-GitHub-Api-Version": "2022-11-28"},
                            timeout=GITHUB_TIMEOUT)
    except requests.RequestException as exc:
        raise GitHubSignInError(f"GitHub did not answer ({type(exc).__name__})") from exc


def _pages(api_url: str, url: str, token: str, key: str | None,
           first: requests.Response | None = None) -> list[dict[str, Any]]:
    """Every item of a paginated listing; ``first``: the answer to ``url`` when already fetched."""
    items: list[dict[str, Any]] = []
    for _ in range(MAX_PAGES):
        resp = first if first is not None else _get(api_url, url, token)
        first = None
        if resp.status_code != 200:
            raise GitHubSignInError(f"GitHub answered HTTP {resp.status_code} to {urlsplit(url).path}")
        try:
            body = resp.json()
        except ValueError as exc:
            raise GitHubSignInError("GitHub answered with malformed JSON") from exc
        page = body.get(key) if key and isinstance(body, dict) else body
        if not isinstance(page, list):
            raise GitHubSignInError(f"unexpected answer from {urlsplit(url).path}")
        items.extend(x for x in page if isinstance(x, dict))
        nxt = resp.links.get("next", {}).get("url")
        if not nxt:
            break
        url = nxt
    return items


def user_login(api_url: str, token: str) -> str:
    resp = _get(api_url, f"{api_url}/user", token)
    try:
        login = resp.json().get("login") if resp.status_code == 200 else None
    except ValueError:
        login = None
    if not isinstance(login, str) or not login:
        raise GitHubSignInError(f"GitHub did not say who signed in (HTTP {resp.status_code})")
    return login


def readable_repositories(api_url: str, token: str) -> list[str]:
    """Full names of the repositories GitHub says this user token can read.

    A GitHub App's user token: the App's installations the user can access, and in each the
    repositories the user can access. An OAuth App's token (``/user/installations`` refuses it):
    ``/user/repos``, every repository the user can read.
    """
    installations = f"{api_url}/user/installations?per_page=100"
    probe = _get(api_url, installations, token)
    names: list[str] = []
    if probe.status_code == 200:  # its first page is the listing's: not asked for twice
        for inst in _pages(api_url, installations, token, "installations", probe):
            inst_id = inst.get("id")
            if not isinstance(inst_id, int):
                continue
            repos = _pages(api_url, f"{api_url}/user/installations/{inst_id}/repositories?per_page=100",
                           token, "repositories")
            names.extend(str(r["full_name"]) for r in repos if isinstance(r.get("full_name"), str))
        return sorted(set(names))
    if probe.status_code == 401:
        raise GitHubSignInError("GitHub rejected the user token (HTTP 401)")
    repos = _pages(api_url, f"{api_url}/user/repos?per_page=100", token, None)
    return sorted({str(r["full_name"]) for r in repos if isinstance(r.get("full_name"), str)})
