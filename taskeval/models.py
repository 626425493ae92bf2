"""Pydantic models of the evidence bundle, signals, judge output and the stored result.

JSON keys are camelCase (the contract's persisted payload); Python attributes are snake_case.
Everything here is what gets stored, so it holds bounded excerpts and drill-down facts only.
"""

from __future__ import annotations

import functools
import hashlib
from types import UnionType
from typing import Annotated, Any, Final, Literal, NamedTuple, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from taskeval.canonical import dumps_canonical, plain_float
from taskeval.contract import CATEGORIES, Band, Category

# The bundle's schema version, which a result carries as its own (``EvaluationResult``): what
# changed in each is in ``SCHEMA_VERSIONS`` and docs/collection.md. A stored bundle keeps the
# version it was made with (and its evidence IDs); only a new evaluation makes the newest.
SCHEMA_VERSION = "2"
SCHEMA_VERSIONS: Final[dict[str, str]] = {
    "1": "timeline events are keyed by REST's numeric event id: event:<id>",
    "2": "timeline events are keyed by GitHub's global node id (REST's node_id, GraphQL's id), "
         "the same through either API: event:<node id>; a commit's by its SHA "
         "(event:committed-<sha7>), and events REST gives no node id by kind, source and time "
         "(event:cross-referenced-<owner/repo#n>-<time>)",
}
_SCHEMA_DOC: Final = ("The evidence bundle's schema version (a result carries its bundle's). "
                      + "; ".join(f"{v}: {what}" for v, what in SCHEMA_VERSIONS.items())
                      + ". A bundle that names none is version 1.")

GroupName = Literal[
    "taskMetadata",
    "commits",
    "workflow",
    "reviews",
    "documents",
    "taskActivity",
    "agentLogs",
    "runAudit",
]
GROUP_ORDER: tuple[GroupName, ...] = get_args(GroupName)  # the contract's order, as listed above
GROUP_CAPS: dict[GroupName, int] = {g: (20 if g == "commits" else 25) for g in GROUP_ORDER}

Score = Annotated[int, Field(ge=0, le=100, strict=True)]
# Counts GitHub reports; the bound keeps an edited file from overflowing float arithmetic in signals.
Count = Annotated[int, Field(ge=0, le=10**9)]
Scalar = str | int | float | bool | None
# Validated as scalars; written as they are: JSON types already, so the union's per-value
# serializer (a third of a bundle's serialisation time) has nothing to choose.
ItemFacts = Annotated[dict[str, Scalar], PlainSerializer(dict, return_type=Any, when_used="json")]


