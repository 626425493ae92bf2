"""The PR's timeline over GraphQL (``timelineItems``), read as REST's ``/issues/{n}/timeline``
lists it, and which PRs read REST's timeline instead.

GraphQL names each REST timeline event by a type of the ``PullRequestTimelineItems`` union
(``LabeledEvent`` is REST's ``labeled``, ``IssueComment`` its ``commented``: :func:`rest_event`),
and both APIs give every event the same global node id (REST's ``node_id``, GraphQL's ``id``),
which keys its evidence ID (bundle schema version 2; ``evidence.vocabulary.event_id``). So the
events convert to the same ``RawTimelineEvent``s as REST's, in the same order.

What GraphQL lacks are the session events a coding agent records on REST's timeline only:
Copilot's ``copilot_work_started``, ``copilot_work_finished`` and
``copilot_work_finished_failure`` have no type in the union (a test reads GitHub's schema).
Those agents are the built-in ones whose rule names ``work_events``
(``taskeval.agent_table``); a PR one of their accounts authored, was assigned, or acted on
(:func:`rest_timeline_needed`) reads the REST timeline, which has them. So does a PR whose
timeline GraphQL answered with an error on some item (it could not give that item's facts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from taskeval.agent_table import BUILTIN_RULES
from taskeval.evidence.vocabulary import EVENTS_WITHOUT_NODE_ID
from taskeval.github.graphql.convert import user
from taskeval.github.graphql.queries import TIMELINE_TYPES
from taskeval.raw import RawTimelineEvent, RawUser

# The REST event of a GraphQL type where it is not the type's name in snake case without "Event".
_REST_NAMES: Final[Mapping[str, str]] = {
    "IssueComment": "commented", "PullRequestReview": "reviewed",
    "PullRequestCommit": "committed", "CrossReferencedEvent": "cross-referenced",
    "RenamedTitleEvent": "renamed", "PullRequestReviewThread": "line-commented",
    "PullRequestCommitCommentThread": "commit-commented",
}

# The accounts whose agent records session events on the REST timeline only (see the module's
# docstring), compared case-insensitively, in every spelling REST and GraphQL give them.
AGENT_ACCOUNTS: Final[frozenset[str]] = frozenset(
    login.lower() for rule in BUILTIN_RULES if rule.work_events for login in rule.logins)
# REST's timeline names GitHub's Copilot agent ``Copilot``; GraphQL's Bot is
# ``copilot-swe-agent`` (``convert.user`` adds REST's ``[bot]``).
_TIMELINE_LOGINS: Final[Mapping[str, str]] = {"copilot-swe-agent[bot]": "Copilot"}


def rest_event(kind: str) -> str:
    """REST's name of the event GraphQL's timeline type ``kind`` is: ``HeadRefForcePushedEvent``
    is ``head_ref_force_pushed``."""
    if kind in _REST_NAMES:
        return _REST_NAMES[kind]
    base = kind.removesuffix("Event")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", base).lower()


def _timeline_user(actor: Mapping[str, Any] | None) -> RawUser | None:
    found = user(actor)
    if found is not None and found.login.lower() in _TIMELINE_LOGINS:
        return RawUser(login=_TIMELINE_LOGINS[found.login.lower()], type=found.type)
    return found


def _oid(value: Any) -> str | None:
    return str(value["oid"]) if isinstance(value, Mapping) and value.get("oid") else None


def _commit_of(kind: str, node: Mapping[str, Any]) -> str | None:
    """The SHA REST gives the event as ``commit_id`` (``sha`` for a commit)."""
    if kind == "PullRequestCommit":
        return _oid(node.get("pullCommit"))
    if kind == "PullRequestCommitCommentThread":
        return _oid(node.get("threadCommit"))
    if kind in ("PullRequestReview", "MergedEvent", "ReferencedEvent"):
        return _oid(node.get("commit"))
    if kind == "ClosedEvent":  # closed by a commit
        closer = node.get("closer")
        return _oid(closer) if isinstance(closer, Mapping) and closer.get("__typename") == "Commit" \
            else None
    if kind == "HeadRefForcePushedEvent":  # the head the branch was pushed to
        return _oid(node.get("afterCommit"))
    return None


def _source(node: Mapping[str, Any]) -> dict[str, Any]:
    """A cross-reference's ``source.issue`` as REST gives it, flattened (``source_*``)."""
    source = node.get("source")
    if not isinstance(source, Mapping):
        return {}
    pull = source.get("__typename") == "PullRequest"
    state = str((source.get("pullState") if pull else source.get("issueState")) or "")
    author = _timeline_user(source.get("author"))
    return {
        "source_repository": (source.get("repository") or {}).get("nameWithOwner"),
        "source_number": source.get("number"), "source_is_pull": pull,
        # REST names a merged PR's issue state "closed"
        "source_state": ("closed" if state == "MERGED" else state.lower()) or None,
        "source_author": author.login if author else None,
        "source_created_at": source.get("createdAt"), "source_title": source.get("title"),
    }


