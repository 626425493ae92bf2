"""Writes to GitHub, and the reads they need: the one evaluation comment (create or update, race
safe), our own login, a commenter's permission, and reactions on a command comment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

from github import Github
from github.GithubException import GithubException
from github.Requester import Requester

from taskeval.contract import COMMENT_MARKER
from taskeval.github.client import LOGIN_RE, clone, pages, repo_path
from taskeval.github.errors import AuthError, is_rate_limited, translate

MARKER: Final = COMMENT_MARKER
REACTIONS: Final = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})
PERMISSIONS: Final = ("admin", "maintain", "write", "triage", "read", "none")


def authenticated_login(requester: Requester) -> str:
    """The login the credentials post as: ``GET /user``, or ``github-actions[bot]`` inside
    Actions, whose installation token cannot read ``/user``."""
    try:
        _, data = requester.requestJsonAndCheck("GET", "/user")
        return str(data["login"])
    except GithubException as exc:
        if exc.status == 403 and not is_rate_limited(exc):
            if os.environ.get("GITHUB_ACTIONS") == "true":
                return "github-actions[bot]"
            raise AuthError(
                "cannot tell which account posts the comment: GET /user is refused for App and "
                "installation tokens; name the account with --comment-as LOGIN (or "
                "TASKEVAL_COMMENT_AS), for a GitHub App '<app-slug>[bot]'",
                status=403, resource="user",
            ) from exc
        raise translate(exc, "the authenticated user", "user") from exc


def comment_login(gh: Github) -> str:
    """The login ``gh``'s credentials post comments as (see :func:`authenticated_login`); an
    ``AuthError`` naming ``--comment-as`` when GitHub will not say."""
    requester = clone(gh)
    try:
        return authenticated_login(requester)
    except Exception as exc:
        raise translate(exc, "the authenticated user", "user") from exc
    finally:
        requester.close()


def upsert_comment(
    gh: Github, repository: str, number: int, body: str, *, own_login: str | None = None
) -> tuple[str, bool]:
    """Create or update the one taskeval comment on a PR; returns (comment URL, created?).

    The comment is ours when it starts with ``MARKER`` and is written by our own account, so a
    marker pasted by someone else is never overwritten. The marker is prepended when ``body`` lacks
    it, so the next run finds the comment again.
    """
    base = repo_path(repository)
    text = body if body.startswith(MARKER) else f"{MARKER}\n{body}"
    what = f"the comments of PR #{number} in {repository}"
    requester = clone(gh)
    try:
        login = own_login or authenticated_login(requester)
        ours = _own_comments(requester, base, number, login)
        if ours:
            _, data = requester.requestJsonAndCheck(
                "PATCH", f"{base}/issues/comments/{int(ours[0]['id'])}", input={"body": text}
            )
            return str(data["html_url"]), False
        _, data = requester.requestJsonAndCheck(
            "POST", f"{base}/issues/{number}/comments", input={"body": text}
        )
        return _converge(requester, base, number, login, text, data)
    except Exception as exc:
        raise translate(exc, what, "comment") from exc
    finally:
        requester.close()


def _own_comments(requester: Any, base: str, number: int, login: str) -> list[Mapping[str, Any]]:
    """Our marker comments on the PR, oldest first."""
    found = [
        c for c in pages(requester, f"{base}/issues/{number}/comments")
        if (c.get("body") or "").startswith(MARKER)
        and ((c.get("user") or {}).get("login") or "").lower() == login.lower()
    ]
    return sorted(found, key=lambda c: int(c["id"]))


def _converge(
    requester: Any, base: str, number: int, login: str, text: str, created: Mapping[str, Any]
) -> tuple[str, bool]:
    """After a create, make a race with another run end in one comment.

    GitHub has no atomic create-if-absent, so two runs that both found no comment both create one.
    Each then re-lists and keeps the oldest of ours, deleting the rest: both runs pick the same
    survivor, so the PR converges to a single comment (one extra listing, on creation only).
    """
    ours = _own_comments(requester, base, number, login)
    if len(ours) <= 1:
        return str(created["html_url"]), True
    keep, *extra = ours
    for comment in extra:
        try:
            requester.requestJsonAndCheck("DELETE", f"{base}/issues/comments/{int(comment['id'])}")
        except GithubException as exc:
            if exc.status != 404:  # the other run deleted it first
                raise
    if int(keep["id"]) != int(created["id"]):
        _, data = requester.requestJsonAndCheck(
            "PATCH", f"{base}/issues/comments/{int(keep['id'])}", input={"body": text}
        )
        return str(data["html_url"]), False
    return str(created["html_url"]), True


def collaborator_permission(gh: Github, repository: str, login: str) -> str:
    """``login``'s permission on the repository: admin, maintain, write, triage, read or none."""
    if not LOGIN_RE.fullmatch(login):
        raise ValueError(f"not a GitHub login: {login!r}")
    requester = clone(gh)
    try:
        _, data = requester.requestJsonAndCheck(
            "GET", f"{repo_path(repository)}/collaborators/{quote(login)}/permission"
        )
    except GithubException as exc:
        if exc.status == 404:
            return "none"
        raise translate(exc, f"the permission of {login} on {repository}",
                        "collaborator") from exc
    except Exception as exc:
        raise translate(exc, f"the permission of {login} on {repository}",
                        "collaborator") from exc
    finally:
        requester.close()
    # role_name distinguishes maintain/triage, which `permission` folds into write/read; custom
    # roles have their own names, so they fall back to the base permission.
    for value in (data.get("role_name"), data.get("permission")):
        if value in PERMISSIONS:
            return str(value)
    return "none"


def add_reaction(gh: Github, repository: str, comment_id: int, content: str) -> None:
    """React to an issue/PR conversation comment (e.g. ``eyes`` on an ``/evaluate`` request)."""
    if content not in REACTIONS:
        raise ValueError(f"reaction must be one of {sorted(REACTIONS)}, got {content!r}")
    requester = clone(gh)
    what = f"a reaction on comment {comment_id} in {repository}"
    try:
        requester.requestJsonAndCheck(
            "POST", f"{repo_path(repository)}/issues/comments/{int(comment_id)}/reactions",
            input={"content": content},
        )
    except Exception as exc:
        raise translate(exc, what, "reaction") from exc
    finally:
        requester.close()
