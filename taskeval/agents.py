"""Which coding agent did a PR's work, and who ran it: attribution as a pure function of the bundle.

Attribution reads only what the PR itself shows (never GitHub, never writing style):

- the PR author's login and account type, and ``performed_via_github_app`` (the App the PR was
  opened through, which GitHub reports on the PR's issue object; when collection could not read
  that object no App is assumed, and a ``human`` answer says the App was unreadable);
- the head branch name;
- commit author and committer logins, and ``Co-authored-by`` trailers;
- the agent's own marks in the description and commit messages: links to its task or session
  pages, "Generated with" footers.

The rules are data: :data:`BUILTIN_RULES` (taskeval/agent_table.py) is the documented table; a repository adds agents
or overrides fields of built-in ones under ``agents:`` in ``.github/taskeval.yml``
(:class:`taskeval.config.AgentRuleConfig`). Each rule also lists the texts and commits the agent
writes by design (``standard_texts``, ``standard_commits``): the text detectors leave those of the
PR's own agent alone, so its session link or footer is never "prompt leakage" or "boilerplate".

How a PR is attributed (first match wins, ties by number of marks, then table order):

1. a mark of the agent's own account or App (PR author, ``performed_via_github_app``) -> ``certain``;
2. a mark in the PR description (session/task link, footer, a Co-authored-by line)  -> ``likely``;
3. the head branch prefix                                                          -> ``likely``;
4. the PR's first commit authored or committed by the agent's account              -> ``certain``;
5. a ``Co-authored-by`` trailer or a mark in the PR's first commit message         -> ``likely``.

Marks found only on later commits do not attribute: they show an agent that helped.

Nothing marks an agent: ``unknown-bot`` when the author is a bot account, else ``human``.
The operator (who ran the agent) comes from the sources the rule names, in order: the PR author
(Codex, Claude Code, Cursor: they open PRs from the user's account), a human assignee or requested
reviewer (Copilot assigns the person who gave it the issue and asks them for review), the actor
of the timeline event the rule names (Copilot's ``copilot_work_started``: "on behalf of"), the
"Requested by" line Devin writes, or a human ``Co-authored-by`` trailer.

Where the table's marks come from: the AIDev-pop corpus of 6,658 real agent PRs (see
benchmarks/attribution_eval.py for the measurement) and each vendor's documentation for the
agents the corpus does not cover (Jules, Amazon Q, Gemini, OpenHands, Sweep).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeVar

from taskeval import evidence as ev
from taskeval.agent_table import BUILTIN_RULES as BUILTIN_RULES  # re-exported: the table lived here
from taskeval.agent_table import AgentRule as AgentRule
from taskeval.config import HUMAN_ID, UNKNOWN_BOT_ID, AgentRuleConfig, Settings, compile_config_pattern
from taskeval.evidence.vocabulary import fold
from taskeval.memo import by_identity
from taskeval.models import AgentAttribution, EvidenceBundle
from taskeval.regex import Pattern

# --------------------------------------------------------------------------- the effective table


def _merge(base: AgentRule | None, entry: AgentRuleConfig) -> AgentRule:
    given = {k: v for k, v in entry.model_dump(exclude_unset=True).items() if k not in ("id", "enabled")}
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
    if base is None:
        values.setdefault("name", entry.id)
        return AgentRule(id=entry.id, **values)
    values.pop("name", None)  # a built-in agent keeps its name (the config refuses one as well)
    return replace(base, **values)


def rules_for(settings: Settings | None) -> tuple[AgentRule, ...]:
    """The built-in table with the repository's ``agents:`` entries applied: an entry with a
    built-in id replaces the fields it gives (``enabled: false`` drops the agent); a new id adds
    an agent after the built-in ones.

    The same settings give the same tuple object, so the caches keyed by it (compiled patterns,
    needles) find it by identity instead of hashing a dozen rules for every bundle."""
    if settings is None or not settings.agents:
        return BUILTIN_RULES
    return _rules_of(settings)


@by_identity
def _rules_of(settings: Settings) -> tuple[AgentRule, ...]:
    return _apply(settings.agents)


_K = TypeVar("_K")
_V = TypeVar("_V")


def _by_rules(func: Callable[[_K], _V]) -> Callable[[_K], _V]:
    """Cache ``func`` of a tuple of rules by identity (the same settings give the same tuple, see
    :func:`rules_for`), then by equality (a table built again from equal settings)."""
    return by_identity(functools.lru_cache(maxsize=64)(func))


def _apply(entries: list[AgentRuleConfig]) -> tuple[AgentRule, ...]:
    table = {r.id: r for r in BUILTIN_RULES}
    for entry in entries:
        if not entry.enabled:
            table.pop(entry.id, None)
            continue
        table[entry.id] = _merge(table.get(entry.id), entry)
    return tuple(table.values())


@dataclass(frozen=True)
class _Compiled:
    rule: AgentRule
    logins: frozenset[str]
    apps: frozenset[str]
    co_authors: tuple[Pattern, ...]  # a repository's own run on RE2 (taskeval.regex)
    text_marks: tuple[Pattern, ...]
    # The ASCII text every text mark starts with, lower-cased; None when one has none. A text
    # whose case fold holds none of them cannot carry this agent's mark.
    mark_needles: tuple[str, ...] | None


_FLAGS: Final = re.IGNORECASE | re.MULTILINE


@_by_rules
def _compiled(rules: tuple[AgentRule, ...]) -> tuple[_Compiled, ...]:
    return tuple(
        _Compiled(
            r,
            frozenset(x.lower() for x in r.logins),
            frozenset(x.lower() for x in r.apps),
            tuple(compile_config_pattern(x, _FLAGS) for x in r.co_authors),
            tuple(compile_config_pattern(x, _FLAGS) for x in r.text_marks),
            _mark_needles(r.text_marks),
        )
        for r in rules
    )


def _mark_needles(patterns: tuple[str, ...]) -> tuple[str, ...] | None:
    found = [needle(p) for p in patterns]
    if any(n is None or not n.isascii() for n in found):
        return None
    return tuple(n for n in found if n)


def _may_hold(folded: str, needles: tuple[str, ...] | None) -> bool:
    """Whether ``folded`` (:func:`fold` of a text) can hold a text mark whose needles (ASCII,
    lower case) are ``needles``; None: a mark without one, so any text can."""
    return needles is None or any(n in folded for n in needles)


@_by_rules
def standard_text_patterns(rules: tuple[AgentRule, ...]) -> tuple[Pattern, ...]:
    """Every agent's by-design texts, compiled (a block pattern spans lines with ``(?s:...)``)."""
    return tuple(compile_config_pattern(x, _FLAGS) for r in rules for x in r.standard_texts)


