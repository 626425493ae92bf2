"""Repository configuration (``.github/taskeval.yml``), validated, with documented defaults.

A broken config never stops an evaluation: :func:`load_config` returns the defaults together with
messages that name the key and the problem, and the pipeline puts them in the result and comment.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

# HUMAN_ID, UNKNOWN_BOT_ID: what attribution answers for a PR no agent marks (re-exported here,
# where they were first defined); no agents entry may use them.
from taskeval.agent_table import BUILTIN_RULES, RESERVED_IDS, TAKEN_NAMES
from taskeval.agent_table import HUMAN_ID as HUMAN_ID
from taskeval.agent_table import UNKNOWN_BOT_ID as UNKNOWN_BOT_ID
from taskeval.models import ConfigInfo
from taskeval.regex import Pattern, compile_pattern, untrusted_problem

CONFIG_PATH = ".github/taskeval.yml"
MAX_CONFIG_BYTES = 64 * 1024




class _Section(BaseModel):
    # inf/NaN would validate, then serialise as null and make a stored result unreadable.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Patterns(_Section):
    """Path globs and regexes. Globs use ``fnmatch`` semantics on the full path (``*`` crosses ``/``)."""

    test_paths: list[str] = Field(
        default=[
            "test/*", "tests/*", "*/test/*", "*/tests/*", "spec/*", "*/spec/*", "__tests__/*",
            "*/__tests__/*", "*_test.*", "*_spec.*", "test_*.py", "*/test_*.py", "*.test.*",
            "*.spec.*", "*Test.java", "*Tests.cs",
        ],
        description="Files that count as tests (common layouts of Python, JS/TS, Go, Java, .NET, Ruby).",
    )
    doc_paths: list[str] = Field(
        default=["*.md", "*.rst", "*.adoc", "*.txt", "docs/*", "doc/*", "*/docs/*", "CHANGELOG*"],
        description="Files that count as documentation.",
    )
    public_surface_paths: list[str] = Field(
        default=[
            "*/api/*", "api/*", "*.proto", "*openapi*", "*swagger*", "*/cli.*", "cli/*",
            "*/__init__.py", "*.d.ts", "action.yml", "action.yaml", "pyproject.toml",
            "package.json", "setup.py", "setup.cfg",
        ],
        description="Files whose change alters what users see: APIs, CLIs, manifests, exports.",
    )
    ignore_paths: list[str] = Field(
        default=[
            "*.lock", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock",
            "Cargo.lock", "go.sum", "*.min.js", "*.snap", "vendor/*", "dist/*",
        ],
        description="Generated or vendored files left out of change-size measures.",
    )
    commit_convention: str = Field(
        default=r"^(feat|fix|docs|style|refactor|perf|test|tests|build|ci|chore|revert)(\([\w./ -]+\))?!?: \S",
        description="Conventional Commits 1.0 subject line.",
    )
    task_trailers: list[str] = Field(
        default=["Task-Id", "Fusion-Task-Id", "Issue", "Refs", "Ticket", "Jira"],
        description="Commit trailers (``Key: value``) that link a commit to a task.",
    )
    task_id_pattern: str = Field(
        default=r"(?i:\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?|refs?)\s+(?:[\w.-]+/[\w.-]+)?#\d+\b)"
        r"|\b(?!(?:UTF|UCS|SHA|MD|ISO|IEC|RFC|CVE|CWE|AES|RSA|HTTP|TLS|SSL|PEP|ECMA|GPT|EIP|ERC|BIP|"
        r"ECDSA|HMAC|FIPS|NIST|IEEE|WCAG|RHEL|BSD|GPL|LGPL|AGPL|MPL|SPDX|BY|SA|NC|ND|GHSA|GO|ADR)-\d)"
        r"[A-Z][A-Z0-9]+-\d+\b",
        description="Task reference in the PR title or body: a closing keyword + #N, or a tracker key like "
        "ABC-123 (standards, hashes, licences and advisories such as UTF-8, SHA-256, RFC-7231, CVE-2024, EIP-1559, "
        "BSD-3, GO-2025 and architecture decision records (ADR-11) are not tasks).",
    )
    bot_logins: list[str] = Field(
        default=["dependabot[bot]", "renovate[bot]", "github-actions[bot]", "taskeval[bot]"],
        description="Accounts never counted as human reviewers or committers (any login ending in [bot] is a bot too).",
    )
    agent_logins: list[str] = Field(
        default=["Copilot", "copilot-swe-agent[bot]", "devin-ai-integration[bot]", "openai-codex[bot]", "claude[bot]"],
        description="Accounts that are AI coding agents: never counted as human reviewers or "
        "committers. Attribution names the agent from the agents table; an account listed here "
        "with no rule there is attributed to unknown-bot (add an agents entry to name it).",
    )

    @field_validator("commit_convention", "task_id_pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        problem = pattern_problem(value)
        if problem:
            raise ValueError(f"not a valid regular expression: {problem}")
        return value


_TRUSTED: Final[frozenset[str]] = frozenset({
    Patterns.model_fields["commit_convention"].default, Patterns.model_fields["task_id_pattern"].default,
    *(x for rule in BUILTIN_RULES
      for x in (*rule.co_authors, *rule.text_marks, *rule.standard_texts, *rule.standard_commits)),
})


class Thresholds(_Section):
    """Curve parameters for the deterministic signals; each default says where it comes from.

    Owned by ``taskeval.signals``: every field here is read by exactly one signal (the signal id
    is named in brackets). Half-lives are in the signal's own unit: the score halves each time the
    measured quantity grows by that much, so no value is ever a cliff.
    """

    # An infinite curve parameter is never meant, and JSON stores it as null, which would make
    # the result taskeval wrote unreadable when re-scored.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    comfortable_change_lines: int = Field(
        default=200, ge=1,
        description="[process.change_size] Changed lines up to which review is fully effective "
        "(SmartBear/Cisco study: 200-400 LOC per review; 100-200 is comfortable).",
    )
    max_change_lines: int = Field(
        default=1000, ge=2,
        description="[process.change_size] Changed lines at which the size signal reaches its "
        "floor. The fall from 100 is quadratic, steepest just past the comfortable size, so 400 "
        "lines (where the same study sees defect discovery drop) already scores about 60. Must be "
        "greater than comfortable_change_lines (set or default).",
    )
    change_size_floor: int = Field(
        default=10, ge=0, le=100,
        description="[process.change_size] Score of a change at or beyond max_change_lines: large "
        "mechanical changes are hard to review but not proof of a bad process.",
    )
    head_failing_half_life: float = Field(
        default=0.5, gt=0,
        description="[outcome.ci_head] Failing checks at the head commit per halving of the score "
        "(a pending or cancelled check counts half): one red check -> 25, two -> 6. Red CI on the "
        "shipped commit is the strongest correctness evidence a PR carries.",
    )
    merge_failing_half_life: float = Field(
        default=0.5, gt=0,
        description="[process.ci_at_merge] Checks red at merge time per halving (pending at merge "
        "counts half): merging over red CI breaks the most basic merge expectation.",
    )
    red_push_half_life: float = Field(
        default=2.0, gt=0,
        description="[agent.red_pushes] Pushes with red CI (flaky re-runs excluded) per halving: "
        "one red push -> 71, two -> 50; iterating against CI is normal, repeated red pushes are "
        "not.",
    )
    churn_ratio_zero: float = Field(
        default=0.5, gt=0, le=1,
        description="[agent.commit_churn] Share of fixup/squash commits and in-PR reverts at which "
        "the score reaches 0 (linear): when half the commits undo or patch others, the work "
        "went in circles.",
    )
    intervention_ratio_zero: float = Field(
        default=0.5, gt=0, le=1,
        description="[agent.human_intervention] Share of commits pushed by other people after the "
        "PR opened at which the score reaches 0 (linear): by then the author no longer carried "
        "the task.",
    )
    review_rounds_half_life: float = Field(
        default=2.0, gt=0,
        description="[agent.review_rounds] Human change requests per halving: one round -> 71, two "
        "-> 50; a round or two is ordinary review, more means the work kept missing the mark.",
    )
    hygiene_half_life: float = Field(
        default=1.0, gt=0,
        description="[agent.text_hygiene] Weighted text findings per halving (see leakage_weight, "
        "boilerplate_weight).",
    )
    leakage_weight: float = Field(
        default=2.0, ge=0,
        description="[agent.text_hygiene] Weight of one prompt-leakage finding: one leak -> 25, "
        "since it shows unreviewed model output shipped as PR text.",
    )
    boilerplate_weight: float = Field(
        default=0.5, ge=0,
        description="[agent.text_hygiene] Weight of one chat-boilerplate finding: one -> 71; "
        "noise, not harm.",
    )
    claims_half_life: float = Field(
        default=0.75, gt=0,
        description="[outcome.claims] Contradicted PR claims per halving: one -> 40 (failing "
        "band), two -> 16; a claim the evidence disproves misleads every reviewer.",
    )
    post_approval_half_life: float = Field(
        default=2.0, gt=0,
        description="[outcome.post_approval_changes] Commits pushed after the last human approval "
        "per halving: one small follow-up -> 71, two -> 50.",
    )
    test_ratio_half: float = Field(
        default=0.25, gt=0,
        description="[outcome.test_evidence] Test-to-source changed-line ratio that scores 50; 1:1 "
        "scores 94. Healthy codebases carry roughly 1:1 to 1:3 test-to-code ratios.",
    )
    test_leniency_lines: float = Field(
        default=10.0, gt=0,
        description="[outcome.test_evidence] Source lines per halving of the allowance for "
        "untested changes: a 3-line fix without tests still scores 81, a 50-line one 3.",
    )
    doc_ratio_half: float = Field(
        default=0.05, gt=0,
        description="[process.docs_with_surface] Doc-to-surface changed-line ratio that scores 50 "
        "(docs are terser than code: 10 doc lines for a 200-line API change score 50).",
    )
    doc_leniency_lines: float = Field(
        default=10.0, gt=0,
        description="[process.docs_with_surface] Public-surface lines per halving of the allowance "
        "for changes without docs (a 2-line version bump needs none).",
    )
    approval_half: float = Field(
        default=0.3, gt=0,
        description="[process.human_approval] Independent human approvals that score 50: 0.3 puts "
        "one approval at 90 and two at 99 (one is GitHub's usual branch-protection minimum).",
    )
    change_request_half_life: float = Field(
        default=0.5, gt=0,
        description="[process.change_requests] Change requests still standing at merge per "
        "halving: one -> 25; merging over a reviewer's objection is a process breach.",
    )
    description_half_chars: float = Field(
        default=100.0, gt=0,
        description="[process.description] Characters of real PR description that score 50; ~300 "
        "(a few sentences of what and why) scores 88.",
    )
    template_half_life: float = Field(
        default=1.0, gt=0,
        description="[process.template_filled] Unfilled PR-template findings per halving: "
        "one -> 50.",
    )
    objection_half_life: float = Field(
        default=1.0, gt=0,
        description="[agent.objections] Comments or reviews by people that the reader reads as a "
        "verdict that the work is wrong, per halving: one -> 50, two -> 25. Each is a verdict the "
        "agent did not earn a pass on.",
    )
    force_push_half_life: float = Field(
        default=1.0, gt=0,
        description="[agent.force_pushes] Force-pushes after the first human review per halving: "
        "one -> 50. A rewrite after review throws away what the reviewer read.",
    )
    agent_failure_half_life: float = Field(
        default=1.0, gt=0,
        description="[agent.own_failures] The agent's own failure or stop events per halving: "
        "one -> 50. The agent itself says its run did not finish.",
    )
    idle_grace_hours: float = Field(
        default=48.0, ge=0,
        description="[agent.idle_gaps] Hours of an agent turn (its move, after a request, red CI or "
        "an assignment) that cost nothing: an agent that answers within two days, weekend included.",
    )
    idle_half_life_hours: float = Field(
        default=120.0, gt=0,
        description="[agent.idle_gaps] Hours of an agent turn beyond the grace per halving: a week "
        "on its move scores about 64, three weeks about 11. Waiting for people is never charged.",
    )
    restart_half_life: float = Field(
        default=1.0, gt=0,
        description="[agent.restarts] Later PRs by the same author that restart this closed one "
        "per halving: one -> 50.",
    )

    @model_validator(mode="after")
    def _cross_field(self) -> Thresholds:
        # After every field, whichever of them the file sets: a rule read only when its second
        # field is given lets the first alone break it (comfortable_change_lines: 1000 against
        # the default max_change_lines of 1000).
        values = self.model_dump()
        for rule in CROSS_FIELD_RULES:
            if not rule.holds(values):
                raise PydanticCustomError(CROSS_FIELD, "{problem}",
                                          {"problem": f"{rule.fields[-1]} {rule.problem}",
                                           "fields": rule.fields})
        return self


@dataclass(frozen=True)
class CrossFieldRule:
    """A rule between thresholds. A file that breaks one keeps the rest of its settings: the
    rule's fields take their defaults (which hold every rule), and the problem is reported."""

    fields: tuple[str, ...]
    holds: Callable[[dict[str, Any]], bool]
    problem: str  # said of the last field


