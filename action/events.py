"""Which event means "evaluate this PR": a pure function of the event name and payload.

Payloads are read defensively: GitHub sends some seventy event types, and a workflow can be
wired to any of them, so every field is treated as possibly missing or of the wrong type and an
unexpected shape becomes a skip with a reason, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from action.inputs import InputError, parse_pull_number
from taskeval.command import COMMAND, not_a_request

PR_EVENTS = frozenset({"pull_request", "pull_request_target"})
# Keys a workflow_dispatch form may use for the PR number.
DISPATCH_KEYS = ("pull-request", "pull_request", "pr", "number")


@dataclass(frozen=True)
class Decision:
    """What to do with one event. ``commenter`` set means: check their permission first."""

    evaluate: bool
    reason: str
    pull_number: int | None = None
    comment_id: int | None = None
    commenter: str | None = None


def _get(data: object, *path: str) -> object:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _pull_request_event(name: str, payload: Mapping[str, Any], explicit: int | None) -> Decision:
    action = _str(payload.get("action"))
    number = (explicit or _int(payload.get("number"))
              or _int(_get(payload, "pull_request", "number")))
    if action != "closed":
        return Decision(False, f"{name} '{action or 'unknown'}' ignored: taskeval evaluates pull "
                               "requests when they are closed (merged)")
    if number is None:
        return Decision(False, f"{name} 'closed' ignored: the payload names no pull request number")
    if _get(payload, "pull_request", "merged") is not True:
        return Decision(False, f"PR #{number} was closed without being merged; nothing to evaluate")
    return Decision(True, f"PR #{number} was merged", pull_number=number)


def _issue_comment_event(payload: Mapping[str, Any], marker: str) -> Decision:
    action = _str(payload.get("action"))
    if action != "created":
        return Decision(False, f"issue_comment '{action or 'unknown'}' ignored: only new comments "
                               f"can carry the {COMMAND} command")
    issue = payload.get("issue")
    number = _int(_get(issue, "number"))
    if number is None or not isinstance(_get(issue, "pull_request"), Mapping):
        return Decision(False, "issue_comment ignored: the comment is on an issue, "
                               "not a pull request")
    comment = payload.get("comment")
    user = _get(comment, "user")
    login = _str(_get(user, "login"))
    refused = not_a_request(_get(comment, "body"), login, _get(user, "type"), marker=marker)
    if refused:
        return Decision(False, f"issue_comment on PR #{number} ignored: {refused}")
    return Decision(
        True, f"{COMMAND} requested by @{login} on PR #{number}",
        pull_number=number, comment_id=_int(_get(comment, "id")), commenter=login,
    )


def _dispatch_number(payload: Mapping[str, Any]) -> int | None:
    inputs = payload.get("inputs")
    if not isinstance(inputs, Mapping):
        return None
    for key in DISPATCH_KEYS:
        value = inputs.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and value.strip():
            return parse_pull_number(value, f"workflow_dispatch input {key}")
    return None


def decide(
    event_name: str, payload: object, explicit_pull: int | None = None, marker: str = ""
) -> Decision:
    """Decide what one event means. ``explicit_pull`` is the action's ``pull-request`` input.

    Raises :class:`action.inputs.InputError` only for a malformed PR number a person typed into a
    workflow_dispatch form; every payload shape GitHub can send yields a :class:`Decision`.
    """
    data: Mapping[str, Any] = payload if isinstance(payload, Mapping) else {}
    name = event_name or "unknown event"
    if event_name in PR_EVENTS:
        return _pull_request_event(event_name, data, explicit_pull)
    if event_name == "issue_comment":
        return _issue_comment_event(data, marker)
    if event_name == "workflow_dispatch":
        number = explicit_pull or _dispatch_number(data)
        if number is None:
            return Decision(False, "workflow_dispatch ignored: give the PR number as the action's "
                                   "'pull-request' input (or a workflow input named pull-request)")
        return Decision(True, f"PR #{number} requested by workflow_dispatch", pull_number=number)
    if explicit_pull is not None:
        return Decision(True, f"PR #{explicit_pull} named by the 'pull-request' input on {name}",
                        pull_number=explicit_pull)
    return Decision(False, f"{name} ignored: taskeval runs on merged pull requests "
                           f"(pull_request closed), {COMMAND} comments and workflow_dispatch")


__all__ = ["Decision", "InputError", "decide"]
