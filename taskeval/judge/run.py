"""One judge request per evaluation: ask, validate, check citations, cache.

The judge is advisory and fail-closed: every model or transport fault becomes a recorded
``info.status`` (``error``: no usable reply came back; ``rejected``: a reply came back and failed
validation; ``partial``: some categories have no AI score) with a plain-English ``info.error``,
and those categories keep their deterministic score. Nothing here raises for such faults, and no
key or token ever reaches ``info.error`` or the logs.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Final

from pydantic import ValidationError

from taskeval.contract import CATEGORIES, ScoreError, validate_score
from taskeval.judge.cache import FileCache, JudgeCache, cache_key
from taskeval.judge.config import JudgeConfig, describe_endpoint, make_client
from taskeval.judge.prompt import (
    PROMPT_VERSION,
    TRUNCATION,
    PromptTooLarge,
    RenderedPrompt,
    render_prompt,
)
from taskeval.models import EvidenceBundle, JudgeInfo, JudgeOutput, JudgeStatus, Signal
from taskeval.redact import redact as redact_text

if TYPE_CHECKING:  # the openai library takes half a second to load: only when a judge runs
    import openai
    from openai.types.shared_params import ResponseFormatJSONObject

log = logging.getLogger(__name__)

MAX_RATIONALE: Final = 1_000
MAX_CITATIONS: Final = 25
MAX_DROPPED: Final = 50
MAX_ID: Final = 200
MAX_SERVER_MESSAGE: Final = 300
CACHE_FORMAT: Final = 1

# The strict json_schema response format, built by the openai library from the pydantic model
# (the helper behind ``chat.completions.parse``; imported from where every release since structured
# outputs keeps it, as the public re-export is newer than the versions pyproject allows).
@functools.cache
def schema_format() -> Any:
    from openai.lib._parsing._completions import type_to_response_format_param

    return type_to_response_format_param(JudgeOutput)


JSON_MODE: Final[ResponseFormatJSONObject] = {"type": "json_object"}

# (base URL, model) pairs whose endpoint rejected json_schema: JSON mode from then on, for the
# life of the process. Keyed by model too, because one endpoint may serve models that differ.
_json_mode_only: set[tuple[str, str]] = set()
_json_mode_lock = threading.Lock()



@dataclass
class CategoryJudgement:
    ai_score: int | None
    rationale: str
    evidence: list[str]
    note: str | None  # why there is no AI score, or which citations were dropped


@dataclass
class JudgeResult:
    info: JudgeInfo
    categories: dict[str, CategoryJudgement]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": CACHE_FORMAT,
            "info": self.info.model_dump(mode="json", by_alias=True),
            "categories": {name: asdict(c) for name, c in self.categories.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgeResult:
        """Rebuild a stored judgement; raises ``ValueError`` for anything malformed."""
        if data.get("format") != CACHE_FORMAT:
            raise ValueError("unknown cache format")
        info = JudgeInfo.model_validate(data["info"])
        categories: dict[str, CategoryJudgement] = {}
        for name in CATEGORIES:
            raw = data["categories"][name]
            score = raw["ai_score"]
            evidence, note, rationale = raw["evidence"], raw["note"], raw["rationale"]
            if score is not None:
                validate_score(score, "stored AI score")
            if not isinstance(rationale, str) or not isinstance(evidence, list) or not all(
                isinstance(e, str) for e in evidence
            ) or not (note is None or isinstance(note, str)):
                raise ValueError(f"malformed stored judgement for {name}")
            categories[name] = CategoryJudgement(score, rationale, evidence, note)
        return cls(info, categories)


class _Fault(Exception):
    def __init__(self, status: JudgeStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _bound(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(TRUNCATION)] + TRUNCATION


def redact(text: str, secret: str | None) -> str:
    """Remove the configured key and anything shaped like an OpenAI key or GitHub token."""
    return redact_text(text, secret)


def _without_score(info: JudgeInfo, status: JudgeStatus, error: str) -> JudgeResult:
    info.status = status
    info.error = error
    note = f"no AI score: {error}"
    return JudgeResult(info, {c: CategoryJudgement(None, "", [], note) for c in CATEGORIES})


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str):
            return message
    return "" if body is None else str(body)


def describe_api_error(exc: Exception, config: JudgeConfig, retries: int) -> str:
    """Plain English for a failed request: which endpoint, what happened, never a credential."""
    import openai

    where = f"{config.provider} endpoint {describe_endpoint(config.base_url)}"
    tried = "tried once" if retries == 0 else f"tried {retries + 1} times"
    if isinstance(exc, openai.APITimeoutError):
        return f"{where} did not answer within {config.timeout:g} s ({tried})"
    if isinstance(exc, openai.APIConnectionError):
        return f"could not connect to {where} ({tried})"
    if isinstance(exc, openai.AuthenticationError):
        return f"{where} rejected the credentials (HTTP 401): check the API key or token"
    if isinstance(exc, openai.PermissionDeniedError):
        github = config.provider == "github-models"
        hint = " (the GitHub token needs `models: read`)" if github else ""
        return f"{where} refused access (HTTP 403){hint}"
    detail = ""
    if isinstance(exc, openai.APIStatusError):
        message = _bound(" ".join(_server_message(exc).split()), MAX_SERVER_MESSAGE)
        detail = f": {redact(message, config.api_key)}" if message else ""
        gave_up = f"gave up after {retries} retries"
        if isinstance(exc, openai.RateLimitError):
            return f"{where} rate-limited the request (HTTP 429, {gave_up}){detail}"
        if exc.status_code >= 500:
            return f"{where} failed with HTTP {exc.status_code} ({gave_up}){detail}"
        return f"{where} refused the request with HTTP {exc.status_code}{detail}"
    return f"{where} sent a reply the client could not read ({type(exc).__name__})"


def _rejects_json_schema(exc: openai.BadRequestError) -> bool:
    text = f"{exc.param or ''} {_server_message(exc)}".lower()
    return "response_format" in text or "json_schema" in text


def _complete(client: openai.OpenAI, config: JudgeConfig, messages: list[dict[str, str]]) -> Any:
    """One chat completion, strict json_schema first, JSON mode where the endpoint refuses it."""
    import openai

    endpoint = (str(client.base_url), config.model)
    limit = "max_completion_tokens" if config.provider == "openai" else "max_tokens"
    kwargs: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "temperature": config.temperature,
        limit: config.max_output_tokens,
    }
    if endpoint not in _json_mode_only:
        try:
            return client.chat.completions.create(response_format=schema_format(), **kwargs)
        except openai.BadRequestError as exc:
            if not _rejects_json_schema(exc):
                raise
            with _json_mode_lock:
                _json_mode_only.add(endpoint)
            log.info("%s rejected json_schema output; using JSON mode from now on",
                     describe_endpoint(config.base_url))
    return client.chat.completions.create(response_format=JSON_MODE, **kwargs)


def _validation_summary(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_input=False, include_url=False)[:3]:
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{loc}: {err['msg']}")
    more = exc.error_count() - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _parse(completion: Any) -> JudgeOutput:
    choices = getattr(completion, "choices", None)
    if not choices:
        raise _Fault("error", "the model returned no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    refusal = getattr(message, "refusal", None)
    if refusal:
        text = _bound(" ".join(str(refusal).split()), 200)
        raise _Fault("error", f"the model refused to judge: {text}")
    finish = getattr(choice, "finish_reason", None)
    if finish == "length":
        raise _Fault(
            "error", "the reply was cut off at the output token limit (finish_reason: length)"
        )
    if finish == "content_filter":
        raise _Fault("error", "the provider's content filter withheld the reply")
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        raise _Fault("rejected", "the reply was empty")
    try:
        data = json.loads(content)
    except json.JSONDecodeError as exc:
        where = f"{exc.msg} at character {exc.pos}"
        raise _Fault("rejected", f"the reply is not valid JSON ({where})") from None
    if not isinstance(data, dict) or not isinstance(data.get("categories"), list):
        raise _Fault("rejected", 'the reply is not an object with a "categories" list')
    names = [c.get("category") for c in data["categories"] if isinstance(c, dict)]
    unknown = [n for n in names if n not in CATEGORIES]
    if unknown:
        shown = ", ".join(_bound(json.dumps(n), 60) for n in unknown[:3])
        raise _Fault("rejected", f"the reply has an unknown category: {shown}")
    repeated = sorted({n for n in names if isinstance(n, str) and names.count(n) > 1})
    if repeated:
        raise _Fault("rejected", f"the reply judges a category twice: {', '.join(repeated)}")
    try:
        # strict: 87.5, "87" and true are not scores; the contract wants integers 0..100.
        return JudgeOutput.model_validate(data, strict=True)
    except ValidationError as exc:
        summary = _validation_summary(exc)
        raise _Fault("rejected", f"the reply breaks the judgement schema: {summary}") from None


def _judge(output: JudgeOutput, prompt: RenderedPrompt, info: JudgeInfo) -> JudgeResult:
    """Keep citations the model saw; a category left without one gets no AI score."""
    categories: dict[str, CategoryJudgement] = {}
    dropped_all: list[str] = []
    for verdict in output.categories:
        valid: list[str] = []
        dropped: list[str] = []
        for eid in dict.fromkeys(verdict.evidence):
            (valid if eid in prompt.shown_ids else dropped).append(eid)
        dropped = [_bound(d, MAX_ID) for d in dropped]
        dropped_all.extend(d for d in dropped if d not in dropped_all)
        dropped_text = ", ".join(json.dumps(d, ensure_ascii=False) for d in dropped[:5])
        rationale = _bound(verdict.rationale.strip(), MAX_RATIONALE)
        if valid:
            note = f"dropped citations not in the evidence: {dropped_text}" if dropped else None
            categories[verdict.category] = CategoryJudgement(
                verdict.aiScore, rationale, valid[:MAX_CITATIONS], note
            )
        else:
            why = f" (cited only IDs not in the evidence: {dropped_text})" if dropped else ""
            categories[verdict.category] = CategoryJudgement(
                None, rationale, [], f"no AI score: the judge cited no valid evidence ID{why}"
            )
    missing = "no AI score: the judge returned no judgement for this category"
    for name in CATEGORIES:
        categories.setdefault(name, CategoryJudgement(None, "", [], missing))
    info.dropped_citations = dropped_all[:MAX_DROPPED]
    unscored = [n for n in CATEGORIES if categories[n].ai_score is None]
    reasons = "; ".join(
        f"{n}: {(categories[n].note or '').removeprefix('no AI score: ')}" for n in unscored
    )
    if not unscored:
        info.status, info.error = "ok", None
    elif len(unscored) < len(CATEGORIES):
        info.status, info.error = "partial", reasons
    else:
        info.status, info.error = "rejected", f"no category has a usable judgement ({reasons})"
    return JudgeResult(info, {n: categories[n] for n in CATEGORIES})


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _from_cache(cache: JudgeCache, key: str) -> JudgeResult | None:
    try:
        stored = cache.get(key)
        if stored is None:
            return None
        result = JudgeResult.from_dict(stored)
    except (KeyError, TypeError, ValueError, ScoreError) as exc:
        log.warning("ignoring malformed judge cache entry %s… (%s)", key[:12], type(exc).__name__)
        return None
    except Exception as exc:  # a cache backend fault must not fail the evaluation
        log.warning("judge cache lookup failed: %s", type(exc).__name__)
        return None
    result.info.cached = True
    return result


def _to_cache(cache: JudgeCache, key: str, result: JudgeResult) -> None:
    try:
        cache.put(key, result.to_dict())
    except Exception as exc:  # a cache backend fault must not fail the evaluation
        log.warning("judge cache store failed: %s", type(exc).__name__)


def run_judge(
    bundle: EvidenceBundle,
    config: JudgeConfig,
    *,
    cache: JudgeCache | None = None,
    max_prompt_chars: int = 60_000,
    signals: list[Signal] | None = None,
    client: openai.OpenAI | None = None,
) -> JudgeResult:
    """Ask the model once for an advisory judgement of ``bundle``; never raises for its faults.

    ``cache=None`` uses the default :class:`FileCache`. Only complete or partial judgements are
    cached: a fault may be transient and is worth retrying on the next evaluation.
    """
    import openai

    cache = FileCache() if cache is None else cache
    key = cache_key(bundle.hash(), config)
    hit = _from_cache(cache, key)
    if hit is not None:
        return hit

    info = JudgeInfo(status="error", model=config.model, prompt_version=PROMPT_VERSION)
    try:
        prompt = render_prompt(bundle, signals, max_prompt_chars)
    except PromptTooLarge as exc:
        return _without_score(info, "error", str(exc))
    info.trimmed = prompt.trimmed

    retries = config.max_retries if client is None else client.max_retries
    try:
        client = client or make_client(config)
        completion = _complete(client, config, prompt.messages)
    except (openai.OpenAIError, ValueError, TypeError) as exc:
        error = redact(describe_api_error(exc, config, retries), config.api_key)
        log.warning("AI judge failed: %s", error)
        return _without_score(info, "error", error)

    usage = getattr(completion, "usage", None)
    info.prompt_tokens = _count(getattr(usage, "prompt_tokens", None))
    info.completion_tokens = _count(getattr(usage, "completion_tokens", None))
    reported_model = getattr(completion, "model", None)
    if isinstance(reported_model, str) and reported_model:
        info.model = reported_model
    try:
        output = _parse(completion)
    except _Fault as fault:
        error = redact(fault.message, config.api_key)
        log.warning("AI judge reply %s: %s", fault.status, error)
        return _without_score(info, fault.status, error)

    result = _judge(output, prompt, info)
    if result.info.error:
        result.info.error = redact(result.info.error, config.api_key)
    if result.info.status in ("ok", "partial"):
        _to_cache(cache, key, result)
    log.info("AI judge %s (model %s, %s prompt / %s completion tokens)", result.info.status,
             result.info.model, result.info.prompt_tokens, result.info.completion_tokens)
    return result