@_by_rules
def standard_commit_patterns(rules: tuple[AgentRule, ...]) -> tuple[Pattern, ...]:
    return tuple(compile_config_pattern(x, re.IGNORECASE) for r in rules for x in r.standard_commits)


@_by_rules
def agent_logins(rules: tuple[AgentRule, ...]) -> frozenset[str]:
    """Lower-cased accounts of every agent in the table."""
    return frozenset(x.lower() for r in rules for x in r.logins)


# --------------------------------------------------------------------------- attribution


@dataclass(order=True)
class _Mark:
    tier: int  # 1 strongest
    text: str = field(compare=False)
    evidence: str = field(compare=False)
    certain: bool = field(compare=False, default=False)


_TIER_ACCOUNT, _TIER_TEXT, _TIER_BRANCH, _TIER_COMMIT_ACCOUNT, _TIER_TRAILER = 1, 2, 3, 4, 5
_LATER = 10  # added to the tier of a mark found only on a commit after the PR's first
_NOREPLY = re.compile(r"<(?:\d+\+)?([A-Za-z0-9][A-Za-z0-9-]{0,38}(?:\[bot\])?)@users\.noreply\.github\.com>",
                      re.IGNORECASE)
_EMAIL = re.compile(r"\s*[(<]?[\w.+-]+@[\w-]+(?:\.[\w-]+)+[)>]?\s*")
# Devin's "Requested by: Name (email)" / "## Requested by\nName" / "**Requested by:** @login".
_REQUESTED_BY = re.compile(
    r"^[ \t]*(?:#+[ \t]*)?\**Requested by\**:?\**[ \t]*(?:\n[ \t]*(?:\n[ \t]*)?)?([^\n]{1,120})",
    re.IGNORECASE | re.MULTILINE,
)
_BODY_CO_AUTHOR = re.compile(r"^[ \t]*Co-authored-by:[ \t]*(\S[^\n]*)$", re.IGNORECASE | re.MULTILINE)
_AT_LOGIN = re.compile(r"(?<![\w@])@([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))\b(?![/.@]\w)")


