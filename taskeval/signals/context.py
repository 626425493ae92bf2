"""The per-bundle context every signal reads, and the CI view.

A :class:`Ctx` is built once per bundle and shared by every signal, so whatever more than one
signal derives is derived once. What the PR's life derives from it (who is who, whose turn it
was, why it ended) lives above it, in :mod:`.turns` and :mod:`.closure`, kept on the context by
:func:`derived`: the context imports none of them.
"""

from __future__ import annotations

import functools
import operator
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import translate
from typing import Any, Generic, Literal, NamedTuple, TypeVar, overload

from taskeval.agents import (
    AgentRule,
    agent_logins,
    attribute,
    is_other_person,
    machine_accounts,
    rules_for,
    standard_commit_patterns,
    standard_text_patterns,
)
from taskeval.config import Settings
from taskeval.evidence import vocabulary as ev
from taskeval.models import (
    AgentAttribution,
    CheckEntry,
    CommitEntry,
    EvidenceBundle,
    ReviewEntry,
    RunEntry,
)
from taskeval.regex import Pattern

from .wording import agree, names, plural, share

FileClass = Literal["ignored", "test", "docs", "source"]


class Remark(NamedTuple):
    """A review or a comment, with the evidence ID the bundle gives it: what the turns, the
    closure and the signals that read people's words all iterate."""

    at: str | None
    author: str | None
    flagged: bool  # GitHub flags the account as a bot
    evidence: str  # review:<id>, comment:<id> or review-comment:<id>
    text: str
    state: str | None  # a review's state (APPROVED, CHANGES_REQUESTED, ...); None for a comment




_R = TypeVar("_R")


