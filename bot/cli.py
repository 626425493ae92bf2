"""``taskeval serve`` and ``taskeval worker``, registered on the main CLI by ``add_commands``.

Only the standard library is imported at module level, so ``taskeval --help`` works without the
``bot`` extra and the commands explain what to install instead of failing on an import.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

LOG_LEVELS = ["debug", "info", "warning", "error"]


def _default_level() -> str:
    level = os.environ.get("TASKEVAL_LOG_LEVEL", "info").lower()
    return level if level in LOG_LEVELS else "info"


def _need_extra() -> str | None:
    try:
        import flask  # noqa: F401
        import gunicorn  # noqa: F401
        import sqlalchemy  # noqa: F401
    except ImportError as exc:
        return f"the bot needs the 'bot' extra ({exc.name} is missing): pip install 'taskeval[bot]'"
    return None


def _prepare(args: argparse.Namespace, name: str, *, needs_github: bool) -> Any:
    """Validate settings and create the schema once, before any child process starts."""
    from bot import logs
    from bot.db import describe_url, init_schema, make_engine
    from bot.settings import BotSettings, SettingsError

    os.environ["TASKEVAL_LOG_LEVEL"] = args.log_level
    logs.setup(args.log_level)
    try:
        # Only the web server receives deliveries; a worker node never needs the webhook secret.
        settings = BotSettings.from_env(receives_webhooks=name == "serve")
        if needs_github:
            settings.require_github_auth()
    except SettingsError as exc:
        print(f"taskeval {name}: {exc}", file=sys.stderr)
        return None
    logs.register_secrets(settings.secrets())
    engine = make_engine(settings.database_url)
    try:
        init_schema(engine)
    except Exception as exc:  # one clear line instead of a traceback
        print(f"taskeval {name}: cannot open the database "
              f"{describe_url(settings.database_url)}: {logs.redact(str(exc).splitlines()[0])}",
              file=sys.stderr)
        return None
    finally:
        engine.dispose()
    return settings


def _worker_argv(level: str) -> list[str]:
    return [sys.executable, "-m", "bot.worker", "--log-level", level,
            "--parent-pid", str(os.getpid())]


def cmd_serve(args: argparse.Namespace) -> int:
    problem = _need_extra()
    if problem:
        print(f"taskeval serve: {problem}", file=sys.stderr)
        return 2
    settings = _prepare(args, "serve", needs_github=not args.no_workers)
    if settings is None:
        return 2
    from bot.supervise import Supervisor

    sup = Supervisor(grace_seconds=settings.shutdown_grace_seconds)
    web = [sys.executable, "-m", "gunicorn", "-c", "python:bot.gunicorn_conf",
           "--log-level", args.log_level]
    if args.bind:
        web += ["--bind", args.bind]
    sup.add("web", [*web, "bot.app:create_app()"], critical=True)
    if not args.no_workers:
        for i in range(settings.queue_workers):
            sup.add(f"queue-worker-{i + 1}", _worker_argv(args.log_level))
    return sup.run()


def cmd_worker(args: argparse.Namespace) -> int:
    problem = _need_extra()
    if problem:
        print(f"taskeval worker: {problem}", file=sys.stderr)
        return 2
    settings = _prepare(args, "worker", needs_github=True)
    if settings is None:
        return 2
    if settings.queue_workers == 1:
        from bot.worker import main

        return main(["--log-level", args.log_level])
    from bot.supervise import Supervisor

    sup = Supervisor(grace_seconds=settings.shutdown_grace_seconds)
    for i in range(settings.queue_workers):
        sup.add(f"queue-worker-{i + 1}", _worker_argv(args.log_level))
    return sup.run()


def add_commands(subparsers: Any) -> None:
    """Register ``serve`` and ``worker`` on the main CLI's subparsers."""
    serve = subparsers.add_parser(
        "serve", help="run the webhook bot: gunicorn receiver plus queue workers",
        description="Run the webhook receiver under gunicorn (settings: bot/gunicorn_conf.py) "
                    "and TASKEVAL_QUEUE_WORKERS queue workers. Needs GITHUB_WEBHOOK_SECRET; "
                    "DATABASE_URL defaults to a SQLite file in the current directory.",
    )
    serve.add_argument("--bind", metavar="HOST:PORT", default=None,
                       help="listen address (default: $TASKEVAL_BIND or 127.0.0.1:8000)")
    serve.add_argument("--no-workers", action="store_true",
                       help="receiver only (web nodes); run 'taskeval worker' elsewhere")
    serve.add_argument("--log-level", choices=LOG_LEVELS,
                       default=_default_level())
    serve.set_defaults(func=cmd_serve)

    worker = subparsers.add_parser(
        "worker", help="run queue workers only (worker nodes)",
        description="Claim and run evaluation jobs from DATABASE_URL ($TASKEVAL_QUEUE_WORKERS "
                    "processes). Needs GitHub App or token credentials and DATABASE_URL; not "
                    "GITHUB_WEBHOOK_SECRET, which only the web server uses.",
    )
    worker.add_argument("--log-level", choices=LOG_LEVELS,
                        default=_default_level())
    worker.set_defaults(func=cmd_worker)

    from bot.dashboard.cli import add_command as add_dashboard

    add_dashboard(subparsers)
