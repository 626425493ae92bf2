"""The fake GitHub's payloads (``tests/fakegithub.py``): users, apps, commits, files, reviews,
comments, check and workflow runs, contents, and a PR's issue object, each in the JSON shape
GitHub documents, with URLs against the placeholder API root.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from tests.fakegithub_parts import _api, _iso, _num, _sha
from tests.fakegraphql_resolver import comment_node_id

if TYPE_CHECKING:
    from tests.fakegithub_parts import _Pull


class Payloads:
    """Mixed into ``FakeGitHub``: the JSON it stores and serves (``html_base`` and the id
    counter are the fake's)."""

    def user(self, login: str, type: str | None = None) -> dict[str, Any]:
        # GitHub's Copilot agent is the Bot "Copilot" on REST (no [bot] suffix).
        kind = type or ("Bot" if login.endswith("[bot]") or login == "Copilot" else "User")
        uid = _num("user", login) % 90_000_000 + 1
        return {
            "login": login, "id": uid, "node_id": f"U_{uid}",
            "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
            "url": _api(f"/users/{login}"), "html_url": f"{self.html_base}/{login}",
            "type": kind, "site_admin": False,
        }

    def app_payload(self, slug: str) -> dict[str, Any]:
        """A GitHub App as ``performed_via_github_app`` shows it (GitHub's ``integration``)."""
        names = {"chatgpt-codex-connector": "ChatGPT Codex Connector",
                 "copilot-swe-agent": "Copilot"}
        aid = _num("app", slug) % 9_000_000 + 1
        return {
            "id": aid, "slug": slug, "node_id": f"A_{aid}", "client_id": f"Iv1.{aid:016x}",
            "owner": self.user("octo-apps", "Organization"),
            "name": names.get(slug, slug.replace("-", " ").title()), "description": "",
            "external_url": f"https://{slug}.example", "html_url": f"{self.html_base}/apps/{slug}",
            "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
            "permissions": {"contents": "write", "pull_requests": "write", "issues": "write",
                            "metadata": "read"},
            "events": [],
        }

    def _pr_issue(self, repo: str, pull: _Pull) -> dict[str, Any]:
        """``GET /repos/{o}/{r}/issues/{n}`` for a PR, in GitHub's issue shape: the PR's common
        fields, a ``pull_request`` key, and ``performed_via_github_app`` (which the pull request
        object lacks)."""
        data = pull.data
        number = data["number"]
        iid = _num("issue", repo, number) % 2_000_000_000 + 1
        issue_url = f"/repos/{repo}/issues/{number}"
        return {
            "id": iid, "node_id": f"PR_{data['id']}", "url": _api(issue_url),
            "repository_url": _api(f"/repos/{repo}"),
            "labels_url": _api(f"{issue_url}/labels{{/name}}"),
            "comments_url": _api(f"{issue_url}/comments"),
            "events_url": _api(f"{issue_url}/events"), "html_url": data["html_url"],
            "number": number, "title": data["title"], "user": data["user"],
            "labels": data["labels"], "state": data["state"], "locked": data["locked"],
            "assignee": data["assignee"], "assignees": data["assignees"],
            "milestone": data["milestone"], "comments": data["comments"],
            "created_at": data["created_at"], "updated_at": data["updated_at"],
            "closed_at": data["closed_at"], "author_association": data["author_association"],
            "active_lock_reason": data["active_lock_reason"], "draft": data["draft"],
            "pull_request": {"url": data["url"], "html_url": data["html_url"],
                             "diff_url": data["diff_url"], "patch_url": data["patch_url"],
                             "merged_at": data["merged_at"]},
            "body": data["body"],
            "reactions": {"url": _api(f"{issue_url}/reactions"), "total_count": 0, "+1": 0,
                          "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": 0,
                          "rocket": 0, "eyes": 0},
            "timeline_url": _api(f"{issue_url}/timeline"),
            "performed_via_github_app": pull.via_app,
            "state_reason": None,
        }

    def _commit(self, repo: str, sha: str, index: int, at: datetime, author: str, parent: str,
                verified: bool, total: int) -> dict[str, Any]:
        messages = ["Initial plan", "Handle empty input in parse_widget",
                    "Add tests for empty and None input"]
        subject = messages[index] if index < len(messages) and total <= len(messages) \
            else f"Step {index + 1}: refine widget parsing"
        # GitHub's no-reply address names the account REST links the commit to (and the only
        # way GraphQL, whose git authors link to Users only, can name a bot author).
        account = self.user(author)
        person = {"name": "Copilot",
                  "email": f"{account['id']}+{author}@users.noreply.github.com",
                  "date": _iso(at)}
        return {
            "sha": sha, "node_id": f"C_{sha[:12]}", "url": _api(f"/repos/{repo}/commits/{sha}"),
            "html_url": f"{self.html_base}/{repo}/commit/{sha}",
            "comments_url": _api(f"/repos/{repo}/commits/{sha}/comments"),
            "commit": {
                "url": _api(f"/repos/{repo}/git/commits/{sha}"),
                "author": person,
                "committer": {"name": "GitHub", "email": "noreply@github.com",
                              "date": _iso(at)},
                "message": f"{subject}\n\nCo-authored-by: octocat <octocat@users.noreply"
                           ".github.com>",
                "tree": {"sha": _sha("tree", sha), "url": _api(f"/repos/{repo}/git/trees/x")},
                "comment_count": 0,
                "verification": {
                    "verified": verified, "reason": "valid" if verified else "unsigned",
                    "signature": "-----BEGIN PGP SIGNATURE-----\n...\n" if verified else None,
                    "payload": f"tree {_sha('tree', sha)}\n" if verified else None,
                    "verified_at": _iso(at) if verified else None,
                },
            },
            "author": self.user(author),
            "committer": self.user("web-flow"),
            "parents": [{"sha": parent, "url": _api(f"/repos/{repo}/commits/{parent}"),
                         "html_url": f"{self.html_base}/{repo}/commit/{parent}"}],
        }

    def _file(self, repo: str, head: str, spec: Mapping[str, Any]) -> dict[str, Any]:
        name = str(spec["filename"])
        adds, dels = int(spec.get("additions", 5)), int(spec.get("deletions", 1))
        entry: dict[str, Any] = {
            "sha": _sha("blob", repo, name), "filename": name,
            "status": spec.get("status", "modified"),
            "additions": adds, "deletions": dels, "changes": adds + dels,
            "blob_url": f"{self.html_base}/{repo}/blob/{head}/{name}",
            "raw_url": f"{self.html_base}/{repo}/raw/{head}/{name}",
            "contents_url": _api(f"/repos/{repo}/contents/{name}?ref={head}"),
            "patch": "@@ -1,3 +1,4 @@\n" + "+added line\n" * adds + "-removed line\n" * dels,
        }
        if spec.get("previous_filename"):
            entry["previous_filename"] = spec["previous_filename"]
        return entry

    def _review(self, repo: str, number: int, spec: Mapping[str, Any], at: datetime,
                head: str) -> dict[str, Any]:
        rid = next(self._ids)
        state = str(spec.get("state", "APPROVED"))
        review: dict[str, Any] = {
            "id": rid, "node_id": f"PRR_{rid}",
            "user": self.user(str(spec.get("user", "octocat"))),
            "body": str(spec.get("body", "")), "state": state,
            "html_url": f"{self.html_base}/{repo}/pull/{number}#pullrequestreview-{rid}",
            "pull_request_url": _api(f"/repos/{repo}/pulls/{number}"),
            "author_association": str(spec.get("author_association", "OWNER")),
            "_links": {"html": {"href": f"{self.html_base}/{repo}/pull/{number}"}},
            "commit_id": str(spec.get("commit_id", head)),
        }
        if state != "PENDING":
            review["submitted_at"] = _iso(at)
        return review

    def _review_comment(self, repo: str, number: int, spec: Mapping[str, Any], at: datetime,
                        head: str, reviews: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        cid = next(self._ids)
        comment = {
            "url": _api(f"/repos/{repo}/pulls/comments/{cid}"),
            "pull_request_review_id": reviews[0]["id"] if reviews else None,
            "id": cid, "node_id": f"PRRC_{cid}", "diff_hunk": "@@ -1,3 +1,4 @@",
            "path": str(spec.get("path", "src/widgets/parser.py")), "position": 4,
            "original_position": 4, "commit_id": head, "original_commit_id": head,
            "user": self.user(str(spec.get("user", "octocat"))),
            "body": str(spec.get("body", "")), "created_at": _iso(at), "updated_at": _iso(at),
            "html_url": f"{self.html_base}/{repo}/pull/{number}#discussion_r{cid}",
            "pull_request_url": _api(f"/repos/{repo}/pulls/{number}"),
            "author_association": str(spec.get("author_association", "OWNER")),
            "line": 4, "side": "RIGHT",
        }
        if spec.get("in_reply_to_id"):
            comment["in_reply_to_id"] = spec["in_reply_to_id"]
        return comment

    def _issue_comment(self, repo: str, number: int, body: str, login: str, at: datetime,
                       association: str, *, type: str | None = None) -> dict[str, Any]:
        cid = next(self._ids)
        return {
            # The id GraphQL gives the same comment (its mutations take it), as GitHub does.
            "id": cid, "node_id": comment_node_id(repo, cid),
            "url": _api(f"/repos/{repo}/issues/comments/{cid}"),
            "html_url": f"{self.html_base}/{repo}/pull/{number}#issuecomment-{cid}",
            "body": body, "user": self.user(login, type),
            "created_at": _iso(at), "updated_at": _iso(at),
            "issue_url": _api(f"/repos/{repo}/issues/{number}"),
            "author_association": association, "performed_via_github_app": None,
        }

    def _check_run(self, repo: str, head: str, name: str, conclusion: str | None, status: str,
                   started_at: datetime, summary: str) -> dict[str, Any]:
        cid = next(self._ids)
        done = status == "completed"
        return {
            "id": cid, "head_sha": head, "node_id": f"CR_{cid}", "external_id": "",
            "url": _api(f"/repos/{repo}/check-runs/{cid}"),
            "html_url": f"{self.html_base}/{repo}/actions/runs/{cid}/job/{cid}",
            "details_url": f"{self.html_base}/{repo}/actions/runs/{cid}/job/{cid}",
            "status": status, "conclusion": conclusion if done else None,
            "started_at": _iso(started_at),
            "completed_at": _iso(started_at + timedelta(minutes=3)) if done else None,
            "output": {"title": None if conclusion == "success" else f"{name} {conclusion}",
                       "summary": summary or None, "text": None, "annotations_count": 0,
                       "annotations_url": _api(f"/repos/{repo}/check-runs/{cid}/annotations")},
            "name": name, "check_suite": {"id": _num("suite", head) % 10**9},
            "app": {"id": 15368, "slug": "github-actions", "node_id": "MDM6QXBwMTUzNjg=",
                    "name": "GitHub Actions", "owner": self.user("github", "Organization")},
            "pull_requests": [],
        }

    def _workflow_run(self, repo: str, head: str, branch: str, conclusion: str | None,
                      name: str, event: str, attempt: int, created: datetime,
                      head_repo: str) -> dict[str, Any]:
        rid = next(self._ids)
        return {
            "id": rid, "name": name, "node_id": f"WFR_{rid}", "head_branch": branch,
            "head_sha": head, "path": ".github/workflows/ci.yml", "display_title": name,
            "run_number": rid % 1000, "event": event,
            "status": "completed" if conclusion else "in_progress", "conclusion": conclusion,
            "workflow_id": 161335, "check_suite_id": _num("suite", head) % 10**9,
            "url": _api(f"/repos/{repo}/actions/runs/{rid}"),
            "html_url": f"{self.html_base}/{repo}/actions/runs/{rid}",
            "pull_requests": [{"number": 0, "head": {"sha": head, "ref": branch}}],
            "created_at": _iso(created), "updated_at": _iso(created + timedelta(minutes=4)),
            "actor": self.user("copilot-swe-agent[bot]"), "run_attempt": attempt,
            "run_started_at": _iso(created + timedelta(seconds=5)),
            "triggering_actor": self.user("copilot-swe-agent[bot]"),
            "jobs_url": _api(f"/repos/{repo}/actions/runs/{rid}/jobs"),
            "logs_url": _api(f"/repos/{repo}/actions/runs/{rid}/logs"),
            "head_commit": {"id": head, "tree_id": _sha("tree", head)},
            "repository": {"full_name": repo}, "head_repository": {"full_name": head_repo},
        }

    def _content(self, repo: str, ref: str, path: str, text: str) -> dict[str, Any]:
        encoded = base64.b64encode(text.encode()).decode()
        wrapped = "\n".join(encoded[i:i + 60] for i in range(0, len(encoded), 60)) + "\n"
        sha = _sha("blob", repo, ref, path, text)
        return {
            "type": "file", "encoding": "base64", "size": len(text.encode()),
            "name": path.rsplit("/", 1)[-1], "path": path, "content": wrapped, "sha": sha,
            "url": _api(f"/repos/{repo}/contents/{path}?ref={ref}"),
            "git_url": _api(f"/repos/{repo}/git/blobs/{sha}"),
            "html_url": f"{self.html_base}/{repo}/blob/{ref}/{path}",
            "download_url": f"https://raw.githubusercontent.com/{repo}/{ref}/{path}",
        }