def events(items: Iterable[Any], reviews: Iterable[Any],
           threads: Iterable[Any]) -> list[RawTimelineEvent]:
    """The timeline's items as REST's events, in GitHub's order. ``reviews`` and ``threads``:
    the PR's reviews and review threads as read by the same query, which give a review item
    its state and a thread item (REST's ``line-commented``) its first comment's author and
    time, matched by node id. A review GitHub says is pending is left out, as REST leaves it."""
    states = {r["id"]: r.get("state") for r in reviews if isinstance(r, Mapping) and r.get("id")}
    first = {t["id"]: ((t.get("comments") or {}).get("nodes") or [None])[0]
             for t in threads if isinstance(t, Mapping) and t.get("id")}
    out: list[RawTimelineEvent] = []
    for node in items:
        kind = str(node.get("__typename") or "") if isinstance(node, Mapping) else ""
        if kind not in TIMELINE_TYPES:
            continue
        name = rest_event(kind)
        actor = _timeline_user(node.get("actor") or node.get("author"))
        when = node.get("createdAt") or node.get("submittedAt")
        state = None
        if kind == "PullRequestReview":
            state = states.get(node.get("id"))
            if state == "PENDING":
                continue
        elif kind == "PullRequestCommit":
            git = node.get("pullCommit") or {}
            when = (git.get("committer") or {}).get("date") or (git.get("author") or {}).get("date")
        elif kind == "PullRequestReviewThread":
            comment = first.get(node.get("id")) or {}
            actor, when = _timeline_user(comment.get("author")), comment.get("createdAt")
        assignee = _timeline_user(node.get("assignee"))
        label = node.get("label")
        out.append(RawTimelineEvent(
            event=name,
            node_id=str(node["id"]) if node.get("id") and name not in EVENTS_WITHOUT_NODE_ID
            else None,
            actor=actor, created_at=when, commit_id=_commit_of(kind, node),
            state=str(state).upper() if state else None,
            label=label.get("name") if isinstance(label, Mapping) else None,
            assignee=assignee.login if assignee else None,
            **(_source(node) if kind == "CrossReferencedEvent" else {}),
        ))
    return out


def rest_timeline_needed(logins: Iterable[str | None]) -> bool:
    """Whether a PR whose author, assignees and timeline actors are ``logins`` must read REST's
    timeline: one of them is an agent account whose session events GraphQL does not carry."""
    return any(login is not None and login.lower() in AGENT_ACCOUNTS for login in logins)


def agent_pull(pr: Mapping[str, Any]) -> bool:
    """Whether the PR as GraphQL answered it (its author, assignees and first page of timeline
    items) already names an agent account: its timeline will be read over REST, so GraphQL's
    need not be paged further."""
    nodes = [n for n in ((pr.get("timelineItems") or {}).get("nodes") or [])
             if isinstance(n, Mapping)]
    people = [pr.get("author"), *((pr.get("assignees") or {}).get("nodes") or []),
              *(n.get(key) for n in nodes for key in ("actor", "author", "assignee"))]
    return rest_timeline_needed(
        found.login for who in people if (found := _timeline_user(who)) is not None)


def timeline_logins(found: Iterable[RawTimelineEvent]) -> list[str | None]:
    """Who acted on or was assigned in the events GraphQL gave (for :func:`rest_timeline_needed`)."""
    return [who for e in found for who in ((e.actor.login if e.actor else None), e.assignee)]
