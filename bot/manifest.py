"""Register the GitHub App from ``app.yml`` (GitHub's manifest flow) and save its credentials.

    python -m bot.manifest --webhook-url https://bot.example.com/webhook [--org my-org]

Serves a one-page form on 127.0.0.1 that posts the manifest to GitHub; after "Create GitHub App"
GitHub redirects back with a one-hour code, which is exchanged (``POST /app-manifests/{code}/
conversions``) for the App id, slug, private key and webhook secret. They are written to files
readable only by the owner, never printed. PyGithub has no call for this endpoint, so it is one
``requests`` POST; it needs no authentication and honours ``GITHUB_API_URL`` (GitHub Enterprise).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import secrets
import shlex
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import requests
import yaml

DEFAULT_MANIFEST = Path("app.yml")


class ManifestError(ValueError):
    """The manifest or GitHub's answer is unusable; the message says which part."""


def load_manifest(path: Path, webhook_url: str, redirect_url: str,
                  name: str | None = None) -> dict[str, Any]:
    """``app.yml`` with the webhook and redirect URLs filled in."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"cannot read {path}: {exc.strerror}") from exc
    if not isinstance(data, dict) or "default_permissions" not in data:
        raise ManifestError(f"{path} is not a GitHub App manifest (no default_permissions)")
    parts = urlsplit(webhook_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ManifestError(f"--webhook-url must be an http(s) URL, got {webhook_url!r}")
    data["hook_attributes"] = {**(data.get("hook_attributes") or {}), "url": webhook_url}
    data["redirect_url"] = redirect_url
    # "Sign in with GitHub" for /dashboard: the App's OAuth returns to the bot's own host.
    data["callback_urls"] = [f"{parts.scheme}://{parts.netloc}/dashboard/callback"]
    if name:
        data["name"] = name
    return data


def new_app_url(github_url: str, org: str | None, state: str) -> str:
    base = github_url.rstrip("/")
    where = f"/organizations/{quote(org)}/settings/apps/new" if org else "/settings/apps/new"
    return f"{base}{where}?state={quote(state)}"


def form_page(manifest: dict[str, Any], action: str) -> str:
    """A page whose button posts the manifest to GitHub, as GitHub's documentation shows."""
    value = html.escape(json.dumps(manifest), quote=True)
    return (
        "<!doctype html><meta charset=utf-8><title>Register the taskeval GitHub App</title>"
        f"<h1>Register the taskeval GitHub App</h1><form action=\"{html.escape(action)}\" "
        f"method=post><input type=hidden name=manifest value=\"{value}\">"
        f"<p>Webhook URL: <code>{html.escape(manifest['hook_attributes']['url'])}</code></p>"
        "<button type=submit>Create GitHub App on GitHub</button></form>"
    )


def exchange(code: str, api_url: str, timeout: float = 30.0) -> dict[str, Any]:
    """Trade the redirect's code for the App's credentials."""
    response = requests.post(f"{api_url.rstrip('/')}/app-manifests/{quote(code)}/conversions",
                             headers={"Accept": "application/vnd.github+json"}, timeout=timeout)
    if response.status_code != 201:
        try:
            message = response.json().get("message", "")
        except ValueError:
            message = ""
        raise ManifestError(f"GitHub refused the manifest code ({response.status_code}"
                            f"{': ' + message if message else ''}); codes expire after an hour")
    data: dict[str, Any] = response.json()
    missing = [k for k in ("id", "slug", "pem", "webhook_secret") if not data.get(k)]
    if missing:
        raise ManifestError(f"GitHub's answer lacks {missing}")
    return data


