"""The GraphQL queries of a PR, a batch of PRs and linked issues: their connections, page sizes
and variables. The first page is 50 (not 100) so a typical PR costs one point (see the package's
docstring)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from taskeval.github.errors import (
    RESOURCE_LABELS,
)

FIRST_PAGE: Final = 50
NEXT_PAGE: Final = 100
# A page GitHub times out on is asked again at half the size, down to this.
MIN_PAGE: Final = 6
TIMEOUT_RETRIES: Final = 3
# Nested page sizes in the first query (their cost is one request per parent node, whatever
# their size): a commit has one or two parents; a head commit a handful of check suites.
PARENTS_PAGE: Final = 5
SUITES_PAGE: Final = 20

LABELS: Final = RESOURCE_LABELS



_ACTOR: Final = "__typename login"
_RATE: Final = "rateLimit { cost limit remaining resetAt used }"
_PAGE_INFO: Final = "totalCount pageInfo { hasNextPage endCursor }"


@dataclass(frozen=True)
class Conn:
    """A connection the collector pages to its end: its field, the type that owns it (for the
    ``node(id:)`` that reads its next page), one node's selection, and the connections nested
    in that node (``holder`` is the key of the node holding them, "" for the node itself)."""

    field: str
    owner: str
    node: str
    resource: str
    args: str = ""
    first: str = "$inner"  # the variable sizing it when nested in another connection's nodes
    children: tuple[tuple[str, Conn], ...] = ()
    limit: int | None = None  # read at most this many nodes (the rest is a recorded cut)

    def selection(self, first: str, after: str | None = None) -> str:
        args = [f"first: {first}"]
        if after:
            args.append(f"after: {after}")
        if self.args:
            args.append(self.args)
        nested = " ".join(_child_sel(c) for holder, c in self.children if not holder)
        node = self.node
        for holder, child in self.children:
            if holder:
                node = node.replace(f"{holder} {{", f"{holder} {{ {_child_sel(child)}", 1)
        return (f"{self.field}({', '.join(args)}) {{ {_PAGE_INFO} "
                f"nodes {{ {node} {nested} }} }}").replace("  ", " ")


def _child_sel(child: Conn) -> str:
    return child.selection(child.first)


# Page sizes of one query, by variable; all halved while GitHub times out on the query.
# The timeline's first page is 100: no connection nests in its items, so its size costs nothing.
FIRST_SIZES: Final[Mapping[str, int]] = {"page": FIRST_PAGE, "inner": FIRST_PAGE,
                                         "parents": PARENTS_PAGE, "suites": SUITES_PAGE,
                                         "timeline": NEXT_PAGE}
NEXT_SIZES: Final[Mapping[str, int]] = {"page": NEXT_PAGE, "inner": FIRST_PAGE,
                                        "parents": PARENTS_PAGE, "suites": SUITES_PAGE}


def _declare(text: str) -> str:
    return "".join(f", ${name}: Int!" for name in FIRST_SIZES if f"${name}" in text
                   and name != "page")


_PARENTS: Final = Conn("parents", "Commit", "oid", "commits", first="$parents")
_THREAD_COMMENTS: Final = Conn(
    "comments", "PullRequestReviewThread",
    f"fullDatabaseId author {{ {_ACTOR} }} body path createdAt replyTo {{ fullDatabaseId }} url",
    "review_comments",
)
_CHECK_RUNS: Final = Conn(
    "checkRuns", "CheckSuite",
    "databaseId name status conclusion startedAt completedAt title summary text url",
    "check_runs", args="filterBy: {checkType: ALL}",
)
_SUITES: Final = Conn("checkSuites", "Commit", "id commit { oid } app { slug }", "check_runs",
                      first="$suites", children=(("", _CHECK_RUNS),))
_GIT_ACTOR: Final = "name email date user { login }"

# ------------------------------------------------------------------------------ the timeline

# The PR's timeline (REST's ``/issues/{n}/timeline``): every type of GraphQL's
# ``PullRequestTimelineItems`` union but ``PullRequestRevisionMarker`` (the viewer's "last
# seen" marker, which REST has no event for). Each is one REST event
# (``graphql.timeline.rest_event``); the list is checked against GitHub's schema by a test.
TIMELINE_TYPES: Final[tuple[str, ...]] = (
    "AddedToMergeQueueEvent", "AddedToProjectEvent", "AssignedEvent", "AutoMergeDisabledEvent",
    "AutoMergeEnabledEvent", "AutoRebaseEnabledEvent", "AutoSquashEnabledEvent",
    "AutomaticBaseChangeFailedEvent", "AutomaticBaseChangeSucceededEvent", "BaseRefChangedEvent",
    "BaseRefDeletedEvent", "BaseRefForcePushedEvent", "ClosedEvent", "CommentDeletedEvent",
    "ConnectedEvent", "ConvertToDraftEvent", "ConvertedNoteToIssueEvent",
    "ConvertedToDiscussionEvent", "CrossReferencedEvent", "DemilestonedEvent", "DeployedEvent",
    "DeploymentEnvironmentChangedEvent", "DisconnectedEvent", "HeadRefDeletedEvent",
    "HeadRefForcePushedEvent", "HeadRefRestoredEvent", "IssueComment", "LabeledEvent",
    "LockedEvent", "MarkedAsDuplicateEvent", "MentionedEvent", "MergedEvent", "MilestonedEvent",
    "MovedColumnsInProjectEvent", "ParentIssueAddedEvent", "ParentIssueRemovedEvent",
    "PinnedEvent", "PullRequestCommit", "PullRequestCommitCommentThread", "PullRequestReview",
    "PullRequestReviewThread", "ReadyForReviewEvent", "ReferencedEvent",
    "RemovedFromMergeQueueEvent", "RemovedFromProjectEvent", "RenamedTitleEvent",
    "ReopenedEvent", "ReviewDismissedEvent", "ReviewRequestRemovedEvent", "ReviewRequestedEvent",
    "SubIssueAddedEvent", "SubIssueRemovedEvent", "SubscribedEvent", "TransferredEvent",
    "UnassignedEvent", "UnlabeledEvent", "UnlockedEvent", "UnmarkedAsDuplicateEvent",
    "UnpinnedEvent", "UnsubscribedEvent", "UserBlockedEvent",
)
# GitHub keeps at most this many events of a timeline, as REST's listing is cut
# (``collection.MAX_TIMELINE_EVENTS``; a test keeps the two equal).
TIMELINE_LIMIT: Final = 1000
_EVENT: Final = f"id createdAt actor {{ {_ACTOR} }}"
# ``state`` aliased: an issue's and a PR's are of two types, which one name cannot hold.
_SUBJECT: Final = (f"number title createdAt author {{ {_ACTOR} }} repository {{ nameWithOwner }}")
# What each type adds to an event's id, time and actor: what REST's event carries beside them.
# A review's state is taken from the PR's reviews (``graphql.timeline``), a review thread's
# author and time from its first comment as read with the PR's threads: matched by node id.
_ITEM_FIELDS: Final[Mapping[str, str]] = {
    "AssignedEvent": "assignee { __typename ... on Actor { login } }",
    "UnassignedEvent": "assignee { __typename ... on Actor { login } }",
    "LabeledEvent": "label { name }", "UnlabeledEvent": "label { name }",
    "MergedEvent": "commit { oid }", "ReferencedEvent": "commit { oid }",
    "ClosedEvent": "closer { __typename ... on Commit { oid } }",
    "HeadRefForcePushedEvent": "afterCommit { oid }",
    "CrossReferencedEvent": (f"source {{ __typename ... on Issue {{ {_SUBJECT} issueState: state }} "
                             f"... on PullRequest {{ {_SUBJECT} pullState: state }} }}"),
}
_ITEM_OWN: Final[Mapping[str, str]] = {
    "IssueComment": f"id createdAt author {{ {_ACTOR} }}",
    "PullRequestReview": f"id submittedAt author {{ {_ACTOR} }} commit {{ oid }}",
    # Aliased: their ``commit`` is non-null, the events' nullable, and one query cannot ask both
    # under one name.
    "PullRequestCommit": "pullCommit: commit { oid committer { date } author { date } }",
    "PullRequestReviewThread": "id",
    "PullRequestCommitCommentThread": "threadCommit: commit { oid }",
}
TIMELINE_FRAGMENT: Final = "TaskevalTimelineItem"


def _screaming(name: str) -> str:
    return "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name)).upper()


def _item_fields(kind: str) -> str:
    own = _ITEM_OWN.get(kind)
    return own if own is not None else f"{_EVENT} {_ITEM_FIELDS.get(kind, '')}".strip()


def timeline_fragment() -> str:
    """The selection of one timeline item, a named fragment (each batched PR spreads it)."""
    parts = " ".join(f"... on {kind} {{ {_item_fields(kind)} }}" for kind in TIMELINE_TYPES)
    return f"fragment {TIMELINE_FRAGMENT} on PullRequestTimelineItems {{ __typename {parts} }}"


_TIMELINE: Final = Conn(
    "timelineItems", "PullRequest", f"...{TIMELINE_FRAGMENT}", "timeline",
    args=f"itemTypes: [{', '.join(_screaming(k) for k in TIMELINE_TYPES)}]",
    limit=TIMELINE_LIMIT,
)


def _with_fragment(query: str) -> str:
    return f"{query} {timeline_fragment()}" if f"...{TIMELINE_FRAGMENT}" in query else query

# The PR's own connections, in the order the first query asks for them.
PULL_CONNECTIONS: Final[tuple[Conn, ...]] = (
    Conn("labels", "PullRequest", "name", "pull_request"),
    Conn("assignees", "PullRequest", _ACTOR, "pull_request"),
    Conn("reviewRequests", "PullRequest",
         "requestedReviewer { __typename ... on Actor { login } }", "pull_request"),
    Conn("commits", "PullRequest",
         f"commit {{ id oid message url author {{ {_GIT_ACTOR} }} "
         f"committer {{ {_GIT_ACTOR} }} signature {{ state }} }}",
         "commits", children=(("commit", _PARENTS),)),
    Conn("reviews", "PullRequest",
         f"id fullDatabaseId author {{ {_ACTOR} }} state body submittedAt commit {{ oid }} "
         "authorAssociation url", "reviews"),
    Conn("reviewThreads", "PullRequest", "id", "review_comments",
         children=(("", _THREAD_COMMENTS),)),
    Conn("comments", "PullRequest",
         f"id fullDatabaseId author {{ {_ACTOR} }} body createdAt authorAssociation url "
         "viewerDidAuthor", "issue_comments"),
    Conn("files", "PullRequest", "path additions deletions changeType", "files"),
    _TIMELINE,
)

_PULL_FIELDS: Final = (
    f"id number title body state isDraft merged author {{ {_ACTOR} }} authorAssociation "
    f"createdAt updatedAt closedAt mergedAt mergedBy {{ {_ACTOR} }} mergeCommit {{ oid }} "
    "potentialMergeCommit { oid } headRefOid headRefName headRepository { nameWithOwner } "
    "baseRefName additions deletions changedFiles url"
)


# The first query's page variable of a connection, where it is not ``$page``.
_FIRST_VARS: Final[Mapping[str, str]] = {"timelineItems": "$timeline"}


def flag(conn_field: str) -> str:
    """The variable that keeps one of the PR's connections in the first query (true unless an
    earlier answer refused it: see ``read_pull``)."""
    return f"with{conn_field[0].upper()}{conn_field[1:]}"


def _included(selection: str, variable: str) -> str:
    cut = selection.index(") {") + 1  # after the field's arguments
    return f"{selection[:cut]} @include(if: ${variable}){selection[cut:]}"


def pull_query() -> str:
    """The first query: repository, PR, every connection's first page, head checks, config."""
    conns = " ".join(_included(c.selection(_FIRST_VARS.get(c.field, "$page")), flag(c.field))
                     for c in PULL_CONNECTIONS)
    flags = "".join(f", ${flag(c.field)}: Boolean = true" for c in PULL_CONNECTIONS)
    head = _included(f"headCommit: commits(last: 1) {{ nodes {{ commit {{ id oid "
                     f"{_child_sel(_SUITES)} }} }} }}", flag("commits"))
    return _with_fragment(
        "query TaskevalPullRequest($owner: String!, $name: String!, $number: Int!, "
        f"$page: Int!, $inner: Int!, $parents: Int!, $suites: Int!, $timeline: Int!, "
        f"$config: String!{flags}) {{ "
        f"{_RATE} repository(owner: $owner, name: $name) {{ nameWithOwner url "
        "defaultBranchRef { name } "
        "config: object(expression: $config) { __typename ... on Blob { text isBinary "
        "isTruncated byteSize } } "
        f"pullRequest(number: $number) {{ {_PULL_FIELDS} {conns} {head} "
        "} } }"
    )


