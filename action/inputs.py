"""The action's inputs, read from ``INPUT_*`` exactly as the runner passes them.

For a container action the runner upper-cases the input name and keeps its hyphens, so
``github-token`` arrives as ``INPUT_GITHUB-TOKEN`` (a name a shell cannot even export). The
underscore spelling is read as a fallback so the entrypoint can also be driven from a shell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from taskeval.transports import Api, default_api, parse_api

AiMode = Literal["auto", "on", "off"]

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_PR_NUMBER = re.compile(r"^#?([1-9][0-9]{0,9})$")

DEFAULT_RESULT_PATH = "taskeval-result.json"


class InputError(ValueError):
    """An input the workflow passed that cannot be used; the message names the input."""


# Each reserve's input, and the environment variable a workflow may set instead (the input wins).
RESERVE_ENV: Final = {"rate-reserve": "TASKEVAL_RATE_RESERVE",
                      "graphql-reserve": "TASKEVAL_GRAPHQL_RESERVE"}


def _reserve(env: Mapping[str, str], name: str, unit: str) -> int:
    """A reserve from input ``name``, else its variable (``RESERVE_ENV``) in the step's env; 0
    when neither."""
    raw, source = raw_input(env, name), f"input '{name}'"
    if not raw:
        raw, source = (env.get(RESERVE_ENV[name]) or "").strip(), RESERVE_ENV[name]
    if raw and not raw.isdigit():
        raise InputError(f"{source} must be a whole number of {unit} (at least 0), got {raw!r}")
    return int(raw or 0)


def raw_input(env: Mapping[str, str], name: str) -> str:
    """The trimmed value of input ``name`` ('' when unset), hyphenated spelling first."""
    key = "INPUT_" + name.replace(" ", "_").upper()
    value = env.get(key)
    if value is None:
        value = env.get(key.replace("-", "_"), "")
    return value.strip()


def parse_bool(name: str, value: str, default: bool) -> bool:
    if not value:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise InputError(f"input {name!r} must be true or false, got {value!r}")


def parse_pull_number(value: str, name: str = "pull-request") -> int | None:
    """A PR number as a workflow author would type it: ``12`` or ``#12``; '' means none."""
    if not value:
        return None
    match = _PR_NUMBER.match(value.strip())
    if not match:
        raise InputError(f"input {name!r} must be a pull request number such as 12, got {value!r}")
    return int(match.group(1))


@dataclass(frozen=True)
class ActionInputs:
    github_token: str
    pull_request: int | None
    config_path: Path | None
    comment: bool
    ai: AiMode
    model: str
    openai_api_key: str
    openai_base_url: str
    fail_under: int
    result_path: str
    api: Api = field(default_factory=default_api)
    # Budget kept for the token's other users: REST requests, GraphQL points (0: none).
    rate_reserve: int = 0
    graphql_reserve: int = 0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ActionInputs:
        """Parse and validate every input; raises :class:`InputError` naming the first bad one."""
        ai = raw_input(env, "ai").lower() or "auto"
        if ai not in ("auto", "on", "off"):
            raise InputError(f"input 'ai' must be auto, on or off, got {ai!r}")
        fail_text = raw_input(env, "fail-under") or "0"
        if not fail_text.isdigit() or not 0 <= int(fail_text) <= 100:
            raise InputError(f"input 'fail-under' must be an integer 0..100 (0 = never fail), "
                             f"got {fail_text!r}")
        base_url = raw_input(env, "openai-base-url")
        if base_url and not base_url.startswith(("https://", "http://")):
            raise InputError(f"input 'openai-base-url' must be an http(s) URL, got {base_url!r}")
        config = raw_input(env, "config-path")
        try:
            named = raw_input(env, "api")
            api = parse_api(named, "input 'api'") if named else default_api(env)
        except ValueError as exc:
            raise InputError(str(exc)) from exc
        return cls(
            rate_reserve=_reserve(env, "rate-reserve", "requests"),
            graphql_reserve=_reserve(env, "graphql-reserve", "points"),
            github_token=raw_input(env, "github-token"),
            pull_request=parse_pull_number(raw_input(env, "pull-request")),
            config_path=Path(config) if config else None,
            comment=parse_bool("comment", raw_input(env, "comment"), True),
            ai=ai,  # type: ignore[arg-type]
            model=raw_input(env, "model"),
            openai_api_key=raw_input(env, "openai-api-key"),
            openai_base_url=base_url,
            fail_under=int(fail_text),
            result_path=raw_input(env, "result-path") or DEFAULT_RESULT_PATH,
            api=api,
        )
