"""Raw data collected from GitHub for one pull request, before any bounding or scoring.

This is the seam between collection (``taskeval.github``) and the evidence bundle
(``taskeval.evidence``): collection fills these models from REST or GraphQL answers and nothing else; the
bundle builder reads them and never calls GitHub. Field names follow GitHub's REST names so that a
reader can map them back to the documented payloads. Large text (bodies, messages, check output) is
kept whole here; it is bounded when the bundle is built, and this object is never stored.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class _Raw(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class RawUser(_Raw):
    login: str
    type: str = "User"  # "User", "Bot", "Organization" as GitHub reports it

    @property
    def is_bot(self) -> bool:
        return self.type == "Bot" or self.login.endswith("[bot]")


class RawPullRequest(_Raw):
    number: int
    title: str
    body: str = ""
    state: str  # "open" | "closed"
    draft: bool = False
    merged: bool = False
    user: RawUser
    author_association: str = "NONE"
    labels: list[str] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime | None = None
    closed_at: datetime | None = None
    merged_at: datetime | None = None
    merged_by: RawUser | None = None
    merge_commit_sha: str | None = None
    head_sha: str
    head_ref: str
    head_repo: str | None = None  # full name of the head repository (differs for forks)
    base_ref: str
    additions: int = 0
    deletions: int = 0
    changed_files: int = 0
    commits: int = 0  # GitHub's own count; may exceed the commits it lists (250 max)
    comments: int = 0
    review_comments: int = 0
    html_url: str
    # What agent attribution reads (taskeval.agents): the App that opened the PR, if any (its
    # slug or, without one, its name; GitHub reports it on the PR's issue object, so collection
    # fills it from there), and
    # the people GitHub lists as assignees and requested reviewers.
    performed_via_github_app: str | None = None
    assignees: list[RawUser] = Field(default_factory=list)
    requested_reviewers: list[RawUser] = Field(default_factory=list)


class RawCommit(_Raw):
    sha: str
    message: str
    author_login: str | None = None
    author_type: str | None = None
    author_name: str | None = None
    author_email: str | None = None
    authored_at: datetime | None = None
    committer_login: str | None = None
    committer_name: str | None = None
    committer_email: str | None = None
    committed_at: datetime | None = None
    verified: bool = False
    verification_reason: str | None = None
    parents: list[str] = Field(default_factory=list)
    html_url: str | None = None


class RawReview(_Raw):
    id: int
    user: RawUser | None = None  # None for a deleted ("ghost") account
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
    body: str = ""
    submitted_at: datetime | None = None
    commit_id: str | None = None
    author_association: str = "NONE"
    html_url: str | None = None


class RawReviewComment(_Raw):
    id: int
    user: RawUser | None = None
    body: str = ""
    path: str | None = None
    created_at: datetime | None = None
    in_reply_to_id: int | None = None
    html_url: str | None = None


class RawIssueComment(_Raw):
    id: int
    user: RawUser | None = None
    body: str = ""
    created_at: datetime | None = None
    author_association: str = "NONE"
    html_url: str | None = None


class RawFile(_Raw):
    filename: str
    status: str  # added | removed | modified | renamed | copied | changed | unchanged
    additions: int = 0
    deletions: int = 0
    changes: int = 0
    previous_filename: str | None = None


class RawCheckRun(_Raw):
    id: int
    name: str
    status: str  # queued | in_progress | completed | ...
    # success | failure | neutral | cancelled | skipped | timed_out | action_required | stale
    conclusion: str | None = None
    head_sha: str
    started_at: datetime | None = None
    completed_at: datetime | None = None
    app_slug: str | None = None
    output_title: str | None = None
    output_summary: str | None = None
    output_text: str | None = None
    html_url: str | None = None


class RawWorkflowRun(_Raw):
    id: int
    name: str | None = None
    workflow_id: int | None = None
    head_sha: str
    head_branch: str | None = None
    event: str | None = None
    status: str | None = None
    conclusion: str | None = None
    run_attempt: int = 1
    run_number: int | None = None
    created_at: datetime | None = None
    run_started_at: datetime | None = None
    updated_at: datetime | None = None
    actor: str | None = None
    triggering_actor: str | None = None
    html_url: str | None = None


class RawTimelineEvent(_Raw):
    """One entry of ``GET /repos/{o}/{r}/issues/{n}/timeline``, in GitHub's documented shape, or
    the same event read from GraphQL's ``timelineItems`` (``taskeval.github.graphql.timeline``).

    Most events carry ``node_id`` (GitHub's global node id, which GraphQL calls ``id``: the key
    of the event's evidence ID), ``actor``, ``created_at`` and sometimes ``commit_id``;
    ``committed`` entries carry ``sha`` and their own author/committer dates instead (keyed by the
    SHA); ``reviewed`` entries carry ``user``, ``state`` and ``submitted_at``;
    ``cross-referenced`` entries carry ``source.issue`` (the issue or PR that mentioned this one),
    flattened here into ``source_*``, and no node id over REST (keyed by kind, source and time).
    REST's numeric event ``id`` is not kept: GraphQL has no such id, and both transports fill
    this model alike.
    """

    event: str
    node_id: str | None = None  # None where REST gives none (``vocabulary.EVENTS_WITHOUT_NODE_ID``)
    actor: RawUser | None = None
    created_at: datetime | None = None
    commit_id: str | None = None
    state: str | None = None  # reviewed: the review state
    label: str | None = None
    assignee: str | None = None
    source_repository: str | None = None  # cross-referenced: owner/name of the mentioning issue
    source_number: int | None = None
    source_is_pull: bool = False
    source_state: str | None = None
    source_author: str | None = None
    source_created_at: datetime | None = None
    source_title: str | None = None


class RawLinkedIssue(_Raw):
    """An issue the PR's text links (``issue:<n>`` in the bundle), read for its labels: the
    third source of the PR's task type (``taskeval.tasktypes``). ``GET /issues/{n}`` answers a
    PR number with the PR's issue object, so a linked "issue" may be a PR (``is_pull``); its
    labels count the same, since they name the kind of work just as an issue's do."""

    number: int
    labels: list[str] = Field(default_factory=list)  # sorted, so both transports agree
    is_pull: bool = False


class CollectionIssue(_Raw):
    """A part of the evidence that could not be fetched, and why (e.g. 403 without `checks: read`)."""

    # issue | commits | reviews | review_comments | issue_comments | timeline | files | check_runs
    # | workflow_runs | config | linked_issues
    resource: str
    status: int | None = None  # HTTP status when there was one
    message: str


class OwnComment(_Raw):
    """One taskeval comment the credentials wrote (marker and ``viewerDidAuthor``)."""

    node_id: str  # GraphQL's ``id``, which its mutations take
    id: int  # the REST id


class CommentSeed(_Raw):
    """What the GraphQL read already holds for posting the evaluation comment: the PR's node id,
    and the marker comments GitHub says the credentials themselves wrote (``viewerDidAuthor``),
    oldest first, out of every conversation comment (set only when all of them were read)."""

    pull_node_id: str
    own: list[OwnComment] = Field(default_factory=list)
    # The budgets left after the collection and what it cost, for ``writes.comment_over_graphql``
    # (None: GitHub did not say).
    rest_remaining: int | None = None
    graphql_remaining: int | None = None
    rest_cost: int = 0
    graphql_cost: int = 0


class RawCollection(_Raw):
    """Everything collection gathered for one PR."""

    repository: str  # owner/name
    html_base: str = "https://github.com"  # web URL base, for links in the report
    default_branch: str | None = None
    pull: RawPullRequest
    commits: list[RawCommit] = Field(default_factory=list)
    reviews: list[RawReview] = Field(default_factory=list)
    review_comments: list[RawReviewComment] = Field(default_factory=list)
    issue_comments: list[RawIssueComment] = Field(default_factory=list)
    files: list[RawFile] = Field(default_factory=list)
    check_runs: list[RawCheckRun] = Field(default_factory=list)
    workflow_runs: list[RawWorkflowRun] = Field(default_factory=list)
    # The issue timeline; None when it was not collected (older collections) or could not be
    # read (then ``issues`` says why), [] when GitHub listed no event.
    timeline: list[RawTimelineEvent] | None = None
    config_text: str | None = None  # .github/taskeval.yml on the default branch, if any
    # The linked issues read for their labels (``evidence.issues_to_read``: same repository,
    # closing links first, at most three), in that order; one that could not be read is a gap
    # in ``issues`` (resource ``linked_issues``) and is not listed here.
    linked_issues: list[RawLinkedIssue] = Field(default_factory=list)
    issues: list[CollectionIssue] = Field(default_factory=list)
    requests: int = 0  # HTTP requests this collection made (GraphQL queries included)
    # How it was collected: "rest", or "graphql" (GraphQL for most evidence, REST for what
    # GraphQL lacks; see docs/collection.md). Never part of the bundle.
    transport: str = "rest"
    graphql_queries: int = 0
    graphql_points: int = 0  # GraphQL rate-limit points spent (``rateLimit { cost }``, summed)
    graphql_remaining: int | None = None
    graphql_limit: int | None = None
    # What the caller should hear about how it was collected (a GraphQL -> REST fallback).
    notes: list[str] = Field(default_factory=list)
    rate_limit_remaining: int | None = None
    rate_limit_limit: int | None = None
    # For the comment (``writes.upsert_comment``), GraphQL collections only; never dumped, so
    # never part of a stored or compared collection.
    comment_seed: CommentSeed | None = Field(default=None, exclude=True)