def _co_authors(trailers: dict[str, str]) -> list[str]:
    values = [v for k, v in trailers.items() if k.lower() == "co-authored-by"]
    # parse_trailers joins repeated keys with ", "; a name never holds ">, ".
    return [p.strip() for v in values for p in re.split(r"(?<=>),\s*", v) if p.strip()]


co_author_values = _co_authors  # the ``Co-authored-by`` values of a commit's trailers, in order

# GitHub's no-reply address: ``<id>+<login>@users.noreply.github.com`` (since 2017) or
# ``<login>@users.noreply.github.com`` (before); a bot's login keeps its ``[bot]``.
_NOREPLY_ADDRESS: Final = re.compile(
    r"(?:\d+\+)?([A-Za-z0-9][A-Za-z0-9-]{0,38}(?:\[bot\])?)@users\.noreply\.github\.com",
    re.IGNORECASE)


def noreply_login(email: str | None) -> str | None:
    """The login GitHub's no-reply address names (as written), else None."""
    match = _NOREPLY_ADDRESS.fullmatch((email or "").strip())
    return match.group(1) if match else None


def split_identity(value: str) -> tuple[str, str | None]:
    """``Name <email>`` (a trailer's value) as (name, e-mail); a value without a closing
    ``<...>`` is a name alone. Split by hand: the regex it replaces (``^\\s*(.*?)\\s*<...>``) took
    seconds on a commit's trailer of a few thousand spaces, and commit messages are anyone's."""
    text = value.strip()
    start = text.rfind("<")
    if start < 0 or not text.endswith(">") or ">" in text[start + 1:-1]:
        return " ".join(value.split()).strip('"'), None
    return " ".join(text[:start].split()).strip('"'), text[start + 1:-1].strip() or None


def agent_of_identity(rules: tuple[AgentRule, ...], name: str | None, email: str | None) -> AgentRule | None:
    """The agent whose git identity this is (taskeval.signals.identity): one of its accounts as
    the name or named by GitHub's no-reply address, or an identity its ``co_authors`` patterns
    describe (they are written over ``Name <email>``, a trailer's form, which is a git identity's
    form too). None for anyone else."""
    text = f"{name or ''} <{email}>" if email else (name or "")
    if not text:
        return None
    names = {x.lower() for x in (name, noreply_login(email)) if x}
    for rule in _compiled(rules):
        if not rule.logins.isdisjoint(names):
            return rule.rule
        if any(p.search(text) for p in rule.co_authors):
            return rule.rule
    return None


def _requested_by(body: str) -> str | None:
    """The person Devin names as its requester: a login when written as ``@login``, else the name
    (an e-mail address only when that is all the line holds)."""
    match = _REQUESTED_BY.search(body)
    if not match:
        return None
    line = match.group(1).strip().strip("*").strip()
    if not line or line.startswith(("#", "http", "[")):
        return None
    login = _AT_LOGIN.search(line)
    if login and login.group(1).lower() != "devin":
        return login.group(1)
    if login:
        return None
    name = _EMAIL.sub(" ", line)
    name = re.sub(r"\s+via\b.*$", "", name, flags=re.IGNORECASE)
    name = " ".join(name.replace("()", " ").split()).strip(" ,;:-*")
    if name.lower() in ("", "human", "user", "me"):
        return line.strip("()<> ") if "@" in line and not name else None
    return name[:80]


def _co_author_person(value: str) -> str | None:
    """``Name <email>`` -> the login of a GitHub noreply address, else the name (the address
    when the name is empty)."""
    login = _NOREPLY.search(value)
    if login:
        return login.group(1)
    # ``<...>`` holding no ``<``: a value of thousands of ``<`` is read in one pass, not one per ``<``.
    name = " ".join(re.sub(r"<[^<>]*>", " ", value).split()).strip('"')
    if name:
        return name[:80]
    address = re.search(r"<([^<>]+)>", value)
    return address.group(1) if address else None


