"""What tests share to wait for the world and to find the real-PR data: one bounded poll, and one
rule for a corpus that is absent (skip, saying so; fail under ``TASKEVAL_REQUIRE_CORPUS=1``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest

from taskeval.corpus import aidev

ROOT: Final = Path(__file__).resolve().parents[1]
REQUIRE_ENV: Final = "TASKEVAL_REQUIRE_CORPUS"


def wait_for(condition: Callable[[], Any], what: str, limit: float = 60.0,
             ignoring: tuple[type[BaseException], ...] = ()) -> Any:
    """Poll until ``condition`` is truthy (an exception in ``ignoring`` counts as not yet); a
    bounded wait, not a timing assertion."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            value = condition()
        except ignoring:
            value = None
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def corpus_dir(needed_by: str) -> Path:
    """The AIDev-pop folder, or a skip (a failure under ``TASKEVAL_REQUIRE_CORPUS=1``) naming
    what needed it."""
    path = aidev.default_data_dir(ROOT)
    if not aidev.is_corpus_dir(path):
        message = (f"AIDev-pop corpus not found at {path} (set TASKEVAL_CORPUS_DIR to the "
                   f"aidev-pop-v1 folder); {needed_by} need it")
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{message}, and {REQUIRE_ENV}=1 makes them mandatory", pytrace=False)
        pytest.skip(message)
    return path
