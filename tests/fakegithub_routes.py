"""The fake GitHub's router (``tests/fakegithub.py``): one request in, ``(status, headers,
payload)`` out, with authentication, permissions, faults, rate limits, ETags and GitHub's
pagination, for both transports (``responses`` and the local HTTP server).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import unquote

from taskeval.corpus.replay import paginate
from tests import fakegraphql
from tests.fakegithub_parts import (
    _COMPILED,
    _NEEDS,
    API_PLACEHOLDER,
    BASE_TIME,
    DOCS,
    Fault,
    Identity,
    LoggedRequest,
    _Answer,
    _error_body,
    _iso,
    _num,
    _Pull,
    _Repo,
    _sha,
)


class Router:
    """Mixed into ``FakeGitHub``: answers one request from its state, consuming its queued
    faults and appending to its log."""

    def handle(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | Sequence[str]] | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | str | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        """Answer one request: ``(status, headers, JSON value or raw bytes)``.

        ``path`` is relative to the API root; ``query`` values may be lists (``parse_qs``).
        Sleeps for the configured latency (outside the lock, so concurrent requests overlap).
        """
        flat = {k: (v[0] if isinstance(v, list | tuple) else v) for k, v in (query or {}).items()}
        lower = {k.lower(): v for k, v in (headers or {}).items()}
        method = method.upper()
        path = "/" + unquote(path).strip("/") if path.strip("/") else "/"
        route = next((name for m, rx, name in _COMPILED if m == method and rx.fullmatch(path)),
                     "unknown")
        if self.latency:
            time.sleep(self.latency)
        fault = self._take_fault(method, path)
        if self.enforce_rate_limit and route not in ("rate_limit", "graphql"):
            with self._lock:
                self._roll_rate_window()
                spent = self.rate_remaining <= 0
                if spent:
                    self.rate_limited += 1
            if spent and fault is None:
                fault = Fault.primary_rate_limit(max(0, self.rate_reset - int(time.time())))
        if fault is not None and fault.delay and not fault.applied:
            time.sleep(fault.delay)
        credential = (lower.get("authorization") or "").partition(" ")[2].strip()
        if credential:
            with self._lock:
                self.credentials_seen.add(credential)
        identity: Identity | None = None
        extra: dict[str, str] = {}
        truncated = False
        try:
            identity = self._authenticate(lower.get("authorization"), route)
            if fault is not None and fault.status is not None and not fault.applied:
                extra = dict(fault.headers)
                body_out = fault.body
                if fault.echo:
                    said = (fault.body or {}).get("message", "")
                    body_out = {**(fault.body or {}), "message":
                                f"{said} (Authorization: {lower.get('authorization')})"}
                raise _Answer(fault.status, body_out, fault.headers)
            truncated = fault is not None and fault.truncated
            status, payload, extra = self._route(method, path, flat, route, identity, body)
            if fault is not None and fault.applied:
                if fault.delay:
                    time.sleep(fault.delay)
                if fault.status is not None:
                    raise _Answer(fault.status, fault.body, fault.headers)
        except _Answer as answer:
            status, payload, extra = answer.status, answer.body, answer.headers
        # Like GitHub: a 200 GET carries an ETag, and a conditional GET whose tag still matches
        # is answered 304 Not Modified with no body and not charged to the rate limit.
        not_modified = False
        if method == "GET" and status == 200 and route != "rate_limit" and not truncated:
            extra = {**extra, "ETag": self.etag(payload, extra)}
            not_modified = lower.get("if-none-match") == extra["ETag"]
            if not_modified:
                status, payload = 304, None
                with self._lock:
                    self.not_modified += 1
        # GitHub does not charge /rate_limit; GraphQL has a budget of its own (its headers).
        out = self._headers(extra, charge=route not in ("rate_limit", "graphql")
                            and not not_modified)
        with self._lock:
            self.log.append(LoggedRequest(method, path, flat, status, route,
                                          identity.login if identity else None))
        if truncated:
            encoded = self.encode(payload)
            return status, out, encoded[: max(1, len(encoded) // 2)]
        return status, out, payload

    @staticmethod
    def etag(payload: Any, headers: Mapping[str, str]) -> str:
        """A strong ETag of an answer: its body and its Link header."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload, sort_keys=True,
                                                                     default=str).encode()
        link = str(headers.get("Link") or headers.get("link") or "").encode()
        return '"' + hashlib.sha256(data + b"|" + link).hexdigest()[:40] + '"'

    def encode(self, payload: Any) -> bytes:
        """The body bytes: JSON with placeholder URLs pointing at the serving root."""
        if isinstance(payload, bytes):
            return payload
        if payload is None:
            return b""
        return json.dumps(payload).replace(API_PLACEHOLDER, self.url).encode()

    def _roll_rate_window(self) -> None:
        now = time.time()
        if now >= self.rate_reset:
            self.rate_remaining = self.rate_limit
            self.graphql_remaining = self.graphql_limit
            self.rate_reset = int(now + self.rate_window)

    def _headers(self, extra: Mapping[str, str], charge: bool = True) -> dict[str, str]:
        with self._lock:
            self._roll_rate_window()
            if charge:
                self.rate_remaining = max(0, self.rate_remaining - 1)
            headers = {
                "Content-Type": "application/json; charset=utf-8",
                "X-GitHub-Media-Type": "github.v3; format=json",
                "X-GitHub-Request-Id": f"FAKE:{next(self._request_ids):06d}",
                "X-RateLimit-Limit": str(self.rate_limit),
                "X-RateLimit-Remaining": str(self.rate_remaining),
                "X-RateLimit-Reset": str(self.rate_reset),
                "X-RateLimit-Used": str(self.rate_limit - self.rate_remaining),
                "X-RateLimit-Resource": "core",
            }
        headers.update(extra)
        return headers

    def _authenticate(self, authorization: str | None, route: str) -> Identity | None:
        if not authorization:
            return None
        scheme, _, credential = authorization.partition(" ")
        credential = credential.strip()
        if scheme.lower() == "bearer" and credential.count(".") == 2:
            return self._app_identity(credential, route)
        if scheme.lower() in ("token", "bearer") and credential in self.tokens:
            if time.time() >= self.token_expiry.get(credential, float("inf")):
                with self._lock:
                    self.expired_uses += 1
                raise _Answer(401, _error_body("Bad credentials", 401))
            return self.tokens[credential]
        raise _Answer(401, _error_body("Bad credentials", 401))

    def _app_identity(self, jwt_token: str, route: str) -> Identity:
        import jwt  # PyJWT, a PyGithub dependency

        try:
            issuer = int(jwt.decode(jwt_token, options={"verify_signature": False})["iss"])
            app = self.apps[issuer]
            jwt.decode(jwt_token, app.public_key, algorithms=["RS256"], leeway=120)
        except (jwt.PyJWTError, KeyError, ValueError) as exc:
            raise _Answer(401, _error_body(
                "A JSON web token could not be decoded", 401)) from exc
        if route not in ("app", "app.token", "repos.installation"):
            raise _Answer(401, _error_body(
                "A JSON web token is only accepted on /app endpoints", 401))
        return Identity(login=f"{app.slug}[bot]", type="Bot", integration=True,
                        permissions={"app_id": str(app.app_id)})

    def _require(self, identity: Identity | None, route: str, repo: _Repo | None) -> None:
        if repo is not None and repo.data["private"] and identity is None:
            raise _Answer(404, _error_body("Not Found", 404))
        if route in ("issues.create_comment", "issues.update_comment", "issues.delete_comment",
                     "reactions.create") \
                and identity is None:
            raise _Answer(401, _error_body("Requires authentication", 401))
        if identity is None or identity.permissions is None or route not in _NEEDS:
            return
        scopes, level = _NEEDS[route]
        granted = [identity.permissions.get(scope) for scope in scopes]
        ok = any(g == "write" or (g == "read" and level == "read") for g in granted)
        if not ok:
            raise _Answer(403, _error_body("Resource not accessible by integration", 403))

    def _repo(self, match: re.Match[str] | None) -> tuple[str, _Repo]:
        assert match is not None
        full = f"{match['owner']}/{match['repo']}"
        for name, repo in self.repos.items():
            if name.lower() == full.lower():
                return name, repo
        raise _Answer(404, _error_body("Not Found", 404))

    def _pull(self, repo: _Repo, number: str) -> _Pull:
        pull = repo.pulls.get(int(number))
        if pull is None:
            raise _Answer(404, _error_body("Not Found", 404))
        return pull

    def _route(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        route: str,
        identity: Identity | None,
        body: bytes | str | None,
    ) -> tuple[int, Any, dict[str, str]]:
        if route == "unknown":
            raise _Answer(404, _error_body("Not Found", 404))
        match = next(rx.fullmatch(path) for m, rx, name in _COMPILED
                     if name == route and m == method)
        if route == "user":
            if identity is None:
                raise _Answer(401, _error_body("Requires authentication", 401))
            if identity.integration:
                raise _Answer(403, _error_body("Resource not accessible by integration", 403))
            return 200, self.user(identity.login, identity.type), {}
        if route == "rate_limit":
            core = {"limit": self.rate_limit, "remaining": self.rate_remaining,
                    "reset": self.rate_reset, "used": self.rate_limit - self.rate_remaining}
            graphql = {"limit": self.graphql_limit, "remaining": self.graphql_remaining,
                       "reset": self.rate_reset,
                       "used": self.graphql_limit - self.graphql_remaining}
            return 200, {"resources": {"core": core, "graphql": graphql}, "rate": core}, {}
        if route.startswith("app") or route == "repos.installation":
            return self._app_route(route, match, identity)
        if route == "graphql":
            return fakegraphql.answer(self, identity, body)
        with self._lock:
            name, repo = self._repo(match)
            self._require(identity, route, repo)
            if route == "repos.get":
                return 200, repo.data, {}
            if route == "pulls.list":
                return self._page(self._list_pulls(repo, query), query, path)
            if route == "pulls.get":
                return 200, self._pull(repo, match["n"]).data, {}
            if route == "pulls.commits":
                commits = self._pull(repo, match["n"]).commits[:250]
                return self._page(commits, query, path)
            if route == "pulls.reviews":
                return self._page(self._pull(repo, match["n"]).reviews, query, path)
            if route == "pulls.review_comments":
                return self._page(self._pull(repo, match["n"]).review_comments, query, path)
            if route == "pulls.files":
                return self._page(self._pull(repo, match["n"]).files[:3000], query, path)
            if route == "issues.list":
                return self._page(self._list_issues(name, repo, query), query, path)
            if route == "issues.get":
                found = self.issue_object(name, int(match["n"]))
                if found is None:
                    raise _Answer(404, _error_body("Not Found", 404))
                return 200, found, {}
            if route == "issues.comments":
                if int(match["n"]) not in repo.pulls:
                    raise _Answer(404, _error_body("Not Found", 404))
                return self._page(repo.issue_comments.get(int(match["n"]), []), query, path)
            if route == "issues.timeline":
                if int(match["n"]) not in repo.pulls:
                    raise _Answer(404, _error_body("Not Found", 404))
                return self._page(self._timeline(repo, int(match["n"])), query, path)
            if route == "issues.create_comment":
                text = self._body_field(body, "body")
                assert identity is not None
                comment = self.write_comment("create", name, int(match["n"]), text, identity)
                if comment is None:
                    raise _Answer(404, _error_body("Not Found", 404))
                return 201, comment, {"Location": comment["url"]}
            if route == "issues.delete_comment":
                assert identity is not None
                if self.write_comment("delete", name, int(match["id"]), "", identity) is None:
                    raise _Answer(404, _error_body("Not Found", 404))
                return 204, None, {}
            if route in ("issues.get_comment", "issues.update_comment", "reactions.create",
                         "reactions.list"):
                comment = self._find_comment(repo, int(match["id"]))
                if route == "issues.get_comment":
                    return 200, comment, {}
                if route == "issues.update_comment":
                    assert identity is not None
                    self.write_comment("update", name, comment["id"],
                                       self._body_field(body, "body"), identity)
                    return 200, comment, {}
                reactions = self.reactions.setdefault(comment["id"], [])
                if route == "reactions.list":
                    return self._page(reactions, query, path)
                assert identity is not None
                content = self._body_field(body, "content")
                if content not in {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket",
                                   "eyes"}:
                    raise _Answer(422, {"message": "Validation Failed", "errors": [
                        {"resource": "Reaction", "code": "invalid", "field": "content"}],
                        "documentation_url": f"{DOCS}/reactions", "status": "422"})
                for existing in reactions:
                    if existing["content"] == content \
                            and existing["user"]["login"] == identity.login:
                        return 200, existing, {}
                reaction = {"id": next(self._ids), "node_id": "REA_x",
                            "user": self.user(identity.login, identity.type),
                            "content": content, "created_at": _iso(BASE_TIME)}
                reactions.append(reaction)
                return 201, reaction, {}
            if route == "commits.get":
                for pull in repo.pulls.values():
                    for commit in pull.commits:
                        if commit["sha"].startswith(match["ref"].lower()):
                            return 200, {**commit, "stats": {"total": 0, "additions": 0,
                                                             "deletions": 0}, "files": []}, {}
                raise _Answer(422, _error_body(f"No commit found for SHA: {match['ref']}", 422))
            if route == "checks.list":
                runs = repo.check_runs.get(match["ref"], [])
                if query.get("filter", "latest") == "latest":
                    latest: dict[str, dict[str, Any]] = {}
                    for run in runs:
                        if run["name"] not in latest or run["id"] > latest[run["name"]]["id"]:
                            latest[run["name"]] = run
                    runs = [r for r in runs if latest[r["name"]] is r]
                return self._page(runs, query, path, wrapper="check_runs")
            if route == "actions.runs":
                runs = sorted(self._filter_runs(repo.workflow_runs, query),
                              key=lambda r: (r["created_at"], r["id"]), reverse=True)
                if query.get("exclude_pull_requests") == "true":
                    runs = [{**r, "pull_requests": []} for r in runs]
                return self._page(runs, query, path, wrapper="workflow_runs")
            if route == "repos.contents":
                ref = query.get("ref") or repo.data["default_branch"]
                text = repo.contents.get((ref, match["path"]))
                if text is None:
                    raise _Answer(404, _error_body(
                        "Not Found", 404, "/repos/contents#get-repository-content"))
                return 200, self._content(name, ref, match["path"], text), {}
            if route == "repos.permission":
                login = match["login"]
                perm, role = repo.permissions.get(login, (
                    "read" if not repo.data["private"] else "none",
                    "read" if not repo.data["private"] else "none"))
                if login.startswith("ghost-"):
                    raise _Answer(404, _error_body(f"{login} is not a user", 404))
                return 200, {"permission": perm, "role_name": role,
                             "user": self.user(login)}, {}
        raise _Answer(404, _error_body("Not Found", 404))  # pragma: no cover - routes exhausted

    def _app_route(self, route: str, match: re.Match[str] | None,
                   identity: Identity | None) -> tuple[int, Any, dict[str, str]]:
        if identity is None or identity.permissions is None \
                or "app_id" not in identity.permissions:
            raise _Answer(401, _error_body(
                "A JSON web token could not be decoded", 401))
        app = self.apps[int(identity.permissions["app_id"])]
        if route == "app":
            return 200, {"id": app.app_id, "slug": app.slug, "name": app.slug.title(),
                         "owner": self.user("octo-org", "Organization"),
                         "permissions": app.permissions}, {}
        assert match is not None
        if route == "repos.installation":
            full = f"{match['owner']}/{match['repo']}"
            for iid, repos in app.installations.items():
                if any(r.lower() == full.lower() for r in repos):
                    return 200, {"id": iid, "app_id": app.app_id, "app_slug": app.slug,
                                 "account": self.user(match["owner"], "Organization"),
                                 "permissions": app.permissions}, {}
            raise _Answer(404, _error_body("Not Found", 404))
        iid = int(match["id"])
        if iid not in app.installations:
            raise _Answer(404, _error_body("Not Found", 404))
        token = f"ghs_{_sha('installation', iid, len(self.tokens))[:36]}"
        self.add_token(token, f"{app.slug}[bot]", integration=True, permissions=app.permissions)
        expires = datetime.now(UTC) + timedelta(seconds=self.installation_token_ttl)
        self.token_expiry[token] = expires.timestamp()
        return 201, {"token": token, "expires_at": _iso(expires),
                     "permissions": app.permissions, "repository_selection": "selected"}, {}

    @staticmethod
    def _list_pulls(repo: _Repo, query: Mapping[str, str]) -> list[dict[str, Any]]:
        """``GET /repos/{o}/{r}/pulls``: ``state`` (open, closed, all; default open), ``sort``
        (created, updated; default created), ``direction`` (default desc), the list's shape
        (no merge or size fields: those are in the full PR only)."""
        state = query.get("state", "open")
        if state not in ("open", "closed", "all"):
            raise _Answer(422, _error_body("Validation Failed", 422))
        sort = query.get("sort", "created")
        if sort not in ("created", "updated"):
            raise _Answer(422, _error_body("Validation Failed", 422))
        descending = query.get("direction", "desc") == "desc"
        chosen = [p.data for p in repo.pulls.values()
                  if state == "all" or p.data["state"] == state]
        chosen.sort(key=lambda d: (d[f"{sort}_at"], d["number"]), reverse=descending)
        full_only = ("merged", "mergeable", "mergeable_state", "merged_by", "comments",
                     "review_comments", "commits", "additions", "deletions", "changed_files")
        return [{k: v for k, v in d.items() if k not in full_only} for d in chosen]

    def _list_issues(self, name: str, repo: _Repo, query: Mapping[str, str]) -> list[Any]:
        """``GET /repos/{o}/{r}/issues``: pull requests are issues here, beside the plain
        issues, each the object ``GET /issues/{n}`` answers; ``state`` (default open),
        ``sort`` (created, updated, comments; default created), ``direction``, ``since``
        (updated at or after)."""
        state = query.get("state", "open")
        sort = query.get("sort", "created")
        if state not in ("open", "closed", "all") or sort not in ("created", "updated",
                                                                  "comments"):
            raise _Answer(422, _error_body("Validation Failed", 422))
        since = query.get("since")
        every = [self._pr_issue(name, p) for p in repo.pulls.values()] + [
            i for n, i in repo.issues.items() if n not in repo.pulls]
        chosen = [d for d in every if (state == "all" or d["state"] == state)
                  and (not since or d["updated_at"] >= since)]
        key = "comments" if sort == "comments" else f"{sort}_at"
        chosen.sort(key=lambda d: (d[key], d["number"]), reverse=query.get("direction",
                                                                          "desc") == "desc")
        return chosen

    def _timeline(self, repo: _Repo, number: int) -> list[dict[str, Any]]:
        """The PR's timeline as GitHub lists it: its commits (``committed``: sha and git dates, no
        actor), conversation comments (``commented``), reviews (``reviewed``), extra events, and
        the merge or close, in time order."""
        pull = repo.pulls[number]
        entries: list[tuple[str, int, dict[str, Any]]] = []
        for n, c in enumerate(pull.commits):
            git = c["commit"]
            entries.append((git["committer"]["date"], n, {
                "sha": c["sha"], "node_id": c["node_id"], "url": git["url"],
                "html_url": c["html_url"], "author": git["author"], "committer": git["committer"],
                "message": git["message"], "tree": git["tree"],
                "parents": c["parents"], "verification": git["verification"],
                "event": "committed"}))
        for c in repo.issue_comments.get(number, []):
            entries.append((c["created_at"], 0, {**c, "event": "commented", "actor": c["user"]}))
        for r in pull.reviews:
            if "submitted_at" in r:
                entries.append((r["submitted_at"], 0, {**r, "event": "reviewed"}))
        for e in pull.events:  # grouped line or commit comments are dated by their first
            first = (e.get("comments") or [{}])[0] or {}
            entries.append((e.get("created_at") or first.get("created_at") or "", 1, dict(e)))
        data = pull.data
        if data.get("closed_at"):
            eid = _num("closed-event", data["id"])
            entries.append((data["closed_at"], 2, {
                "id": eid, "node_id": f"E_{eid}", "actor": data.get("merged_by") or self.user("octocat"),
                "event": "merged" if data.get("merged") else "closed",
                "commit_id": data.get("merge_commit_sha"), "created_at": data["closed_at"],
                "performed_via_github_app": None}))
        return [entry for _, _, entry in sorted(entries, key=lambda t: (t[0], t[1]))]

    def _find_comment(self, repo: _Repo, cid: int) -> dict[str, Any]:
        for comments in repo.issue_comments.values():
            for comment in comments:
                if comment["id"] == cid:
                    return comment
        raise _Answer(404, _error_body("Not Found", 404))

    @staticmethod
    def _body_field(body: bytes | str | None, name: str) -> str:
        try:
            data = json.loads(body or b"{}")
            value = data[name]
            if not isinstance(value, str):
                raise TypeError(name)
            return value
        except (ValueError, KeyError, TypeError) as exc:
            raise _Answer(422, {"message": "Invalid request.", "documentation_url": DOCS,
                                "status": "422", "errors": [f"{name} wasn't supplied."]}) from exc

    # ------------------------------------------------------------------------------ pagination

    def _page(self, items: Sequence[Any], query: Mapping[str, str], path: str,
              wrapper: str | None = None) -> tuple[int, Any, dict[str, str]]:
        """One page as GitHub serves it: ``per_page`` (default 30, max 100), ``page``, and a
        ``Link`` header with prev/next/last/first as applicable."""
        try:
            chunk, headers = paginate(items, query, f"{self.url}{path}")
        except ValueError as exc:
            raise _Answer(422, _error_body("Invalid pagination parameter", 422)) from exc
        payload: Any = {"total_count": len(items), wrapper: chunk} if wrapper else chunk
        return 200, payload, headers

    @staticmethod
    def _filter_runs(runs: Iterable[dict[str, Any]], query: Mapping[str, str]) -> list[Any]:
        def created_ok(value: str) -> bool:
            spec = query.get("created")
            if not spec:
                return True
            day = date.fromisoformat(value[:10])
            if ".." in spec:
                low, high = spec.split("..", 1)
                return date.fromisoformat(low[:10]) <= day <= date.fromisoformat(high[:10])
            for op in (">=", "<=", ">", "<"):
                if spec.startswith(op):
                    bound = date.fromisoformat(spec[len(op):][:10])
                    return {">=": day >= bound, "<=": day <= bound, ">": day > bound,
                            "<": day < bound}[op]
            return day == date.fromisoformat(spec[:10])

        return [r for r in runs
                if (not query.get("branch") or r["head_branch"] == query["branch"])
                and (not query.get("event") or r["event"] == query["event"])
                and (not query.get("head_sha") or r["head_sha"] == query["head_sha"])
                and (not query.get("status") or query["status"] in (r["status"], r["conclusion"]))
                and created_ok(r["created_at"])]
