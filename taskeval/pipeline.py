"""collect -> bundle -> score -> judge -> blend -> result. The one path every adapter uses.

Adapters (CLI, Action, bot) build :class:`Options`, call :func:`evaluate_pull_request` or
:func:`score_bundle`, and print, post or store what comes back. Nothing here parses argv, runner
environment or webhooks, and nothing outside this module blends scores.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson
from pydantic import TypeAdapter, ValidationError

from taskeval import SCORER_VERSION, __version__, canonical, contract
from taskeval.agents import attribute
from taskeval.config import LoadedConfig, Settings, field_location, load_config, stored_config
from taskeval.evidence import build_bundle
from taskeval.judge import FileCache, JudgeCache, JudgeConfig, JudgeResult, default_cache_dir, run_judge
from taskeval.memo import by_identity
from taskeval.models import (
    SCHEMA_VERSION,
    AgentAttribution,
    CategoryScore,
    Closure,
    ConfigInfo,
    EvaluationResult,
    EvidenceBundle,
    EvidenceGroup,
    JudgeInfo,
    LinkedIssueEntry,
    PullFacts,
    PullRequestRef,
    Rescue,
    Signal,
    TaskType,
    Turns,
    in_field_order,
)
from taskeval.report import render_comment
from taskeval.scoring import CategoryOutcome, coverage, deterministic_scores
from taskeval.signals import (
    Account,
    Ctx,
    account_of,
    compute_signals,
    kept_signals,
    stale_signals,
    unknown_signal_ids,
)
from taskeval.signals.injection import judge_injections, withheld_reason
from taskeval.tasktypes import classify, linked_issues_of
from taskeval.transports import Api, default_api

if TYPE_CHECKING:  # PyGithub loads in a quarter of a second; re-scoring offline never needs it
    from github import Github

    from taskeval.github.client import Meter
    from taskeval.raw import CommentSeed, RawCollection

AiMode = Literal["auto", "on", "off"]


@dataclass(frozen=True)
class Options:
    """What an adapter decides; everything else comes from the evidence and the repo config."""

    ai: AiMode = "auto"
    config_path: Path | None = None
    # How collection reads GitHub (taskeval.github.collection.collect; docs/collection.md):
    # TASKEVAL_API, else GraphQL, unless the adapter names one.
    api: Api = field(default_factory=default_api)
    trigger: str = "cli"
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    github_token: str | None = None  # lets `ai: auto` fall back to GitHub Models
    cache: JudgeCache | None = None  # None: the judge's default file cache
    evaluated_at: str | None = None  # fixed timestamp (re-scoring); None: now
    # Re-scoring: keep a stored result's signals where they still hold (signals.stale_signals);
    # False measures every signal again (``taskeval score --recompute``).
    keep_signals: bool = True


@dataclass(frozen=True)
class Evaluation:
    result: EvaluationResult
    markdown: str
    # What a GraphQL collection already read for the comment (``publish_comment``); None over
    # REST, where the comment is found and written over REST.
    comment_seed: CommentSeed | None = None


class BundleFileError(ValueError):
    """A stored bundle/result file that cannot be read; the message names the field."""


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def evaluate_pull_request(
    gh: Github, repository: str, number: int, options: Options | None = None, *,
    meter: Meter | None = None,
) -> Evaluation:
    """Collect one PR from GitHub and evaluate it. Raises ``taskeval.github.GitHubError`` only
    when the PR itself cannot be read; partial evidence becomes warnings in the result.
    ``meter`` counts (and may gate) every request collection sends (``collect``)."""
    options = options or Options()
    from taskeval.github import collect

    return evaluate_collection(collect(gh, repository, number, meter=meter, api=options.api),
                               options)


def evaluate_collection(raw: RawCollection, options: Options | None = None) -> Evaluation:
    """Evaluate a PR already collected (backfill collects several per GraphQL query)."""
    options = options or Options()
    loaded = load_config(raw.config_text, options.config_path)
    bundle = build_bundle(raw)
    # How it was collected (a GraphQL -> REST fallback) is said first among the warnings.
    result = score_bundle(bundle, loaded, options, warnings=list(raw.notes))
    return Evaluation(result, render_comment(result), raw.comment_seed)


def _judge(
    bundle: EvidenceBundle, settings: Settings, options: Options, signals: list[Signal], ctx: Ctx,
) -> JudgeResult:
    config = _no_judge(settings, options)
    if isinstance(config, JudgeResult):
        return config
    # An instruction aimed at the judge in the PR's text: a judge that obeyed it would move the
    # grade by its share, so none is asked (taskeval.signals.injection).
    planted = judge_injections(ctx)
    if planted:
        return JudgeResult(JudgeInfo(status="withheld", error=withheld_reason(planted)), {})
    # The cache directory follows the adapter's environment (TASKEVAL_CACHE_DIR), not this process's.
    cache = options.cache if options.cache is not None else FileCache(default_cache_dir(options.env))
    return run_judge(
        bundle, config, cache=cache, max_prompt_chars=settings.max_prompt_chars,
        signals=signals,
    )


def _no_judge(settings: Settings, options: Options) -> JudgeResult | JudgeConfig:
    """What the judge says when it does not run (turned off, or no model configured); else the
    config it runs with."""
    if options.ai == "off":
        return JudgeResult(JudgeInfo(status="off", error="AI judge turned off (--no-ai / ai: off)"), {})
    if not settings.ai:
        off = "AI judge turned off by the repository config (ai: false)"
        return JudgeResult(JudgeInfo(status="off", error=off), {})
    config, reason = JudgeConfig.from_env(options.env, options.ai, options.github_token)
    if config is None:
        return JudgeResult(JudgeInfo(status="error" if options.ai == "on" else "off", error=reason), {})
    return config


def score_bundle(
    bundle: EvidenceBundle,
    loaded: LoadedConfig,
    options: Options | None = None,
    *,
    warnings: list[str] | None = None,
    bundle_hash: str | None = None,
    kept: Kept | None = None,
) -> EvaluationResult:
    """Score a bundle: signals -> deterministic scores -> the advisory judge -> the contract's
    blend -> the result. ``warnings``: anything the caller already knows to report (kept first,
    in order). ``bundle_hash``: ``bundle.hash()`` when the caller has just computed it (saves a
    second serialisation of the bundle; re-scoring checks a stored result's hash first). It is
    trusted as given, not checked again.
    ``kept``: what a stored result measured that still holds (re-scoring)."""
    options = options or Options()
    settings = loaded.settings
    ctx = Ctx(bundle, settings)  # one per bundle: signals and the account share its lookups
    signals = compute_signals(bundle, settings, kept.signals if kept else None, ctx)
    outcomes = deterministic_scores(signals, settings)  # before the judge: it sees contributions
    judged = _judge(bundle, settings, options, signals, ctx)
    agent = kept.agent if kept and kept.agent is not None else attribute(bundle, settings)
    account = kept.account if kept and kept.account is not None else account_of(ctx)
    scored = _scored(signals, outcomes, judged, agent, _audit(bundle.groups), bundle.facts.pull, loaded,
                     warnings or [], account, bundle.facts.linked_issues)
    return _result(bundle, loaded, options, scored, bundle_hash)


@dataclass(frozen=True)
class Kept:
    """A stored result's measurements that re-scoring uses instead of measuring again."""

    signals: dict[str, dict[str, Any]]  # by id, as stored
    agent: AgentAttribution | None
    account: Account | None = None  # the stored turns, closure and rescue, when they still hold


def _kept(
    stored: dict[str, Any] | None, before: LoadedConfig | None, loaded: LoadedConfig, options: Options,
) -> Kept | None:
    """What of a stored result (scored with ``before``) still holds under the settings it is
    re-scored with (None: measure everything). Anything odd in the stored signals means measuring
    again, never an error: the evidence, not the stored scores, is what a re-score stands on."""
    if not options.keep_signals or not stored or before is None or not isinstance(stored.get("signals"), list):
        return None
    stale = stale_signals(stored.get("scorerVersion"), before.settings, loaded.settings)
    if stale is None:
        return None
    signals = {s["id"]: s for s in stored["signals"]
               if isinstance(s, dict) and isinstance(s.get("id"), str) and s["id"] not in stale.signals}
    agent = None
    account = None
    if not stale.attribution and isinstance(stored.get("agent"), dict):
        try:
            agent = AgentAttribution.model_validate(stored["agent"])
            account = _stored_account(stored)
        except ValidationError:
            return None
    return Kept(signals, agent, account)


def _stored_account(stored: dict[str, Any]) -> Account | None:
    """A stored result's turns, closure and rescue (None when it has no turns: stored before
    them). They read the same accounts as attribution, so they hold while it does."""
    if not isinstance(stored.get("turns"), dict):
        return None
    closure, rescue = stored.get("closure"), stored.get("rescue")
    return Account(Turns.model_validate(stored["turns"]),
                   Closure.model_validate(closure) if closure is not None else None,
                   Rescue.model_validate(rescue) if rescue is not None else None)


def _audit(groups: list[EvidenceGroup]) -> EvidenceGroup:
    return next(g for g in groups if g.source == "runAudit")


def _input_warnings(audit: EvidenceGroup, pull: PullFacts, loaded: LoadedConfig) -> list[str]:
    """What the reader of a result must know about its inputs: partial evidence (``audit``: the
    bundle's runAudit group), config problems, and a PR that was not merged."""
    warnings = []
    # Gaps in collection live in the bundle, so a re-scored result still says it was partial.
    for item in audit.items:
        if item.id.startswith("audit:unavailable-"):
            warnings.append(f"Partial evidence, {item.label}: {' '.join((item.excerpt or '').split())}")
    for err in loaded.errors:
        warnings.append(f"Config problem, evaluated with defaults: {err}")
    unknown = unknown_signal_ids(loaded.settings)
    if unknown:
        warnings.append(f"Config names signals that do not exist (typo?): {', '.join(unknown)}")
    if not pull.merged:
        warnings.append(
            f"PR #{pull.number} is {'a draft' if pull.draft else pull.state} and not merged; "
            "it was evaluated as it stands."
        )
    return warnings


def _judge_warnings(info: JudgeInfo) -> list[str]:
    if info.status == "withheld" and info.error:
        return [f"AI judge left out: {info.error}"]
    if info.status in ("error", "rejected", "partial") and info.error:
        return [f"AI judge unavailable, deterministic scores only where it failed: {info.error}"]
    return []


def _blend(
    outcomes: Mapping[contract.Category, CategoryOutcome], judged: JudgeResult, signals: list[Signal],
) -> list[CategoryScore]:
    """Each category's deterministic score blended with the judge's, in contract order."""
    return [_category_score(name, outcomes[name], judged, signals) for name in contract.CATEGORIES]


def _category_score(
    name: contract.Category, outcome: CategoryOutcome, judged: JudgeResult, signals: list[Signal],
) -> CategoryScore:
    verdict = judged.categories.get(name)
    ai = verdict.ai_score if verdict else None
    note = None
    if ai is None:
        note = (verdict.note if verdict and verdict.note else None) or judged.info.error or (
            "AI judge did not score this category"
        )
    final = contract.blend(outcome.score, ai)
    share = coverage(name, signals)
    return CategoryScore(
        category=name,
        deterministic_score=outcome.score,
        ai_score=ai,
        final_score=final,
        weight=contract.WEIGHTS[name],
        band=contract.band(final),
        rationale=outcome.rationale,
        evidence=outcome.evidence,
        conclusive=outcome.conclusive,
        ai_rationale=verdict.rationale if verdict and ai is not None else None,
        ai_evidence=verdict.evidence if verdict and ai is not None else [],
        ai_note=note,
        coverage=share.share,
        signals_conclusive=share.conclusive,
        signals_total=share.total,
    )


@dataclass(frozen=True)
class _Scored:
    """What scoring found, before it is written as a result."""

    signals: list[Signal]
    categories: list[CategoryScore]
    judge: JudgeInfo
    warnings: list[str]
    agent: AgentAttribution
    account: Account
    task_type: TaskType


def _scored(
    signals: list[Signal], outcomes: Mapping[contract.Category, CategoryOutcome], judged: JudgeResult,
    agent: AgentAttribution, audit: EvidenceGroup, pull: PullFacts, loaded: LoadedConfig,
    warnings: list[str], account: Account, linked: Sequence[LinkedIssueEntry] = (),
) -> _Scored:
    """The blend, the warnings and the task type, the same for a bundle and for what a stored
    result stores (the task type reads only the PR's facts, its linked issues' labels and the
    config, so it is never kept)."""
    notes = [*warnings, *_input_warnings(audit, pull, loaded), *_judge_warnings(judged.info)]
    return _Scored(signals, _blend(outcomes, judged, signals), judged.info, notes, agent, account,
                   classify(pull, loaded.settings, linked_issues_of(linked)))


def _result(
    bundle: EvidenceBundle, loaded: LoadedConfig, options: Options, scored: _Scored, bundle_hash: str | None,
) -> EvaluationResult:
    """Every part of the result is a model validated when it was made (the bundle, each signal,
    category and attribution) and the categories come in contract order, so validating the whole
    again would find nothing new. ``bundle_hash`` is taken as given: the bundle's own hash, or a
    stored result's that was checked against its evidence as read (:func:`_unchanged`)."""
    digest = bundle_hash or bundle.hash()
    fields = _fields(bundle.repository, bundle.head_sha, bundle.facts.pull, loaded, options, scored, digest,
                     bundle.schema_version)
    return EvaluationResult.model_construct(**fields, evidence=bundle)


def _fields(
    repository: str, head_sha: str, pull: PullFacts, loaded: LoadedConfig, options: Options, scored: _Scored,
    digest: str, schema_version: str,
) -> dict[str, Any]:
    """Every field of the result but its evidence. ``schema_version``: the bundle's, which the
    result carries (a stored bundle keeps its version, so its re-scored result does too)."""
    categories = scored.categories
    overall_score = contract.overall({c.category: c.final_score for c in categories})
    return dict(
        schema_version=schema_version,
        scorer_version=SCORER_VERSION,
        repository=repository,
        pull_request=PullRequestRef(
            number=pull.number, title=pull.title, url=pull.url, author=pull.author,
            merged=pull.merged, merged_at=pull.merged_at,
        ),
        agent=scored.agent,
        head_sha=head_sha,
        evaluated_at=options.evaluated_at or _now(),
        trigger=options.trigger,
        overall_score=overall_score,
        overall_band=contract.band(overall_score),
        category_scores=categories,
        signals=scored.signals,
        bundle_hash=digest,
        judge=scored.judge,
        config=loaded.info,
        warnings=scored.warnings,
        turns=scored.account.turns,
        closure=scored.account.closure,
        rescue=scored.account.rescue,
        task_type=scored.task_type,
    )


def _field_path(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        parts.append(f"{field_location(err['loc'])}: {err['msg']}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _version_key(value: object) -> tuple[int, ...] | None:
    """``"1"`` -> (1,), ``"1.2"`` -> (1, 2); None for anything that is not a dotted number."""
    parts = str(value).split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def _check_schema_version(path: Path, data: dict[str, Any], what: str) -> None:
    """Refuse a file written by a newer taskeval: re-scoring it with older rules would silently
    drop or misread what the newer format holds."""
    stored = data.get("schemaVersion")
    if stored is None:
        return  # older files and hand-made bundles: the model's default applies
    key, known = _version_key(stored), _version_key(SCHEMA_VERSION)
    reads = f"this taskeval ({__version__}) reads schemaVersion {SCHEMA_VERSION} and older"
    if key is None:
        raise BundleFileError(f"{path}: {what} schemaVersion {stored!r} is not a version number; {reads}")
    if known is not None and key > known:
        raise BundleFileError(f"{path}: written by a newer taskeval: {what} schemaVersion {stored}, but "
                              f"{reads}; upgrade taskeval to re-score it")


@dataclass(frozen=True)
class Stored:
    """A stored result or bare bundle file, read and checked."""

    bundle: EvidenceBundle
    result: dict[str, Any] | None  # the stored result's JSON data; None for a bare bundle
    evidence: dict[str, Any]  # the bundle's JSON form, made or proved once: hashed, written out again
    bundle_hash: str


def _read(path: Path) -> dict[str, Any]:
    """The file's JSON data, or a one-line :class:`BundleFileError`."""
    try:
        data = canonical.loads(path.read_bytes())
    except OSError as exc:
        raise BundleFileError(f"{path}: cannot read: {exc.strerror}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleFileError(f"{path}: not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise BundleFileError(f"{path}: not valid JSON: nested too deeply") from exc
    if not isinstance(data, dict):
        raise BundleFileError(f"{path}: expected a JSON object (a result or a bundle)")
    return data


def _is_result(data: dict[str, Any]) -> bool:
    # A bundle has "groups" at the top; anything with "evidence" or a result's own keys is a result.
    return "groups" not in data and ("evidence" in data or "scorerVersion" in data or "bundleHash" in data)


def _check_result(path: Path, data: dict[str, Any]) -> None:
    """The checks a stored result passes before its evidence is read."""
    _check_schema_version(path, data, "result")
    if isinstance(data.get("evidence"), dict):
        _check_schema_version(path, data["evidence"], "bundle")
    for key in ("evidence", "bundleHash"):
        if key not in data:
            raise BundleFileError(f"{path}: invalid result: {key}: field required")


def _checked(path: Path, data: dict[str, Any]) -> Stored:
    """The file's data validated, a stored result's bundleHash checked (a result has passed
    :func:`_check_result` already)."""
    is_result = _is_result(data)
    if not is_result:
        _check_schema_version(path, data, "bundle")
    try:
        bundle = EvidenceBundle.model_validate(data["evidence"] if is_result else data)
    except ValidationError as exc:
        prefix = "evidence." if is_result else ""
        raise BundleFileError(f"{path}: invalid {'result' if is_result else 'bundle'}: "
                              f"{prefix}{_field_path(exc)}") from exc
    evidence = bundle.json_form()
    digest = bundle.hash(evidence)
    if is_result and data.get("bundleHash") != digest:
        raise BundleFileError(f"{path}: bundleHash does not match its evidence (file edited?)")
    return Stored(bundle, data if is_result else None, evidence, digest)


class Rescored:
    """A re-scored file: its result, and the result's JSON text made without serialising the
    evidence a second time. A stored result re-scored from what it stores (:func:`_from_stored`)
    has no model until ``result`` is first read; its JSON text needs none."""

    def __init__(
        self, kept: bool, evidence: dict[str, Any], *, result: EvaluationResult | None = None,
        rest: dict[str, Any] | None = None, full: Callable[[], EvaluationResult] | None = None,
    ) -> None:
        self.kept = kept  # stored signals still held and were used (signals.stale_signals)
        self.evidence = evidence  # the result's evidence as JSON data, already made
        self._result = result
        self._rest = rest  # the result's JSON data but its evidence, when there is no model yet
        self._full = full  # makes the model

    @property
    def result(self) -> EvaluationResult:
        """The result model. Made on first use when the result was written from what a stored
        result stores: its fields as scored, and the bundle validated, which raises
        :class:`BundleFileError` where the full path would."""
        if self._result is None:
            assert self._full is not None
            self._result = self._full()
        return self._result

    def json(self, *, indent: bool = True) -> str:
        """``result.to_json()`` (``indent``) or ``result.model_dump_json(by_alias=True)``."""
        return self.json_bytes(indent=indent).decode()

    def json_bytes(self, *, indent: bool = True) -> bytes:
        """:meth:`json` as UTF-8, for writing to a file without decoding and encoding it."""
        if self._rest is not None:
            data = _dumps(self._rest, self.evidence, indent)
            if data is not None:
                return data
        return result_bytes(self.result, self.evidence, indent=indent)


def rescore(path: Path, options: Options) -> Rescored:
    """Re-score a stored result or bundle offline. Pure: the same file, config and scorer
    version give byte-identical output, so the timestamp comes from the file, not the clock."""
    data = _read(path)
    is_result = _is_result(data)
    if is_result:
        _check_result(path, data)
        if TRUST_STORED and canonical.FAST and options.keep_signals and _unchanged(data):
            loaded, before = _rescore_configs(path, data, options)
            kept = _kept(data, before, loaded, options)
            return (_from_stored(path, data, options, loaded, kept)
                    or _rescored(path, _as_stored(path, data), options, (loaded, kept)))
    return _rescored(path, _checked(path, data), options)


def _rescored(
    path: Path, stored: Stored, options: Options, prepared: tuple[LoadedConfig, Kept | None] | None = None,
) -> Rescored:
    """``prepared``: the config to re-score with and what is kept, when the caller has them."""
    if prepared is None:
        loaded, before = _rescore_configs(path, stored.result, options)
        kept = _kept(stored.result, before, loaded, options)
    else:
        loaded, kept = prepared
    pull = stored.bundle.facts.pull
    opts = replace(options, trigger="rescore", evaluated_at=_stamp(stored.result, pull, options))
    result = score_bundle(stored.bundle, loaded, opts, bundle_hash=stored.bundle_hash, kept=kept)
    return Rescored(kept is not None and bool(kept.signals), stored.evidence, result=result)


def _stamp(stored: dict[str, Any] | None, pull: PullFacts, options: Options) -> str:
    stamp = (stored or {}).get("evaluatedAt") or pull.merged_at or pull.closed_at or pull.created_at
    return options.evaluated_at or str(stamp)


# Switched off by the tests to compare both ways.
TRUST_STORED = True


def _unchanged(data: dict[str, Any]) -> bool:
    """Whether a stored result's evidence is provably the JSON form of the bundle it stored, so
    validating and serialising it again (half the time of a re-score that keeps every stored
    signal) would give it back byte for byte.

    It is hashed as read, by orjson without a float check: when that matches the stored
    ``bundleHash``, it is that JSON form value for value (the hash is over the standard library's
    canonical text, so a float orjson writes otherwise fails it, and what orjson cannot write
    takes the full path); when its keys also come in field order (a hash does not see
    order), it is that JSON form byte for byte. An edit of the evidence breaks the hash and takes
    the full path, which reports it. What this trusts is that a matching ``bundleHash`` was
    written by taskeval: an edit whose hash was recomputed by hand is written out as edited
    (``--recompute`` validates everything again)."""
    evidence, digest = data["evidence"], data["bundleHash"]
    if not (isinstance(evidence, dict) and isinstance(digest, str) and in_field_order(EvidenceBundle, evidence)):
        return False
    form = canonical.orjson_canonical(evidence)
    return form is not None and hashlib.sha256(form).hexdigest() == digest


def _as_stored(path: Path, data: dict[str, Any]) -> Stored:
    """An unchanged stored result (:func:`_unchanged`), its evidence validated but written out
    as read."""
    try:
        bundle = EvidenceBundle.model_validate(data["evidence"])
    except ValidationError:
        return _checked(path, data)  # reports it as the full path does
    return Stored(bundle, data, data["evidence"], data["bundleHash"])


def _from_stored(
    path: Path, data: dict[str, Any], options: Options, loaded: LoadedConfig, kept: Kept | None,
) -> Rescored | None:
    """An unchanged stored result (:func:`_unchanged`) re-scored without a bundle: when every
    stored signal and the attribution still hold and no judge runs, scoring reads only the PR's
    facts and the run audit (validated here). None when something must be measured."""
    evidence = data["evidence"]
    if kept is None or kept.agent is None or kept.account is None:
        return None
    signals = kept_signals(loaded.settings, kept.signals)
    judged = _no_judge(loaded.settings, options)
    if signals is None or not isinstance(judged, JudgeResult):
        return None
    try:
        pull = PullFacts.model_validate(evidence["facts"]["pull"])
        linked = _LINKED.validate_python(evidence["facts"].get("linkedIssues") or [])
        audit = EvidenceGroup.model_validate(next(g for g in evidence["groups"] if g["source"] == "runAudit"))
        repository, head_sha = (_TEXT.validate_python(evidence[key]) for key in ("repository", "headSha"))
        version = _TEXT.validate_python(evidence.get("schemaVersion", "1"))
    except (ValidationError, KeyError, TypeError, StopIteration):
        return None
    scored = _scored(signals, deterministic_scores(signals, loaded.settings), judged, kept.agent, audit, pull,
                     loaded, [], kept.account, linked)
    opts = replace(options, trigger="rescore", evaluated_at=_stamp(data, pull, options))
    fields = _fields(repository, head_sha, pull, loaded, opts, scored, data["bundleHash"], version)
    # Every field is validated already; constructing skips only the evidence it lacks.
    rest = _json_but_evidence(EvaluationResult.model_construct(**fields))
    return Rescored(True, evidence, rest=rest,
                    full=lambda: EvaluationResult.model_construct(**fields, evidence=_as_stored(path, data).bundle))


_TEXT = TypeAdapter(str)
_LINKED = TypeAdapter(list[LinkedIssueEntry])


def rescore_file(path: Path, options: Options) -> EvaluationResult:
    """:func:`rescore`'s result."""
    return rescore(path, options).result


_RESULT_KEYS = tuple((name, field.alias or name) for name, field in EvaluationResult.model_fields.items())


def result_bytes(result: EvaluationResult, evidence: dict[str, Any], *, indent: bool = True) -> bytes:
    """The result's JSON text, UTF-8, with ``evidence`` (``result.evidence.json_form()``) put in
    place of serialising the bundle again. orjson writes exactly what pydantic writes for JSON
    data (strings, floats, integers up to 64 bits: tests/test_canonical.py compares them); beyond
    that it refuses and pydantic writes the result."""
    if canonical.FAST:
        data = _dumps(_json_but_evidence(result), evidence, indent)
        if data is not None:
            return data
    return (result.to_json() if indent else result.model_dump_json(by_alias=True)).encode()


def _json_but_evidence(result: EvaluationResult) -> dict[str, Any]:
    """The result's JSON data but its evidence. The config's is made once per config: a batch
    writes the same one into every result."""
    rest = result.model_dump(mode="json", by_alias=True, exclude={"evidence", "config"})
    rest["config"] = _config_json(result.config)
    return rest


@by_identity
def _config_json(info: ConfigInfo) -> dict[str, Any]:
    return info.model_dump(mode="json", by_alias=True)


def _dumps(rest: dict[str, Any], evidence: dict[str, Any], indent: bool) -> bytes | None:
    """The result's JSON text, UTF-8, from its JSON data but the evidence (``rest``) and the
    evidence; None when orjson cannot write it exactly as pydantic would."""
    data = {alias: (evidence if name == "evidence" else rest[alias]) for name, alias in _RESULT_KEYS}
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 if indent else 0)
    except orjson.JSONEncodeError:
        return None


def _rescore_configs(
    path: Path, stored: dict[str, Any] | None, options: Options,
) -> tuple[LoadedConfig, LoadedConfig | None]:
    """(the config to re-score with, the one the stored result was scored with or None). The
    first is ``--config`` if given, else the stored one, else the defaults; a broken stored config
    is an error only when it is the one to re-score with."""
    before = None
    if stored and stored.get("config") is not None:
        try:
            before = stored_config(stored["config"])
        except ValidationError as exc:
            if options.config_path is None:
                raise BundleFileError(f"{path}: invalid result: config.{_field_path(exc)}") from exc
    if options.config_path is not None:
        return _config_file(options.config_path), before
    return before or _DEFAULTS, before


_DEFAULTS = LoadedConfig(Settings(), "defaults")


def _config_file(config_path: Path) -> LoadedConfig:
    """``--config``, read once per batch rather than once per file (re-read when it changes)."""
    try:
        stat = config_path.stat()
    except OSError:
        return load_config(None, config_path)  # reports the problem as load_config always has
    return _config_file_at(config_path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _config_file_at(config_path: Path, mtime_ns: int, size: int) -> LoadedConfig:
    del mtime_ns, size  # part of the cache key only
    return load_config(None, config_path)


def publish_comment(
    gh: Github, repository: str, number: int, markdown: str, *, own_login: str | None = None,
    seed: CommentSeed | None = None, meter: Meter | None = None, login_hint: str | None = None,
) -> tuple[str, bool]:
    """Create or update the single taskeval comment; returns (url, created). ``seed`` (an
    ``Evaluation``'s ``comment_seed``) finds it in what the collection read and may write it
    with GraphQL mutations (``taskeval.github.writes``); ``meter`` counts the writes;
    ``login_hint`` says how the adapter names the posting account, should GitHub not say."""
    from taskeval.github import upsert_comment

    return upsert_comment(gh, repository, number, markdown, own_login=own_login, seed=seed,
                          meter=meter, login_hint=login_hint)
