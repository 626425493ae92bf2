"""Task types: what kind of work a PR is (feature, fix, docs, refactor, test, chore, ci, deps).

The AIDev studies find that the kind of task explains more of an agent PR's fate than the agent
does (documentation PRs merge far more often than features), so comparisons need it. It is read,
in this order, from

1. the title's prefix: a Conventional Commits type (``feat(api)!: ...``, ``fix: ...``), a bracketed
   word (``[Docs] ...``) or a gitmoji (``🐛 ...``, ``:bug: ...``). Markers that are not types
   (``[WIP]``, ``Draft:``, ``[DEVIN: Moritz]``) are stepped over. A dependency scope decides
   whatever the type says (``chore(deps):``, ``build(deps-dev):`` are ``deps``);
2. the PR's labels (``bug``, ``documentation``, ``dependencies``, ``type: refactor`` ...);
3. its linked issues' labels: the same-repository issues the PR text links that collection read
   (at most three, closing links first), kept in the bundle's ``facts.linkedIssues``;

and ``unknown`` when none of them says. A title without a prefix is not guessed from its words:
"Fix the login page" has no prefix, and its labels decide. When several labels name different
types the most specific wins (:data:`PRECEDENCE`); the result lists every label it matched.

Pure: the PR's facts, its linked issues' labels and the repository config (``task_types:``,
whose entries are added to or override the built-in tables below; ``none`` removes one) decide
it, so a re-scored result computes it again and never keeps a stored one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from taskeval.config import Settings, TaskTypeTarget
from taskeval.evidence.vocabulary import issue_id
from taskeval.memo import by_identity
from taskeval.models import LinkedIssueEntry, PullFacts, TaskType, TaskTypeName

TYPES: Final[tuple[TaskTypeName, ...]] = ("feature", "fix", "docs", "refactor", "test", "chore", "ci", "deps")
# Several labels naming different types: the narrower kind of work wins (a dependency bump
# labelled "dependencies" and "github_actions" is a deps PR; a "bug" + "documentation" PR fixes docs).
PRECEDENCE: Final[tuple[TaskTypeName, ...]] = ("deps", "ci", "test", "docs", "refactor", "fix", "feature", "chore")

# Conventional Commits types (and the common spellings teams and agents use), bracket words and
# gitmoji (gitmoji.dev) -> task type. perf and style change no behaviour users asked for: perf is
# counted as a refactor, style (formatting) as a chore; build (the build system) is a chore and
# revert undoes a change that broke something, a fix.
BUILTIN_PREFIXES: Final[Mapping[str, TaskTypeName]] = MappingProxyType({
    "feat": "feature", "feature": "feature", "features": "feature", "enhancement": "feature", "add": "feature",
    "new": "feature",
    "fix": "fix", "fixes": "fix", "bugfix": "fix", "bug": "fix", "hotfix": "fix", "revert": "fix",
    "security": "fix",
    "docs": "docs", "doc": "docs", "documentation": "docs", "readme": "docs",
    "refactor": "refactor", "refactoring": "refactor", "perf": "refactor", "performance": "refactor",
    "cleanup": "refactor",
    "test": "test", "tests": "test", "testing": "test",
    "chore": "chore", "build": "chore", "style": "chore", "release": "chore", "maint": "chore",
    "maintenance": "chore",
    "ci": "ci", "cicd": "ci", "ci/cd": "ci",
    "deps": "deps", "dep": "deps", "dependencies": "deps", "dependency": "deps", "bump": "deps",
    # gitmoji
    "✨": "feature", "🎉": "feature", "🐛": "fix", "🚑": "fix", "🩹": "fix", "🔒": "fix", "⏪": "fix",
    "📝": "docs", "📚": "docs", "💡": "docs", "♻": "refactor", "⚡": "refactor", "🔥": "refactor",
    "🏗": "refactor", "🎨": "chore", "✅": "test", "🧪": "test", "🔧": "chore", "🔨": "chore",
    "🔖": "chore", "👷": "ci", "💚": "ci", "⬆": "deps", "⬇": "deps", "📌": "deps",
    "➕": "deps", "➖": "deps",
    ":sparkles:": "feature", ":tada:": "feature", ":bug:": "fix", ":ambulance:": "fix",
    ":adhesive_bandage:": "fix", ":lock:": "fix", ":rewind:": "fix", ":memo:": "docs", ":books:": "docs",
    ":bulb:": "docs", ":recycle:": "refactor", ":zap:": "refactor", ":fire:": "refactor",
    ":building_construction:": "refactor", ":art:": "chore", ":white_check_mark:": "test",
    ":test_tube:": "test", ":wrench:": "chore", ":hammer:": "chore", ":bookmark:": "chore",
    ":construction_worker:": "ci", ":green_heart:": "ci", ":arrow_up:": "deps",
    ":arrow_down:": "deps", ":pushpin:": "deps", ":heavy_plus_sign:": "deps", ":heavy_minus_sign:": "deps",
})
# A scope that names the kind of work decides the type whatever the prefix says (Dependabot
# writes "chore(deps):" or "build(deps-dev):", Renovate "fix(deps):"; "feat(docs):" adds docs,
# "chore(ci):" changes CI).
BUILTIN_SCOPES: Final[Mapping[str, TaskTypeName]] = MappingProxyType({
    "deps": "deps", "deps-dev": "deps", "dev-deps": "deps", "dependencies": "deps", "dependency": "deps",
    "docs": "docs", "doc": "docs", "ci": "ci", "test": "test", "tests": "test",
})
# Labels GitHub creates by default (bug, documentation, enhancement), Dependabot's
# (dependencies, github_actions) and the usual spellings of the rest. Labels are compared in lower
# case without a "type:", "type/", "kind/" or "t:" prefix, emoji or surrounding punctuation.
BUILTIN_LABELS: Final[Mapping[str, TaskTypeName]] = MappingProxyType({
    "enhancement": "feature", "feature": "feature", "feat": "feature", "new feature": "feature",
    "feature request": "feature", "improvement": "feature",
    "bug": "fix", "bugfix": "fix", "fix": "fix", "defect": "fix", "regression": "fix", "hotfix": "fix",
    "bug fix": "fix", "security": "fix",
    "documentation": "docs", "docs": "docs", "doc": "docs",
    "refactor": "refactor", "refactoring": "refactor", "tech debt": "refactor", "technical debt": "refactor",
    "cleanup": "refactor", "code quality": "refactor", "performance": "refactor", "perf": "refactor",
    "test": "test", "tests": "test", "testing": "test",
    "chore": "chore", "maintenance": "chore", "build": "chore", "release": "chore", "tooling": "chore",
    "ci": "ci", "ci/cd": "ci", "github_actions": "ci", "github actions": "ci", "workflow": "ci",
    "dependencies": "deps", "dependency": "deps", "deps": "deps", "dependency upgrade": "deps",
})

_BRACKET = re.compile(r"\[([^\]\n]{1,60})\]\s*")
_SHORTCODE = re.compile(r":[a-z0-9_+-]{2,40}:\s*")
# type(scope)!: as the Conventional Commits 1.0 grammar has it; a space before the colon and a
# missing space after it are forgiven, since people and agents write both.
_CONVENTIONAL = re.compile(
    r"(?P<type>[A-Za-z][A-Za-z/-]{0,24})"
    r"(?:\((?P<scope>[^()\n]{0,60})\))?(?P<bang>!)?\s?:(?!:)\s*")
# Markers in front of a title that say nothing about the kind of work.
_MARKERS: Final = frozenset({"wip", "draft", "rfc", "do not merge", "dnm", "help wanted"})
_LABEL_PREFIX = re.compile(r"^(?:type|kind|t|category|change)\s*[:/]\s*")
_SCOPE_SPLIT = re.compile(r"[\s,/|]+")


@dataclass(frozen=True)
class Tables:
    """The built-in tables with a repository's ``task_types:`` entries applied."""

    prefixes: Mapping[str, TaskTypeName]
    scopes: Mapping[str, TaskTypeName]
    labels: Mapping[str, TaskTypeName]


