"""GitHub's GraphQL objects over a ``Facts`` source, for ``tests/fakegraphql.py``: the
resolvers of the repository, pull request, issue, commit, check suite and comment objects
and their connections (paged by opaque cursors as GitHub pages them), the mutations of the
conversation comment, and the errors a source's refusals become. Imports nothing of the
tests package at run time: ``taskeval.corpus.replay`` loads it with ``fakegraphql.py`` from
the source tree."""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from graphql import GraphQLError, GraphQLResolveInfo

from .fakegraphql_ids import node_id, parse_node_id
from .fakegraphql_timeline import items as timeline_items

# ------------------------------------------------------------------------------ resolving


def _error(message: str, kind: str) -> GraphQLError:
    return GraphQLError(message, extensions={"type": kind})




def comment_node_id(repo: str, comment_id: int) -> str:
    """An ``IssueComment``'s node id (what ``updateIssueComment``/``deleteIssueComment`` take)."""
    return node_id("IssueComment", repo, comment_id)


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _uncursor(cursor: str) -> int:
    try:
        return int(base64.b64decode(cursor).decode().rsplit(":", 1)[1])
    except (ValueError, IndexError) as exc:
        raise _error(f"`{cursor}` does not appear to be a valid cursor.", "INVALID_CURSOR_ARGUMENTS") from exc


def connection(items: Callable[..., Sequence[Any]], total: int | None = None) -> Callable[..., Any]:
    """A connection resolver over ``items(**filters)``, paged as GitHub pages."""

    def resolve(info: GraphQLResolveInfo, first: int | None = None, after: str | None = None,
                last: int | None = None, before: str | None = None, **filters: Any) -> Any:
        name = info.field_name
        if first is None and last is None:
            raise _error(f"You must provide a `first` or `last` value to properly paginate the "
                         f"`{name}` connection.", "MISSING_PAGINATION_BOUNDARIES")
        for arg, value in (("first", first), ("last", last)):
            if value is not None and not 0 <= value <= 100:
                raise _error(f"Requesting {value} records on the `{name}` connection exceeds the "
                             f"`{arg}` limit of 100 records.", "EXCESSIVE_PAGINATION")
        everything = list(_asked(lambda: items(**filters)))
        start = _uncursor(after) + 1 if after else 0
        end = _uncursor(before) if before else len(everything)
        window = list(range(start, max(start, end)))
        if first is not None:
            window = window[:first]
        if last is not None:
            window = window[-last:] if last else []
        chosen = [everything[i] for i in window]
        return {
            "totalCount": len(everything) if total is None else total,
            "pageInfo": {
                "hasNextPage": bool(window) and window[-1] + 1 < end,
                "hasPreviousPage": bool(window) and window[0] > 0,
                "startCursor": _cursor(window[0]) if window else None,
                "endCursor": _cursor(window[-1]) if window else None,
            },
            "nodes": chosen,
            "edges": [{"cursor": _cursor(i), "node": n} for i, n in zip(window, chosen, strict=True)],
        }

    return resolve


# REST logins GraphQL spells differently: GitHub's Copilot coding agent is the Bot "Copilot" on
# REST's pull requests, comments and timelines (its user object links apps/copilot-swe-agent),
# and GraphQL names that Bot by its App, "copilot-swe-agent" (what `gh` shows as
# app/copilot-swe-agent); REST's reviews already name it "copilot-swe-agent[bot]".
GRAPHQL_LOGINS: Final = {"Copilot": "copilot-swe-agent"}