@dataclass(frozen=True)
class _Commit:
    sha: str
    logins: dict[str, str]  # lower case -> as written
    co_authors: tuple[str, ...]
    message: str


class _View:
    """What attribution reads from a bundle, gathered once for every rule."""

    def __init__(self, bundle: EvidenceBundle) -> None:
        self.bundle = bundle
        self.pull = bundle.facts.pull
        self.pr = ev.pr_id(self.pull.number)
        self.text = f"{self.pull.title}\n\n{self.pull.body}"
        # Trailer lines written into the description (a squash message's trailers, for instance).
        self.body_co_authors = tuple(m.strip() for m in _BODY_CO_AUTHOR.findall(self.pull.body))
        # Merge commits (updates from the base branch) say nothing about who did the work.
        self.commits = [
            _Commit(c.sha, {x.lower(): x for x in (c.author_login, c.committer_login) if x},
                    tuple(_co_authors(c.trailers)), f"{c.subject}\n\n{c.message_excerpt}")
            for c in bundle.facts.commits if not c.is_merge
        ]
        self.text_marked = True  # whether any rule's text mark may be in the PR text
        self.marked_commits: set[int] = set(range(len(self.commits)))
        # What every rule checks first; most rules find none of it in a PR, and skip the rest.
        self.author = self.pull.author.lower()
        self.head_ref = self.pull.head_ref.lower()
        self.commit_logins = frozenset(k for c in self.commits for k in c.logins)
        self.any_co_authors = any(c.co_authors for c in self.commits)
        self._folded: dict[int, str] = {}

    @functools.cached_property
    def text_folded(self) -> str:
        return fold(self.text)

    def folded(self, index: int) -> str:
        """:func:`fold` of commit ``index``'s message, made once for every rule."""
        found = self._folded.get(index)
        if found is None:
            found = self._folded[index] = fold(self.commits[index].message)
        return found

    @functools.cached_property
    def commit_ref(self) -> dict[str, str]:
        """sha -> its citable id; the PR's when the commit was capped out of its group."""
        known = self.bundle.evidence_ids()
        ids = ev.commit_ids(c.sha for c in self.bundle.facts.commits)
        return {sha: (cid if cid in known else self.pr) for sha, cid in ids.items()}


# --------------------------------------------------------------------------- people


@by_identity  # the same settings for every bundle of a batch
def machine_accounts(settings: Settings | None) -> frozenset[str]:
    """Lower-cased accounts that are never a person: the configured ``patterns.bot_logins`` and
    ``patterns.agent_logins``, and every account of the agent table (as ``agents:`` amends it).
    ``None`` (no settings at all) is the agent table alone."""
    configured = settings.patterns.bot_logins + settings.patterns.agent_logins if settings else []
    return frozenset(x.lower() for x in configured) | agent_logins(rules_for(settings))


def is_person(login: str | None, flagged: bool, machines: frozenset[str]) -> bool:
    """The one rule for "a person's account": attribution's (the operator; a PR author no agent
    rule names is a person or an unknown bot), the signals' (bot and agent approvals, and through
    :func:`is_other_person` another human reviewer or committer) and outcomes' (a human who sent
    the work back). A login that GitHub does not flag as a bot, that does not end in ``[bot]``
    and that is none of ``machines`` (:func:`machine_accounts`)."""
    if not login:
        return False
    return not flagged and not login.endswith("[bot]") and login.lower() not in machines


def is_other_person(login: str | None, author: str | None, flagged: bool,
                    machines: frozenset[str]) -> bool:
    """:func:`is_person`, and not the PR's author."""
    return login != author and is_person(login, flagged, machines)


_ESCAPED_LITERAL: Final = frozenset("./-[](){}*+?^$|\\ #&~:@!%'\"=,;<>_`")
_PLAIN: Final = frozenset(" /:_-=<>@,;'\"&%!~`#")