class Model(BaseModel):
    """Base: camelCase JSON, populate by name, unknown keys rejected so bad files name the field."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_assignment=True
    )

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2)


# --------------------------------------------------------------------------- evidence bundle


class EvidenceItem(Model):
    id: str  # citable evidence ID, e.g. "commit:1a2b3c4", "check:ci/test", "review:8812"
    kind: str
    label: str  # one short line naming the thing
    excerpt: str | None = None  # <= 500 chars, "… [truncated]" when cut
    url: str | None = None
    facts: ItemFacts = Field(default_factory=dict)  # drill-down: sha, status, timings, ...


class EvidenceGroup(Model):
    source: GroupName
    items: list[EvidenceItem] = Field(default_factory=list)
    total: Count
    omitted: Count

    @model_validator(mode="after")
    def _caps(self) -> EvidenceGroup:
        cap = GROUP_CAPS[self.source]
        if len(self.items) > cap:
            raise ValueError(f"group {self.source} holds {len(self.items)} items; cap is {cap}")
        if self.omitted != max(0, self.total - len(self.items)):
            raise ValueError(f"group {self.source}: omitted must equal total - len(items)")
        return self


class FileEntry(Model):
    """One changed file, without its patch."""

    path: str
    status: str
    additions: Count = 0
    deletions: Count = 0
    previous_path: str | None = None


class CommitEntry(Model):
    """One PR commit, compact: enough for config-dependent signals to re-run offline."""

    sha: str
    subject: str  # <= 160 chars
    message_excerpt: str = ""  # <= 500 chars
    trailers: dict[str, str] = Field(default_factory=dict)
    author_login: str | None = None
    author_is_bot: bool = False
    committer_login: str | None = None
    authored_at: str | None = None
    committed_at: str | None = None
    verified: bool = False
    is_merge: bool = False
    # The git identity (taskeval.signals.identity reads it when GitHub links no account): the
    # author's git name when it says more than the login (every commit whose author has no
    # account, and a linked one whose name is not its login: the names the evidence pairs with
    # logins); the author's e-mail and the committer's name only when the author has no account,
    # and the committer's e-mail only when neither has one (never a linked account's e-mail).
    # Left out of the JSON while None, so a bundle stored before them keeps its canonical form
    # and its bundleHash.
    author_name: str | None = Field(default=None, exclude_if=lambda v: v is None)
    author_email: str | None = Field(default=None, exclude_if=lambda v: v is None)
    committer_name: str | None = Field(default=None, exclude_if=lambda v: v is None)
    committer_email: str | None = Field(default=None, exclude_if=lambda v: v is None)


class ReviewEntry(Model):
    id: int
    author: str | None = None
    author_is_bot: bool = False
    state: str
    submitted_at: str | None = None
    commit_id: str | None = None
    body_excerpt: str = ""


class CheckEntry(Model):
    id: int
    name: str
    status: str
    conclusion: str | None = None
    head_sha: str
    app: str | None = None
    started_at: str | None = None
    completed_at: str | None = None


class RunEntry(Model):
    id: int
    name: str | None = None
    workflow_id: int | None = None
    head_sha: str
    event: str | None = None
    status: str | None = None
    conclusion: str | None = None
    attempt: Annotated[int, Field(ge=1, le=10**6)] = 1
    created_at: str | None = None
    started_at: str | None = None  # start of the latest attempt (run_started_at)
    updated_at: str | None = None


class CommentEntry(Model):
    id: int
    author: str | None = None
    author_is_bot: bool = False
    kind: Literal["issue", "review"] = "issue"
    created_at: str | None = None
    body_excerpt: str = ""


def _unset(value: object) -> bool:
    return value is None or value is False


def _empty(value: object) -> bool:
    return value is None or value == []


# Left out of the JSON while unset (None, False): a long timeline stays small when stored.
_Detail = Field(default=None, exclude_if=_unset)
_Flag = Field(default=False, exclude_if=_unset)


class TimelineEntry(Model):
    """One issue-timeline event, compact (no bodies): what the timeline signals read."""

    # The citable evidence ID of the event: "event:<node id>" (schema version 2; see
    # ``SCHEMA_VERSIONS``), "event:<REST event id>" in bundles of version 1.
    id: str = Field(description="The event's evidence ID: event:<GitHub node id> (schema "
                    "version 2), event:<REST event id> (version 1); see schemaVersion.")
    event: str  # GitHub's event name, e.g. head_ref_force_pushed, copilot_work_finished_failure
    actor: str | None = _Detail
    actor_is_bot: bool = _Flag
    created_at: str | None = _Detail
    commit_id: str | None = _Detail
    state: str | None = _Detail  # reviewed: the review state
    source: str | None = _Detail  # cross-referenced: "owner/repo#n" of the mentioning issue or PR
    source_is_pull: bool = _Flag
    source_state: str | None = _Detail
    source_author: str | None = _Detail
    source_created_at: str | None = _Detail
    # Added with the turns (taskeval.turns): who was assigned, which label was put on or taken
    # off. Left out while unset, so a bundle stored before them keeps its bundleHash.
    assignee: str | None = _Detail
    label: str | None = _Detail


class LinkedIssueEntry(Model):
    """A linked issue collection read (``issue:<n>`` in taskMetadata), with its labels: the
    third source of the PR's task type, so a re-scored bundle types the PR as it was typed."""

    number: int
    labels: list[str] = Field(default_factory=list)  # sorted
    is_pull: bool = _Flag  # GitHub's issue object for this number is a pull request's


