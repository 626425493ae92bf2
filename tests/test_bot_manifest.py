"""The App manifest and the registration helper (GitHub's manifest flow, mocked at HTTP)."""

from __future__ import annotations

import html
import json
import re
import socket
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from bot.manifest import ManifestError, load_manifest, serve_registration

ROOT = Path(__file__).resolve().parents[1]
API = "https://ghes.example.test/api/v3"


def test_manifest_asks_for_what_the_bot_needs_and_no_more() -> None:
    data = load_manifest(ROOT / "app.yml", "https://bot.example.com/webhook",
                         "http://127.0.0.1:3000/callback")
    assert data["default_permissions"] == {
        "contents": "read", "pull_requests": "write", "checks": "read", "actions": "read",
        "metadata": "read", "issues": "write"}
    assert sorted(data["default_events"]) == ["issue_comment", "pull_request", "push"]
    assert data["hook_attributes"] == {"url": "https://bot.example.com/webhook", "active": True}
    assert data["redirect_url"] == "http://127.0.0.1:3000/callback"
    assert data["callback_urls"] == ["https://bot.example.com/dashboard/callback"]  # dashboard sign-in


@pytest.mark.parametrize("url", ["ftp://x/webhook", "not a url", "/webhook"])
def test_manifest_needs_an_http_webhook_url(url: str) -> None:
    with pytest.raises(ManifestError, match="webhook-url"):
        load_manifest(ROOT / "app.yml", url, "http://127.0.0.1/callback")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def register(tmp_path: Path, conversion: tuple[int, dict[str, Any]],
             callback: dict[str, str] | None = None) -> tuple[Any, requests.Response]:
    """Run the helper; act as the browser and as GitHub redirecting back."""
    port = free_port()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = serve_registration(
                ROOT / "app.yml", "https://bot.example.com/webhook", org="octo-org",
                github_url="https://ghes.example.test", api_url=API, port=port,
                out_dir=tmp_path / "creds")
        except ManifestError as exc:
            outcome["error"] = exc

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.add_passthru("http://127.0.0.1")
        rsps.add(responses.POST, f"{API}/app-manifests/c0de/conversions",
                 json=conversion[1], status=conversion[0])
        thread = threading.Thread(target=run)
        thread.start()
        origin = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                page = requests.get(f"{origin}/", timeout=5)
                break
            except requests.ConnectionError:
                threading.Event().wait(0.05)
        action = html.unescape(re.search(r'action="([^"]+)"', page.text)[1])  # type: ignore[index]
        manifest = json.loads(html.unescape(re.search(r'value="([^"]+)"', page.text)[1]))  # type: ignore[index]
        assert action.startswith("https://ghes.example.test/organizations/octo-org/settings/apps/new")
        assert manifest["redirect_url"] == f"{origin}/callback"
        state = action.split("state=")[1]
        answer = requests.get(f"{origin}/callback",
                              params=callback or {"code": "c0de", "state": state}, timeout=10)
        if answer.status_code == 400:  # a forged redirect: the real one still completes
            answer = requests.get(f"{origin}/callback", params={"code": "c0de", "state": state},
                                  timeout=10)
        thread.join(10)
    return outcome.get("result", outcome.get("error")), answer


def test_registration_saves_credentials_privately(tmp_path: Path) -> None:
    app = {"id": 123456, "slug": "taskeval-octo", "pem": "-----BEGIN RSA PRIVATE KEY-----\nx\n"
           "-----END RSA PRIVATE KEY-----\n", "webhook_secret": "whsec-9f8e7d",
           "client_id": "Iv1.0a1b2c3d", "client_secret": "cs-5e6f7a",
           "html_url": "https://ghes.example.test/apps/taskeval-octo"}
    result, answer = register(tmp_path, (201, app))
    assert answer.status_code == 200 and "taskeval-octo" in answer.text
    assert "whsec-9f8e7d" not in answer.text and "PRIVATE KEY" not in answer.text
    assert "cs-5e6f7a" not in answer.text
    env = (tmp_path / "creds" / "taskeval-app.env").read_text()
    assert "GITHUB_APP_ID=123456\n" in env and "GITHUB_WEBHOOK_SECRET=whsec-9f8e7d\n" in env
    assert "GITHUB_CLIENT_ID=Iv1.0a1b2c3d\n" in env and "GITHUB_CLIENT_SECRET=cs-5e6f7a\n" in env
    # GitHub sign-in needs a session key of its own: the file carries a fresh random one
    session_key = re.search(r"^TASKEVAL_SESSION_SECRET=([0-9a-f]{64})$", env, re.M)
    assert session_key and session_key.group(1) not in answer.text
    pem = tmp_path / "creds" / "taskeval-octo.private-key.pem"
    assert pem.read_text() == app["pem"]
    for path in (pem, tmp_path / "creds" / "taskeval-app.env"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert result["app"]["slug"] == "taskeval-octo"


def test_forged_callback_is_refused(tmp_path: Path) -> None:
    app = {"id": 1, "slug": "s", "pem": "p", "webhook_secret": "w"}
    result, _ = register(tmp_path, (201, app), callback={"code": "c0de", "state": "forged"})
    assert result["app"]["id"] == 1  # only the genuine redirect (right state) registered


def test_expired_code_is_reported(tmp_path: Path) -> None:
    result, answer = register(tmp_path, (404, {"message": "Not Found"}))
    assert isinstance(result, ManifestError) and "expire after an hour" in str(result)
    assert answer.status_code == 502
    assert not (tmp_path / "creds" / "taskeval-app.env").exists()