def page_query(conn: Conn) -> str:
    """The query for the next page of ``conn`` on the object ``$id``."""
    body = conn.selection("$page", "$after")
    return _with_fragment(
        f"query TaskevalPage($id: ID!, $page: Int!{_declare(body)}, $after: String!) {{ {_RATE} "
        f"node(id: $id) {{ ... on {conn.owner} {{ {body} }} }} }}"
    )


# The batch query's page sizes. GitHub charges a connection one request per node of the
# connections around it, so only connections nested in another's nodes cost by their size:
# the flat ones (labels, reviews, comments, files...) are read 100 at a time for one request
# each, the commits (whose parents nest) and review threads (whose comments nest) 20 at a time,
# and 5 check suites: about 56 requests, 0.56 points, per PR, against 130 for ``pull_query``.
# A PR with more (commits, threads, suites) pages them to their end as a single read does.
BATCH_SIZES: Final[Mapping[str, int]] = {"page": NEXT_PAGE, "commits": 20, "threads": 20,
                                         "inner": FIRST_PAGE, "parents": 2, "suites": 5}
_BATCH_VARS: Final[Mapping[str, str]] = {"commits": "$commits", "reviewThreads": "$threads"}


def alias(number: int) -> str:
    return f"pr{number}"


def pulls_query(numbers: list[int]) -> str:
    """One query for several PRs of one repository (``pr<N>: pullRequest(number: N)``), each
    with the selection ``pull_query`` asks of one, and the repository and config once."""
    conns = " ".join(c.selection(_BATCH_VARS.get(c.field, "$page")) for c in PULL_CONNECTIONS)
    pulls = " ".join(
        f"{alias(n)}: pullRequest(number: {int(n)}) {{ {_PULL_FIELDS} {conns} "
        f"headCommit: commits(last: 1) {{ nodes {{ commit {{ id oid {_child_sel(_SUITES)} }} }} }} }}"
        for n in numbers)
    return _with_fragment(
        "query TaskevalPullRequests($owner: String!, $name: String!, $page: Int!, "
        "$commits: Int!, $threads: Int!, $inner: Int!, $parents: Int!, $suites: Int!, "
        f"$config: String!) {{ {_RATE} repository(owner: $owner, name: $name) {{ nameWithOwner url "
        "defaultBranchRef { name } "
        "config: object(expression: $config) { __typename ... on Blob { text isBinary "
        f"isTruncated byteSize }} }} {pulls} }} }}"
    )