class PullFacts(Model):
    number: int
    title: str
    body: str = ""  # bounded (see evidence.BODY_LIMIT)
    author: str
    author_is_bot: bool = False
    author_association: str = "NONE"
    labels: list[str] = Field(default_factory=list)
    state: str
    draft: bool = False
    merged: bool = False
    merged_by: str | None = None
    created_at: str
    closed_at: str | None = None
    merged_at: str | None = None
    head_sha: str
    head_ref: str
    base_ref: str
    merge_commit_sha: str | None = None
    is_fork: bool = False
    additions: Count = 0
    deletions: Count = 0
    changed_files: Count = 0
    commit_count: Count = 0  # GitHub's count; may exceed len(commits)
    url: str
    # Read by agent attribution (taskeval.agents); empty in bundles stored before they existed.
    # Fields added after bundles were first stored are left out of the JSON while empty, so an
    # older bundle keeps its canonical form and its bundleHash.
    via_app: str | None = Field(default=None, exclude_if=_empty)  # performed_via_github_app slug
    assignees: list[str] = Field(default_factory=list, exclude_if=_empty)
    requested_reviewers: list[str] = Field(default_factory=list, exclude_if=_empty)  # in GitHub's order


class BundleFacts(Model):
    """Aggregate, config-independent facts: scoring reads these and never needs GitHub again.

    Lists are complete up to GitHub's own listing limits (250 commits, 3,000 files), not the
    evidence caps, so counts stay exact; every entry is compact (no patches, no logs).
    """

    pull: PullFacts
    commits: list[CommitEntry] = Field(default_factory=list)
    files: list[FileEntry] = Field(default_factory=list)
    reviews: list[ReviewEntry] = Field(default_factory=list)
    comments: list[CommentEntry] = Field(default_factory=list)
    checks: list[CheckEntry] = Field(default_factory=list)
    runs: list[RunEntry] = Field(default_factory=list)
    unavailable: list[str] = Field(default_factory=list)  # resources that could not be fetched
    # The issue timeline; None when it was not collected (bundles stored before it was) or could
    # not be read ("timeline" in ``unavailable``). Left out of the JSON while None, so an older
    # bundle keeps its canonical form and its bundleHash.
    timeline: list[TimelineEntry] | None = Field(default=None, exclude_if=lambda v: v is None)
    # The linked issues read for their labels, in reading order (closing links first); one that
    # could not be read is "linked_issues" in ``unavailable``. Left out of the JSON while empty
    # (every bundle stored before them, and every PR without a same-repository link), so an
    # older bundle keeps its canonical form and its bundleHash.
    linked_issues: list[LinkedIssueEntry] = Field(default_factory=list, exclude_if=_empty)


class EvidenceBundle(Model):
    schema_version: str = Field(default=SCHEMA_VERSION, description=_SCHEMA_DOC)
    repository: str
    pull_request: int
    head_sha: str
    html_base: str = "https://github.com"
    groups: list[EvidenceGroup]
    facts: BundleFacts

    @model_validator(mode="before")
    @classmethod
    def _unversioned_is_1(cls, data: Any) -> Any:
        """A bundle that names no schema version predates version 2 (taskeval always writes it;
        a hand-made file may not): read as version 1, as it was read when it was made. Code
        that builds a bundle names the version (``evidence.build_bundle``)."""
        if isinstance(data, dict) and "schemaVersion" not in data and "schema_version" not in data:
            return {**data, "schemaVersion": "1"}
        return data

    @model_validator(mode="after")
    def _order(self) -> EvidenceBundle:
        names = tuple(g.source for g in self.groups)
        if names != GROUP_ORDER:
            raise ValueError(f"groups must be exactly {list(GROUP_ORDER)} in order, got {list(names)}")
        return self

    def json_form(self) -> dict[str, Any]:
        """The bundle as JSON data (camelCase keys): what is stored, and what the hash is over."""
        return self.model_dump(mode="json", by_alias=True)

    def canonical_bytes(self, json_form: dict[str, Any] | None = None) -> bytes:
        """What ``bundleHash`` is taken over: the JSON form with sorted keys, compact, UTF-8.
        ``json_form``: :meth:`json_form` when the caller has just made it."""
        # Item facts are the only place a bundle holds floats.
        plain = all(
            plain_float(v) for g in self.groups for item in g.items for v in item.facts.values()
            if type(v) is float
        )
        return dumps_canonical(self.json_form() if json_form is None else json_form, plain_floats=plain)

    def canonical_json(self) -> str:
        return self.canonical_bytes().decode()

    def hash(self, json_form: dict[str, Any] | None = None) -> str:
        return hashlib.sha256(self.canonical_bytes(json_form)).hexdigest()

    def evidence_ids(self) -> set[str]:
        return {item.id for group in self.groups for item in group.items}


