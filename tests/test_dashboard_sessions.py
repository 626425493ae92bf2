"""The dashboard's sessions where they live: the bot under gunicorn, several processes.

* The session key is a secret of its own (``TASKEVAL_SESSION_SECRET``), required for GitHub
  sign-in; webhook and session secrets shorter than 16 characters are refused at start-up, in one
  line.
* Signing out ends the session on the server: a copied cookie opens nothing afterwards, whichever
  process (or node) it is shown to.
* The cookie's ``Secure`` flag comes from configuration (``TASKEVAL_PUBLIC_URL``, trusted proxies),
  not from the ``Host`` header a proxy passes on.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from bot.settings import BotSettings, SettingsError
from tests.bot.helpers import API_TOKEN, SECRET
from tests.processes import stop
from tests.test_bot_serve import base_env, free_port, wait_for

SESSION_SECRET = "sessions-test-session-secret-5b1e"
COOKIE = "taskeval_dashboard"
OAUTH = {"GITHUB_CLIENT_ID": "Iv1.sessions", "GITHUB_CLIENT_SECRET": "sessions-client-secret"}


@pytest.mark.parametrize(("env", "message"), [
    ({"GITHUB_WEBHOOK_SECRET": "x"}, "GITHUB_WEBHOOK_SECRET is shorter than 16 characters"),
    ({"GITHUB_WEBHOOK_SECRET": "fifteen-chars-0"}, "GITHUB_WEBHOOK_SECRET is shorter than 16 characters"),
    ({"TASKEVAL_SESSION_SECRET": "short-secret"}, "TASKEVAL_SESSION_SECRET is shorter than 16 characters"),
    (OAUTH, "GitHub sign-in (GITHUB_CLIENT_ID) needs TASKEVAL_SESSION_SECRET"),
    ({**OAUTH, "TASKEVAL_SESSION_SECRET": SECRET}, "TASKEVAL_SESSION_SECRET must be a secret of its own"),
    ({"TASKEVAL_PUBLIC_URL": "taskeval.example.com"}, "TASKEVAL_PUBLIC_URL must be the http(s) address"),
    ({"TASKEVAL_TRUSTED_PROXIES": "yes"}, "TASKEVAL_TRUSTED_PROXIES must be the number of proxies"),
])
def test_weak_or_missing_secrets_are_refused_at_start_up_in_one_line(tmp_path: Path, env: dict[str, str],
                                                                      message: str) -> None:
    full = {"GITHUB_WEBHOOK_SECRET": SECRET, **env}
    with pytest.raises(SettingsError, match=re.escape(message)):
        BotSettings.from_env(full)
    done = subprocess.run([sys.executable, "-m", "taskeval", "serve", "--no-workers", "--bind",
                           f"127.0.0.1:{free_port()}"], env=base_env(tmp_path, **full), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    for name, value in full.items():  # the secrets themselves are never echoed
        assert "SECRET" not in name or len(value) < 4 or value not in done.stderr + done.stdout


def test_a_long_enough_session_secret_of_its_own_is_the_cookies_key() -> None:
    settings = BotSettings.from_env({"GITHUB_WEBHOOK_SECRET": SECRET, "TASKEVAL_SESSION_SECRET": SESSION_SECRET,
                                     **OAUTH, "DATABASE_URL": "sqlite://"})
    from bot.app import create_app

    app = create_app(settings)
    assert app.secret_key == SESSION_SECRET
    assert SESSION_SECRET in settings.secrets()  # redacted from logs like the others


def test_without_a_session_secret_the_token_form_is_not_offered(tmp_path: Path) -> None:
    """Token only, no TASKEVAL_SESSION_SECRET: a session keyed per process would not hold across
    gunicorn's processes, so the browser form is not offered (503, saying what to set); scripts
    with the bearer token still read everything."""
    from bot.app import create_app

    app = create_app(BotSettings.from_env({"GITHUB_WEBHOOK_SECRET": SECRET, "TASKEVAL_API_TOKEN": API_TOKEN,
                                           "DATABASE_URL": f"sqlite:///{tmp_path / 'bot.db'}"}))
    client = app.test_client()
    page = client.get("/dashboard/login")
    assert page.status_code == 503 and "needs TASKEVAL_SESSION_SECRET" in page.get_data(as_text=True)
    assert 'name="token"' not in page.get_data(as_text=True)
    tried = client.post("/dashboard/login", data={"csrf": "x" * 43, "token": API_TOKEN})
    assert tried.status_code in (400, 503)  # no session to carry a CSRF token, nor to sign in
    assert client.get("/dashboard/?format=csv", headers={"Authorization": f"Bearer {API_TOKEN}"}).status_code == 200
    app.extensions["taskeval"].engine.dispose()


def test_the_local_dashboard_refuses_a_short_session_secret_in_one_line(tmp_path: Path) -> None:
    store = tmp_path / "taskeval.db"
    from taskeval.store.db import init_schema, make_engine

    engine = make_engine(f"sqlite:///{store}")
    init_schema(engine)
    engine.dispose()
    done = subprocess.run([sys.executable, "-m", "taskeval", "dashboard", "--store", f"sqlite:///{store}",
                           "--bind", "127.0.0.1:0"], env=base_env(tmp_path, TASKEVAL_SESSION_SECRET="abc"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "taskeval dashboard: TASKEVAL_SESSION_SECRET is shorter than 16 characters; use a long random "
        "value (for instance: openssl rand -hex 32)"]


# --- under gunicorn ---------------------------------------------------------------------------------

@contextmanager
def serving(tmp_path: Path, **extra: str) -> Iterator[str]:
    """``taskeval serve --no-workers`` (gunicorn, two processes) on a free port over the SQLite
    store in ``tmp_path``; yields its URL."""
    port = free_port()
    log = tmp_path / f"serve-{port}.log"
    env = base_env(tmp_path, GITHUB_WEBHOOK_SECRET=SECRET, TASKEVAL_API_TOKEN=API_TOKEN,
                   TASKEVAL_SESSION_SECRET=SESSION_SECRET, WEB_CONCURRENCY="2", **extra)
    proc = subprocess.Popen([sys.executable, "-m", "taskeval", "serve", "--no-workers", "--bind",
                             f"127.0.0.1:{port}"], env=env, cwd=tmp_path, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: requests.get(f"{url}/healthz", timeout=2).ok, "the service to start")
        yield url
    finally:
        stop(proc)


def cookie_of(resp: requests.Response) -> str | None:
    """The dashboard cookie a response sets (handled by hand: a browser would send a Secure cookie
    only over https, and these tests copy it as an attacker would)."""
    found = re.search(rf"{COOKIE}=([^;]+)", resp.headers.get("Set-Cookie", ""))
    return found.group(1) if found else None


def csrf_of(text: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', text)
    assert found, "the page has a CSRF field"
    return found.group(1)


def token_sign_in(url: str) -> str:
    form = requests.get(f"{url}/dashboard/login?method=token", timeout=10)
    started = cookie_of(form)
    assert form.status_code == 200 and started
    done = requests.post(f"{url}/dashboard/login", data={"csrf": csrf_of(form.text), "token": API_TOKEN},
                         headers={"Cookie": f"{COOKIE}={started}"}, allow_redirects=False, timeout=10)
    cookie = cookie_of(done)
    assert done.status_code == 302 and cookie
    return cookie


def page(url: str, cookie: str) -> requests.Response:
    return requests.get(f"{url}/dashboard/", headers={"Cookie": f"{COOKIE}={cookie}"},
                        allow_redirects=False, timeout=10)


def test_signing_out_ends_a_copied_session_in_every_process(tmp_path: Path) -> None:
    """Two gunicorn services (two processes each) over one store: a session signed in on one and
    signed out on the other no longer opens anything anywhere, though its cookie is intact."""
    with serving(tmp_path) as one, serving(tmp_path) as other:
        cookie = token_sign_in(one)
        copied = cookie  # what an attacker took from the browser
        assert all(page(u, copied).status_code == 200 for u in (one, other) for _ in range(4))
        out = requests.post(f"{other}/dashboard/logout", headers={"Cookie": f"{COOKIE}={cookie}"},
                            data={"csrf": csrf_of(page(other, cookie).text)}, allow_redirects=False,
                            timeout=10)
        assert out.status_code == 302 and out.headers["Location"].endswith("/dashboard/signed-out")
        for u in (one, other):
            for _ in range(6):  # whichever process answers
                refused = page(u, copied)
                assert refused.status_code == 302 and "/dashboard/login" in refused.headers["Location"]
            csv = requests.get(f"{u}/dashboard/?format=csv", headers={"Cookie": f"{COOKIE}={copied}"},
                               allow_redirects=False, timeout=10)
            assert csv.status_code == 401


@pytest.mark.parametrize(("extra", "headers", "secure"), [
    # A proxy that forwards Host: 127.0.0.1:8000 no longer strips the flag.
    ({}, {"Host": "127.0.0.1:8000"}, True),
    ({"TASKEVAL_PUBLIC_URL": "https://taskeval.example.com"}, {"Host": "127.0.0.1:8000"}, True),
    ({"TASKEVAL_PUBLIC_URL": "http://127.0.0.1:8000"}, {"Host": "taskeval.example.com"}, False),
    ({"TASKEVAL_TRUSTED_PROXIES": "1"}, {"Host": "127.0.0.1:8000", "X-Forwarded-Proto": "https"}, True),
    ({"TASKEVAL_TRUSTED_PROXIES": "1"}, {"Host": "taskeval.example.com", "X-Forwarded-Proto": "http"}, False),
])
def test_the_secure_flag_follows_the_configuration_not_the_host(tmp_path: Path, extra: dict[str, str],
                                                                headers: dict[str, str], secure: bool) -> None:
    with serving(tmp_path, **OAUTH, **extra) as url:
        resp = requests.get(f"{url}/dashboard/login", headers=headers, allow_redirects=False, timeout=10)
        cookie = resp.headers["Set-Cookie"]
        assert cookie.startswith(f"{COOKIE}=") and ("; Secure" in cookie) is secure, cookie
        callback = parse_qs(urlsplit(resp.headers["Location"]).query)["redirect_uri"][0]
        if "TASKEVAL_PUBLIC_URL" in extra:
            assert callback == extra["TASKEVAL_PUBLIC_URL"] + "/dashboard/callback"
