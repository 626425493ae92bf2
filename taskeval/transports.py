"""The two transports collection reads GitHub over, and which one the commands use by default.

GraphQL by default: one query for most of a PR's evidence, REST for what GraphQL lacks, and REST
for everything where a server has no GraphQL or refuses the token for it (said in the result's
warnings). Both give the same evidence bundle (docs/collection.md). ``TASKEVAL_API`` changes the
default for every adapter at once (the CLI's commands, the Action, the bot, backfill, and the
library's ``Options``), so a GitHub Enterprise Server without GraphQL is set up in one place; an
explicit ``--api``, Action input or option still wins. A module of its own, with no imports
beyond the standard library, so that every adapter can name the default without loading the
pipeline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final, Literal

Api = Literal["rest", "graphql"]
API_CHOICES: Final[tuple[Api, ...]] = ("rest", "graphql")
DEFAULT_API: Final[Api] = "graphql"
API_ENV: Final = "TASKEVAL_API"


def parse_api(value: str, source: str) -> Api:
    """``value`` as a transport; a ``ValueError`` naming ``source`` (a flag, an input, a
    variable) and the choices otherwise."""
    api = value.strip().lower()
    if api not in API_CHOICES:
        raise ValueError(f"{source} must be rest or graphql, got {value!r}")
    return api


def default_api(env: Mapping[str, str] | None = None) -> Api:
    """The transport used when none is named: ``TASKEVAL_API`` when it is set, else GraphQL."""
    value = (os.environ if env is None else env).get(API_ENV, "").strip()
    return parse_api(value, API_ENV) if value else DEFAULT_API