class _Shape(NamedTuple):
    """A model's JSON keys in field order, its fields that hold models (alias, a list of them,
    their shape), and the key sequences already found in order (a long timeline repeats a few)."""

    order: tuple[str, ...]
    nested: tuple[tuple[str, bool, _Shape], ...]
    seen: set[tuple[str, ...]]


@functools.cache
def _shape(model: type[BaseModel]) -> _Shape:
    nested = []
    for name, info in model.model_fields.items():
        alias = info.alias or name
        union = get_origin(info.annotation) in (Union, UnionType)
        for kind in get_args(info.annotation) if union else (info.annotation,):
            many = get_origin(kind) is list
            inner = get_args(kind)[0] if many else kind
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                nested.append((alias, many, _shape(inner)))
    order = tuple(f.alias or n for n, f in model.model_fields.items())
    return _Shape(order, tuple(nested), {order})


def in_field_order(model: type[BaseModel], data: Any) -> bool:
    """Whether the keys of ``data`` (JSON data of ``model``) and of every model in it come in
    field order, as ``model_dump`` writes them (fields left out may be missing). Key order is
    what a content hash does not see: a file rewritten with sorted keys hashes the same."""
    try:
        return _in_order(data, _shape(model))
    except (AttributeError, TypeError):
        return False


def _in_order(data: dict[str, Any], shape: _Shape) -> bool:
    if not _keys_in_order(data, shape):
        return False
    for alias, many, inner in shape.nested:
        value = data.get(alias)
        if value is None:
            continue
        if not many:
            if not _in_order(value, inner):
                return False
        elif inner.nested:
            if not all(_in_order(v, inner) for v in value):
                return False
        elif not all(tuple(v) in inner.seen or _keys_in_order(v, inner) for v in value):
            return False  # a list of flat models (commits, runs, events): the common case, inline
    return True


def _keys_in_order(data: dict[str, Any], shape: _Shape) -> bool:
    keys = tuple(data)
    if keys in shape.seen:
        return True
    if keys != tuple(k for k in shape.order if k in data):
        return False
    if len(shape.seen) < 256:
        shape.seen.add(keys)
    return True


# --------------------------------------------------------------------------- signals and scores


class Signal(Model):
    """One deterministic measurement: what it read, what it found, what it did to the score."""

    # Scoring fills ``contribution`` on every signal of every result; the value is its own float.
    model_config = ConfigDict(validate_assignment=False)

    id: str  # e.g. "ci.head_state"
    category: Category
    name: str  # plain English
    status: Literal["ok", "inconclusive"]
    value: float | None = None  # the measured quantity (a count, a ratio, lines changed, ...)
    score: int | None = Field(default=None, ge=0, le=100)  # 0..100 on the signal's curve
    weight: float = Field(ge=0)
    contribution: float = 0.0  # points of the category's deterministic score this signal supplied
    reason: str
    evidence: list[str] = Field(default_factory=list)
    reads: list[str] = Field(default_factory=list)  # the bundle facts the signal read


