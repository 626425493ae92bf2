"""GraphQL answers into the same ``Raw*`` models as REST; IDs are GitHub's REST ids
(``fullDatabaseId`` where the schema has it, ``databaseId`` elsewhere)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from taskeval.config import CONFIG_PATH
from taskeval.raw import (
    CollectionIssue,
    RawCheckRun,
    RawCommit,
    RawFile,
    RawIssueComment,
    RawPullRequest,
    RawReview,
    RawReviewComment,
    RawUser,
)


def user(actor: Mapping[str, Any] | None) -> RawUser | None:
    """An ``Actor`` as REST names it: a Bot's GraphQL login lacks REST's ``[bot]`` suffix."""
    if not isinstance(actor, Mapping) or not actor.get("login"):
        return None
    kind = str(actor.get("__typename") or "User")
    login = str(actor["login"])
    if kind == "Bot" and not login.endswith("[bot]"):
        login += "[bot]"
    return RawUser(login=login, type=kind)


_NOREPLY: Final = "@users.noreply.github.com"


def _git_account(actor: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """The account REST links a git author to. GraphQL's ``GitActor.user`` is a ``User`` only,
    so a bot's commit has none; REST links by e-mail, and GitHub's no-reply address
    ``<id>+<login>@users.noreply.github.com`` names the account, which (not being a User) is a
    Bot."""
    if not isinstance(actor, Mapping):
        return None, None
    linked = actor.get("user")
    if isinstance(linked, Mapping) and linked.get("login"):
        return str(linked["login"]), "User"
    email = str(actor.get("email") or "")
    if email.lower().endswith(_NOREPLY):
        local = email[: -len(_NOREPLY)]
        ident, plus, login = local.partition("+")
        if plus and ident.isdigit() and login:
            return login, "Bot"
    return None, None


# GraphQL's GitSignatureState names two REST verification reasons differently.
_REASONS: Final[Mapping[str, str]] = {
    "MALFORMED_SIG": "malformed_signature", "UNKNOWN_SIG_TYPE": "unknown_signature_type",
}
_CHANGE_TYPES: Final[Mapping[str, str]] = {
    "ADDED": "added", "DELETED": "removed", "MODIFIED": "modified", "RENAMED": "renamed",
    "COPIED": "copied", "CHANGED": "changed",
}


def _id(value: Any) -> int:
    if value is None:
        raise KeyError("fullDatabaseId")
    return int(value)


def _commit(node: Mapping[str, Any]) -> RawCommit:
    c = node["commit"]
    author = c.get("author") or {}
    committer = c.get("committer") or {}
    author_login, author_type = _git_account(author)
    committer_login, _ = _git_account(committer)
    state = (c.get("signature") or {}).get("state")
    return RawCommit(
        sha=c["oid"], message=c.get("message") or "",
        author_login=author_login, author_type=author_type, author_name=author.get("name"),
        author_email=author.get("email"), authored_at=author.get("date"),
        committer_login=committer_login, committer_name=committer.get("name"),
        committer_email=committer.get("email"),
        committed_at=committer.get("date"),
        verified=state == "VALID",
        verification_reason=_REASONS.get(state, str(state).lower()) if state else "unsigned",
        parents=[p["oid"] for p in (c.get("parents") or {}).get("nodes") or [] if p.get("oid")],
        html_url=c.get("url"),
    )


def _review(n: Mapping[str, Any]) -> RawReview:
    return RawReview(
        id=_id(n.get("fullDatabaseId")), user=user(n.get("author")), state=n["state"],
        body=n.get("body") or "", submitted_at=n.get("submittedAt"),
        commit_id=(n.get("commit") or {}).get("oid"),
        author_association=n.get("authorAssociation") or "NONE", html_url=n.get("url"),
    )


def _review_comment(n: Mapping[str, Any]) -> RawReviewComment:
    reply = n.get("replyTo") or {}
    return RawReviewComment(
        id=_id(n.get("fullDatabaseId")), user=user(n.get("author")), body=n.get("body") or "",
        path=n.get("path"), created_at=n.get("createdAt"),
        in_reply_to_id=int(reply["fullDatabaseId"]) if reply.get("fullDatabaseId") else None,
        html_url=n.get("url"),
    )


def _issue_comment(n: Mapping[str, Any]) -> RawIssueComment:
    return RawIssueComment(
        id=_id(n.get("fullDatabaseId")), user=user(n.get("author")), body=n.get("body") or "",
        created_at=n.get("createdAt"), author_association=n.get("authorAssociation") or "NONE",
        html_url=n.get("url"),
    )


def _file(n: Mapping[str, Any]) -> RawFile:
    adds, dels = int(n.get("additions") or 0), int(n.get("deletions") or 0)
    return RawFile(filename=n["path"], status=_CHANGE_TYPES.get(str(n.get("changeType")), "modified"),
                   additions=adds, deletions=dels, changes=adds + dels)


def _check_runs(suites: list[Any]) -> tuple[list[RawCheckRun], bool]:
    runs: list[RawCheckRun] = []
    without_id = False
    for suite in suites:
        slug = (suite.get("app") or {}).get("slug")
        sha = str((suite.get("commit") or {})["oid"])
        for n in (suite.get("checkRuns") or {}).get("nodes") or []:
            if n.get("databaseId") is None:
                without_id = True
                continue
            runs.append(RawCheckRun(
                id=n["databaseId"], name=n["name"], status=str(n.get("status") or "COMPLETED").lower(),
                conclusion=str(n["conclusion"]).lower() if n.get("conclusion") else None,
                head_sha=sha, started_at=n.get("startedAt"), completed_at=n.get("completedAt"),
                app_slug=slug, output_title=n.get("title"), output_summary=n.get("summary"),
                output_text=n.get("text"), html_url=n.get("url"),
            ))
    return runs, without_id


def _config(repo: Mapping[str, Any]) -> tuple[str | None, CollectionIssue | None]:
    """The config text, with the REST path's messages for what is not a readable text file."""
    blob = repo.get("config")
    if blob is None:
        return None, None
    problem = None
    if blob.get("__typename") != "Blob":
        problem = f"{CONFIG_PATH} is not a file"
    elif blob.get("isTruncated"):
        problem = f"{CONFIG_PATH} is too large for the contents API"
    elif blob.get("isBinary") or blob.get("text") is None:
        problem = f"{CONFIG_PATH} is not UTF-8 text"
    if problem:
        return None, CollectionIssue(resource="config", message=problem)
    return str(blob["text"]), None


