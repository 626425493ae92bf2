"""A PR's ``timelineItems`` as GitHub's GraphQL serves them, from the REST timeline of the same
facts (``Facts.timeline``: what ``GET /issues/{n}/timeline`` answers), for
``tests/fakegraphql_resolver.py``.

Each REST event becomes the type of the ``PullRequestTimelineItems`` union that GitHub's schema
says it is: the enum ``PullRequestTimelineItemsItemType`` quotes the REST name of most types
("Represents a 'labeled' event..."), and GitHub's REST documentation of timeline events names
the other six (``commented`` is an ``IssueComment``, ``committed`` a ``PullRequestCommit``...).
Both APIs give an event the same global node id (REST's ``node_id``, GraphQL's ``id``); where
REST gives none (a cross-reference, a commit), the item gets one of its own, as GitHub's GraphQL
does. An event GraphQL has no type for (Copilot's ``copilot_work_*``) is not served, as GitHub
serves none. A fact GraphQL's schema requires that the source lacks (a cross-reference without
its source, as the corpus keeps them) is answered as an error on that item, which GraphQL's
null propagation turns into a null item beside the error. Imports nothing of the tests package
at run time (the corpus replay loads it from the source tree)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from graphql import GraphQLError, GraphQLSchema

from .fakegraphql_ids import node_id

# The REST events GitHub's REST documentation names for the types the schema does not quote.
_DOCUMENTED: Final[Mapping[str, str]] = {
    "ISSUE_COMMENT": "commented", "PULL_REQUEST_COMMIT": "committed",
    "PULL_REQUEST_REVIEW": "reviewed", "CROSS_REFERENCED_EVENT": "cross-referenced",
    "PULL_REQUEST_REVIEW_THREAD": "line-commented",
    "PULL_REQUEST_COMMIT_COMMENT_THREAD": "commit-commented",
}
_QUOTED: Final = re.compile(r"Represents an? '([a-z_]+)' event")


def _type_name(value: str) -> str:
    return "".join(part.capitalize() for part in value.lower().split("_"))


@functools.cache
def types_by_event(schema: GraphQLSchema) -> dict[str, tuple[str, str]]:
    """REST event name -> (GraphQL type, its ``itemTypes`` enum value), from GitHub's schema."""
    enum = schema.get_type("PullRequestTimelineItemsItemType")
    union = schema.get_type("PullRequestTimelineItems")
    names = {t.name.upper(): t.name for t in getattr(union, "types", [])}
    out: dict[str, tuple[str, str]] = {}
    for value, definition in getattr(enum, "values", {}).items():
        found = _QUOTED.search(definition.description or "")
        event = found.group(1) if found else _DOCUMENTED.get(value)
        kind = names.get(value.replace("_", "")) or _type_name(value)
        if event is not None:
            out[event] = (kind, value)
    return out


def _missing(what: str) -> Callable[..., Any]:
    def resolve(info: Any, **_: Any) -> Any:
        raise GraphQLError(f"The data holds no {what} of this event", extensions={"type": "FORBIDDEN"})

    return resolve


def _oid(sha: Any) -> dict[str, Any] | None:
    return {"oid": sha} if sha else None


def _subject(issue: Mapping[str, Any], actor: Callable[[Any], Any]) -> dict[str, Any]:
    """A cross-reference's source (REST ``source.issue``) as an ``Issue`` or ``PullRequest``."""
    pull = issue.get("pull_request")
    state = str(issue.get("state") or "open").upper()
    if pull and isinstance(pull, Mapping) and pull.get("merged_at"):
        state = "MERGED"
    repo = issue.get("repository") or {}
    full = repo.get("full_name") or "/".join(str(issue.get("repository_url") or "").split("/")[-2:])
    return {"__typename": "PullRequest" if pull else "Issue", "number": issue.get("number"),
            "title": issue.get("title") or "", "state": state, "createdAt": issue.get("created_at"),
            "author": actor(issue.get("user")), "repository": {"nameWithOwner": full}}


def item(kind: str, e: Mapping[str, Any], repo: str, number: int,
         actor: Callable[[Any], Any]) -> dict[str, Any]:
    """One REST timeline event ``e`` as the GraphQL object of type ``kind``."""
    out: dict[str, Any] = {"__typename": kind,
                           "id": e.get("node_id") or node_id(kind, repo, number, e.get("sha")
                                                               or e.get("created_at"),
                                                               json.dumps(e.get("source"),
                                                                          sort_keys=True)),
                           "createdAt": e.get("created_at") or _missing("time"),
                           "actor": actor(e.get("actor"))}
    if kind == "IssueComment":
        out["author"] = actor(e.get("user") or e.get("actor"))
    elif kind == "PullRequestReview":
        out.update(author=actor(e.get("user")), submittedAt=e.get("submitted_at"),
                   createdAt=e.get("submitted_at") or _missing("time"),
                   commit=_oid(e.get("commit_id")),
                   state=str(e["state"]).upper() if e.get("state") else _missing("state"))
    elif kind == "PullRequestCommit":
        out["id"] = node_id(kind, repo, number, e.get("sha"))
        out["commit"] = {"oid": e.get("sha"), "committer": e.get("committer"),
                         "author": e.get("author")}
    elif kind == "PullRequestReviewThread":
        first = (e.get("comments") or [{}])[0] or {}
        root = first.get("in_reply_to_id") or first.get("id")
        out["id"] = node_id("PullRequestReviewThread", repo, number, root)
    elif kind == "PullRequestCommitCommentThread":
        out["commit"] = {"oid": e.get("commit_id")}
    elif kind in ("AssignedEvent", "UnassignedEvent"):
        out["assignee"] = actor(e.get("assignee"))
    elif kind in ("LabeledEvent", "UnlabeledEvent"):
        out["label"] = {"name": (e.get("label") or {}).get("name")}
    elif kind in ("MergedEvent", "ReferencedEvent"):
        out["commit"] = _oid(e.get("commit_id"))
    elif kind == "ClosedEvent":
        out["closer"] = {"__typename": "Commit", "oid": e["commit_id"]} if e.get("commit_id") else None
    elif kind == "HeadRefForcePushedEvent":
        out["afterCommit"] = _oid(e.get("commit_id"))
    elif kind == "CrossReferencedEvent":
        issue = (e.get("source") or {}).get("issue")
        out["source"] = _subject(issue, actor) if isinstance(issue, Mapping) else _missing("source")
    return out


def items(schema: GraphQLSchema, events: Sequence[Mapping[str, Any]], repo: str, number: int,
          actor: Callable[[Any], Any], item_types: Sequence[str] | None) -> list[dict[str, Any]]:
    """The timeline's items, in REST's order, of the ``itemTypes`` asked for (all when none)."""
    known = types_by_event(schema)
    wanted = set(item_types) if item_types else None
    out = []
    for e in events:
        kind, value = known.get(str(e.get("event")), (None, None))
        if kind is None or (wanted is not None and value not in wanted):
            continue
        out.append(item(kind, e, repo, number, actor))
    return out