def _apply(builtin: Mapping[str, TaskTypeName], given: Mapping[str, TaskTypeTarget],
           key_of: Callable[[str], str]) -> dict[str, TaskTypeName]:
    out = dict(builtin)
    for key, target in given.items():
        name = key_of(key)
        if target == "none":
            out.pop(name, None)
        else:
            out[name] = target
    return out


def tables_for(settings: Settings | None) -> Tables:
    """The tables classification reads under ``settings`` (the built-in ones for None)."""
    return _tables_of(settings if settings is not None else _DEFAULT_SETTINGS)


@by_identity  # a batch asks for the same settings for every file
def _tables_of(settings: Settings) -> Tables:
    given = settings.task_types
    return Tables(
        prefixes=_apply(BUILTIN_PREFIXES, given.prefixes, prefix_key),
        scopes=_apply(BUILTIN_SCOPES, given.scopes, prefix_key),
        labels=_apply(BUILTIN_LABELS, given.labels, label_key),
    )


_DEFAULT_SETTINGS = Settings()


def _strip_symbols(text: str) -> str:
    """``text`` without leading/trailing emoji, variation selectors and punctuation."""
    drop = ("So", "Sk", "Cf", "Mn", "Po", "Ps", "Pe", "Pd", "Zs")
    start, end = 0, len(text)
    while start < end and unicodedata.category(text[start]) in drop:
        start += 1
    while end > start and unicodedata.category(text[end - 1]) in drop:
        end -= 1
    return text[start:end]


