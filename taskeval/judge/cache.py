"""Judgement cache: the same bundle, prompt version, model and temperature never cost twice.

:class:`FileCache` is the default for the CLI and the Action; the bot implements
:class:`JudgeCache` on its database. A cache is an optimisation, so every fault in it (unreadable
directory, corrupt entry) degrades to a miss, never to a failed evaluation.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from taskeval.judge.config import JudgeConfig
from taskeval.judge.prompt import PROMPT_VERSION

log = logging.getLogger(__name__)

_KEY = re.compile(r"^[0-9a-f]{64}$")


class JudgeCache(Protocol):
    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, value: dict[str, Any]) -> None: ...


def cache_key(bundle_hash: str, config: JudgeConfig) -> str:
    """SHA-256 over what decides a judgement: bundle, prompt/rubric version, model, temperature."""
    material = json.dumps(
        [bundle_hash, PROMPT_VERSION, config.model, float(config.temperature)],
        separators=(",", ":"),
    )
    return hashlib.sha256(material.encode()).hexdigest()


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``TASKEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/taskeval/judge``, else ``~/.cache/...``."""
    env = os.environ if env is None else env
    if env.get("TASKEVAL_CACHE_DIR"):
        return Path(env["TASKEVAL_CACHE_DIR"])
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "taskeval" / "judge"


class FileCache:
    """One JSON file per key, written atomically (temp file + ``os.replace``)."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def _path(self, key: str) -> Path | None:
        # Keys are SHA-256 hex; anything else could walk out of the directory.
        return self.directory / f"{key}.json" if _KEY.match(key) else None

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            log.warning("ignoring unreadable judge cache entry %s: %s", path.name, exc)
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.directory)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(value, fh, ensure_ascii=False, sort_keys=True)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError as exc:
            log.warning("could not write judge cache entry to %s: %s", self.directory, exc)
