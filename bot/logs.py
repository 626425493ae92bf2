"""Structured JSON logs: one object per line, with delivery id, job id, repo and PR on every line.

The four correlation fields live in context variables, so a line logged deep inside the core
(PyGithub, the judge) still carries the delivery or job it belongs to. Every line passes a
redaction filter (``taskeval.redact``, the core's): configured secrets and anything shaped like a
GitHub/OpenAI token become ``[redacted]`` before the formatter sees them.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from taskeval.redact import redact as redact  # the bot's redactor is the core's: one for all
from taskeval.redact import register_secret

_delivery: contextvars.ContextVar[str | None] = contextvars.ContextVar("delivery", default=None)
_job: contextvars.ContextVar[int | None] = contextvars.ContextVar("job", default=None)
_repo: contextvars.ContextVar[str | None] = contextvars.ContextVar("repo", default=None)
_pr: contextvars.ContextVar[int | None] = contextvars.ContextVar("pr", default=None)
_VARS: dict[str, contextvars.ContextVar[Any]] = {
    "delivery": _delivery, "job": _job, "repo": _repo, "pr": _pr,
}

# The bot's secrets are the ones an operator configured, so shorter ones count too (settings keep
# values of 4 characters or more).
BOT_SECRET_MIN_LENGTH = 4


def register_secrets(values: Iterable[str]) -> None:
    """Add values (tokens, keys, the webhook secret) that must never be printed."""
    register_secret(*values, min_length=BOT_SECRET_MIN_LENGTH)


@contextlib.contextmanager
def context(**fields: Any) -> Iterator[None]:
    """Bind correlation fields (delivery, job, repo, pr) for the lines logged inside the block.

    All four are restored on exit, including any :func:`bind` made inside, so a thread that
    serves the next request starts clean.
    """
    tokens = [(var, var.set(fields.get(name, var.get()))) for name, var in _VARS.items()]
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def bind(**fields: Any) -> None:
    """Set correlation fields for the rest of the current context (e.g. once parsed)."""
    for key, value in fields.items():
        if key in _VARS:
            _VARS[key].set(value)


def current() -> dict[str, Any]:
    return {name: var.get() for name, var in _VARS.items()}


class JsonFormatter(logging.Formatter):
    """One JSON object per line; extra fields passed as ``extra={"fields": {...}}`` are merged."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        data.update(current())
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            for key, value in extra.items():
                data.setdefault(key, value)
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(data, default=str, ensure_ascii=False))


class RedactFilter(logging.Filter):
    """Scrubs the rendered message too, for handlers that do not use :class:`JsonFormatter`."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def logconfig_dict(level: str = "info", *, access_log: bool | None = None) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` used by gunicorn and the workers alike."""
    level = level.upper()
    if access_log is None:
        access_log = os.environ.get("TASKEVAL_ACCESS_LOG", "").lower() in ("1", "true", "yes")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"redact": {"()": "bot.logs.RedactFilter"}},
        "formatters": {"json": {"()": "bot.logs.JsonFormatter"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "json",
                "filters": ["redact"],
            }
        },
        "root": {"level": level, "handlers": ["stderr"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["stderr"], "propagate": False},
            "gunicorn.access": {"level": level if access_log else "WARNING",
                                "handlers": ["stderr"], "propagate": False},
            # urllib3 logs full URLs at debug; they hold no tokens but are noise at info.
            "urllib3": {"level": "WARNING"},
        },
    }


def setup(level: str = "info", secrets: Iterable[str] = ()) -> None:
    """Configure the root logger for a bot process (gunicorn applies the same dict itself)."""
    import logging.config

    register_secrets(secrets)
    logging.config.dictConfig(logconfig_dict(level))
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_thread_crash


def _log_thread_crash(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    logging.getLogger("bot").critical(
        "uncaught exception in thread %s", args.thread.name if args.thread else "?",
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),  # type: ignore[arg-type]
    )


def _log_uncaught(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
    logging.getLogger("bot").critical("uncaught exception", exc_info=(exc_type, exc, tb))