def actor(user: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A REST user as GraphQL's ``Actor``: a Bot's login without REST's ``[bot]`` suffix."""
    if not user:
        return None
    kind = {"Bot": "Bot", "Organization": "Organization", "Mannequin": "Mannequin"}.get(
        str(user.get("type")), "User")
    login = str(user["login"])
    if kind == "Bot":
        login = GRAPHQL_LOGINS.get(login, login.removesuffix("[bot]"))
    return {"__typename": kind, "login": login, "id": node_id(kind, login),
            "url": user.get("html_url"), "databaseId": user.get("id")}


_CHANGE: Final = {"added": "ADDED", "removed": "DELETED", "modified": "MODIFIED",
                  "renamed": "RENAMED", "copied": "COPIED", "changed": "CHANGED",
                  "unchanged": "CHANGED"}
_SIGNATURE: Final = {"malformed_signature": "MALFORMED_SIG",
                     "unknown_signature_type": "UNKNOWN_SIG_TYPE"}
_NOREPLY: Final = "users.noreply.github.com"


# ------------------------------------------------------------------------- the facts served


class Refused(Exception):
    """What a source will not give: answered ``FORBIDDEN`` with this message, as GitHub answers
    a permission the token lacks (and as the corpus replay answers what its data does not hold)."""


class Absent(Exception):
    """What a source does not have: answered ``NOT_FOUND`` with this message."""


class Facts(Protocol):
    """REST-shaped facts the resolver serves over GraphQL: each method returns what the REST
    endpoint of the same name answers (its JSON), ``None`` where REST answers 404, and raises
    ``Refused`` where REST answers 403 (or ``Absent`` for a 404 GitHub's GraphQL reports as
    ``NOT_FOUND``). ``tests.fakegithub`` and ``taskeval.corpus.replay`` implement it, so the two
    transports of each server read one set of facts."""

    def repository(self, full_name: str) -> tuple[str, Mapping[str, Any]] | None:
        """``GET /repos/{o}/{r}``: the stored name and the payload (matched case-insensitively)."""

    def pull(self, repo: str, number: int) -> Mapping[str, Any] | None:
        """``GET /repos/{o}/{r}/pulls/{n}``."""

    def commits(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        """``GET .../pulls/{n}/commits``, every page (GitHub lists at most 250)."""

    def reviews(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]: ...

    def review_comments(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]: ...

    def issue_comments(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]: ...

    def files(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]: ...

    def check_runs(self, repo: str, sha: str) -> Sequence[Mapping[str, Any]]:
        """``GET .../commits/{sha}/check-runs?filter=all``, every page."""

    def content(self, repo: str, ref: str | None, path: str) -> str | None:
        """The text of ``path`` at ``ref`` (None: the default branch); None where REST has none."""

    def commit(self, repo: str, sha: str) -> Mapping[str, Any] | None:
        """A commit of one of the repository's PRs, in the PR commit listing's shape."""

    def issue(self, repo: str, number: int) -> Mapping[str, Any] | None:
        """``GET /repos/{o}/{r}/issues/{n}``: an issue, or a PR's issue object (with
        ``pull_request``)."""

    def timeline(self, repo: str, number: int) -> Sequence[Mapping[str, Any]]:
        """``GET /repos/{o}/{r}/issues/{n}/timeline``, every page."""


class Resolver:
    """One request's view of a ``Facts`` source, shaped as GitHub's GraphQL objects."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    # ------------------------------------------------------------------------------- roots

    def root(self, rate: Mapping[str, Any]) -> dict[str, Any]:
        def rate_limit(info: GraphQLResolveInfo, dryRun: bool = False) -> Mapping[str, Any]:
            return rate

        return {"rateLimit": rate_limit, "repository": self.repository, "node": self.node,
                "addComment": self.add_comment, "updateIssueComment": self.update_issue_comment,
                "deleteIssueComment": self.delete_issue_comment}

    def repository(self, info: GraphQLResolveInfo, owner: str, name: str,
                   followRenames: bool = True) -> dict[str, Any]:
        full = f"{owner}/{name}"
        found = _asked(lambda: self.facts.repository(full))
        if found is None:
            raise _error(f"Could not resolve to a Repository with the name '{full}'.", "NOT_FOUND")
        return self._repo(*found)

    def node(self, info: GraphQLResolveInfo, id: str) -> dict[str, Any] | None:
        try:
            kind, repo_name, *rest = parse_node_id(id)
        except ValueError as exc:
            raise _error(f"Could not resolve to a node with the global id of '{id}'",
                         "NOT_FOUND") from exc
        found: Any = None
        if kind == "PullRequest":
            data = _asked(lambda: self.facts.pull(repo_name, int(rest[0])))
            found = self._pull(repo_name, data) if data is not None else None
        elif kind == "Issue":
            data = _asked(lambda: self.facts.issue(repo_name, int(rest[0])))
            found = self._issue(repo_name, data) if data is not None else None
        elif kind == "Commit":
            found = self._commit_by_sha(repo_name, rest[0])
        elif kind == "PullRequestReviewThread":
            found = next((t for t in self._threads(repo_name, int(rest[0])) if t["id"] == id), None)
        elif kind == "CheckSuite":
            found = next((s for s in self._suites(repo_name, rest[0]) if s["id"] == id), None)
        if found is None:
            raise _error(f"Could not resolve to a node with the global id of '{id}'", "NOT_FOUND")
        return dict(found)

    # ------------------------------------------------------------------------------ objects

    def _repo(self, name: str, data: Mapping[str, Any]) -> dict[str, Any]:
        facts = self.facts

        def pull_request(info: GraphQLResolveInfo, number: int) -> dict[str, Any]:
            pull = _asked(lambda: facts.pull(name, number))
            if pull is None:
                raise _error(f"Could not resolve to a PullRequest with the number of {number}.",
                             "NOT_FOUND")
            return self._pull(name, pull)

        def git_object(info: GraphQLResolveInfo, expression: str | None = None,
                       oid: str | None = None) -> dict[str, Any] | None:
            if oid is not None:
                return self._commit_by_sha(name, oid)
            ref, _, path = (expression or "").partition(":")
            text = _asked(lambda: facts.content(name, None if ref in ("", "HEAD") else ref, path))
            if text is None:
                return None
            return {"__typename": "Blob", "id": node_id("Blob", name, ref, path), "text": text,
                    "isBinary": False, "isTruncated": False, "byteSize": len(text.encode())}

        def issue_or_pull_request(info: GraphQLResolveInfo, number: int) -> dict[str, Any]:
            found = _asked(lambda: facts.issue(name, number))
            if found is None:
                raise _error(f"Could not resolve to an issue or pull request with the number of "
                             f"{number}.", "NOT_FOUND")
            if found.get("pull_request"):
                pull = _asked(lambda: facts.pull(name, number))
                if pull is not None:
                    return self._pull(name, pull)
            return self._issue(name, found)

        def issue(info: GraphQLResolveInfo, number: int) -> dict[str, Any]:
            found = _asked(lambda: facts.issue(name, number))
            if found is None or found.get("pull_request"):
                raise _error(f"Could not resolve to an Issue with the number of {number}.",
                             "NOT_FOUND")
            return self._issue(name, found)

        default = data.get("default_branch")
        return {
            "__typename": "Repository", "id": node_id("Repository", name),
            "databaseId": data.get("id"), "nameWithOwner": data["full_name"],
            "url": data["html_url"],
            "defaultBranchRef": {"name": default, "prefix": "refs/heads/"} if default else None,
            "pullRequest": pull_request, "object": git_object,
            "issueOrPullRequest": issue_or_pull_request, "issue": issue,
        }

    @staticmethod
    def _issue(name: str, data: Mapping[str, Any]) -> dict[str, Any]:
        """An ``Issue`` from its REST object: what the collector reads of one (its labels)."""
        number = data["number"]
        return {
            "__typename": "Issue", "id": node_id("Issue", name, number),
            "databaseId": data.get("id"), "number": number, "title": data.get("title") or "",
            "body": data.get("body") or "", "state": str(data.get("state") or "open").upper(),
            "url": data.get("html_url"), "createdAt": data.get("created_at"),
            "author": actor(data.get("user")),
            "labels": connection(lambda **_: [{"name": lb["name"]}
                                              for lb in data.get("labels") or []]),
        }

    def _pull(self, name: str, data: Mapping[str, Any]) -> dict[str, Any]:
        facts = self.facts
        number = data["number"]
        merged = bool(data.get("merged"))
        head_repo = data["head"].get("repo")
        return {
            "__typename": "PullRequest", "id": node_id("PullRequest", name, number),
            "fullDatabaseId": str(data["id"]), "databaseId": data["id"], "number": number,
            "title": data["title"], "body": data.get("body") or "",
            "state": "MERGED" if merged else str(data["state"]).upper(),
            "isDraft": bool(data.get("draft")), "merged": merged, "author": actor(data.get("user")),
            "authorAssociation": data.get("author_association") or "NONE",
            "createdAt": data["created_at"],
            "updatedAt": data.get("updated_at"), "closedAt": data.get("closed_at"),
            "mergedAt": data.get("merged_at"), "mergedBy": actor(data.get("merged_by")),
            "mergeCommit": ({"oid": data["merge_commit_sha"]}
                            if merged and data.get("merge_commit_sha") else None),
            "potentialMergeCommit": ({"oid": data["merge_commit_sha"]}
                                     if not merged and data["state"] == "open"
                                     and data.get("merge_commit_sha") else None),
            "headRefOid": data["head"]["sha"], "headRefName": data["head"]["ref"],
            "headRepository": {"nameWithOwner": head_repo["full_name"]} if head_repo else None,
            "baseRefName": data["base"]["ref"], "additions": data.get("additions") or 0,
            "deletions": data.get("deletions") or 0,
            "changedFiles": data.get("changed_files") or 0,
            "url": data["html_url"],
            "labels": connection(lambda **_: [{"name": lb["name"]}
                                              for lb in data.get("labels") or []]),
            # A UserConnection: a Bot assignee (an assigned coding agent) is not in it.
            "assignees": connection(lambda **_: [actor(u) for u in data.get("assignees") or []
                                                 if u.get("type") == "User"]),
            "reviewRequests": connection(lambda **_: [
                {"requestedReviewer": actor(u)} for u in data.get("requested_reviewers") or []]),
            "commits": connection(
                lambda **_: [{"commit": self._commit(name, c)} for c in facts.commits(name, number)],
                total=data.get("commits")),
            "reviews": connection(lambda **_: [self._review(r) for r in facts.reviews(name, number)]),
            "reviewThreads": connection(lambda **_: self._threads(name, number)),
            "comments": connection(lambda **_: [
                self._issue_comment(name, c) for c in facts.issue_comments(name, number)]),
            "files": connection(lambda **_: [self._file(f) for f in facts.files(name, number)]),
            "timelineItems": lambda info, **args: connection(
                lambda itemTypes=None, **_: timeline_items(
                    info.schema, facts.timeline(name, number), name, number, actor, itemTypes))(
                info, **args),
        }

    def _commit_by_sha(self, name: str, sha: str) -> dict[str, Any] | None:
        found = _asked(lambda: self.facts.commit(name, sha))
        return self._commit(name, found) if found is not None else None

    def _commit(self, name: str, c: Mapping[str, Any]) -> dict[str, Any]:
        git = c.get("commit") or {}
        verification = git.get("verification") or {}
        reason = str(verification.get("reason") or "unsigned")
        signature = None if reason == "unsigned" else {
            "__typename": "GpgSignature", "state": _SIGNATURE.get(reason, reason.upper()),
            "isValid": bool(verification.get("verified"))}
        sha = c["sha"]
        return {
            "__typename": "Commit", "id": node_id("Commit", name, sha), "oid": sha,
            "message": git.get("message") or "", "url": c["html_url"],
            "author": self._git_actor(git.get("author"), c.get("author")),
            "committer": self._git_actor(git.get("committer"), c.get("committer")),
            "signature": signature,
            "parents": connection(lambda **_: [{"oid": p["sha"]} for p in c.get("parents") or []]),
            "checkSuites": connection(lambda **_: self._suites(name, sha)),
        }

    @staticmethod
    def _git_actor(person: Mapping[str, Any] | None,
                   account: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A commit's ``GitActor``. Its ``user`` is a ``User`` only (never a Bot). A commit that
        names an account but no git identity (the corpus keeps logins only) gets the account's
        no-reply address, which is how GitHub links a commit to an account."""
        if person is None and not account:
            return None
        person = person or {}
        email = person.get("email")
        if email is None and account and account.get("login"):
            login = str(account["login"])
            ident = account.get("id") or int(hashlib.sha1(login.encode()).hexdigest()[:7], 16)
            email = f"{ident}+{login}@{_NOREPLY}"
        linked = account if account and account.get("type") == "User" else None
        return {"name": person.get("name"), "email": email,
                "date": person.get("date"), "user": {"login": linked["login"]} if linked else None}

    def _suites(self, name: str, sha: str) -> list[dict[str, Any]]:
        runs = _asked(lambda: self.facts.check_runs(name, sha))
        suites: dict[int, list[Mapping[str, Any]]] = {}
        for run in runs:
            suites.setdefault(int((run.get("check_suite") or {}).get("id") or 0), []).append(run)
        out = []
        for suite_id, members in suites.items():
            out.append({
                "__typename": "CheckSuite", "id": node_id("CheckSuite", name, sha, suite_id),
                "databaseId": suite_id, "commit": {"oid": sha},
                "app": {"slug": (members[0].get("app") or {}).get("slug")},
                "checkRuns": connection(functools.partial(self._check_runs, members)),
            })
        return out

    @staticmethod
    def _check_runs(members: list[Mapping[str, Any]], filterBy: Mapping[str, Any] | None = None,
                    **_: Any) -> list[dict[str, Any]]:
        chosen = members
        if (filterBy or {}).get("checkType", "LATEST") == "LATEST":
            latest: dict[str, Mapping[str, Any]] = {}
            for run in members:
                if run["name"] not in latest or run["id"] > latest[run["name"]]["id"]:
                    latest[run["name"]] = run
            chosen = [r for r in members if latest[r["name"]] is r]
        out = []
        for run in chosen:
            output = run.get("output") or {}
            out.append({
                "databaseId": run["id"], "name": run["name"], "status": str(run["status"]).upper(),
                "conclusion": str(run["conclusion"]).upper() if run.get("conclusion") else None,
                "startedAt": run.get("started_at"), "completedAt": run.get("completed_at"),
                "title": output.get("title"), "summary": output.get("summary"),
                "text": output.get("text"), "url": run.get("html_url"),
            })
        return out

    @staticmethod
    def _review(r: Mapping[str, Any]) -> dict[str, Any]:
        return {"id": r.get("node_id") or node_id("PullRequestReview", r["id"]),
                "fullDatabaseId": str(r["id"]), "author": actor(r.get("user")), "state": r["state"],
                "body": r.get("body") or "", "submittedAt": r.get("submitted_at"),
                "commit": {"oid": r["commit_id"]} if r.get("commit_id") else None,
                "authorAssociation": r.get("author_association") or "NONE", "url": r.get("html_url")}

    def _threads(self, name: str, number: int) -> list[dict[str, Any]]:
        threads: dict[int, list[Mapping[str, Any]]] = {}
        for c in self.facts.review_comments(name, number):
            threads.setdefault(int(c.get("in_reply_to_id") or c["id"]), []).append(c)
        return [{
            "__typename": "PullRequestReviewThread",
            "id": node_id("PullRequestReviewThread", name, number, root),
            "comments": connection(functools.partial(lambda cs, **_: [self._review_comment(c) for c in cs],
                                                     comments)),
        } for root, comments in threads.items()]

    @staticmethod
    def _review_comment(c: Mapping[str, Any]) -> dict[str, Any]:
        return {"fullDatabaseId": str(c["id"]), "author": actor(c.get("user")),
                "body": c.get("body") or "", "path": c.get("path"), "createdAt": c.get("created_at"),
                "replyTo": ({"fullDatabaseId": str(c["in_reply_to_id"])}
                            if c.get("in_reply_to_id") else None), "url": c.get("html_url")}

    def _issue_comment(self, name: str, c: Mapping[str, Any]) -> dict[str, Any]:
        """An ``IssueComment``: its ``url`` is REST's ``html_url``; ``viewerDidAuthor`` compares
        the REST author with the caller's account (false where the source has no caller)."""
        viewer = getattr(self.facts, "viewer_login", lambda: None)()
        author = str((c.get("user") or {}).get("login") or "")
        return {"__typename": "IssueComment", "id": comment_node_id(name, c["id"]),
                "fullDatabaseId": str(c["id"]), "databaseId": c["id"],
                "author": actor(c.get("user")),
                "body": c.get("body") or "", "createdAt": c.get("created_at"),
                "authorAssociation": c.get("author_association") or "NONE", "url": c.get("html_url"),
                "viewerDidAuthor": bool(viewer) and author.lower() == str(viewer).lower()}

    # ---------------------------------------------------------------------------- mutations

    def _writer(self) -> Any:
        writer = getattr(self.facts, "write_comment", None)
        if writer is None:
            raise _error("Resource not accessible by integration", "FORBIDDEN")
        return writer

    def _comment_target(self, id: str, kind: str) -> tuple[str, int]:
        try:
            found, repo_name, *rest = parse_node_id(id)
            if found != kind:
                raise ValueError(found)
            return str(repo_name), int(rest[0])
        except (ValueError, IndexError, TypeError) as exc:
            raise _error(f"Could not resolve to a node with the global id of '{id}'",
                         "NOT_FOUND") from exc

    def add_comment(self, info: GraphQLResolveInfo, input: Mapping[str, Any]) -> dict[str, Any]:
        """``addComment`` on a pull request: its payload's ``subject`` is read after the write."""
        repo_name, number = self._comment_target(str(input["subjectId"]), "PullRequest")
        made = _asked(lambda: self._writer()("create", repo_name, number, str(input["body"])))
        if made is None:
            raise _error(f"Could not resolve to a node with the global id of "
                         f"'{input['subjectId']}'", "NOT_FOUND")
        node = self._issue_comment(repo_name, made)
        data = _asked(lambda: self.facts.pull(repo_name, number))
        return {"clientMutationId": input.get("clientMutationId"),
                "commentEdge": {"cursor": _cursor(0), "node": node},
                "subject": self._pull(repo_name, data) if data is not None else None}

    def update_issue_comment(self, info: GraphQLResolveInfo,
                             input: Mapping[str, Any]) -> dict[str, Any]:
        repo_name, cid = self._comment_target(str(input["id"]), "IssueComment")
        made = _asked(lambda: self._writer()("update", repo_name, cid, str(input["body"])))
        if made is None:
            raise _error(f"Could not resolve to a node with the global id of '{input['id']}'",
                         "NOT_FOUND")
        return {"clientMutationId": input.get("clientMutationId"),
                "issueComment": self._issue_comment(repo_name, made)}

    def delete_issue_comment(self, info: GraphQLResolveInfo,
                             input: Mapping[str, Any]) -> dict[str, Any]:
        repo_name, cid = self._comment_target(str(input["id"]), "IssueComment")
        if _asked(lambda: self._writer()("delete", repo_name, cid, "")) is None:
            raise _error(f"Could not resolve to a node with the global id of '{input['id']}'",
                         "NOT_FOUND")
        return {"clientMutationId": input.get("clientMutationId")}

    @staticmethod
    def _file(f: Mapping[str, Any]) -> dict[str, Any]:
        return {"path": f["filename"], "additions": f.get("additions") or 0,
                "deletions": f.get("deletions") or 0,
                "changeType": _CHANGE.get(str(f.get("status")), "MODIFIED")}


def _asked(read: Callable[[], Any]) -> Any:
    """A source's answer; its refusals as GitHub's field errors."""
    try:
        return read()
    except Refused as exc:
        raise _error(str(exc), "FORBIDDEN") from exc
    except Absent as exc:
        raise _error(str(exc), "NOT_FOUND") from exc
