"""The App manifest and the registration helper (GitHub's manifest flow, mocked at HTTP)."""

from __future__ import annotations

import html
import json
import os
import re
import socket
import stat
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.manifest import ManifestError, load_manifest, save_credentials, serve_registration

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
             callback: dict[str, str] | None = None, out_dir: Path | None = None,
             ) -> tuple[Any, requests.Response]:
    """Run the helper; act as the browser and as GitHub redirecting back."""
    port = free_port()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = serve_registration(
                ROOT / "app.yml", "https://bot.example.com/webhook", org="octo-org",
                github_url="https://ghes.example.test", api_url=API, port=port,
                out_dir=out_dir or tmp_path / "creds")
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


def sourced(env_file: Path) -> dict[str, str]:
    """What ``set -a; . FILE; set +a`` gives a POSIX shell, as the docs say to load it."""
    proc = subprocess.run(["sh", "-c", 'set -a; . "$1"; set +a; env -0', "sh", str(env_file)],
                          capture_output=True, check=True, env={"PATH": os.environ.get("PATH", "")},
                          cwd=env_file.parent)
    assert proc.stderr == b""
    pairs = (item.split(b"=", 1) for item in proc.stdout.split(b"\0") if b"=" in item)
    return {k.decode(): v.decode() for k, v in pairs}


def test_registration_into_a_folder_with_a_space_over_readable_old_files(tmp_path: Path) -> None:
    """The helper writes into a folder with a space in its name where an earlier run left the
    key and the env file readable by everyone: the env file loads in a shell as the docs say,
    and both files end up readable by their owner only."""
    creds = tmp_path / "my creds"
    creds.mkdir()
    old_pem, old_env = creds / "taskeval-octo.private-key.pem", creds / "taskeval-app.env"
    for path in (old_pem, old_env):
        path.write_text("old\n")
        path.chmod(0o644)
    app = {"id": 42, "slug": "taskeval-octo", "pem": "-----BEGIN RSA PRIVATE KEY-----\nk\n",
           "webhook_secret": "whsec-1", "client_id": "Iv1.9", "client_secret": "cs-2"}
    result, answer = register(tmp_path, (201, app), out_dir=creds)
    assert answer.status_code == 200, answer.text
    assert result["pem"] == old_pem and result["env"] == old_env
    for path in (old_pem, old_env):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    loaded = sourced(old_env)
    assert loaded["GITHUB_APP_PRIVATE_KEY_PATH"] == str(old_pem.resolve())
    assert Path(loaded["GITHUB_APP_PRIVATE_KEY_PATH"]).read_text() == app["pem"]
    assert (loaded["GITHUB_APP_ID"], loaded["GITHUB_WEBHOOK_SECRET"]) == ("42", "whsec-1")


shell_words = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1,
                      max_size=40)


@settings(max_examples=40, deadline=None)
@given(folder=shell_words.filter(lambda s: "/" not in s and s not in (".", "..")), secret=shell_words,
       slug=st.from_regex(r"[a-z0-9][a-z0-9-]{0,20}", fullmatch=True))
def test_any_value_reads_back_from_the_env_file_exactly(folder: str, secret: str, slug: str) -> None:
    """Whatever the folder, slug or secret hold (spaces, quotes, $, backticks, line breaks), a
    shell reads each value back as written and runs nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / folder
        app = {"id": 7, "slug": slug, "pem": "k", "webhook_secret": secret, "client_secret": secret}
        pem, env = save_credentials(app, out)
        loaded = sourced(env)
        assert loaded["GITHUB_WEBHOOK_SECRET"] == secret
        assert loaded["GITHUB_CLIENT_SECRET"] == secret
        assert loaded["GITHUB_APP_PRIVATE_KEY_PATH"] == str(pem.resolve())
        assert sorted(p.name for p in Path(tmp).rglob("*") if p.is_file()) == sorted([pem.name, env.name])


def test_a_link_in_the_key_files_place_is_refused_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    out = tmp_path / "creds"
    out.mkdir()
    (out / "taskeval-app.env").symlink_to(target)
    with pytest.raises(OSError):
        save_credentials({"id": 1, "slug": "s", "pem": "p", "webhook_secret": "w"}, out)
    assert target.read_text() == "keep\n"
