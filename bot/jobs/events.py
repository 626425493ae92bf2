"""Which webhook means what: a pure function from (event name, payload) to a decision.

No I/O here: a merged ``pull_request`` ``closed`` evaluates; an ``issue_comment`` ``created`` on a
pull request asks for an evaluation when ``taskeval.command`` says it is an ``/evaluate`` request
(the rules the Action shares; the commenter's permission is checked later, by a worker, because
it needs GitHub).
Payload parts are validated with pydantic so a malformed delivery is refused with the field name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskeval.command import COMMAND as COMMAND  # re-exported: the queue's messages name it
from taskeval.command import not_a_request

INSTALLATION_EVENTS = ("installation", "installation_repositories")


class PayloadError(ValueError):
    """A delivery whose payload lacks a field this event needs; the message names the field."""


# Values that are stored get the bounds of their columns (taskeval/store/db.py) and of GitHub itself: a value
# outside them is a malformed delivery (400, naming the field), not a database fault (503, which
# GitHub would show as "redeliver me" forever). PostgreSQL also refuses NUL in text.
Number = Annotated[int, Field(gt=0, le=2**31 - 1)]  # an INTEGER column
Id = Annotated[int, Field(gt=0, le=2**63 - 1)]  # a BIGINT column
Login = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f\x7f]+$")]


class _In(BaseModel):
    model_config = ConfigDict(extra="ignore")


class User(_In):
    login: Login
    type: str = "User"


class Repository(_In):
    full_name: str = Field(max_length=200, pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class Installation(_In):
    id: Id


class Head(_In):
    sha: str = Field(pattern=r"^[0-9a-f]{40}$")


class PullRequest(_In):
    number: Number
    merged: bool = False
    head: Head
    user: User | None = None


class PullRequestEvent(_In):
    action: str
    number: int | None = None
    pull_request: PullRequest
    repository: Repository
    installation: Installation | None = None


class Issue(_In):
    number: Number
    pull_request: dict[str, Any] | None = None  # present only when the issue is a pull request


class Comment(_In):
    id: Id
    body: str | None = ""
    user: User


class IssueCommentEvent(_In):
    action: str
    issue: Issue
    comment: Comment
    repository: Repository
    installation: Installation | None = None


class Account(_In):
    login: Login


class InstallationBody(_In):
    id: Id
    account: Account | None = None


class RepoName(_In):
    full_name: str


class InstallationEvent(_In):
    # Stored as "<event>.<action>" in a 64-character column; GitHub's longest is 24 characters.
    action: str = Field(min_length=1, max_length=32, pattern=r"^[a-z_]+$")
    installation: InstallationBody
    repositories: list[RepoName] | None = None
    repositories_added: list[RepoName] | None = None
    repositories_removed: list[RepoName] | None = None
    sender: User | None = None


# --------------------------------------------------------------------------- decisions


@dataclass(frozen=True)
class Pong:
    """``ping``: GitHub checks the hook is reachable."""


@dataclass(frozen=True)
class Evaluate:
    repo: str
    number: int
    head_sha: str
    installation_id: int | None
    trigger: str = "pull_request"


@dataclass(frozen=True)
class Command:
    """``/evaluate`` by ``commenter``: permission check, reaction, then an evaluation."""

    repo: str
    number: int
    comment_id: int
    commenter: str
    installation_id: int | None


@dataclass(frozen=True)
class InstallationChange:
    installation_id: int
    action: str
    account: str | None
    repositories_added: tuple[str, ...]
    repositories_removed: tuple[str, ...]


@dataclass(frozen=True)
class Ignore:
    reason: str


Decision = Pong | Evaluate | Command | InstallationChange | Ignore


def _parse(model: type[_In], payload: dict[str, Any], event: str) -> Any:
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise PayloadError(f"{event} payload: {where}: {err['msg']}") from exc


def decide(event: str, payload: dict[str, Any]) -> Decision:
    """Map one verified delivery to what the bot does with it. Raises :class:`PayloadError`."""
    if event == "ping":
        return Pong()
    if event == "pull_request":
        action = payload.get("action")
        if action != "closed":
            return Ignore(f"pull_request action {action!r} is not evaluated (only merged closes)")
        pr_event: PullRequestEvent = _parse(PullRequestEvent, payload, event)
        if not pr_event.pull_request.merged:
            return Ignore("pull request closed without merging")
        return Evaluate(
            repo=pr_event.repository.full_name,
            number=pr_event.pull_request.number,
            head_sha=pr_event.pull_request.head.sha,
            installation_id=pr_event.installation.id if pr_event.installation else None,
        )
    if event == "issue_comment":
        action = payload.get("action")
        if action != "created":
            return Ignore(f"issue_comment action {action!r} is not a new command")
        ic: IssueCommentEvent = _parse(IssueCommentEvent, payload, event)
        if ic.issue.pull_request is None:
            return Ignore("comment is on an issue, not a pull request")
        user = ic.comment.user
        refused = not_a_request(ic.comment.body, user.login, user.type)
        if refused:
            return Ignore(refused)
        return Command(
            repo=ic.repository.full_name,
            number=ic.issue.number,
            comment_id=ic.comment.id,
            commenter=ic.comment.user.login,
            installation_id=ic.installation.id if ic.installation else None,
        )
    if event in INSTALLATION_EVENTS:
        inst: InstallationEvent = _parse(InstallationEvent, payload, event)
        listed = [r.full_name for r in (inst.repositories or [])]
        added = [r.full_name for r in (inst.repositories_added or [])]
        removed = [r.full_name for r in (inst.repositories_removed or [])]
        if event == "installation":
            if inst.action == "created":
                added = added or listed
            elif inst.action == "deleted":
                removed = removed or listed
        return InstallationChange(
            installation_id=inst.installation.id,
            action=f"{event}.{inst.action}",
            account=inst.installation.account.login if inst.installation.account else None,
            repositories_added=tuple(added),
            repositories_removed=tuple(removed),
        )
    return Ignore(f"event {event!r} is not handled")


def correlation(payload: dict[str, Any]) -> dict[str, Any]:
    """Best-effort repo / PR for log lines, before (or without) full validation."""
    out: dict[str, Any] = {}
    repo = payload.get("repository")
    if isinstance(repo, dict) and isinstance(repo.get("full_name"), str):
        out["repo"] = repo["full_name"]
    for key in ("pull_request", "issue"):
        item = payload.get(key)
        if isinstance(item, dict) and isinstance(item.get("number"), int):
            out["pr"] = item["number"]
            break
    return out
