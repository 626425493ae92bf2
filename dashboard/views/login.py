"""Sign-in (GitHub OAuth or a bearer token), sign-out."""

from __future__ import annotations

import secrets
from typing import Any

from flask import (
    redirect,
    render_template,
    request,
    session,
    url_for,
)

from dashboard import queries
from dashboard.auth import (
    GitHubSignInError,
    authorize_url,
    end_session,
    exchange_code,
    readable_repositories,
    safe_next,
    start_session,
    token_fingerprint,
    token_matches,
    user_login,
)
from dashboard.settings import config
from dashboard.views.common import dashboard, log, viewer


@dashboard.get("/login")
def login() -> Any:
    cfg = config()
    if cfg.open_access or viewer() is not None:
        return redirect(safe_next(request.args.get("next"), _prefix()) or url_for("dashboard.overview"))
    nxt = safe_next(request.args.get("next"), _prefix())
    if cfg.oauth and cfg.sessions and request.args.get("method") != "token":
        state = secrets.token_urlsafe(32)
        session["oauth_state"] = state
        session["next"] = nxt
        assert cfg.client_id is not None
        return redirect(authorize_url(cfg.web_url, cfg.client_id, _callback_url(), state))
    return _login_page(next=nxt), 200 if cfg.api_token and cfg.sessions else 503


def _prefix() -> str:
    return url_for("dashboard.overview")


def _callback_url() -> str:
    """Where GitHub sends the browser back: under TASKEVAL_PUBLIC_URL when it is set (the request's
    Host header is not trusted to say where the dashboard lives), else from the request."""
    public = config().public_url
    if public:
        return public + url_for("dashboard.callback")
    return url_for("dashboard.callback", _external=True)


def _writer() -> Any:
    cfg = config()
    return cfg.write_engine or cfg.engine


NO_SESSIONS = ("Signing in with the token in a browser needs TASKEVAL_SESSION_SECRET (a long random value "
               "shared by every process); scripts can send Authorization: Bearer meanwhile.")


@dashboard.post("/login")
def login_token() -> Any:
    cfg = config()
    given = request.form.get("token", "")
    nxt = safe_next(request.form.get("next"), _prefix())
    if not cfg.api_token or not token_matches(given, cfg.api_token):
        return _login_page(error="That is not the dashboard's token.", next=nxt), 401
    if not cfg.sessions:
        return _login_page(error=NO_SESSIONS, next=nxt), 503
    start_session("token", login=None, repos=None, ttl=cfg.session_ttl, engine=_writer(),
                  token_fp=token_fingerprint(cfg.api_token))
    return redirect(nxt or url_for("dashboard.overview"))


@dashboard.get("/callback")
def callback() -> Any:
    cfg = config()
    expected = session.pop("oauth_state", None)
    nxt = session.pop("next", None)
    given = request.args.get("state", "")
    if not cfg.oauth or not expected or not secrets.compare_digest(str(expected), given):
        return _login_error("The sign-in link expired or was not started here; sign in again.", 400)
    if request.args.get("error"):
        why = request.args.get("error_description") or request.args["error"]
        return _login_error(f"GitHub did not sign you in: {why[:200]}", 403)
    code = request.args.get("code", "")
    if not code:
        return _login_error("GitHub sent no code; sign in again.", 400)
    assert cfg.client_id is not None and cfg.client_secret is not None
    try:
        token = exchange_code(cfg.web_url, cfg.client_id, cfg.client_secret, code, _callback_url())
        login_name = user_login(cfg.api_url, token)
        readable = readable_repositories(cfg.api_url, token)
    except GitHubSignInError as exc:
        log.warning("dashboard sign-in failed: %s", exc)
        return _login_error(str(exc), 502)
    with cfg.engine.connect() as conn:
        repos = queries.stored_repositories(conn, readable)
    start_session("github", login=login_name, repos=repos, ttl=cfg.session_ttl, engine=_writer())
    log.info("dashboard sign-in: %s can read %d stored repositories", login_name, len(repos))
    return redirect(safe_next(nxt, _prefix()) or url_for("dashboard.overview"))


def _login_page(*, error: str | None = None, next: str | None = None, title: str = "Sign in",
                **context: Any) -> str:
    """The sign-in page: the token form when a token is configured, GitHub when OAuth is."""
    cfg = config()
    if cfg.api_token and not cfg.sessions and error is None:
        error = NO_SESSIONS
    return render_template("dashboard/login.html", title=title, next=next,
                           token_form=bool(cfg.api_token) and cfg.sessions, oauth=cfg.oauth and cfg.sessions,
                           token_configured=bool(cfg.api_token), error=error, **context)


def _login_error(message: str, status: int) -> Any:
    return _login_page(error=message), status


@dashboard.post("/logout")
def logout() -> Any:
    end_session(_writer())
    return redirect(url_for("dashboard.signed_out"))


@dashboard.get("/signed-out")
def signed_out() -> Any:
    return _login_page(title="Signed out", signed_out=True)


