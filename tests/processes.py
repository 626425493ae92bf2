"""What a process a test starts inherits: the machine's environment less anything that would point
it at a real GitHub, AI endpoint, runner or deployment, but with the transport under test.

``TASKEVAL_API`` is kept on purpose: the suites that run once per transport
(``tests/conftest.py``, ``transport``) set it, and a CLI, Action, worker or backfill process must
collect the way the test says, as it would in a deployment that sets it.
"""

from __future__ import annotations

import os
from typing import Final

from taskeval.transports import API_ENV

SCRUBBED: Final = ("GITHUB_", "GH_", "OPENAI_", "AZURE_", "TASKEVAL_", "INPUT_", "RUNNER_")
KEPT: Final = frozenset({API_ENV})


def transport_env() -> dict[str, str]:
    """``TASKEVAL_API`` as this test process has it, for a child built from nothing."""
    value = os.environ.get(API_ENV)
    return {API_ENV: value} if value else {}


def child_env(**values: str) -> dict[str, str]:
    """The machine's environment, scrubbed (``DATABASE_URL`` too: a test names its own store),
    with ``values`` on top."""
    base = {k: v for k, v in os.environ.items()
            if (k in KEPT or not k.startswith(SCRUBBED)) and k != "DATABASE_URL"}
    return {**base, **values}
