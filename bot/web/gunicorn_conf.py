"""gunicorn settings for the webhook receiver.

Run as ``gunicorn -c python:bot.web.gunicorn_conf 'bot.app:create_app()'``.

``taskeval serve`` uses this file; every value can be overridden on gunicorn's command line or
with the environment variables named below. Numbers and their reasons:

* workers = 2 x CPUs + 1 (gunicorn's own guidance): a request is a signature check and one
  small database commit, so it waits on disk or network and more processes than cores pay off.
* threads = 4 (gthread): a slow client or a database lock wait blocks one thread, not a process.
* timeout = 10 s: GitHub gives up on a delivery after 10 seconds; a request running longer has
  already failed from GitHub's side, so its worker is recycled instead of piling up.
  A delivery waits for the store's write lock at most TASKEVAL_STORE_WAIT_SECONDS (3 s).
* graceful_timeout = 10 s: on SIGTERM, in-flight deliveries get the same budget to commit.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Any

from bot.logs import logconfig_dict as _logconfig

bind = os.environ.get("TASKEVAL_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("WEB_CONCURRENCY") or multiprocessing.cpu_count() * 2 + 1)
worker_class = "gthread"
threads = int(os.environ.get("TASKEVAL_WEB_THREADS") or 4)
timeout = 10
graceful_timeout = 10
keepalive = 5
# Recycle workers now and then so slow leaks (in any library) cannot grow without bound.
max_requests = 10_000
max_requests_jitter = 1_000
loglevel = os.environ.get("TASKEVAL_LOG_LEVEL", "info")
logconfig_dict = _logconfig(loglevel)
# The receiver logs one JSON line per delivery with its outcome, so gunicorn's access log (which
# would repeat it, and log every health probe) is off unless TASKEVAL_ACCESS_LOG=1.
accesslog = None
# Only trust X-Forwarded-* from a proxy on the same host unless told otherwise.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
proc_name = "taskeval-bot"
# gunicorn's control socket defaults to one path per user ($HOME/.gunicorn/gunicorn.ctl), which
# two receivers on one host would fight over; the bot does not use it.
control_socket_disable = True


def on_starting(server: Any) -> None:
    """Refuse to start at all (not once per worker) when the configuration is unusable."""
    from bot.settings import BotSettings, SettingsError

    try:
        BotSettings.from_env()
    except SettingsError as exc:
        server.log.error("refusing to start: %s", exc)
        raise SystemExit(2) from exc