CROSS_FIELD: Final = "cross_field"
CROSS_FIELD_RULES: Final[tuple[CrossFieldRule, ...]] = (
    CrossFieldRule(("comfortable_change_lines", "max_change_lines"),
                   lambda v: v["max_change_lines"] > v["comfortable_change_lines"],
                   "must be greater than comfortable_change_lines"),
)


def trusted_patterns() -> frozenset[str]:
    """taskeval's own patterns: the defaults above and every pattern of the built-in agent table.
    They run on Python's ``re``; any other pattern a config gives runs on RE2 (taskeval.regex)."""
    return _TRUSTED


def pattern_problem(source: str) -> str | None:
    """Why a config pattern cannot be used, or None: taskeval's own are known good; any other
    must compile with RE2, which matches in linear time whatever the pattern."""
    if source in _TRUSTED:
        return None
    return untrusted_problem(source)


def compile_config_pattern(source: str, flags: int = 0) -> Pattern:
    """A pattern of the effective settings, compiled for matching (taskeval.regex)."""
    return compile_pattern(source, flags, _TRUSTED)


def _threshold_owners() -> dict[str, str | None]:
    import re

    owner = re.compile(r"\[([\w.]+)\]")
    found = {name: owner.match(field.description or "") for name, field in Thresholds.model_fields.items()}
    return {name: match.group(1) if match else None for name, match in found.items()}