def prefix_key(prefix: str) -> str:
    """A prefix or scope as the tables hold it: lower case, emoji without variation selectors."""
    return "".join(ch for ch in prefix.strip().lower() if unicodedata.category(ch) not in ("Mn", "Cf"))


def label_key(label: str) -> str:
    """A label as the label table compares it: lower case, one space between words, without
    emoji, surrounding punctuation or a ``type:``/``kind/`` prefix ("Type: Bug 🐛" -> "bug")."""
    text = " ".join(_strip_symbols(label.strip().lower()).split())
    text = _LABEL_PREFIX.sub("", text)
    return " ".join(_strip_symbols(text).split())


def _emoji_at(title: str) -> tuple[str, int] | None:
    """The emoji a title opens with (variation selectors and skin tones dropped) and where the
    text after it starts; None when it opens with something else."""
    if not title or unicodedata.category(title[0]) != "So":
        return None
    end = 1
    while end < len(title) and (unicodedata.category(title[end]) in ("Mn", "Cf", "Sk")
                                or "\U0001f3fb" <= title[end] <= "\U0001f3ff"):
        end += 1
    while end < len(title) and title[end] in " :-":
        end += 1
    return title[0], end


@dataclass(frozen=True)
class _Prefix:
    type: TaskTypeName
    text: str  # the prefix as written, e.g. "feat(api)!", "[Docs]", "🐛"


def title_prefix(title: str, tables: Tables) -> _Prefix | None:
    """The task type the title's prefix names, stepping over markers such as ``[WIP]``."""
    rest = title.strip()
    for _ in range(6):  # a title opens with a few markers at most
        if not rest:
            return None
        bracket = _BRACKET.match(rest)
        if bracket:
            inner = bracket.group(1).strip()
            found = _word(inner, tables) or _conventional(inner + ":", tables)
            if found is not None:
                return _Prefix(found, bracket.group(0).strip())
            rest = rest[bracket.end():]
            continue
        emoji = _emoji_at(rest)
        code = None if emoji else _SHORTCODE.match(rest)
        if emoji or code:
            symbol, end = emoji if emoji else (code.group(0).strip(), code.end())  # type: ignore[union-attr]
            target = tables.prefixes.get(symbol)
            if target is not None:
                after = _conventional_match(rest[end:], tables)
                if after is not None:  # "🐛 fix(deps): ..." - the written type is the more precise
                    return after
                return _Prefix(target, symbol)
            rest = rest[end:].lstrip()
            continue
        match = _CONVENTIONAL.match(rest)
        if match is None:
            return None
        word = match.group("type").lower()
        if word in _MARKERS:
            rest = rest[match.end():]
            continue
        return _conventional_match(rest, tables)
    return None