class CategoryScore(Model):
    category: Category
    deterministic_score: Score
    ai_score: Score | None = None
    final_score: Score
    weight: float
    band: Band
    rationale: str
    evidence: list[str] = Field(default_factory=list)
    conclusive: bool = True
    ai_rationale: str | None = None
    ai_evidence: list[str] = Field(default_factory=list)
    ai_note: str | None = None  # why there is no AI score, when there is none
    # How much of the category's signal weight was conclusive (0..1), and of how many signals:
    # below contract.PROVISIONAL_BELOW the band is shown as provisional. None in results stored
    # before coverage existed.
    coverage: Annotated[float, Field(ge=0, le=1)] | None = None
    signals_conclusive: int | None = Field(default=None, ge=0)
    signals_total: int | None = Field(default=None, ge=0)


# --------------------------------------------------------------------------- AI judge


class JudgeCategory(BaseModel):
    """One category as the model must return it (the fixed judge output shape)."""

    model_config = ConfigDict(extra="forbid")
    category: Category
    aiScore: int = Field(ge=0, le=100)
    rationale: str
    evidence: list[str]


class JudgeOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    categories: list[JudgeCategory]


# withheld: the PR's text holds an instruction aimed at the judge, so none was asked
# (taskeval.signals.injection); the others: taskeval/judge/run.py.
JudgeStatus = Literal["ok", "off", "error", "rejected", "partial", "withheld"]


class JudgeInfo(Model):
    status: JudgeStatus = "off"
    model: str | None = None
    cached: bool = False
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    dropped_citations: list[str] = Field(default_factory=list)
    trimmed: list[str] = Field(default_factory=list)  # evidence left out of the prompt for size
    prompt_version: str | None = None


# --------------------------------------------------------------------------- result


class PullRequestRef(Model):
    number: int
    title: str
    url: str
    author: str
    merged: bool
    merged_at: str | None = None


class ConfigInfo(Model):
    source: str  # "defaults" | "repo:.github/taskeval.yml" | "file:PATH"
    errors: list[str] = Field(default_factory=list)
    hash: str
    settings: dict[str, Any] = Field(default_factory=dict)  # effective settings, for re-scoring


AgentConfidence = Literal["certain", "likely"]


class AgentAttribution(Model):
    """Which coding agent did the PR's work and who ran it (taskeval.agents explains the rules)."""

    id: str  # a rule id such as "claude-code", or "human" / "unknown-bot"
    name: str
    operator: str | None = None  # the person who ran the agent, when the evidence shows one
    confidence: AgentConfidence  # certain: the agent's own account or App; likely: marks
    evidence: list[str] = Field(default_factory=list)
    reason: str


Role = Literal["agent", "operator", "reviewer", "person", "bot", "ci"]
Whose = Literal["agent", "people"]
ClosureClass = Literal["superseded", "duplicate", "stale", "declined", "agent_failure", "withdrawn",
                       "unknown"]
# ``unknown``: who wrote some of the PR's work is unknown (no GitHub account, no git identity that
# names anyone), so neither clean nor a rescue can be told; counted apart, as provisional grades are.
RescueClass = Literal["clean", "feedback_loop", "taken_over", "unknown"]
ClosureDecider = Literal["words", "ci", "closer", "nothing"]
# Which closures count a rejection against the agent, and which are the project's own reasons
# (docs/turns.md#closure); withdrawn and unknown are neither.
AGAINST_AGENT: frozenset[ClosureClass] = frozenset({"agent_failure"})
PROJECT_REASONS: frozenset[ClosureClass] = frozenset({"superseded", "duplicate", "stale", "declined"})
Hours = Annotated[float, Field(ge=0)]


class TurnSpan(Model):
    """One stretch of the PR's life in which it was one side's move (docs/turns.md)."""

    whose: Whose
    start: str
    end: str
    hours: Hours
    rule: str  # the rule of docs/turns.md that began it
    by: Role  # the role of whoever began it
    evidence: str  # the event that began it