# The signal that reads each threshold, from the bracket its description opens with. Re-scoring
# measures again only the signals whose thresholds changed (taskeval.signals.stale_signals);
# tests/test_rescore_keep.py checks this table against what every signal reads.
THRESHOLD_OWNERS: Final[dict[str, str | None]] = _threshold_owners()


AGENT_ID_PATTERN = r"^[a-z0-9][a-z0-9-]{0,39}$"
OperatorSourceName = Literal["author", "assignee", "reviewer", "requested-by", "co-author", "work-started"]


class AgentRuleConfig(_Section):
    """One ``agents:`` entry: adds an agent, or overrides the fields it names of a built-in one
    (see taskeval/agent_table.py for the built-in table, taskeval/agents.py for how attribution uses
    each field)."""

    id: str = Field(pattern=AGENT_ID_PATTERN,
                    description="Agent id (lower case, digits, '-'); a built-in id overrides that agent.")
    name: str | None = Field(default=None, min_length=1, max_length=80,
                             description="Display name of a new agent (required), shown on this repository's "
                             "PRs; shared views (leaderboard, dashboard rows) list it by its id. A built-in "
                             "agent keeps its own name, and no new agent takes one taskeval gives.")
    enabled: bool = Field(default=True, description="false drops a built-in agent from attribution.")
    logins: list[str] | None = Field(
        default=None, description="The agent's own accounts (PR author, commit author/committer): certain.")
    apps: list[str] | None = Field(
        default=None, description="GitHub App slugs a PR was opened through (performed_via_github_app, "
                                  "which GitHub reports on the PR's issue object, GET /issues/{n}; "
                                  "the App's name when it has no slug): certain.")
    branch_prefixes: list[str] | None = Field(default=None, description="Head branch prefixes: likely.")
    co_authors: list[str] | None = Field(
        default=None, description="Regexes over Co-authored-by values (\"Name <email>\"): likely.")
    text_marks: list[str] | None = Field(
        default=None, description="Regexes over the PR description and commit messages: likely.")
    operator: list[OperatorSourceName] | None = Field(
        default=None, description="Where the person who ran the agent is found, in order: author, "
        "assignee, reviewer (a requested reviewer), requested-by (a 'Requested by' line), co-author, "
        "work-started (the actor of a work_events timeline event).")
    work_events: list[str] | None = Field(
        default=None, description="Timeline events whose actor is the operator (Copilot: copilot_work_started).")
    standard_texts: list[str] | None = Field(
        default=None, description="Regexes of text the agent writes by design: never leakage or boilerplate.")
    standard_commits: list[str] | None = Field(
        default=None, description="Regexes of commit subjects the agent writes by design (e.g. 'Initial plan').")

    @field_validator("co_authors", "text_marks", "standard_texts", "standard_commits")
    @classmethod
    def _regexes(cls, value: list[str] | None) -> list[str] | None:
        for pattern in value or []:
            problem = pattern_problem(pattern)
            if problem:
                raise ValueError(f"{pattern!r} is not a valid regular expression: {problem}")
        return value

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_IDS:
            raise ValueError(f"{value!r} is reserved for PRs no agent marks")
        return value