def _convert(
    repo: Mapping[str, Any], pr: Mapping[str, Any], nodes: Mapping[str, list[Any]],
    suites: list[Any], head_oid: str | None,
) -> tuple[RawPullRequest, dict[str, tuple[Any, CollectionIssue | None]], bool, bool]:
    review_comments = sorted(
        (_review_comment(c) for t in nodes["reviewThreads"]
         for c in (t.get("comments") or {}).get("nodes") or []),
        key=lambda c: c.id,
    )
    commits_page = pr.get("commits") or {}
    merge = pr.get("mergeCommit") or pr.get("potentialMergeCommit") or {}
    pull = RawPullRequest(
        number=pr["number"], title=pr.get("title") or "", body=pr.get("body") or "",
        state="open" if pr["state"] == "OPEN" else "closed", draft=bool(pr.get("isDraft")),
        merged=bool(pr.get("merged") or pr.get("mergedAt")),
        user=user(pr.get("author")) or RawUser(login="ghost"),
        author_association=pr.get("authorAssociation") or "NONE",
        labels=[n["name"] for n in nodes["labels"] if n.get("name")],
        created_at=pr["createdAt"], updated_at=pr.get("updatedAt"), closed_at=pr.get("closedAt"),
        merged_at=pr.get("mergedAt"), merged_by=user(pr.get("mergedBy")),
        merge_commit_sha=merge.get("oid"), head_sha=pr["headRefOid"], head_ref=pr["headRefName"],
        head_repo=(pr.get("headRepository") or {}).get("nameWithOwner"),
        base_ref=pr["baseRefName"], additions=pr.get("additions") or 0,
        deletions=pr.get("deletions") or 0, changed_files=pr.get("changedFiles") or 0,
        commits=commits_page.get("totalCount") or 0,
        comments=(pr.get("comments") or {}).get("totalCount") or 0,
        # GraphQL has no count of review comments; the threads were read to their end.
        review_comments=len(review_comments),
        html_url=pr["url"],
        assignees=[u for a in nodes["assignees"] if (u := user(a))],
        requested_reviewers=[u for r in nodes["reviewRequests"]
                             if (u := user(r.get("requestedReviewer")))],
    )
    files = [_file(n) for n in nodes["files"]]
    runs, without_id = _check_runs(suites)
    listed: dict[str, tuple[Any, CollectionIssue | None]] = {
        "commits": ([_commit(n) for n in nodes["commits"]], None),
        "reviews": ([_review(n) for n in nodes["reviews"]], None),
        "review_comments": (review_comments, None),
        "issue_comments": ([_issue_comment(n) for n in nodes["comments"]], None),
        "files": (files, None),
        "config": _config(repo),
        "check_runs": (runs if head_oid is None or head_oid == pull.head_sha else [], None),
    }
    renamed = any(f.status in ("renamed", "copied") for f in files)
    return pull, listed, renamed, without_id or (head_oid is not None and head_oid != pull.head_sha)