def _word(inner: str, tables: Tables) -> TaskTypeName | None:
    return tables.prefixes.get(" ".join(inner.lower().split()))


def _conventional(text: str, tables: Tables) -> TaskTypeName | None:
    found = _conventional_match(text, tables)
    return found.type if found else None


def _conventional_match(text: str, tables: Tables) -> _Prefix | None:
    match = _CONVENTIONAL.match(text)
    if match is None:
        return None
    written = match.group(0).rstrip().rstrip(":").rstrip()
    scope = match.group("scope")
    for part in _SCOPE_SPLIT.split(scope.lower()) if scope else ():
        if part in tables.scopes:
            return _Prefix(tables.scopes[part], written)
    target = tables.prefixes.get(match.group("type").lower())
    return _Prefix(target, written) if target is not None else None


def _by_labels(labels: Sequence[str], tables: Tables) -> tuple[TaskTypeName, list[str]] | None:
    """The type the labels name (the most specific when they disagree) and the labels that named
    one; None when no label does."""
    hits = [(tables.labels[label_key(label)], label) for label in labels if label_key(label) in tables.labels]
    if not hits:
        return None
    best = min((t for t, _ in hits), key=PRECEDENCE.index)
    return best, [label for _, label in hits]


@dataclass(frozen=True)
class LinkedIssue:
    """A linked issue's labels, as classification reads them."""

    evidence_id: str  # e.g. "issue:12"
    labels: tuple[str, ...]


def linked_issues_of(entries: Sequence[LinkedIssueEntry]) -> list[LinkedIssue]:
    """The bundle's linked issues (``facts.linkedIssues``) as classification reads them."""
    return [LinkedIssue(evidence_id=issue_id(e.number), labels=tuple(e.labels)) for e in entries]


def classify(pull: PullFacts, settings: Settings | None = None,
             issues: Sequence[LinkedIssue] = ()) -> TaskType:
    """The PR's task type from its title, then its labels, then its linked issues' labels."""
    tables = tables_for(settings)
    pr = f"pr:{pull.number}"
    prefix = title_prefix(pull.title, tables)
    if prefix is not None:
        return TaskType(type=prefix.type, source="title", matched=[prefix.text], evidence=[pr],
                        reason=f"The title's prefix {prefix.text!r} names a {prefix.type} task.")
    named = _by_labels(pull.labels, tables)
    if named is not None:
        kind, labels = named
        return TaskType(type=kind, source="label", matched=labels, evidence=[pr],
                        reason=f"The title has no type prefix; its label{'s' if len(labels) > 1 else ''} "
                        f"{', '.join(repr(label) for label in labels)} name{'' if len(labels) > 1 else 's'} "
                        f"a {kind} task.")
    hits = [(issue, _by_labels(issue.labels, tables)) for issue in issues]
    found = [(issue, got) for issue, got in hits if got is not None]
    if found:
        kind = min((got[0] for _, got in found), key=PRECEDENCE.index)
        labels = [label for _, got in found for label in got[1]]
        return TaskType(type=kind, source="issue-label", matched=labels,
                        evidence=[pr, *(issue.evidence_id for issue, _ in found)],
                        reason=f"Neither the title nor the PR's labels name a type; the linked issue's "
                        f"labels {', '.join(repr(label) for label in labels)} name a {kind} task.")
    checked = "its linked issues' labels" if issues else "no linked issue's labels in the evidence"
    return TaskType(type="unknown", source="none", evidence=[pr],
                    reason=f"Neither the title's prefix nor the PR's labels ({checked}) name a task type.")