TaskTypeTarget = Literal["feature", "fix", "docs", "refactor", "test", "chore", "ci", "deps", "none"]


class TaskTypesConfig(_Section):
    """``task_types:``: entries added to or overriding the built-in tables of taskeval/tasktypes.py
    (listed in the task types section below); ``none`` removes a built-in entry."""

    prefixes: dict[str, TaskTypeTarget] = Field(
        default_factory=dict,
        description="Title prefixes -> task type: a Conventional Commits type (feat in 'feat(ui)!: ...'), "
        "a bracketed word ([Docs]) or a gitmoji (🐛 or :bug:). Compared in lower case.")
    scopes: dict[str, TaskTypeTarget] = Field(
        default_factory=dict,
        description="Conventional Commits scopes that decide the type whatever the prefix says "
        "(deps in 'chore(deps): ...').")
    labels: dict[str, TaskTypeTarget] = Field(
        default_factory=dict,
        description="PR and linked-issue labels -> task type. Compared in lower case without emoji, "
        "surrounding punctuation or a 'type:'/'kind/' prefix ('Type: Bug' is 'bug').")

    @field_validator("prefixes", "scopes", "labels")
    @classmethod
    def _keys(cls, value: dict[str, TaskTypeTarget]) -> dict[str, TaskTypeTarget]:
        for key in value:
            if not key.strip() or len(key) > 60:
                raise ValueError(f"{key!r}: a key must be 1 to 60 characters")
        return value