class Turns(Model):
    """Whose move it was, from opening to the end (merge, close, or an open PR's last activity):
    the agent's turns are what agentPerformance may charge; the people's are the team's cycle time."""

    agent_hours: Hours
    people_hours: Hours
    draft_hours: Hours
    first_human_response_hours: Hours | None = None
    rounds: int = Field(ge=0)  # times a person sent the work back to the agent
    longest_agent_turn_hours: Hours | None = None
    at_end: Whose | None = None  # whose move it was when the PR ended
    last_activity_at: str | None = None  # the last event before the end
    roles: dict[str, Role] = Field(default_factory=dict)  # login -> role
    spans: list[TurnSpan] = Field(default_factory=list)  # the first TURN_SPANS_CAP
    omitted: int = Field(default=0, ge=0)
    undated: int = Field(default=0, ge=0)  # events with no time, left out of the account
    partial: bool = False  # the timeline was not read: drafts, sessions and closers are unknown


class Closure(Model):
    """Why a closed, unmerged PR ended (docs/turns.md#closure)."""

    class_: ClosureClass = Field(alias="class")
    closed_by: str | None = None
    closed_by_role: Role | None = None
    closed_at: str | None = None
    hours_since_last_activity: Hours | None = None
    turn_at_close: Whose | None = None
    counts_against_agent: bool
    evidence: list[str] = Field(default_factory=list)
    reason: str
    # What decided the class, in the order it is weighed (docs/turns.md#closure): words stated
    # near the end, CI at the head at closing, or who closed it and after how long; absent in
    # results stored before the reader (scorer versions up to 2026.12.1).
    decided_by: ClosureDecider | None = Field(default=None, exclude_if=lambda v: v is None)


class Rescue(Model):
    """Whether a merged PR needed people to finish it (docs/turns.md#rescue)."""

    class_: RescueClass = Field(alias="class")
    rounds: int = Field(ge=0)
    # None for ``unknown``: how many of the commits were people's is not known.
    commits_by_people: int | None = Field(ge=0)
    evidence: list[str] = Field(default_factory=list)
    reason: str
    # Commits of the PR's work whose writer is unknown (docs/turns.md#who-wrote-the-commits); left
    # out of the JSON while 0, so a result stored before it keeps its form.
    unattributed_commits: int = Field(default=0, ge=0, exclude_if=lambda v: v == 0)


TaskTypeName = Literal["feature", "fix", "docs", "refactor", "test", "chore", "ci", "deps"]
TaskTypeSource = Literal["title", "label", "issue-label", "none"]


class TaskType(Model):
    """What kind of task the PR is (taskeval.tasktypes): from its title's Conventional Commits
    prefix, else its labels, else its linked issues' labels; ``unknown`` when none says."""

    type: TaskTypeName | Literal["unknown"]
    source: TaskTypeSource
    matched: list[str] = Field(default_factory=list)  # the prefix or the labels that decided it
    evidence: list[str] = Field(default_factory=list)  # the evidence items they come from
    reason: str


class EvaluationResult(Model):
    schema_version: str = Field(default=SCHEMA_VERSION, description=_SCHEMA_DOC)
    scorer_version: str
    repository: str
    pull_request: PullRequestRef
    # Results stored before attribution existed have none; re-scoring computes it.
    agent: AgentAttribution | None = None
    head_sha: str
    evaluated_at: str
    trigger: str
    overall_score: Score
    overall_band: Band
    category_scores: list[CategoryScore]
    signals: list[Signal]
    evidence: EvidenceBundle
    bundle_hash: str
    judge: JudgeInfo
    config: ConfigInfo
    warnings: list[str] = Field(default_factory=list)  # degraded parts, in plain English
    # Results stored before the turns existed have none; re-scoring computes them.
    turns: Turns | None = None
    closure: Closure | None = None  # closed without merging
    rescue: Rescue | None = None  # merged
    # Computed from the PR's title and labels at every scoring (never kept); results stored
    # before task types have none.
    task_type: TaskType | None = None

    @model_validator(mode="after")
    def _consistent(self) -> EvaluationResult:
        cats = tuple(c.category for c in self.category_scores)
        if cats != CATEGORIES:
            raise ValueError(f"categoryScores must be {list(CATEGORIES)} in order, got {list(cats)}")
        if self.bundle_hash != self.evidence.hash():
            raise ValueError("bundleHash does not match the evidence bundle")
        return self

    def category(self, name: Category) -> CategoryScore:
        return next(c for c in self.category_scores if c.category == name)