def needle(pattern: str) -> str | None:
    """The plain text every match of ``pattern`` starts with, lower-cased (its leading literal
    run); None when that is shorter than 4 characters or the pattern has alternatives anywhere."""
    if "|" in pattern.replace("\\|", ""):
        return None
    run: list[str] = []
    i = 1 if pattern.startswith("^") else 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern) and pattern[i + 1] in _ESCAPED_LITERAL:
            literal, width = pattern[i + 1], 2
        elif ch.isalnum() or ch in _PLAIN:
            literal, width = ch, 1
        else:
            break
        if pattern[i + width : i + width + 1] in ("?", "*", "{"):
            break  # optional: not in every match
        run.append(literal)
        i += width
    text = "".join(run)
    return text.lower() if len(text) >= 4 else None


@_by_rules
def _needles(rules: tuple[_Compiled, ...]) -> tuple[str, ...] | None:
    """Needles of every rule's text marks (:func:`_mark_needles`); None when a rule has none
    (then every text is searched)."""
    if any(r.mark_needles is None for r in rules):
        return None
    return tuple(n for r in rules for n in r.mark_needles or ())


def _marks(view: _View, rule: _Compiled) -> list[_Mark]:
    pull = view.pull
    out: list[_Mark] = []
    if view.author in rule.logins:
        out.append(_Mark(_TIER_ACCOUNT, f"PR opened by the agent's account {pull.author}",
                         view.pr, True))
    if pull.via_app and pull.via_app.lower() in rule.apps:
        out.append(_Mark(_TIER_ACCOUNT, f"PR opened through the agent's App {pull.via_app}",
                         view.pr, True))
    for pattern in rule.text_marks if view.text_marked and _may_hold(view.text_folded, rule.mark_needles) else ():
        match = pattern.search(view.text)
        if match:
            out.append(_Mark(_TIER_TEXT, f"PR description mark '{_short(match.group(0))}'", view.pr))
            break
    if rule.co_authors and view.body_co_authors:
        hit = next((a for a in view.body_co_authors for p in rule.co_authors if p.search(a)), None)
        if hit:
            out.append(_Mark(_TIER_TEXT, f"PR description co-author '{_short(hit)}'", view.pr))
    for prefix in rule.rule.branch_prefixes:
        if view.head_ref.startswith(prefix.lower()):
            out.append(_Mark(_TIER_BRANCH, f"head branch {_short(pull.head_ref)}", view.pr))
            break
    found: list[_Mark] = []
    if (rule.logins.isdisjoint(view.commit_logins) and not (rule.co_authors and view.any_co_authors)
            and not (rule.text_marks and view.marked_commits)):
        return out  # no commit can carry this rule's mark: what the loop below would return
    for index, c in enumerate(view.commits):
        # Marks on later commits only show an agent that helped (a fix pushed by a bot on
        # request, an accepted suggestion), not the one that did the PR: they do not attribute.
        later = _LATER if index else 0
        who = sorted(v for k, v in c.logins.items() if k in rule.logins) if not rule.logins.isdisjoint(
            c.logins) else []
        if who:
            found.append(_Mark(_TIER_COMMIT_ACCOUNT + later,
                               f"commit {c.sha[:7]} by the agent's account {who[0]}",
                               view.commit_ref.get(c.sha, view.pr), True))
        if rule.co_authors and c.co_authors:
            hit = next((a for a in c.co_authors for p in rule.co_authors if p.search(a)), None)
            if hit:
                found.append(_Mark(_TIER_TRAILER + later, f"commit {c.sha[:7]} co-author '{_short(hit)}'",
                                   view.commit_ref.get(c.sha, view.pr)))
        text_hit = (next((m for p in rule.text_marks if (m := p.search(c.message))), None)
                    if index in view.marked_commits and _may_hold(view.folded(index), rule.mark_needles)
                    else None)
        if text_hit:
            found.append(_Mark(_TIER_TRAILER + later,
                               f"commit {c.sha[:7]} mark '{_short(text_hit.group(0))}'",
                               view.commit_ref.get(c.sha, view.pr)))
    if any(m.tier < _LATER for m in out + found):
        out += found[:6]
    return out


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _operator(view: _View, rule: AgentRule, settings: Settings | None) -> str | None:
    pull = view.pull
    machines = machine_accounts(settings)

    def human(login: str | None) -> bool:
        return is_person(login, False, machines)

    for source in rule.operator:
        if source == "author" and is_person(pull.author, pull.author_is_bot, machines):
            return pull.author
        if source == "assignee":
            found = next((a for a in pull.assignees if human(a)), None)
            if found:
                return found
        if source == "reviewer":
            found = next((a for a in pull.requested_reviewers if human(a)), None)
            if found:
                return found
        if source == "work-started" and rule.work_events:
            found = next((e.actor for e in view.bundle.facts.timeline or []
                          if e.event in rule.work_events and human(e.actor)), None)
            if found:
                return found
        if source == "requested-by":
            found = _requested_by(pull.body)
            if found:
                return found
        if source == "co-author":
            for c in view.commits:
                for value in c.co_authors:
                    found = _co_author_person(value)
                    if found and human(found):
                        return found
    return None


