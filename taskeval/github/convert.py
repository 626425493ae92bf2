"""REST payloads -> the ``Raw*`` models of ``taskeval.raw``: one pure function per resource.

Each reads only documented fields of GitHub's answer, defaults what GitHub may omit or null, and
lets a missing required key raise ``KeyError`` (collection reports it as a malformed answer).
Nothing here sends a request.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from taskeval.config import CONFIG_PATH
from taskeval.evidence.vocabulary import EVENTS_WITHOUT_NODE_ID
from taskeval.raw import (
    RawCheckRun,
    RawCommit,
    RawFile,
    RawIssueComment,
    RawLinkedIssue,
    RawPullRequest,
    RawReview,
    RawReviewComment,
    RawTimelineEvent,
    RawUser,
    RawWorkflowRun,
)


def user(data: Mapping[str, Any] | None) -> RawUser | None:
    if not data or not data.get("login"):
        return None
    return RawUser(login=data["login"], type=data.get("type") or "User")


def pull_request(data: Mapping[str, Any]) -> RawPullRequest:
    head = data["head"]
    return RawPullRequest(
        number=data["number"],
        title=data.get("title") or "",
        body=data.get("body") or "",
        state=data["state"],
        draft=bool(data.get("draft")),
        merged=bool(data.get("merged") or data.get("merged_at")),
        # GitHub shows a deleted account as "ghost"; the payload may carry null instead.
        user=user(data.get("user")) or RawUser(login="ghost"),
        author_association=data.get("author_association") or "NONE",
        labels=[label["name"] for label in data.get("labels") or [] if label.get("name")],
        created_at=data["created_at"],
        updated_at=data.get("updated_at"),
        closed_at=data.get("closed_at"),
        merged_at=data.get("merged_at"),
        merged_by=user(data.get("merged_by")),
        merge_commit_sha=data.get("merge_commit_sha"),
        head_sha=head["sha"],
        head_ref=head["ref"],
        head_repo=(head.get("repo") or {}).get("full_name"),
        base_ref=data["base"]["ref"],
        additions=data.get("additions") or 0,
        deletions=data.get("deletions") or 0,
        changed_files=data.get("changed_files") or 0,
        commits=data.get("commits") or 0,
        comments=data.get("comments") or 0,
        review_comments=data.get("review_comments") or 0,
        html_url=data["html_url"],
        # ``performed_via_github_app`` is not a field of GitHub's pull request object (REST or
        # webhook); collection reads it from the PR's issue object (``issue_app``).
        assignees=[u for a in data.get("assignees") or [] if (u := user(a))],
        requested_reviewers=[u for r in data.get("requested_reviewers") or [] if (u := user(r))],
    )


class MalformedIssue(ValueError):
    """The PR's issue object is not GitHub's documented issue shape."""


def issue_app(data: Any, number: int) -> str | None:
    """The slug of the App a PR was opened through, from its issue object
    (``GET /repos/{o}/{r}/issues/{n}``: ``performed_via_github_app`` is null or an App object
    whose ``slug`` GitHub's schema leaves optional, so its ``name`` stands in). Raises
    ``MalformedIssue`` for an answer that is not this PR's issue or whose App is unreadable."""
    if not isinstance(data, Mapping):
        raise MalformedIssue(f"expected an object, got {type(data).__name__}")
    if data.get("number") != number:
        raise MalformedIssue(f"it is issue {data.get('number')!r}, not #{number}")
    if not isinstance(data.get("pull_request"), Mapping):
        raise MalformedIssue(f"#{number} is not a pull request")
    app = data.get("performed_via_github_app")
    if app is None:
        return None
    if isinstance(app, Mapping):
        slug = app.get("slug") or app.get("name")
        if isinstance(slug, str) and slug.strip():
            return slug.strip()
    raise MalformedIssue("performed_via_github_app is neither null nor an App with a slug")


def linked_issue(data: Any, number: int) -> RawLinkedIssue:
    """A linked issue's labels from its issue object (``GET /repos/{o}/{r}/issues/{n}``, or an
    element of the repository's issue listing): label objects or names, sorted. Raises
    ``MalformedIssue`` for an answer that is not issue ``number`` or lists no labels."""
    if not isinstance(data, Mapping):
        raise MalformedIssue(f"expected an object, got {type(data).__name__}")
    if data.get("number") != number:
        raise MalformedIssue(f"it is issue {data.get('number')!r}, not #{number}")
    labels = data.get("labels")
    if not isinstance(labels, list):
        raise MalformedIssue("it lists no labels")
    names = [str(lb.get("name")) if isinstance(lb, Mapping) else str(lb) for lb in labels]
    return RawLinkedIssue(number=number, labels=sorted(n for n in names if n and n != "None"),
                          is_pull=isinstance(data.get("pull_request"), Mapping))


def commit(data: Mapping[str, Any]) -> RawCommit:
    git = data.get("commit") or {}
    author = data.get("author") or {}
    committer = data.get("committer") or {}
    verification = git.get("verification") or {}
    return RawCommit(
        sha=data["sha"],
        message=git.get("message") or "",
        author_login=author.get("login"),
        author_type=author.get("type"),
        author_name=(git.get("author") or {}).get("name"),
        author_email=(git.get("author") or {}).get("email"),
        authored_at=(git.get("author") or {}).get("date"),
        committer_login=committer.get("login"),
        committer_name=(git.get("committer") or {}).get("name"),
        committer_email=(git.get("committer") or {}).get("email"),
        committed_at=(git.get("committer") or {}).get("date"),
        verified=bool(verification.get("verified")),
        verification_reason=verification.get("reason"),
        parents=[p["sha"] for p in data.get("parents") or [] if p.get("sha")],
        html_url=data.get("html_url"),
    )


def review(data: Mapping[str, Any]) -> RawReview:
    return RawReview(
        id=data["id"],
        user=user(data.get("user")),
        state=data["state"],
        body=data.get("body") or "",
        submitted_at=data.get("submitted_at"),
        commit_id=data.get("commit_id"),
        author_association=data.get("author_association") or "NONE",
        html_url=data.get("html_url"),
    )


def review_comment(data: Mapping[str, Any]) -> RawReviewComment:
    return RawReviewComment(
        id=data["id"],
        user=user(data.get("user")),
        body=data.get("body") or "",
        path=data.get("path"),
        created_at=data.get("created_at"),
        in_reply_to_id=data.get("in_reply_to_id"),
        html_url=data.get("html_url"),
    )


def issue_comment(data: Mapping[str, Any]) -> RawIssueComment:
    return RawIssueComment(
        id=data["id"],
        user=user(data.get("user")),
        body=data.get("body") or "",
        created_at=data.get("created_at"),
        author_association=data.get("author_association") or "NONE",
        html_url=data.get("html_url"),
    )


def changed_file(data: Mapping[str, Any]) -> RawFile:
    # The patch is deliberately dropped: diffs are never evidence (design: no raw blobs).
    return RawFile(
        filename=data["filename"],
        status=data.get("status") or "modified",
        additions=data.get("additions") or 0,
        deletions=data.get("deletions") or 0,
        changes=data.get("changes") or 0,
        previous_filename=data.get("previous_filename"),
    )


def check_run(data: Mapping[str, Any]) -> RawCheckRun:
    output = data.get("output") or {}
    return RawCheckRun(
        id=data["id"],
        name=data["name"],
        status=data.get("status") or "completed",
        conclusion=data.get("conclusion"),
        head_sha=data["head_sha"],
        started_at=data.get("started_at"),
        completed_at=data.get("completed_at"),
        app_slug=(data.get("app") or {}).get("slug"),
        output_title=output.get("title"),
        output_summary=output.get("summary"),
        output_text=output.get("text"),
        html_url=data.get("html_url"),
    )


def workflow_run(data: Mapping[str, Any]) -> RawWorkflowRun:
    return RawWorkflowRun(
        id=data["id"],
        name=data.get("name"),
        workflow_id=data.get("workflow_id"),
        head_sha=data["head_sha"],
        head_branch=data.get("head_branch"),
        event=data.get("event"),
        status=data.get("status"),
        conclusion=data.get("conclusion"),
        run_attempt=data.get("run_attempt") or 1,
        run_number=data.get("run_number"),
        created_at=data.get("created_at"),
        run_started_at=data.get("run_started_at"),
        updated_at=data.get("updated_at"),
        actor=(data.get("actor") or {}).get("login"),
        triggering_actor=(data.get("triggering_actor") or {}).get("login"),
        html_url=data.get("html_url"),
    )


class UnreadableConfig(Exception):
    """The config path exists but is not a readable text file (a directory, >1 MB, binary)."""


def _source_repository(issue: Mapping[str, Any]) -> str | None:
    repo = issue.get("repository")
    if isinstance(repo, Mapping) and repo.get("full_name"):
        return str(repo["full_name"])
    url = issue.get("repository_url") or ""
    parts = str(url).rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) >= 2 and "repos" in parts else None