class cached(Generic[_R]):
    """:func:`functools.cached_property` without its lock: on Python 3.11 every first read takes
    one, which costs more than most of the lookups it guards (a :class:`Ctx` is per bundle and
    per thread)."""

    def __init__(self, func: Callable[[Any], _R]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> cached[_R]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _R: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> _R | cached[_R]:
        if obj is None:
            return self
        value: _R = self.func(obj)
        obj.__dict__[self.name] = value
        return value


def derived(func: Callable[[Ctx], _R]) -> Callable[[Ctx], _R]:
    """``func(ctx)`` computed once per context and kept on it, as :class:`cached` keeps a
    property: for what the modules above the context derive from it (turns, closure), so the
    context needs no import of theirs."""
    key = f"{func.__module__}.{func.__qualname__}"

    @functools.wraps(func)
    def get(ctx: Ctx) -> _R:
        try:
            found: _R = ctx.__dict__[key]
        except KeyError:
            found = ctx.__dict__[key] = func(ctx)
        return found

    return get


@functools.lru_cache(maxsize=64)
def _lowered(logins: tuple[str, ...]) -> frozenset[str]:
    return frozenset(x.lower() for x in logins)


class GlobSet:
    """Whether any of some globs matches a path, as :func:`fnmatch.fnmatchcase` matches each.

    A glob of literals and ``*`` only (nearly all path globs) is one of: an exact path, a prefix
    (``docs/*``), a suffix (``*.md``), an infix (``*/test/*``) or a head, ordered middle parts and
    tail; those are tested with string methods. Only globs with ``?`` or ``[...]`` go to a regular
    expression, because one expression over many ``*`` globs backtracks through the path once per
    glob (microseconds per path; several signals classify every changed file)."""

    def __init__(self, globs: tuple[str, ...]) -> None:
        exact: set[str] = set()
        prefixes: list[str] = []
        suffixes: list[str] = []
        infixes: list[str] = []
        general: list[tuple[str, tuple[str, ...], str]] = []
        rest: list[str] = []
        for glob in globs:
            if "?" in glob or "[" in glob:
                rest.append(glob)
                continue
            parts = glob.split("*")
            if len(parts) == 1:
                exact.add(glob)
            elif len(parts) == 2 and not parts[1]:
                prefixes.append(parts[0])
            elif len(parts) == 2 and not parts[0]:
                suffixes.append(parts[1])
            elif len(parts) == 3 and not parts[0] and not parts[2]:
                infixes.append(parts[1])
            else:
                general.append((parts[0], tuple(p for p in parts[1:-1] if p), parts[-1]))
        self.exact = frozenset(exact)
        self.prefixes = tuple(prefixes)
        self.suffixes = tuple(suffixes)
        self.infix = re.compile("|".join(map(re.escape, infixes))) if infixes else None
        self.general = tuple(general)
        self.rest = (re.compile("|".join(f"(?:{translate(g)})" for g in rest)) if rest else None)

    def match(self, path: str) -> Literal[True] | None:
        """True when a glob matches, else None (as a failed ``re.match``)."""
        if path in self.exact or path.startswith(self.prefixes) or path.endswith(self.suffixes):
            return True
        if self.infix is not None and self.infix.search(path):
            return True
        for head, middles, tail in self.general:
            if _fits(path, head, middles, tail):
                return True
        if self.rest is not None and self.rest.match(path):
            return True
        return None


def _fits(path: str, head: str, middles: tuple[str, ...], tail: str) -> bool:
    """``head*m1*m2*...*tail``: the head and tail at the ends, not overlapping, and each middle
    part after the previous one between them (the leftmost place is always the best one)."""
    end = len(path) - len(tail)
    if end < len(head) or not path.startswith(head) or not path.endswith(tail):
        return False
    at = len(head)
    for part in middles:
        found = path.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return True


@functools.lru_cache(maxsize=256)
def _globs(globs: tuple[str, ...]) -> GlobSet:
    """One matcher per glob list (lists repeat for every bundle scored with the same settings)."""
    return GlobSet(globs)


class Ctx:
    """One bundle and its settings, with the derived lookups several signals need (lazy).

    Built once per bundle and shared by every signal, so whatever more than one signal derives
    (who is another person, which reviews they wrote, the CI views, file classes, commit IDs) is
    derived here once; re-scoring runs every signal of thousands of bundles a second."""

    def __init__(self, bundle: EvidenceBundle, settings: Settings) -> None:
        self.bundle = bundle
        self.settings = settings
        self.facts = bundle.facts
        self.pull = bundle.facts.pull
        self.pr = ev.pr_id(bundle.pull_request)
        self._humans: dict[tuple[str | None, bool], bool] = {}
        self._classes: dict[str, FileClass] = {}
        self._ci_at: dict[str | None, CIView] = {}

    @cached
    def present(self) -> set[str]:
        return self.bundle.evidence_ids()

    def cite(self, ids: Iterable[str]) -> list[str]:
        """IDs in first-seen order; one capped out of its group is replaced by the PR item."""
        present, pr = self.present, self.pr
        cited = [i if i in present else pr for i in ids]
        return cited if len(cited) < 2 else list(dict.fromkeys(cited))

    @cached
    def agent_rules(self) -> tuple[AgentRule, ...]:
        return rules_for(self.settings)

    @cached
    def attribution(self) -> AgentAttribution:
        return attribute(self.bundle, self.settings)

    @cached
    def agent_rule(self) -> tuple[AgentRule, ...]:
        """The rule of the agent this PR is attributed to (none for a human or unknown bot)."""
        agent = self.attribution
        return tuple(r for r in self.agent_rules if r.id == agent.id)

    @cached
    def machines(self) -> frozenset[str]:
        return machine_accounts(self.settings)

    @cached
    def standard_texts(self) -> tuple[Pattern, ...]:
        """What the PR's agent writes by design (its ``standard_texts`` in taskeval/agent_table.py): not
        leakage, boilerplate or template. Only that agent's: another agent's shapes in a PR prove
        nothing and must not hide what sits in them."""
        return standard_text_patterns(self.agent_rule)

    def is_standard_commit(self, subject: str) -> bool:
        """A commit the PR's agent makes by design, such as Copilot's empty "Initial plan"."""
        return any(p.search(subject) for p in standard_commit_patterns(self.agent_rule))

    @cached
    def commit_ids(self) -> dict[str, str]:
        """``sha -> commit:<prefix>``, as the bundle's evidence items name the commits."""
        return ev.commit_ids(c.sha for c in self.facts.commits)

    def commit_id(self, sha: str) -> str:
        return self.commit_ids.get(sha) or f"commit:{sha[:7]}"

    @cached
    def check_ids(self) -> dict[int, str]:
        checks = self.facts.checks
        if not checks:
            return {}
        return ev.check_ids([(c.id, c.name) for c in checks])

    @cached
    def own_commits(self) -> list[CommitEntry]:
        """The PR's commits without merge commits (of the base branch into the PR)."""
        return [c for c in self.facts.commits if not c.is_merge]

    # ----------------------------------------------------------------- people

    @cached
    def _agent_logins(self) -> frozenset[str]:
        # The configured accounts and every account in the agent table (taskeval/agent_table.py).
        configured = _lowered(tuple(self.settings.patterns.agent_logins))
        return configured | agent_logins(self.agent_rules)  # cached by the table's identity

    def is_agent(self, login: str | None) -> bool:
        return login is not None and login.lower() in self._agent_logins

    def is_other_human(self, login: str | None, flagged: bool = False) -> bool:
        """A person who is not the PR author: not a bot account, not an agent
        (:func:`taskeval.agents.is_other_person`, the rule outcomes use too, on attribution's
        :func:`taskeval.agents.is_person`;
        memoised: a PR has few accounts, and most signals ask about each of them)."""
        key = (login, flagged)
        known = self._humans.get(key)
        if known is None:
            known = self._humans[key] = is_other_person(login, self.pull.author, flagged,
                                                        self.machines)
        return known

    @cached
    def remarks(self) -> list[Remark]:
        """Every review, then every conversation and review comment, each in bundle order."""
        out = [Remark(r.submitted_at, r.author, r.author_is_bot, f"review:{r.id}", r.body_excerpt,
                      r.state) for r in self.facts.reviews]
        out += [Remark(c.created_at, c.author, c.author_is_bot,
                       f"{'comment' if c.kind == 'issue' else 'review-comment'}:{c.id}",
                       c.body_excerpt, None) for c in self.facts.comments]
        return out

    @cached
    def human_reviews(self) -> list[ReviewEntry]:
        """Reviews by other people (any state, pending ones included), in bundle order."""
        return [r for r in self.facts.reviews if self.is_other_human(r.author, r.author_is_bot)]

    # ----------------------------------------------------------------- files

    @cached
    def _class_globs(self) -> tuple[tuple[FileClass, GlobSet], ...]:
        p = self.settings.patterns
        return (("ignored", _globs(tuple(p.ignore_paths))), ("test", _globs(tuple(p.test_paths))),
                ("docs", _globs(tuple(p.doc_paths))))

    def classify(self, path: str) -> FileClass:
        """The first of ignored, test, docs whose globs match ``path``, else source (memoised:
        several signals classify the same files)."""
        known = self._classes.get(path)
        if known is not None:
            return known
        found: FileClass = "source"
        for cls, pattern in self._class_globs:
            if pattern.match(path):
                found = cls
                break
        self._classes[path] = found
        return found

    @cached
    def _surface(self) -> GlobSet:
        return _globs(tuple(self.settings.patterns.public_surface_paths))

    def is_surface(self, path: str) -> bool:
        return self._surface.match(path) is not None

    @cached
    def lines_by_class(self) -> dict[FileClass, int]:
        out: dict[FileClass, int] = defaultdict(int)
        for f in self.facts.files:
            out[self.classify(f.path)] += f.additions + f.deletions
        return out

    def files_of(self, cls: FileClass) -> list[str]:
        return [f.path for f in self.facts.files if self.classify(f.path) == cls]

    @cached
    def _file_sizes(self) -> dict[str, int]:
        return {f.path: f.additions + f.deletions for f in self.facts.files}

    def biggest_file_ids(self, paths: Iterable[str], most: int = 3) -> list[str]:
        sizes = self._file_sizes
        ranked = sorted(paths, key=lambda p: (-sizes.get(p, 0), p))
        return [f"file:{p}" for p in ranked[:most]]

    # ----------------------------------------------------------------- CI

    @property
    def ci(self) -> CIView:
        return self.ci_at(None)

    @property
    def ci_before_end(self) -> CIView:
        """CI as it stood when the PR was merged or closed (now, for an open PR): what the agent
        is answerable for. A run that fails after the end is no one's miss in this PR."""
        pull = self.pull
        return self.ci_at(pull.merged_at or pull.closed_at)

    def ci_at(self, as_of: str | None) -> CIView:
        """The CI view now (``None``) or as of a moment, built once per moment."""
        view = self._ci_at.get(as_of)
        if view is None:
            view = self._ci_at[as_of] = CIView.of(self, as_of)
        return view

    @cached
    def ci_series(self) -> tuple[dict[tuple[str, str], list[Attempt]], dict[tuple[str, str], list[Attempt]]]:
        """Every check (by commit and name) and workflow run (by commit and workflow) as its
        attempts in start order: what each CI view picks its verdicts from."""
        outcome_of = ev.outcome_of
        checks: dict[tuple[str, str], list[Attempt]] = {}
        for c in self.facts.checks:
            started = c.started_at
            attempt = _new(Attempt, (started or c.completed_at or "", c.id, started, c.completed_at,
                                     outcome_of(c.status, c.conclusion), c))
            key = (c.head_sha, c.name)
            if key in checks:
                checks[key].append(attempt)
            else:
                checks[key] = [attempt]
        runs: dict[tuple[str, str], list[Attempt]] = {}
        for r in self.facts.runs:
            if r.event in ev.NOT_PR_CI_EVENTS:
                continue
            started = r.started_at or r.created_at
            attempt = _new(Attempt, (started or "", r.id, started,
                                     r.updated_at if r.status == "completed" else None,
                                     outcome_of(r.status, r.conclusion), r))
            key = (r.head_sha, str(r.workflow_id or r.name))
            if key in runs:
                runs[key].append(attempt)
            else:
                runs[key] = [attempt]
        for series in (*checks.values(), *runs.values()):
            if len(series) > 1:
                series.sort(key=_ORDER)
        return checks, runs

    @property
    def ci_unavailable(self) -> bool:
        return bool({"check_runs", "workflow_runs"} & set(self.facts.unavailable))


def before_merge(ctx: Ctx, reviews: list[ReviewEntry]) -> tuple[list[ReviewEntry], list[ReviewEntry]]:
    """Split reviews into (submitted by the merge, submitted after it). A review after the merge
    judged code that had already shipped; for an unmerged PR every review counts."""
    merged_at = ctx.pull.merged_at if ctx.pull.merged else None
    if not merged_at:
        return list(reviews), []
    return ([r for r in reviews if (r.submitted_at or "") <= merged_at],
            [r for r in reviews if (r.submitted_at or "") > merged_at])


# --------------------------------------------------------------------------- CI view


class Verdict(NamedTuple):
    """The latest state of one check (by name) or workflow (by id) at one commit."""

    source: Literal["check", "run"]
    key: str
    label: str
    sha: str
    outcome: ev.Outcome
    evidence: str
    flaky: bool  # an earlier attempt on the same commit failed and this one passed


class Attempt(NamedTuple):
    """One attempt of a check or workflow run, as a CI view reads it."""

    order: str  # when it started (else finished or was created): attempts sort by this, then id
    id: int
    started: str | None  # what ``as_of`` compares with: an attempt started later is not counted
    done: str | None  # when it finished (None: it had not)
    outcome: ev.Outcome
    entry: CheckEntry | RunEntry


_ORDER = operator.itemgetter(0, 1)
# Makes a named tuple from a plain one without its generated constructor's extra Python call
# (CI views make one per check and workflow attempt).
_new = tuple.__new__


class CIView:
    """Per commit, the latest verdict of every check and workflow, optionally as of a moment.

    Built from :attr:`Ctx.ci_series` (each series grouped and sorted once per bundle), once per
    moment; its per-commit lists are built once too (several signals read the same commits).
    :meth:`reference` is the plain construction it must equal."""

    __slots__ = ("_all", "_at", "_shas", "checks", "runs")

    def __init__(self, checks: dict[str, dict[str, Verdict]], runs: dict[str, dict[str, Verdict]]):
        self.checks = checks
        self.runs = runs
        self._at: dict[str, tuple[Verdict, ...]] = {}
        self._shas: frozenset[str] | None = None
        self._all: tuple[Verdict, ...] | None = None

    @classmethod
    def of(cls, ctx: Ctx, as_of: str | None = None) -> CIView:
        """The view now, or as of a moment (:meth:`_as_of`)."""
        if as_of is not None:
            return cls._as_of(ctx, as_of)
        check_series, run_series = ctx.ci_series
        checks: dict[str, dict[str, Verdict]] = {}
        for (sha, name), series in check_series.items():
            checks.setdefault(sha, {})[name] = _check_verdict(ctx, sha, name, _pick_now(series))
        runs: dict[str, dict[str, Verdict]] = {}
        for (sha, key), series in run_series.items():
            runs.setdefault(sha, {})[key] = _run_verdict(sha, key, _pick_now(series), now=True)
        return cls(checks, runs)

    @classmethod
    def _as_of(cls, ctx: Ctx, as_of: str) -> CIView:
        """The view as of a moment, from the current one (:attr:`Ctx.ci`, which every bundle
        builds anyway): a check or workflow whose every attempt had started and whose latest had
        finished by then has the same verdict then as now (unless a re-run attempt passed, which
        only the current view calls flaky), so only the others are picked again."""
        now = ctx.ci
        check_series, run_series = ctx.ci_series
        checks: dict[str, dict[str, Verdict]] = {}
        for (sha, name), series in check_series.items():
            if _settled(series, as_of):
                checks.setdefault(sha, {})[name] = now.checks[sha][name]
            elif (picked := _pick(series, as_of)) is not None:
                checks.setdefault(sha, {})[name] = _check_verdict(ctx, sha, name, picked)
        runs: dict[str, dict[str, Verdict]] = {}
        for (sha, key), series in run_series.items():
            current = now.runs[sha][key]
            latest = series[-1].entry
            rerun = isinstance(latest, RunEntry) and latest.attempt > 1
            if _settled(series, as_of) and not (rerun and current.outcome == "pass"):
                runs.setdefault(sha, {})[key] = current
            elif (picked := _pick(series, as_of)) is not None:
                runs.setdefault(sha, {})[key] = _run_verdict(sha, key, picked, now=False)
        return cls(checks, runs)

    @classmethod
    def reference(cls, ctx: Ctx, as_of: str | None = None) -> CIView:
        """The view built directly from the bundle, as :meth:`of` builds it faster (tests switch
        to this one to compare)."""
        checks: dict[str, dict[str, Verdict]] = defaultdict(dict)
        by_check: dict[tuple[str, str], list[CheckEntry]] = defaultdict(list)
        for c in ctx.facts.checks:
            by_check[(c.head_sha, c.name)].append(c)
        for (sha, name), series in by_check.items():
            verdict = _latest(
                [(c.started_at or c.completed_at or "", c.id, c) for c in series], as_of,
                lambda c: (c.started_at, c.completed_at, ev.outcome_of(c.status, c.conclusion)),
            )
            if verdict is not None:
                entry, outcome, flaky = verdict
                checks[sha][name] = Verdict("check", name, name, sha, outcome,
                                            ctx.check_ids[entry.id], flaky)
        runs: dict[str, dict[str, Verdict]] = defaultdict(dict)
        by_run: dict[tuple[str, str], list[RunEntry]] = defaultdict(list)
        for r in ctx.facts.runs:
            if r.event not in ev.NOT_PR_CI_EVENTS:
                by_run[(r.head_sha, str(r.workflow_id or r.name))].append(r)
        for (sha, key), run_series in by_run.items():
            run_verdict = _latest(
                [(r.started_at or r.created_at or "", r.id, r) for r in run_series], as_of,
                lambda r: (r.started_at or r.created_at,
                           r.updated_at if r.status == "completed" else None,
                           ev.outcome_of(r.status, r.conclusion)),
            )
            if run_verdict is not None:
                run, outcome, flaky = run_verdict
                rerun_green = as_of is None and run.attempt > 1 and outcome == "pass"
                runs[sha][key] = Verdict("run", key, run.name or key, sha, outcome,
                                         f"run:{run.id}", flaky or rerun_green)
        return cls(dict(checks), dict(runs))

    def at(self, sha: str) -> tuple[Verdict, ...]:
        """Checks at ``sha`` when there are any (finer: one per job), else workflow runs; by key
        (unique within one commit)."""
        found = self._at.get(sha)
        if found is None:
            verdicts = self.checks.get(sha) or self.runs.get(sha) or {}
            found = self._at[sha] = (tuple(verdicts.values()) if len(verdicts) < 2 else
                                     tuple([verdicts[k] for k in sorted(verdicts)]))
        return found

    def shas(self) -> frozenset[str]:
        if self._shas is None:
            self._shas = frozenset(self.checks).union(self.runs)
        return self._shas

    def all(self) -> tuple[Verdict, ...]:
        if self._all is None:
            self._all = tuple([v for sha in sorted(self.shas()) for v in self.at(sha)])
        return self._all


Picked = tuple[CheckEntry | RunEntry, ev.Outcome, bool]  # an attempt, its outcome, flaky


def _check_verdict(ctx: Ctx, sha: str, name: str, picked: Picked) -> Verdict:
    entry, outcome, flaky = picked
    return _new(Verdict, ("check", name, name, sha, outcome, ctx.check_ids[entry.id], flaky))


def _run_verdict(sha: str, key: str, picked: Picked, *, now: bool) -> Verdict:
    """``now``: the current view, which also calls a passing re-run attempt flaky (the attempt
    before it failed; a view as of a moment may not have seen that attempt end)."""
    run, outcome, flaky = picked
    assert isinstance(run, RunEntry)
    flaky = flaky or (now and run.attempt > 1 and outcome == "pass")
    return _new(Verdict, ("run", key, run.name or key, sha, outcome, f"run:{run.id}", flaky))


def _settled(series: list[Attempt], as_of: str) -> bool:
    """Every attempt started by ``as_of`` and the latest finished by then."""
    done = series[-1].done
    if done is None or done > as_of:
        return False
    return all((a.started or "") <= as_of for a in series) if len(series) > 1 else (
        (series[0].started or "") <= as_of)


def _pick_now(series: list[Attempt]) -> Picked:
    """What :func:`_latest` answers now, from attempts already in order: every series has one."""
    last = series[-1]
    if len(series) == 1:  # nearly every check ran once: not flaky
        return last.entry, last.outcome, False
    return last.entry, last.outcome, last.outcome == "pass" and any(a.outcome == "fail" for a in series[:-1])


def _pick(series: list[Attempt], as_of: str) -> Picked | None:
    """What :func:`_latest` answers as of a moment: only attempts started by then count, and
    one not finished by then is pending."""
    series = [a for a in series if (a.started or "") <= as_of]
    if not series:
        return None
    last = series[-1]
    outcome = "pending" if last.done is None or last.done > as_of else last.outcome
    flaky = outcome == "pass" and len(series) > 1 and any(a.outcome == "fail" for a in series[:-1])
    return last.entry, outcome, flaky


@dataclass(frozen=True)
class CITally:
    """Verdicts at one commit split by outcome; ``value`` counts a pending/cancelled one as half."""

    failing: list[Verdict]
    waiting: list[Verdict]
    passing: list[Verdict]

    @classmethod
    def of(cls, verdicts: Sequence[Verdict]) -> CITally:
        return cls([v for v in verdicts if v.outcome == "fail"],
                   [v for v in verdicts if v.outcome in ("pending", "cancelled")],
                   [v for v in verdicts if v.outcome == "pass"])

    @property
    def decided(self) -> bool:
        """False when every verdict was skipped or neutral: nothing to score."""
        return bool(self.failing or self.waiting or self.passing)

    @property
    def value(self) -> float:
        return len(self.failing) + 0.5 * len(self.waiting)

    @property
    def counted(self) -> int:
        return len(self.failing) + len(self.waiting) + len(self.passing)

    @property
    def cited(self) -> list[str]:
        return [v.evidence for v in self.failing + self.waiting + self.passing]

    def problems(self, red: tuple[str, str], unfinished: tuple[str, str]) -> list[str]:
        """"1 of 3 checks fails (a)" and "2 checks did not finish (b and c)", for the reason
        text; ``red`` and ``unfinished`` are (singular, plural) forms of what follows."""
        parts = []
        if self.failing:
            n = len(self.failing)
            parts.append(f"{share(n, self.counted, 'check')} {agree(n, *red)} "
                         f"({names(v.label for v in self.failing)})")
        if self.waiting:
            n = len(self.waiting)
            parts.append(f"{plural(n, 'check')} {agree(n, *unfinished)} "
                         f"({names(v.label for v in self.waiting)})")
        return parts


_T = TypeVar("_T")


def _latest(
    series: list[tuple[str, int, _T]],
    as_of: str | None,
    describe: Callable[[_T], tuple[str | None, str | None, ev.Outcome]],
) -> tuple[_T, ev.Outcome, bool] | None:
    """Latest attempt (optionally among those started by ``as_of``), its outcome then, and
    whether an earlier attempt on the same commit failed before it passed (a flaky re-run)."""
    ordered = [entry for _, _, entry in sorted(series, key=lambda t: (t[0], t[1]))]
    if as_of is not None:
        ordered = [e for e in ordered if (describe(e)[0] or "") <= as_of]
    if not ordered:
        return None
    latest = ordered[-1]
    _, done, outcome = describe(latest)
    if as_of is not None and (done is None or done > as_of):
        outcome = "pending"
    failed_before = any(describe(e)[2] == "fail" for e in ordered[:-1])
    return latest, outcome, failed_before and outcome == "pass"
