"""GitHub's OAuth web flow and the "which repositories can this user read" endpoints, served over
real HTTP on 127.0.0.1 for the dashboard's sign-in tests (a browser must be able to follow it).

    fake = FakeGitHubOAuth(client_id="Iv1.test", client_secret="s3cret")
    fake.users["alice"] = ["octo-org/widgets"]
    with fake.serve():
        env = {"GITHUB_API_URL": fake.api_url, "GITHUB_WEB_URL": fake.web_url, ...}

``/login/oauth/authorize`` signs in ``fake.next_login`` at once (as GitHub does for a user who
already authorised the App) and redirects to ``redirect_uri`` with a one-time code.
``mode = "app"`` answers ``/user/installations`` (a GitHub App's user token); ``"oauth-app"``
refuses it with 403 so the dashboard falls back to ``/user/repos``. Repository lists are paged
``page_size`` at a time with ``Link`` headers, like GitHub's.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

from flask import Flask, jsonify, redirect, request
from werkzeug.serving import make_server


class FakeGitHubOAuth:
    def __init__(self, client_id: str = "Iv1.dashboardtest", client_secret: str = "oauth-secret") -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.users: dict[str, list[str]] = {}
        self.next_login = ""
        self.mode = "app"
        self.page_size = 2
        self.codes: dict[str, str] = {}
        self.tokens: dict[str, str] = {}
        self.log: list[str] = []
        self.url = ""
        self.app = self._build()

    @property
    def web_url(self) -> str:
        return self.url

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v3"

    def _login(self) -> str | None:
        header = request.headers.get("Authorization", "")
        return self.tokens.get(header.removeprefix("Bearer ").removeprefix("token ").strip())

    def _paged(self, items: list[dict[str, Any]], key: str | None) -> Any:
        page = int(request.args.get("page", "1"))
        size = self.page_size
        chunk = items[(page - 1) * size: page * size]
        body: Any = {"total_count": len(items), key: chunk} if key else chunk
        resp = jsonify(body)
        if page * size < len(items):
            query = dict(request.args)
            query["page"] = str(page + 1)
            resp.headers["Link"] = f'<{self.url}{request.path}?{urlencode(query)}>; rel="next"'
        return resp

    def _build(self) -> Flask:
        app = Flask("fake-github-oauth")

        @app.before_request
        def _log() -> None:
            self.log.append(f"{request.method} {request.path}")

        @app.get("/login/oauth/authorize")
        def authorize() -> Any:
            if request.args.get("client_id") != self.client_id:
                return "unknown client", 404
            code = secrets.token_hex(8)
            self.codes[code] = self.next_login
            target = request.args["redirect_uri"]
            return redirect(f"{target}?{urlencode({'code': code, 'state': request.args.get('state', '')})}")

        @app.post("/login/oauth/access_token")
        def access_token() -> Any:
            form = request.form
            if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
                return jsonify(error="incorrect_client_credentials")
            login = self.codes.pop(form.get("code", ""), None)
            if login is None:
                return jsonify(error="bad_verification_code",
                               error_description="The code passed is incorrect or expired.")
            token = "ghu_" + secrets.token_hex(12)
            self.tokens[token] = login
            return jsonify(access_token=token, token_type="bearer", scope="")

        @app.get("/api/v3/user")
        def user() -> Any:
            login = self._login()
            return (jsonify(login=login, id=1), 200) if login else (jsonify(message="Bad credentials"), 401)

        @app.get("/api/v3/user/installations")
        def installations() -> Any:
            login = self._login()
            if not login:
                return jsonify(message="Bad credentials"), 401
            if self.mode != "app":
                return jsonify(message="You must authenticate with an access token authorized to a "
                                       "GitHub App in order to list installations"), 403
            return self._paged([{"id": 7, "account": {"login": "octo-org"}}], "installations")

        @app.get("/api/v3/user/installations/<int:inst>/repositories")
        def installation_repos(inst: int) -> Any:
            login = self._login()
            if not login or inst != 7:
                return jsonify(message="Not Found"), 404
            return self._paged([{"full_name": r} for r in self.users.get(login, [])], "repositories")

        @app.get("/api/v3/user/repos")
        def user_repos() -> Any:
            login = self._login()
            if not login:
                return jsonify(message="Bad credentials"), 401
            return self._paged([{"full_name": r} for r in self.users.get(login, [])], None)

        return app

    @contextmanager
    def serve(self) -> Iterator[FakeGitHubOAuth]:
        server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{server.server_port}"
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
