"""The two transports collection reads GitHub over, and which one the commands use by default.

GraphQL by default: one query for most of a PR's evidence, REST for what GraphQL lacks, and REST
for everything where a server has no GraphQL or refuses the token for it (said in the result's
warnings). Both give the same evidence bundle (docs/collection.md). A module of its own, with no
imports, so that every adapter (CLI, Action inputs, bot settings, backfill) can name the default
without loading the pipeline.
"""

from __future__ import annotations

from typing import Final, Literal

Api = Literal["rest", "graphql"]
API_CHOICES: Final[tuple[Api, ...]] = ("rest", "graphql")
DEFAULT_API: Final[Api] = "graphql"