def timeline_event(data: Mapping[str, Any]) -> RawTimelineEvent:
    """One ``/issues/{n}/timeline`` entry. ``committed`` entries have no actor or created_at but
    their own git dates (the committer's is used); ``reviewed`` entries name the reviewer as
    ``user`` and the time as ``submitted_at``; ``line-commented`` entries wrap their comments."""
    name = str(data.get("event") or "unknown")
    actor = user(data.get("actor")) or user(data.get("user"))
    when = data.get("created_at") or data.get("submitted_at")
    if name == "committed":
        when = (data.get("committer") or {}).get("date") or (data.get("author") or {}).get("date")
    if name == "line-commented":
        first = (data.get("comments") or [{}])[0] or {}
        actor = actor or user(first.get("user"))
        when = when or first.get("created_at")
    label = data.get("label") or {}
    source = data.get("source") or {}
    issue = source.get("issue") if isinstance(source, Mapping) else None
    cross: dict[str, Any] = {}
    if name == "cross-referenced" and isinstance(issue, Mapping):
        # Passed to the constructor, not assigned afterwards: assignment would skip validation
        # and leave GitHub's time strings where the bundle builder expects datetimes.
        author = user(issue.get("user"))
        cross = {
            "source_repository": _source_repository(issue),
            "source_number": issue.get("number"),
            "source_is_pull": bool(issue.get("pull_request")),
            "source_state": issue.get("state"),
            "source_author": author.login if author else None,
            "source_created_at": issue.get("created_at"),
            "source_title": issue.get("title"),
        }
    node = data.get("node_id")
    return RawTimelineEvent(
        event=name,
        # GitHub's global node id keys the event (GraphQL's ``id``); REST's numeric id is not
        # kept. The events both transports key otherwise carry none (a commit: its SHA).
        node_id=str(node) if node and name not in EVENTS_WITHOUT_NODE_ID else None,
        actor=actor,
        created_at=when,
        commit_id=data.get("commit_id") or data.get("sha"),
        state=(str(data["state"]).upper() if data.get("state") and name == "reviewed" else None),
        label=label.get("name") if isinstance(label, Mapping) else None,
        assignee=(user(data.get("assignee")) or RawUser(login="")).login or None,
        **cross,
    )


def config_text(data: Any) -> str | None:
    """The text of a contents-API answer for the config file; ``UnreadableConfig`` otherwise."""
    if not isinstance(data, dict) or data.get("type") != "file":
        raise UnreadableConfig(f"{CONFIG_PATH} is not a file")
    if data.get("encoding") != "base64":
        raise UnreadableConfig(f"{CONFIG_PATH} is too large for the contents API")
    try:
        return base64.b64decode(data.get("content") or "").decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise UnreadableConfig(f"{CONFIG_PATH} is not UTF-8 text") from exc