# A linked issue's labels, 100 a page (GitHub allows 100 labels on an issue, so one page
# normally holds them all); halved while GitHub times out, the rest paged by ``node(id:)``.
_ISSUE_LABELS: Final = f"id number labels(first: $labels) {{ {_PAGE_INFO} nodes {{ name }} }}"
LABEL_CONNECTIONS: Final[Mapping[str, Conn]] = {
    kind: Conn("labels", kind, "name", "linked_issues") for kind in ("Issue", "PullRequest")}


def issue_alias(index: int) -> str:
    return f"i{index}"


def issues_query(numbers: list[int]) -> str:
    """One query for the labels of several issues of one repository
    (``i<k>: issueOrPullRequest(number: N)``: REST's ``GET /issues/{n}`` answers a PR's number
    too, so this does). A label connection is one request per issue: 1 point up to 150."""
    issues = " ".join(
        f"{issue_alias(k)}: issueOrPullRequest(number: {int(n)}) {{ __typename "
        f"... on Issue {{ {_ISSUE_LABELS} }} ... on PullRequest {{ {_ISSUE_LABELS} }} }}"
        for k, n in enumerate(numbers))
    return ("query TaskevalLinkedIssues($owner: String!, $name: String!, $labels: Int!) { "
            f"{_RATE} repository(owner: $owner, name: $name) {{ {issues} }} }}")


def every_connection() -> Iterator[Conn]:
    """Every connection the collector may page (the tests validate each one's query)."""
    stack = [*PULL_CONNECTIONS, _SUITES, *LABEL_CONNECTIONS.values()]
    while stack:
        conn = stack.pop(0)
        yield conn
        stack.extend(child for _, child in conn.children)


def every_query() -> list[str]:
    """Every query text this module can send."""
    return [pull_query(), pulls_query([1, 2]), issues_query([1, 2]),
            *(page_query(c) for c in every_connection())]


# --------------------------------------------------------------------------------- the reader