class Settings(_Section):
    """The whole config file."""

    version: int = Field(default=1, description="Config format version.")
    patterns: Patterns = Field(default_factory=Patterns, description="Paths, regexes and accounts.")
    thresholds: Thresholds = Field(
        default_factory=Thresholds, description="Curve parameters of the deterministic signals."
    )
    signal_weights: dict[str, float] = Field(
        default_factory=dict,
        description="Per-signal weight overrides by signal id (0 turns a signal off).",
    )
    disabled_signals: list[str] = Field(default_factory=list, description="Signal ids to skip.")
    ai: bool = Field(default=True, description="Let the AI judge supply its advisory 30 % share.")
    agents: list[AgentRuleConfig] = Field(
        default_factory=list,
        description="Agent attribution rules added to or overriding the built-in table "
        "(entry keys in the agents section below).",
    )
    # Left out of the stored settings (and the config hash) while empty, so a result stored
    # before task types keeps its config hash when it is re-scored.
    task_types: TaskTypesConfig = Field(
        default_factory=TaskTypesConfig, exclude_if=lambda v: not (v.prefixes or v.scopes or v.labels),
        description="Task type rules (title prefixes, scopes, labels) added to or overriding the built-in "
        "tables (Built-in task types below).",
    )
    max_prompt_chars: int = Field(
        default=60_000, ge=12_000,
        description="Upper bound on the judge prompt in characters "
        "(instructions and PR metadata alone take up to ~11,000).",
    )

    @field_validator("agents")
    @classmethod
    def _agents(cls, value: list[AgentRuleConfig]) -> list[AgentRuleConfig]:
        builtin = {r.id: r.name for r in BUILTIN_RULES}
        seen: set[str] = set()
        for entry in value:
            if entry.id in seen:
                raise ValueError(f"agent {entry.id!r} is listed twice")
            seen.add(entry.id)
            # Results feed views shared across repositories by agent: a repository names only
            # agents of its own, and never with a name taskeval gives (taskeval.agent_table).
            if entry.id in builtin and "name" in entry.model_fields_set:
                raise ValueError(f"agent {entry.id!r} is built in and keeps its name "
                                 f"{builtin[entry.id]!r}: leave out name (a repository names only its own agents)")
            if entry.id not in builtin and entry.enabled and not entry.name:
                raise ValueError(f"new agent {entry.id!r} needs a name")
            if entry.id not in builtin and entry.name and " ".join(entry.name.casefold().split()) in TAKEN_NAMES:
                raise ValueError(f"new agent {entry.id!r} cannot be named {entry.name!r}: taskeval gives that "
                                 "name to an agent of its own")
        return value

    @field_validator("signal_weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        for key, weight in value.items():
            if not 0 <= weight <= 10:  # also rejects NaN
                raise ValueError(f"weight of {key!r} must be within 0..10, got {weight}")
        return value

    def digest(self) -> str:
        data = self.model_dump(mode="json")
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class LoadedConfig:
    settings: Settings
    source: str  # "defaults" | "repo:.github/taskeval.yml" | "file:PATH"
    errors: list[str] = field(default_factory=list)

    @functools.cached_property
    def info(self) -> ConfigInfo:
        """What a result records of its config. Built once per config, not once per result: a
        batch re-score shares one config over thousands of results."""
        return ConfigInfo(
            source=self.source, errors=self.errors, hash=self.settings.digest(),
            settings=self.settings.model_dump(mode="json"),
        )


_STORED_CONFIGS: dict[bytes, tuple[Any, LoadedConfig]] = {}


def stored_config(config: Any) -> LoadedConfig:
    """A stored result's config (its ``config``: a :class:`ConfigInfo`), validated once for every
    result stored with the same one (a team's history holds a handful of configs, not one per
    PR); raises ``ValidationError``. The key is orjson's text of the
    config; the equality check separates what that text does not (NaN and null are both null)."""
    try:
        key: bytes | None = orjson.dumps(config)
    except orjson.JSONEncodeError:
        key = None  # an integer beyond 64 bits: not cached, validation names the field
    hit = _STORED_CONFIGS.get(key) if key is not None else None
    if hit is not None and hit[0] == config:
        return hit[1]
    info = ConfigInfo.model_validate(config)
    loaded = LoadedConfig(Settings.model_validate(info.settings), info.source, info.errors)
    if key is not None:
        if len(_STORED_CONFIGS) >= 64:
            _STORED_CONFIGS.clear()
        _STORED_CONFIGS[key] = (config, loaded)
    return loaded


def field_location(loc: tuple[int | str, ...]) -> str:
    """A validation error's location as one line: "patterns.test_paths.0". A key holding a line
    break or another control character is shown quoted and escaped, so the report stays one line
    and says which key it was."""
    parts = (str(p) if str(p).isprintable() else repr(str(p)) for p in loc)
    return ".".join(parts) or "(top level)"


def _describe(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = field_location(err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        out.append(f"{loc}: {msg}")
    return out


def parse_config(text: str | None, source: str) -> LoadedConfig:
    """Parse and validate config text; on any problem, defaults plus messages naming the key."""
    if text is None or not text.strip():
        return LoadedConfig(Settings(), "defaults" if text is None else source)
    if len(text.encode()) > MAX_CONFIG_BYTES:
        return LoadedConfig(Settings(), source, [f"{source}: larger than {MAX_CONFIG_BYTES} bytes"])
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        return LoadedConfig(Settings(), source, [f"{source}: not valid YAML: nested too deeply"])
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return LoadedConfig(Settings(), source, [f"{source}: not valid YAML{where}: {problem}"])
    if data is None:
        return LoadedConfig(Settings(), source)
    if not isinstance(data, dict):
        return LoadedConfig(Settings(), source, [f"{source}: top level must be a mapping, got {type(data).__name__}"])
    notes: list[str] = []
    for _ in range(len(CROSS_FIELD_RULES) + 1):
        try:
            return LoadedConfig(Settings.model_validate(data), source, notes)
        except ValidationError as exc:
            broken = _cross_field_only(exc)
            if broken is None:  # anything else wrong: nothing of the file applies
                return LoadedConfig(Settings(), source, [f"{source}: {m}" for m in _describe(exc)])
            data, more = _without_pairs(data, broken)
            notes += [f"{source}: {m}" for m in more]
    return LoadedConfig(Settings(), source, notes)


def _cross_field_only(exc: ValidationError) -> list[tuple[str, ...]] | None:
    """The fields of each broken cross-field rule, when those are all that is wrong."""
    found = []
    for err in exc.errors():
        if err["type"] != CROSS_FIELD or err["loc"] != ("thresholds",):
            return None
        found.append(tuple((err.get("ctx") or {})["fields"]))
    return found or None


def _without_pairs(data: dict[str, Any], broken: list[tuple[str, ...]]) -> tuple[dict[str, Any], list[str]]:
    """``data`` with the fields of each broken rule left to their defaults, and what to report."""
    section = dict(data["thresholds"])
    defaults = Thresholds()
    notes = []
    for fields in broken:
        rule = next(r for r in CROSS_FIELD_RULES if r.fields == fields)
        given = ", ".join(f"{name} {section[name]!r}" if name in section else
                          f"{name} {getattr(defaults, name)!r} (default)" for name in fields)
        notes.append(f"thresholds.{fields[-1]}: {rule.problem} (got {given}); "
                     f"the defaults of {' and '.join(fields)} are used")
        for name in fields:
            section.pop(name, None)
    return {**data, "thresholds": section}, notes


def load_config(repo_text: str | None, override: Path | None = None) -> LoadedConfig:
    """A local ``--config`` file wins over the repository's file; a missing local file is an error."""
    if override is not None:
        try:
            text = override.read_text(encoding="utf-8")
        except OSError as exc:
            return LoadedConfig(Settings(), f"file:{override}", [f"file:{override}: cannot read: {exc.strerror}"])
        return parse_config(text, f"file:{override}")
    return parse_config(repo_text, f"repo:{CONFIG_PATH}")