_last: tuple[EvidenceBundle, Settings | None, AgentAttribution] | None = None


def attribute(bundle: EvidenceBundle, settings: Settings | None = None) -> AgentAttribution:
    """The agent that did this PR's work, its operator and why: a pure function of the bundle
    and the repository's ``agents:`` rules (defaults: the built-in table).

    Scoring asks twice for the same objects (the signals' context and the result), so the last
    answer is kept for exactly those objects; a copy is returned, never the kept one."""
    global _last
    last = _last
    if last is not None and last[0] is bundle and last[1] is settings:
        return _copy(last[2])
    got = _attribute(bundle, settings)
    _last = (bundle, settings, got)
    return _copy(got)


def _copy(found: AgentAttribution) -> AgentAttribution:
    # Every other field is a string: a new evidence list makes the copy as independent as a deep
    # copy, at a tenth of its cost.
    return found.model_copy(update={"evidence": list(found.evidence)})


def _attribute(bundle: EvidenceBundle, settings: Settings | None) -> AgentAttribution:
    rules = rules_for(settings)
    compiled = _compiled(rules)
    view = _View(bundle)
    needles = _needles(compiled)
    # Most texts carry no rule's mark: one look for every rule's needles skips them all.
    if needles is not None:  # None: every text may hold a mark, and none need be folded
        view.text_marked = _may_hold(view.text_folded, needles)
        view.marked_commits = {i for i in range(len(view.commits)) if _may_hold(view.folded(i), needles)}
    pull = view.pull
    best: tuple[tuple[int, int, int], _Compiled, list[_Mark]] | None = None
    for order, rule in enumerate(compiled):
        marks = sorted(_marks(view, rule))
        if not marks:
            continue
        key = (marks[0].tier, -len(marks), order)
        if best is None or key < best[0]:
            best = (key, rule, marks)
    if best is None:
        # No rule matched, so the author is no account of the agent table: a machine account
        # here is a configured bot, or a configured agent account that no rule names.
        if pull.author and not is_person(pull.author, pull.author_is_bot, machine_accounts(settings)):
            return AgentAttribution(
                id=UNKNOWN_BOT_ID, name="Unknown bot", operator=None, confidence="certain",
                evidence=[view.pr],
                reason=f"PR opened by the bot account {pull.author}, which is no known agent.",
            )
        evidence = [view.pr]
        reason = "No agent account, App, branch prefix, trailer or description mark."
        if "issue" in bundle.facts.unavailable:  # the issue object names the App, if any
            evidence.append("audit:unavailable-issue")
            reason = ("No agent account, branch prefix, trailer or description mark; the App "
                      "the PR was opened through could not be read.")
        return AgentAttribution(id=HUMAN_ID, name="Human", operator=pull.author,
                                confidence="likely", evidence=evidence, reason=reason)
    _, rule, marks = best
    certain = any(m.certain for m in marks)
    evidence = list(dict.fromkeys(m.evidence for m in marks))
    operator = _operator(view, rule.rule, settings)
    return AgentAttribution(
        id=rule.rule.id, name=rule.rule.name, operator=operator,
        confidence="certain" if certain else "likely", evidence=evidence,
        reason="; ".join(m.text for m in marks[:4]) + (f" (+{len(marks) - 4} more)" if len(marks) > 4 else ""),
    )
