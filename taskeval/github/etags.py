"""Conditional GETs: a repeated read sends ``If-None-Match`` and a ``304`` is the cached answer.

GitHub answers a conditional request whose ``ETag`` still matches with ``304 Not Modified``, and
does not charge the rate limit for it ("Use conditional requests if appropriate" in GitHub's REST
best practices). PyGithub offers this only for one completable object (``GithubObject.update``),
not for listings or raw JSON reads, which is what collection, outcome scans and the config read
use, so the metered requester (``client.MeteredRequester``) does it for every GET it sends: the
answer's ``ETag``, headers that matter (``Link`` for pagination) and body are kept here, and the
next identical GET by the same credential carries the tag. Repeated reads are the ones that gain:
the base branch's history in an outcome scan, a re-evaluation of an unchanged PR, the config file
of a repository whose PRs a worker or backfill evaluates one after another.

The cache is per process and bounded (``MAX_ENTRIES`` answers, ``MAX_BYTES`` of bodies, least
recently used out first); keys name the API URL with its parameters and the credential (a hash of
a token, an App installation's id), never the token itself, so one credential never sees
another's answers. A command whose repeated reads come from separate runs (``taskeval outcomes``
scanning a base branch from cron) also keeps the answers on disk, beside the judge's cache
(:func:`etag_dir`). ``TASKEVAL_ETAGS=off`` turns both off.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from github import Auth

MAX_ENTRIES: Final = 4096
MAX_BYTES: Final = 64 * 1024 * 1024
# Answer headers the cached answer keeps (pagination; the body's type). Rate-limit headers always
# come from the fresh 304.
KEPT_HEADERS: Final = ("link", "content-type", "etag", "last-modified")


@dataclass(frozen=True)
class Cached:
    etag: str
    headers: dict[str, str]
    body: str


def credential_of(auth: Any) -> str:
    """Who the answer was for: an App installation by id, a token by a hash prefix, else anon."""
    if isinstance(auth, Auth.AppInstallationAuth):
        return f"installation:{auth.installation_id}"
    if isinstance(auth, Auth.AppAuth):
        return f"app:{auth.app_id}"
    token = getattr(auth, "token", None) if isinstance(auth, Auth.Token) else None
    if token:
        return "token:" + hashlib.sha256(str(token).encode()).hexdigest()[:16]
    return "anonymous" if auth is None else type(auth).__name__


def cache_key(credential: str, url: str, parameters: Mapping[str, Any] | None,
              accept: str | None) -> str:
    query = urlencode(sorted((str(k), str(v)) for k, v in (parameters or {}).items()))
    return f"{credential} {accept or ''} {url}?{query}"


def etag_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$TASKEVAL_CACHE_DIR/etags``, else ``$XDG_CACHE_HOME/taskeval/etags``, else ``~/.cache/...``."""
    source = os.environ if env is None else env
    if source.get("TASKEVAL_CACHE_DIR"):
        return Path(source["TASKEVAL_CACHE_DIR"]) / "etags"
    base = Path(source["XDG_CACHE_HOME"]) if source.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "taskeval" / "etags"


class ETagCache:
    """Answers by key, least recently used out first once over ``max_entries``/``max_bytes``;
    with a ``store`` (a directory of JSON files), also kept across processes."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES, *,
                 store: Any = None) -> None:
        self.store = store  # taskeval.judge.cache.FileCache: get/put of dicts by SHA-256 key
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, Cached] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0  # 304s answered from here

    def get(self, key: str) -> Cached | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                return found
        if self.store is None:
            return None
        data = self.store.get(_digest(key))
        if not isinstance(data, dict) or data.get("key") != key:
            return None
        try:
            found = Cached(str(data["etag"]), dict(data["headers"]), str(data["body"]))
        except (KeyError, TypeError, ValueError):
            return None
        self._remember(key, found)
        return found

    def put(self, key: str, value: Cached) -> None:
        if self._remember(key, value) and self.store is not None:
            self.store.put(_digest(key), {"key": key, "etag": value.etag,
                                          "headers": value.headers, "body": value.body})

    def _remember(self, key: str, value: Cached) -> bool:
        size = len(value.body)
        if size > self.max_bytes:
            return False
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= len(old.body)
            self._items[key] = value
            self._bytes += size
            while self._items and (len(self._items) > self.max_entries
                                   or self._bytes > self.max_bytes):
                _, gone = self._items.popitem(last=False)
                self._bytes -= len(gone.body)
        return True

    def hit(self) -> None:
        with self._lock:
            self.hits += 1

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self.hits = 0


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


_SHARED = ETagCache()


def enabled(env: Mapping[str, str] | None = None) -> bool:
    source = os.environ if env is None else env
    return source.get("TASKEVAL_ETAGS", "").strip().lower() not in ("off", "0", "false", "no")


def shared_cache() -> ETagCache | None:
    """The process's cache, or None when ``TASKEVAL_ETAGS`` is ``off``."""
    return _SHARED if enabled() else None


def disk_cache(env: Mapping[str, str] | None = None) -> ETagCache | None:
    """A cache kept in :func:`etag_dir` as well, for commands whose repeats are separate runs."""
    if not enabled(env):
        return None
    from taskeval.judge.cache import FileCache

    return ETagCache(store=FileCache(etag_dir(env)))


def kept_headers(headers: Mapping[str, Any]) -> dict[str, str]:
    return {k.lower(): str(v) for k, v in headers.items() if k.lower() in KEPT_HEADERS}
