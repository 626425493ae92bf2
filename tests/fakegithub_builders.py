"""The fake GitHub's builders (``tests/fakegithub.py``): what a test adds before it runs (tokens,
apps, repositories, pull requests with everything around them, issues, comments, checks, runs,
timeline events) and the conversation-comment writes both APIs make.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from taskeval.evidence.vocabulary import issues_to_read
from tests.fakegithub_parts import (
    ACTIONS_PERMISSIONS,
    BASE_TIME,
    CI,
    FakeApp,
    FakePR,
    Identity,
    Permissions,
    _api,
    _iso,
    _num,
    _Pull,
    _Repo,
    _sha,
)


class Builders:
    """Mixed into ``FakeGitHub``: its state (``repos``, ``tokens``, ``apps``) as tests set it up
    and as comment writes change it."""

    # ----------------------------------------------------------------------------- identities

    def add_token(
        self,
        token: str,
        login: str,
        *,
        integration: bool = False,
        permissions: Permissions | None = None,
        type: str | None = None,
    ) -> Identity:
        """Accept ``token`` as ``login``. Integration tokens cannot read ``/user`` and are
        checked against ``permissions`` (``ACTIONS_PERMISSIONS`` when not given)."""
        identity = Identity(
            login=login,
            type=type or ("Bot" if login.endswith("[bot]") else "User"),
            integration=integration,
            permissions=(dict(permissions) if permissions is not None
                         else dict(ACTIONS_PERMISSIONS) if integration else None),
        )
        self.tokens[token] = identity
        return identity

    def add_app(
        self,
        app_id: int,
        public_key: str,
        *,
        slug: str = "taskeval",
        installations: Mapping[int, Sequence[str]] | None = None,
        permissions: Permissions | None = None,
    ) -> FakeApp:
        """A GitHub App whose RS256 JWTs (signed by the matching private key) are accepted."""
        app = FakeApp(app_id, slug, public_key,
                      {k: list(v) for k, v in (installations or {}).items()},
                      dict(permissions or ACTIONS_PERMISSIONS))
        self.apps[app_id] = app
        return app

    # ----------------------------------------------------------- repositories and pull requests

    def add_repo(
        self,
        full_name: str = "octo-org/widgets",
        *,
        private: bool = False,
        default_branch: str = "main",
        config_text: str | None = None,
    ) -> dict[str, Any]:
        """A repository (returned as its REST payload); re-adding returns the existing one."""
        with self._lock:
            if full_name in self.repos:
                return self.repos[full_name].data
            owner, name = full_name.split("/")
            rid = _num("repo", full_name) % 900_000_000 + 1
            data = {
                "id": rid, "node_id": f"R_{rid}", "name": name, "full_name": full_name,
                "private": private, "owner": self.user(owner, "Organization"),
                "html_url": f"{self.html_base}/{full_name}", "description": "Widgets, parsed.",
                "fork": False, "url": _api(f"/repos/{full_name}"),
                "pulls_url": _api(f"/repos/{full_name}/pulls{{/number}}"),
                "created_at": "2023-01-10T08:00:00Z", "updated_at": _iso(BASE_TIME),
                "pushed_at": _iso(BASE_TIME), "default_branch": default_branch,
                "visibility": "private" if private else "public", "archived": False,
                "language": "Python", "stargazers_count": 42, "forks_count": 3,
                "open_issues_count": 7,
            }
            repo = _Repo(data)
            repo.permissions["octocat"] = ("admin", "admin")
            self.repos[full_name] = repo
            if config_text is not None:
                repo.contents[(default_branch, ".github/taskeval.yml")] = config_text
            return data

    def set_config(self, repo: str, text: str, *, ref: str | None = None,
                   path: str = ".github/taskeval.yml") -> None:
        with self._lock:
            state = self.repos[repo]
            state.contents[(ref or state.data["default_branch"], path)] = text

    def set_permission(self, repo: str, login: str, permission: str,
                       role_name: str | None = None) -> None:
        with self._lock:
            self.repos[repo].permissions[login] = (permission, role_name or permission)

    def add_pr(
        self,
        repo: str = "octo-org/widgets",
        number: int = 482,
        *,
        commits: int = 3,
        title: str = "Handle empty input in parse_widget",
        body: str | None = None,
        author: str = "copilot-swe-agent[bot]",
        merged: bool = True,
        draft: bool = False,
        state: str | None = None,
        ci: CI = "green",
        rerun: bool = False,
        reviews: Sequence[Mapping[str, Any]] | None = None,
        review_comments: Sequence[Mapping[str, Any]] | None = None,
        issue_comments: Sequence[Mapping[str, Any]] | None = None,
        files: Sequence[Mapping[str, Any]] | None = None,
        fork: str | None = None,
        head_ref: str | None = None,
        labels: Sequence[str] = ("bug",),
        verified: bool = True,
        config_text: str | None = None,
        created_at: datetime = BASE_TIME,
        via_app: str | None = None,
        linked_issues: bool = True,
    ) -> FakePR:
        """A pull request with everything around it; defaults give a merged agent PR with green
        CI, one approving review, one review comment and a short conversation.

        ``commits`` above 250 exercises GitHub's cap on listed PR commits (``commits`` in the PR
        payload keeps the true number). ``ci``: ``green``, ``red`` (head fails), ``none`` (no
        checks or runs), ``fail-then-fix`` (every commit's run fails but the head's). ``rerun``
        gives the head's run a second attempt and an earlier failed attempt of its ``test`` check
        run. ``fork="someone"`` opens the PR from ``someone/<name>`` (branch ``patch-1``).
        ``via_app="chatgpt-codex-connector"`` says the PR was opened through that GitHub App: as on
        GitHub, only its issue object (``/issues/{n}``) carries ``performed_via_github_app``.
        The same-repository issues the body links (the default body fixes #12) are created as
        plain issues labelled ``bug`` unless they exist already (``add_issue`` first to label
        them otherwise) or ``linked_issues=False`` (then reading them answers 404).
        """
        self.add_repo(repo)
        if config_text is not None:
            self.set_config(repo, config_text)
        owner, name = repo.split("/")
        head_owner = fork or owner
        head_full = f"{head_owner}/{name}"
        ref = head_ref or ("patch-1" if fork else "copilot/fix-empty-input")
        closed = merged or state == "closed"
        start = created_at - timedelta(minutes=5)
        shas = [_sha(repo, number, "commit", i) for i in range(commits)]
        last_commit_at = start + timedelta(minutes=7 * max(commits - 1, 0))
        merged_at = last_commit_at + timedelta(hours=1) if merged else None
        closed_at = merged_at or (last_commit_at + timedelta(hours=2) if closed else None)
        pid = _num("pull", repo, number) % 2_000_000_000 + 1
        file_specs = list(files) if files is not None else [
            {"filename": "src/widgets/parser.py", "additions": 12, "deletions": 3},
            {"filename": "tests/test_parser.py", "additions": 24, "deletions": 0},
            {"filename": "CHANGELOG.md", "additions": 1, "deletions": 0},
        ]
        base_sha = _sha(repo, "base", number)
        head_repo = self.add_repo(head_full) if fork else self.repos[repo].data
        if fork:
            head_repo["fork"] = True
        data: dict[str, Any] = {
            "url": _api(f"/repos/{repo}/pulls/{number}"), "id": pid, "node_id": f"PR_{pid}",
            "html_url": f"{self.html_base}/{repo}/pull/{number}",
            "diff_url": f"{self.html_base}/{repo}/pull/{number}.diff",
            "patch_url": f"{self.html_base}/{repo}/pull/{number}.patch",
            "issue_url": _api(f"/repos/{repo}/issues/{number}"),
            "commits_url": _api(f"/repos/{repo}/pulls/{number}/commits"),
            "review_comments_url": _api(f"/repos/{repo}/pulls/{number}/comments"),
            "comments_url": _api(f"/repos/{repo}/issues/{number}/comments"),
            "statuses_url": _api(f"/repos/{repo}/statuses/{shas[-1] if shas else base_sha}"),
            "number": number, "state": "closed" if closed else (state or "open"),
            "locked": False, "title": title,
            "user": self.user(author),
            "body": body if body is not None else _DEFAULT_BODY,
            "labels": [{"id": _num("label", lb), "name": lb, "color": "d73a4a", "default": True}
                       for lb in labels],
            "milestone": None, "active_lock_reason": None,
            "created_at": _iso(created_at),
            "updated_at": _iso(closed_at or last_commit_at),
            "closed_at": _iso(closed_at) if closed_at else None,
            "merged_at": _iso(merged_at) if merged_at else None,
            "merge_commit_sha": _sha(repo, number, "merge") if merged else None,
            "assignee": None, "assignees": [], "requested_reviewers": [], "requested_teams": [],
            "head": {
                "label": f"{head_owner}:{ref}", "ref": ref,
                "sha": shas[-1] if shas else base_sha,
                "user": self.user(head_owner), "repo": head_repo,
            },
            "base": {
                "label": f"{owner}:main", "ref": "main", "sha": base_sha,
                "user": self.user(owner, "Organization"), "repo": self.repos[repo].data,
            },
            "author_association": "CONTRIBUTOR" if fork else "NONE",
            "auto_merge": None, "draft": draft, "merged": merged,
            "mergeable": None if merged else True, "rebaseable": None,
            "mergeable_state": "unknown" if merged else "clean",
            "merged_by": self.user("octocat") if merged else None,
            "comments": 0, "review_comments": 0, "maintainer_can_modify": False,
            "commits": commits,
            "additions": sum(int(f.get("additions", 0)) for f in file_specs),
            "deletions": sum(int(f.get("deletions", 0)) for f in file_specs),
            "changed_files": len(file_specs),
        }
        pull = _Pull(data, via_app=self.app_payload(via_app) if via_app else None)
        pull.commits = [
            self._commit(repo, sha, i, start + timedelta(minutes=7 * i), author,
                         shas[i - 1] if i else base_sha, verified, commits)
            for i, sha in enumerate(shas)
        ]
        pull.files = [self._file(repo, data["head"]["sha"], spec) for spec in file_specs]
        review_specs = list(reviews) if reviews is not None else [
            {"user": "octocat", "state": "APPROVED", "body": "Looks good, thanks!"}
        ]
        review_at = last_commit_at + timedelta(minutes=20)
        pull.reviews = [
            self._review(repo, number, spec, review_at + timedelta(minutes=i),
                         data["head"]["sha"])
            for i, spec in enumerate(review_specs)
        ]
        rc_specs = list(review_comments) if review_comments is not None else [
            {"user": "octocat", "body": "Could this also cover whitespace-only input?",
             "path": "src/widgets/parser.py"}
        ]
        pull.review_comments = [
            self._review_comment(repo, number, spec, review_at - timedelta(minutes=10 - i),
                                 data["head"]["sha"], pull.reviews)
            for i, spec in enumerate(rc_specs)
        ]
        ic_specs = list(issue_comments) if issue_comments is not None else [
            {"user": "octocat", "body": "@copilot please also add a test for `None`.",
             "author_association": "OWNER"},
            {"user": author, "body": "Added `test_parse_none` and handled `None` input."},
        ]
        if linked_issues:  # the issues the body links exist, as they do on GitHub
            for linked in issues_to_read(title, data["body"], number, repo):
                if linked not in self.repos[repo].issues and linked not in self.repos[repo].pulls:
                    self.add_issue(repo, linked)
        with self._lock:
            state_repo = self.repos[repo]
            state_repo.pulls[number] = pull
            comments = state_repo.issue_comments.setdefault(number, [])
            for i, spec in enumerate(ic_specs):
                comments.append(self._issue_comment(
                    repo, number, str(spec["body"]), str(spec.get("user", "octocat")),
                    created_at + timedelta(minutes=30 + i),
                    str(spec.get("author_association") or self._association(repo, spec))))
            self._sync_counts(repo, number)
            self._add_ci(repo, pull, ci, rerun, ref, head_full)
        return FakePR(repo, number, data["head"]["sha"], ref, shas, data)

    def add_issue(self, repo: str = "octo-org/widgets", number: int = 12, *,
                  title: str = "parse_widget raises IndexError on empty input",
                  labels: Sequence[str] = ("bug",), state: str = "open", user: str = "octocat",
                  created_at: datetime = BASE_TIME - timedelta(days=2)) -> dict[str, Any]:
        """A plain issue (not a PR), in GitHub's issue shape (``GET /repos/{o}/{r}/issues/{n}``
        and the repository's issue listing); re-adding replaces it."""
        self.add_repo(repo)
        iid = _num("issue", repo, number) % 2_000_000_000 + 1
        issue_url = f"/repos/{repo}/issues/{number}"
        data = {
            "id": iid, "node_id": f"I_{iid}", "url": _api(issue_url),
            "repository_url": _api(f"/repos/{repo}"),
            "labels_url": _api(f"{issue_url}/labels{{/name}}"),
            "comments_url": _api(f"{issue_url}/comments"),
            "events_url": _api(f"{issue_url}/events"),
            "html_url": f"{self.html_base}/{repo}/issues/{number}",
            "number": number, "title": title, "user": self.user(user),
            "labels": [{"id": _num("label", lb), "node_id": f"LA_{_num('label', lb)}",
                        "name": lb, "color": "d73a4a", "default": False} for lb in labels],
            "state": state, "locked": False, "assignee": None, "assignees": [],
            "milestone": None, "comments": 0, "created_at": _iso(created_at),
            "updated_at": _iso(created_at), "closed_at": None, "author_association": "OWNER",
            "active_lock_reason": None, "body": "", "performed_via_github_app": None,
            "state_reason": None, "timeline_url": _api(f"{issue_url}/timeline"),
        }
        with self._lock:
            self.repos[repo].issues[number] = data
        return data

    def issue_object(self, repo: str, number: int) -> dict[str, Any] | None:
        """What ``GET /repos/{o}/{r}/issues/{n}`` answers: a PR's issue object, a plain
        issue, or None (404)."""
        state = self.repos[repo]
        if number in state.pulls:
            return self._pr_issue(repo, state.pulls[number])
        return state.issues.get(number)

    def add_issue_comment(self, repo: str, number: int, body: str, *, user: str = "octocat",
                          author_association: str = "OWNER") -> dict[str, Any]:
        with self._lock:
            comment = self._issue_comment(repo, number, body, user, BASE_TIME + timedelta(
                hours=6, minutes=len(self.repos[repo].issue_comments.get(number, []))),
                author_association)
            self.repos[repo].issue_comments.setdefault(number, []).append(comment)
            self._sync_counts(repo, number)
            return comment

    def add_check_run(self, repo: str, head_sha: str, name: str, conclusion: str | None,
                      *, status: str = "completed", started_at: datetime = BASE_TIME,
                      summary: str = "") -> dict[str, Any]:
        with self._lock:
            run = self._check_run(repo, head_sha, name, conclusion, status, started_at, summary)
            self.repos[repo].check_runs.setdefault(head_sha, []).append(run)
            return run

    def add_workflow_run(self, repo: str, head_sha: str, head_branch: str,
                         conclusion: str | None, *, name: str = "CI",
                         event: str = "pull_request", run_attempt: int = 1,
                         created_at: datetime = BASE_TIME,
                         head_repo: str | None = None) -> dict[str, Any]:
        with self._lock:
            run = self._workflow_run(repo, head_sha, head_branch, conclusion, name, event,
                                     run_attempt, created_at, head_repo or repo)
            self.repos[repo].workflow_runs.append(run)
            return run

    def add_timeline_event(self, repo: str, number: int, event: str, *, actor: str = "octocat",
                           at: datetime | None = None, **extra: Any) -> dict[str, Any]:
        """An extra ``/issues/{n}/timeline`` event in GitHub's generic shape (``id``, ``actor``,
        ``event``, ``created_at``, ``commit_id``...), e.g. ``head_ref_force_pushed`` or
        ``copilot_work_finished_failure``; ``extra`` adds or overrides fields (``source`` ...)."""
        with self._lock:
            pull = self._pull(self.repos[repo], str(number))
            eid = next(self._ids)
            when = at or datetime.fromisoformat(pull.data["created_at"].replace("Z", "+00:00"))
            data: dict[str, Any] = {
                "id": eid, "node_id": f"E_{eid}", "url": _api(f"/repos/{repo}/issues/events/{eid}"),
                "actor": self.user(actor), "event": event, "commit_id": None, "commit_url": None,
                "created_at": _iso(when), "performed_via_github_app": None,
            }
            data.update(extra)
            pull.events.append(data)
            return data

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """The PR's conversation comments as stored now (after any writes)."""
        with self._lock:
            return list(self.repos[repo].issue_comments.get(number, []))

    def write_comment(self, action: str, repo: str, target: int, body: str,
                      identity: Identity) -> dict[str, Any] | None:
        """One conversation-comment write, as REST (``POST``/``PATCH``/``DELETE``) and GraphQL
        (``addComment``/``updateIssueComment``/``deleteIssueComment``) both make it:
        ``create`` on PR ``target``, ``update``/``delete`` of comment ``target``. The comment
        written (the deleted one for ``delete``), None when the PR or comment does not exist.
        The caller has checked the permission."""
        with self._lock:
            state = self.repos[repo]
            if action == "create":
                if target not in state.pulls:
                    return None
                comment = self._issue_comment(repo, target, body, identity.login,
                                              BASE_TIME + timedelta(days=1),
                                              "NONE" if identity.integration else "MEMBER",
                                              type=identity.type)
                state.issue_comments.setdefault(target, []).append(comment)
                self._sync_counts(repo, target)
                self.comment_writes[action] += 1
                return comment
            for number, thread in state.issue_comments.items():
                for comment in thread:
                    if comment["id"] != target:
                        continue
                    if action == "delete":
                        thread.remove(comment)
                        self._sync_counts(repo, number)
                    else:
                        comment["body"] = body
                        comment["updated_at"] = _iso(BASE_TIME + timedelta(days=1, minutes=1))
                    self.comment_writes[action] += 1
                    return comment
            return None

    def _association(self, repo: str, spec: Mapping[str, Any]) -> str:
        login = str(spec.get("user", "octocat"))
        perm = self.repos[repo].permissions.get(login)
        return "OWNER" if perm and perm[0] == "admin" else "NONE"

    def _sync_counts(self, repo: str, number: int) -> None:
        state = self.repos[repo]
        if number in state.pulls:
            pull = state.pulls[number]
            pull.data["comments"] = len(state.issue_comments.get(number, []))
            pull.data["review_comments"] = len(pull.review_comments)

    def _add_ci(self, repo: str, pull: _Pull, ci: CI, rerun: bool, ref: str,
                head_repo: str) -> None:
        if ci == "none" or not pull.commits:
            return
        state = self.repos[repo]
        head = pull.data["head"]["sha"]
        head_at = BASE_TIME
        for commit in pull.commits:
            is_head = commit["sha"] == head
            if ci == "green":
                conclusion = "success"
            elif ci == "red":
                conclusion = "failure" if is_head else "success"
            else:
                conclusion = "success" if is_head else "failure"
            at = datetime.fromisoformat(commit["commit"]["committer"]["date"].replace(
                "Z", "+00:00")) + timedelta(minutes=1)
            state.workflow_runs.append(self._workflow_run(
                repo, commit["sha"], ref, conclusion, "CI", "pull_request",
                2 if (rerun and is_head) else 1, at, head_repo))
            if is_head:
                head_at = at
        test_conclusion = "failure" if ci == "red" else "success"
        runs = state.check_runs.setdefault(head, [])
        if rerun:
            runs.append(self._check_run(repo, head, "test", "failure", "completed", head_at,
                                        "1 failed, 47 passed (flaky network test)"))
        runs.append(self._check_run(repo, head, "lint", "success", "completed", head_at, ""))
        runs.append(self._check_run(
            repo, head, "test", test_conclusion, "completed",
            head_at + timedelta(minutes=10 if rerun else 0),
            "48 passed" if test_conclusion == "success" else "2 failed, 46 passed"))


_DEFAULT_BODY: Final = """\
## Summary
Fixes #12. `parse_widget("")` raised `IndexError`; empty and whitespace-only input now return an
empty `Widget`.

## Changes
- Handle empty, whitespace-only and `None` input in `src/widgets/parser.py`
- Add tests for the three cases in `tests/test_parser.py`
- Note the fix in `CHANGELOG.md`

## Testing
- `pytest` passes locally (48 passed)
"""