def save_credentials(app: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Write ``<slug>.private-key.pem`` and ``taskeval-app.env``, both mode 0600 (a file that
    was there before, readable by others, is made private too). The env file's values are
    shell-quoted, so ``. ./taskeval-app.env`` reads them back exactly, whatever the folder."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pem = out_dir / f"{app['slug']}.private-key.pem"
    env = out_dir / "taskeval-app.env"
    settings = (
        ("GITHUB_APP_ID", app["id"]),
        ("GITHUB_APP_SLUG", app["slug"]),
        ("GITHUB_APP_PRIVATE_KEY_PATH", pem.resolve()),
        ("GITHUB_WEBHOOK_SECRET", app["webhook_secret"]),
        # The App's OAuth client, for the dashboard's sign-in (absent from older answers).
        *((("GITHUB_CLIENT_ID", app["client_id"]),) if app.get("client_id") else ()),
        *((("GITHUB_CLIENT_SECRET", app["client_secret"]),) if app.get("client_secret") else ()),
        # GitHub sign-in needs a session key of its own, shared by every process of the bot.
        *((("TASKEVAL_SESSION_SECRET", secrets.token_hex(32)),) if app.get("client_id") else ()),
    )
    for path, text in ((pem, app["pem"]), (env, "".join(f"{k}={shlex.quote(str(v))}\n" for k, v in settings))):
        write_private(path, text)
    return pem, env


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable and writable by the owner only. The mode is set on
    the open file before anything is written: ``os.open``'s mode applies only to a file it
    creates. A symbolic link in its place is refused rather than followed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def serve_registration(manifest_path: Path, webhook_url: str, *, org: str | None,
                       github_url: str, api_url: str, port: int, out_dir: Path,
                       name: str | None = None) -> dict[str, Any]:
    """Run the local form + callback server until GitHub redirects back; returns the App."""
    state = secrets.token_urlsafe(16)
    result: dict[str, Any] = {}
    done = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", port), BaseHTTPRequestHandler)
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    manifest = load_manifest(manifest_path, webhook_url, f"{origin}/callback", name)
    page = form_page(manifest, new_app_url(github_url, org, state))

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/":
                return self._send(200, page)
            if parts.path != "/callback":
                return self._send(404, "not found")
            query = parse_qs(parts.query)
            if query.get("state", [""])[0] != state or not query.get("code"):
                return self._send(400, "state mismatch or missing code; start again")
            try:
                app = exchange(query["code"][0], api_url)
                pem, env = save_credentials(app, out_dir)
            except (ManifestError, requests.RequestException, OSError) as exc:
                result["error"] = str(exc)
                done.set()
                return self._send(502, f"registration failed: {html.escape(str(exc))}")
            result.update(app=app, pem=pem, env=env)
            done.set()
            install = f"{app.get('html_url') or github_url + '/apps/' + app['slug']}"
            return self._send(200, f"<p>Registered <b>{html.escape(app['slug'])}</b>. "
                                   f"Credentials saved to {html.escape(str(env))}. "
                                   f"<a href=\"{html.escape(install)}/installations/new\">"
                                   "Install it</a>.</p>")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server.RequestHandlerClass = Handler
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(f"Open {origin}/ in a browser and press the button to register the App.",
          file=sys.stderr)
    try:
        done.wait()
    finally:
        server.shutdown()
        server.server_close()
    if "error" in result:
        raise ManifestError(result["error"])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bot.manifest", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--webhook-url", required=True,
                        help="public URL of the bot's POST /webhook endpoint")
    parser.add_argument("--org", help="register under this organization (default: your account)")
    parser.add_argument("--name", help="App name (default: the manifest's; must be unique)")
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    parser.add_argument("--github-url", default=os.environ.get("GITHUB_SERVER_URL",
                                                               "https://github.com"))
    parser.add_argument("--port", type=int, default=3000, help="local port for the form")
    parser.add_argument("--out-dir", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    api = (os.environ.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/")
    try:
        result = serve_registration(args.manifest, args.webhook_url, org=args.org,
                                    github_url=args.github_url, api_url=api, port=args.port,
                                    out_dir=args.out_dir, name=args.name)
    except (ManifestError, OSError) as exc:
        print(f"bot.manifest: {exc}", file=sys.stderr)
        return 2
    app = result["app"]
    load = shlex.quote(str(Path(result["env"]).resolve()))  # a bare name would be looked up in PATH
    print(f"Registered GitHub App {app['slug']} (id {app['id']}).\n"
          f"Private key: {result['pem']}\nSettings:    {result['env']} "
          f"(load with: set -a; . {load}; set +a)\n"
          f"Install it on your repositories: {app.get('html_url', '')}/installations/new")
    return 0


if __name__ == "__main__":
    sys.exit(main())
