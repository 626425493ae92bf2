"""Which model endpoint the judge talks to, chosen from the environment, and its client.

One OpenAI-compatible chat-completions call serves every provider: OpenAI, Azure OpenAI (its own
client class for deployments and ``api-version``), GitHub Models (the workflow token is the key)
and local servers such as Ollama or vLLM (a base URL; loopback servers need no key).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

from taskeval.redact import register_secret

if TYPE_CHECKING:
    import openai

JudgeMode = Literal["auto", "on", "off"]
Provider = Literal["openai", "azure", "github-models", "openai-compatible", "local"]

DEFAULT_MODEL: Final = "gpt-4o-mini"
GITHUB_MODELS_URL: Final = "https://models.github.ai/inference"
GITHUB_MODELS_DEFAULT_MODEL: Final = "openai/gpt-4o-mini"
# First GA Azure OpenAI API version with structured outputs (json_schema response_format).
AZURE_DEFAULT_API_VERSION: Final = "2024-10-21"
AZURE_HOST_SUFFIXES: Final = (
    ".openai.azure.com",
    ".cognitiveservices.azure.com",
    ".services.ai.azure.com",
)
LOCAL_PLACEHOLDER_KEY: Final = "unused-local-key"
PUBLIC_GITHUB_API: Final = "https://api.github.com"


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def is_azure_url(url: str) -> bool:
    return _host(url).endswith(AZURE_HOST_SUFFIXES)


def is_github_models_url(url: str) -> bool:
    return _host(url) == "models.github.ai"


def is_loopback_url(url: str) -> bool:
    host = _host(url)
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def describe_endpoint(url: str | None) -> str:
    """Scheme, host and port of an endpoint, never its credentials or query."""
    if not url:
        return "api.openai.com"
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.hostname or '?'}{port}"


@dataclass(frozen=True, kw_only=True)
class JudgeConfig:
    """Everything needed to call the model. ``api_key`` never appears in ``repr``."""

    model: str
    api_key: str = field(repr=False)
    base_url: str | None
    provider: Provider
    temperature: float = 0.0
    timeout: float = 60
    max_retries: int = 2
    api_version: str | None = None  # Azure OpenAI only
    max_output_tokens: int = 2_000  # the judgement is ~1 KB of JSON; this bounds a runaway reply

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], mode: JudgeMode, github_token: str | None = None
    ) -> tuple[JudgeConfig | None, str | None]:
        """The endpoint (see :meth:`_endpoint_from_env`), with ``TASKEVAL_AI_TIMEOUT`` (seconds per
        try) and ``TASKEVAL_AI_RETRIES`` bounding how long a hanging endpoint can hold an evaluation."""
        config, reason = cls._endpoint_from_env(env, mode, github_token)
        if config is None:
            return None, reason
        register_secret(config.api_key)
        limits: dict[str, Any] = {}
        for name, attr, kind, low, high in (("TASKEVAL_AI_TIMEOUT", "timeout", float, 1, 600),
                                             ("TASKEVAL_AI_RETRIES", "max_retries", int, 0, 10)):
            text = (env.get(name) or "").strip()
            if not text:
                continue
            try:
                value = kind(text)
            except ValueError:
                return None, f"{name} must be a number from {low} to {high}, got {text[:20]!r}"
            if not low <= value <= high:
                return None, f"{name} must be a number from {low} to {high}, got {text[:20]!r}"
            limits[attr] = value
        return (replace(config, **limits) if limits else config), None

    @classmethod
    def _endpoint_from_env(
        cls, env: Mapping[str, str], mode: JudgeMode, github_token: str | None = None
    ) -> tuple[JudgeConfig | None, str | None]:
        """Pick the endpoint: Azure settings, a base URL, an OpenAI key, then GitHub Models.

        Returns ``(config, None)`` or ``(None, reason)``. With ``mode="auto"`` and nothing
        configured the reason explains how to turn the judge on; the pipeline decides whether
        that is an error (``mode="on"``) or just "off".
        """
        if mode == "off":
            return None, "AI judge turned off"
        if mode not in ("auto", "on"):
            return None, f"unknown AI judge mode {mode!r}; use auto, on or off"

        def get(name: str) -> str | None:
            value = (env.get(name) or "").strip()
            return value or None

        model = get("TASKEVAL_MODEL")
        base_url = get("OPENAI_BASE_URL")
        key = get("OPENAI_API_KEY")
        azure_endpoint = get("AZURE_OPENAI_ENDPOINT")
        azure_key = get("AZURE_OPENAI_API_KEY")

        if azure_endpoint or azure_key or (base_url and is_azure_url(base_url)):
            endpoint = azure_endpoint or base_url
            secret = azure_key or key
            if not endpoint:
                return None, "AZURE_OPENAI_API_KEY is set but AZURE_OPENAI_ENDPOINT is not"
            if not secret:
                return None, (
                    f"Azure OpenAI endpoint {describe_endpoint(endpoint)} is set but neither "
                    "AZURE_OPENAI_API_KEY nor OPENAI_API_KEY is"
                )
            return cls(
                model=get("AZURE_OPENAI_DEPLOYMENT") or model or DEFAULT_MODEL,
                api_key=secret,
                base_url=endpoint,
                provider="azure",
                api_version=get("AZURE_OPENAI_API_VERSION")
                or get("OPENAI_API_VERSION")
                or AZURE_DEFAULT_API_VERSION,
            ), None

        if base_url and is_github_models_url(base_url):
            secret = key or github_token
            if not secret:
                return None, "OPENAI_BASE_URL points at GitHub Models but no token was given"
            return cls(model=model or GITHUB_MODELS_DEFAULT_MODEL, api_key=secret,
                       base_url=base_url, provider="github-models"), None

        if key:
            provider: Provider = "openai"
            if base_url and _host(base_url) != "api.openai.com":
                provider = "local" if is_loopback_url(base_url) else "openai-compatible"
            return cls(model=model or DEFAULT_MODEL, api_key=key, base_url=base_url,
                       provider=provider), None

        if base_url:
            if is_loopback_url(base_url):
                return cls(model=model or DEFAULT_MODEL, api_key=LOCAL_PLACEHOLDER_KEY,
                           base_url=base_url, provider="local"), None
            return None, (
                f"OPENAI_BASE_URL is set to {describe_endpoint(base_url)} but OPENAI_API_KEY is "
                "not; set any non-empty key for a server that needs none"
            )

        if github_token:
            github_api = (get("GITHUB_API_URL") or PUBLIC_GITHUB_API).rstrip("/")
            if github_api != PUBLIC_GITHUB_API:
                # A GitHub Enterprise Server token must not be sent to github.com's models API.
                return None, (
                    "no OPENAI_API_KEY, and GitHub Models is only available on github.com "
                    f"(GITHUB_API_URL is {describe_endpoint(github_api)})"
                )
            return cls(model=model or GITHUB_MODELS_DEFAULT_MODEL, api_key=github_token,
                       base_url=GITHUB_MODELS_URL, provider="github-models"), None

        prefix = "AI judge required (ai: on) but" if mode == "on" else "AI judge skipped:"
        return None, (
            f"{prefix} no model credentials. Set OPENAI_API_KEY (optionally OPENAI_BASE_URL and "
            "TASKEVAL_MODEL), AZURE_OPENAI_ENDPOINT with AZURE_OPENAI_API_KEY, OPENAI_BASE_URL "
            "for a local server, or give the GitHub token `models: read` to use GitHub Models"
        )


def make_client(config: JudgeConfig) -> openai.OpenAI:
    """The library's own client: it does retries (with ``Retry-After``), timeouts and auth."""
    import openai  # half a second to load: only when a judge runs, never to re-score offline

    if config.provider == "azure":
        return openai.AzureOpenAI(
            azure_endpoint=config.base_url or "",
            api_key=config.api_key,
            api_version=config.api_version or AZURE_DEFAULT_API_VERSION,
            timeout=config.timeout,
            max_retries=config.max_retries,
        )
    return openai.OpenAI(
        api_key=config.api_key,
        base_url=config.base_url or "https://api.openai.com/v1",
        timeout=config.timeout,
        max_retries=config.max_retries,
    )
