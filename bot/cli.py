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


def _prepare(args: argparse.Namespace, name: str, *, needs_github: bool, bind: str | None = None) -> Any:
    """Validate settings and create the schema once, before any child process starts: in a new
    SQLite file, an empty database or the store itself (never beside another application's
    tables), and only when it can be written (else every delivery would get 503)."""
    from bot import logs
    from bot.settings import BotSettings, SettingsError
    from taskeval.store.access import store_problem
    from taskeval.store.db import describe_url, init_schema, make_engine

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
    problem = bind_problem(bind) if bind is not None else None  # before the store is made
    if problem:
        print(f"taskeval {name}: {problem}", file=sys.stderr)
        return None
    logs.register_secrets(settings.secrets())
    problem = store_problem(settings.database_url, "database")
    if problem is not None:
        print(f"taskeval {name}: {logs.redact(problem)}", file=sys.stderr)
        return None
    engine = make_engine(settings.database_url)
    try:
        init_schema(engine)
    except Exception as exc:  # one clear line instead of a traceback
        print(f"taskeval {name}: cannot open the database {describe_url(settings.database_url)}: "
              f"{logs.redact(str(exc).splitlines()[0])}", file=sys.stderr)
        return None
    finally:
        engine.dispose()
    return settings


def _worker_argv(level: str) -> list[str]:
    return [sys.executable, "-m", "bot.jobs.worker", "--log-level", level,
            "--parent-pid", str(os.getpid())]


def bind_problem(bind: str) -> str | None:
    """Why gunicorn could not listen on ``bind`` (a port in use, an address not of this host),
    found by binding it once, as gunicorn will (``SO_REUSEADDR``); None when it can, or when the
    address is a form only gunicorn reads (``unix:PATH``, ``fd://N``)."""
    import socket

    from dashboard.cli import parse_bind

    if bind.startswith(("unix:", "fd://")):
        return None
    try:
        host, port = parse_bind(bind if ":" in bind else f"{bind}:8000")  # gunicorn's own default
    except ValueError as exc:
        return str(exc)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        socket.create_server((host, port), family=family).close()
    except OSError as exc:
        return f"cannot listen on {bind}: {os.strerror(exc.errno) if exc.errno else exc}"
    return None


def cmd_serve(args: argparse.Namespace) -> int:
    problem = _need_extra()
    if problem:
        print(f"taskeval serve: {problem}", file=sys.stderr)
        return 2
    bind = args.bind or os.environ.get("TASKEVAL_BIND", "").strip() or "127.0.0.1:8000"
    settings = _prepare(args, "serve", needs_github=not args.no_workers, bind=bind)
    if settings is None:
        return 2
    from bot.jobs.supervise import HeartbeatWatch, Supervisor

    sup = Supervisor(grace_seconds=settings.shutdown_grace_seconds,
                     watch=None if args.no_workers else HeartbeatWatch(settings))
    web = [sys.executable, "-m", "gunicorn", "-c", "python:bot.web.gunicorn_conf",
           "--log-level", args.log_level]
    if args.bind:
        web += ["--bind", args.bind]
    sup.add("web", [*web, "bot.app:create_app()"], critical=True)
    if not args.no_workers:
        for i in range(settings.queue_workers):
            sup.add(f"queue-worker-{i + 1}", _worker_argv(args.log_level), watched=True)
    return sup.run()


def cmd_worker(args: argparse.Namespace) -> int:
    problem = _need_extra()
    if problem:
        print(f"taskeval worker: {problem}", file=sys.stderr)
        return 2
    settings = _prepare(args, "worker", needs_github=True)
    if settings is None:
        return 2
    # Supervised even alone: a worker that hangs mid-job, or gives up a job that ran past its
    # deadline, is replaced.
    from bot.jobs.supervise import HeartbeatWatch, Supervisor

    sup = Supervisor(grace_seconds=settings.shutdown_grace_seconds, watch=HeartbeatWatch(settings))
    for i in range(settings.queue_workers):
        sup.add(f"queue-worker-{i + 1}", _worker_argv(args.log_level), watched=True)
    return sup.run()


def cmd_backfill(args: argparse.Namespace) -> int:
    """``taskeval backfill``: see ``bot.jobs.backfill``. Exit 0 done, 1 some PRs failed, 2 bad input,
    3 stopped early (budget spent with --no-wait, or GitHub unavailable), 130 interrupted."""
    try:
        import sqlalchemy  # noqa: F401
    except ImportError as exc:
        print(f"taskeval backfill: results are stored in the bot's database, which needs the "
              f"'bot' extra ({exc.name} is missing): pip install 'taskeval[bot]'", file=sys.stderr)
        return 2
    from bot.jobs import backfill
    from taskeval.github import AuthError, GitHubError, NotFoundError, api_url, env_token, make_client
    from taskeval.github.client import repo_path
    from taskeval.redact import redact
    from taskeval.store.access import store_problem
    from taskeval.store.db import default_store

    try:
        repo_path(args.repository)
        opts = backfill.Options(
            repository=args.repository.strip(),
            since=backfill.parse_day(args.since) if args.since else None,
            until=backfill.parse_day(args.until) if args.until else None,
            state=args.state, limit=args.limit,
            store_url=args.store or default_store(),
            enqueue=args.enqueue, comment=args.comment, wait=not args.no_wait,
            reserve=args.reserve, graphql_reserve=args.graphql_reserve, parallel=args.parallel,
            ai="off" if args.no_ai else "auto", api=args.api,
        )
    except ValueError as exc:
        print(f"taskeval backfill: {exc}", file=sys.stderr)
        return 2
    if (opts.limit is not None and opts.limit < 1) or opts.parallel < 1 or opts.reserve < 0 \
            or opts.graphql_reserve < 0:
        print("taskeval backfill: --limit and --parallel must be positive, --reserve and "
              "--graphql-reserve at least 0",
              file=sys.stderr)
        return 2
    if opts.since is not None and opts.until is not None and opts.since > opts.until:
        print(f"taskeval backfill: --since {args.since} is after --until {args.until}: the window "
              "holds no day", file=sys.stderr)
        return 2
    _quiet(args.verbose)  # after the input checks: library logs only matter once work starts
    problem = store_problem(opts.store_url)  # before GitHub is asked anything
    if problem:
        print(f"taskeval backfill: {redact(problem)}", file=sys.stderr)
        return 2
    from bot.settings import SettingsError, app_credentials

    token = env_token()
    try:
        app_id, private_key = (None, None) if token else app_credentials(os.environ)
    except SettingsError as exc:
        print(f"taskeval backfill: {exc}", file=sys.stderr)
        return 2
    if opts.comment and not token and not app_id:
        print("taskeval backfill: --comment needs a token that may write to the PRs: set "
              "GITHUB_TOKEN", file=sys.stderr)
        return 2
    if not token and not app_id:
        print("taskeval backfill: GITHUB_TOKEN is not set; reading as an anonymous client "
              "(public repositories only, 60 requests/hour)", file=sys.stderr)
    installation: int | None = None
    try:
        url = api_url(os.environ)
        if app_id and private_key:
            # As the App (GITHUB_APP_ID and its key): the repository's installation, whose token
            # PyGithub exchanges and renews before it expires, however long the run.
            installation = backfill.installation_of(app_id, private_key, url, opts.repository)
            gh = make_client(app_id=app_id, private_key=private_key, installation_id=installation,
                             base_url=url)
        else:
            gh = make_client(token, base_url=url)
        new_file = backfill.new_store_file(opts.store_url)
        engine = backfill.open_store(opts.store_url)
    except Exception as exc:
        print(f"taskeval backfill: {redact(str(exc).splitlines()[0] if str(exc) else repr(exc))}",
              file=sys.stderr)
        return 2
    run = backfill.Backfill(opts, gh, engine, token=token, api_url=url,
                            installation_id=installation)
    failed = True  # until the run ends: a store file it created and left empty is removed
    try:
        summary = run.run()
        failed = False
    except KeyboardInterrupt:
        summary = run.summary
        summary.stopped = summary.stopped or "interrupted"
        for line in summary.lines():
            print(line)
        return 130
    except (NotFoundError, AuthError) as exc:
        print(f"taskeval backfill: {exc}", file=sys.stderr)
        return 2
    except GitHubError as exc:
        print(f"taskeval backfill: {exc}", file=sys.stderr)
        return 3
    finally:
        if failed and new_file is not None:
            backfill.remove_unused_store(engine, new_file)
        engine.dispose()
    for line in summary.lines():
        print(line)
    return summary.exit_code()


def _quiet(verbose: bool) -> None:
    """The core CLI's quiet library logs (``taskeval evaluate``'s), Alembic's migration notes too."""
    import logging

    from taskeval.cli import quiet_libraries

    quiet_libraries(verbose)
    logging.getLogger("alembic").setLevel(logging.DEBUG if verbose else logging.CRITICAL)


def cmd_export(args: argparse.Namespace) -> int:
    """``taskeval export``: the store as CSV or NDJSON, one row per PR (taskeval/store/export.py). Exit 0
    done, 2 bad input or an unreadable store (nothing half-written at --output)."""
    try:
        import sqlalchemy  # noqa: F401
    except ImportError as exc:
        print(f"taskeval export: the store is the bot's database, which needs the 'bot' extra "
              f"({exc.name} is missing): pip install 'taskeval[bot]'", file=sys.stderr)
        return 2
    import tempfile
    from pathlib import Path

    from dashboard.cli import store_url
    from taskeval.cli import OutputError, check_output
    from taskeval.redact import redact
    from taskeval.store import export
    from taskeval.store.access import StoreError, check_store
    from taskeval.store.db import describe_url, init_schema, make_engine

    if args.repo is not None and args.repo.count("/") != 1:
        print(f"taskeval export: --repo must be OWNER/REPO, got {args.repo!r}", file=sys.stderr)
        return 2
    try:
        check_output(args.output)
    except OutputError as exc:
        print(f"taskeval export: {exc}", file=sys.stderr)
        return 2
    url = store_url(args.store)
    target = Path(args.output) if args.output else None
    tmp = None
    try:
        check_store(url, create=False)  # a reader: never a store made in someone else's database
        engine = make_engine(url)
        try:
            init_schema(engine)  # an older store is migrated as the bot migrates it
            if target is None:
                for chunk in export.chunks(engine, args.format, args.repo):
                    sys.stdout.write(chunk)
                sys.stdout.flush()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
                tmp = Path(name)
                with open(fd, "w", encoding="utf-8", newline="") as out:
                    for chunk in export.chunks(engine, args.format, args.repo):
                        out.write(chunk)
                tmp.replace(target)  # whole or not at all
                tmp = None
        finally:
            engine.dispose()
    except StoreError as exc:
        print(f"taskeval export: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"taskeval export: --output {args.output}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # an unreachable or broken store: say which, never a traceback
        print(f"taskeval export: cannot read the store {describe_url(url)}: {type(exc).__name__}: "
              f"{redact(str(exc).splitlines()[0]) if str(exc) else ''}", file=sys.stderr)
        return 2
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
    return 0


def cmd_load(args: argparse.Namespace) -> int:
    """``taskeval load RESULT...``: result files into the store (taskeval/store/load.py). Exit 0
    every file stored (or already there), 1 some files were not results (named; the others are
    stored), 2 bad input (a missing path, no result at all, a store that is another
    application's or cannot be written)."""
    from pathlib import Path

    from dashboard.cli import store_url
    from taskeval.redact import redact
    from taskeval.store import load
    from taskeval.store.access import store_problem
    from taskeval.store.db import describe_url, init_schema, make_engine

    paths = [Path(p) for p in args.results]
    missing = [p for p in paths if not p.exists()]
    if missing:
        print(f"taskeval load: {missing[0]}: no such file or directory", file=sys.stderr)
        return 2
    url = store_url(args.store)
    shown = describe_url(url)
    problem = store_problem(url)
    if problem is not None:
        print(f"taskeval load: {redact(problem)}", file=sys.stderr)
        return 2
    engine = make_engine(url)
    try:
        init_schema(engine)
        done = load.load(engine, load.result_files(paths), batch=args.batch)
    except Exception as exc:
        print(f"taskeval load: could not store the results in {shown}: {type(exc).__name__}: "
              f"{redact(str(exc).splitlines()[0]) if str(exc) else ''}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    for line in done.not_results[:20]:
        print(f"taskeval: warning: not a result, left out: {line}", file=sys.stderr)
    if len(done.not_results) > 20:
        print(f"taskeval: warning: ... and {len(done.not_results) - 20} more", file=sys.stderr)
    print(f"load: stored {done.stored}, skipped {done.skipped} (already stored at this head and "
          f"scorer version), left out {len(done.not_results)} not results; store {shown}")
    if not (done.stored or done.skipped):
        print(f"taskeval load: no taskeval result in {' '.join(args.results)}", file=sys.stderr)
        return 2
    return 1 if done.not_results else 0


def add_load(subparsers: Any) -> None:
    from taskeval.cli import int_at_least

    lo = subparsers.add_parser(
        "load", help="store result files (evaluate --output, score --output-dir) in the store",
        description="Store taskeval result files in the store, as backfill and the bot store "
                    "theirs, so the dashboard and the export show them. RESULT is a result JSON "
                    "file or a directory (its *.json files, recursively). A result already stored "
                    "at the same head SHA and scorer version is skipped; a file that is not a "
                    "result is named and left out (exit 1). The store is --store, else "
                    "$DATABASE_URL, else ./taskeval.db, created when new. Needs the bot extra.",
    )
    lo.add_argument("results", nargs="+", metavar="RESULT", help="result JSON files or directories")
    lo.add_argument("--store", metavar="URL", default=None,
                    help="database URL (default: $DATABASE_URL, else sqlite:///./taskeval.db)")
    lo.add_argument("--batch", type=int_at_least(1), default=200, metavar="N",
                    help="results per transaction (default 200)")
    lo.set_defaults(func=cmd_load)


def add_export(subparsers: Any) -> None:
    ex = subparsers.add_parser(
        "export", help="write the store as CSV or NDJSON, one row per PR",
        description="One row per evaluated PR (its latest evaluation): scores (overall; per "
                    "category final, deterministic, AI and coverage), agent and operator, task "
                    "type, turns, closure and rescue classes and recorded outcomes. The store is "
                    "--store, else $DATABASE_URL, else ./taskeval.db. Columns: docs/bot.md.",
    )
    ex.add_argument("--store", metavar="URL", default=None,
                    help="database URL (default: $DATABASE_URL, else sqlite:///./taskeval.db)")
    ex.add_argument("--format", choices=["csv", "ndjson"], default="csv", help="csv (default) or ndjson")
    ex.add_argument("--output", metavar="PATH", help="write here instead of standard output")
    ex.add_argument("--repo", metavar="OWNER/REPO", help="only this repository's PRs")
    ex.set_defaults(func=cmd_export)


def add_backfill(subparsers: Any) -> None:
    bf = subparsers.add_parser(
        "backfill", help="evaluate a repository's past pull requests into the store",
        description="List OWNER/REPO's pull requests (newest update first), evaluate those whose "
                    "work ended in the window and store the results in the bot's database "
                    "(--store, else $DATABASE_URL, else ./taskeval.db). Restartable: PRs stored "
                    "at the same head SHA and scorer version are skipped. Stays within the "
                    "token's rate budget, keeping --reserve requests for its other users. "
                    "Needs the bot extra.",
    )
    bf.add_argument("repository", metavar="OWNER/REPO", help="the repository whose PRs to evaluate")
    bf.add_argument("--since", metavar="DATE", help="PRs merged/closed on or after (YYYY-MM-DD)")
    bf.add_argument("--until", metavar="DATE", help="PRs merged/closed on or before")
    bf.add_argument("--state", choices=["merged", "closed", "all"], default="merged",
                    help="merged (default), closed (merged or not), all (open too)")
    bf.add_argument("--limit", type=int, metavar="N", help="at most N PRs, newest first")
    bf.add_argument("--store", metavar="URL", help="database URL (default: $DATABASE_URL or "
                    "sqlite:///taskeval.db in the working directory)")
    bf.add_argument("--enqueue", action="store_true",
                    help="queue the PRs for `taskeval worker` instead of evaluating here")
    bf.add_argument("--comment", action="store_true",
                    help="also create or update each PR's comment (off by default)")
    bf.add_argument("--no-wait", action="store_true",
                    help="stop when the rate budget is spent instead of waiting for the reset")
    bf.add_argument("--reserve", type=int, metavar="N", default=500,
                    help="requests of the token's window left for its other users (default 500)")
    bf.add_argument("--graphql-reserve", type=int, metavar="N", default=500,
                    help="GraphQL points of the token's window left for its other users "
                         "(default 500)")
    bf.add_argument("--parallel", type=int, metavar="N", default=4,
                    help="PRs fetched at once (default 4)")
    bf.add_argument("--no-ai", action="store_true", help="deterministic scores only")
    from taskeval.cli import add_api_argument

    add_api_argument(bf)
    bf.set_defaults(func=cmd_backfill)


def add_commands(subparsers: Any) -> None:
    """Register ``serve`` and ``worker`` on the main CLI's subparsers."""
    serve = subparsers.add_parser(
        "serve", help="run the webhook bot: gunicorn receiver plus queue workers",
        description="Run the webhook receiver under gunicorn (settings: bot/web/gunicorn_conf.py) "
                    "and TASKEVAL_QUEUE_WORKERS queue workers. Needs GITHUB_WEBHOOK_SECRET; "
                    "DATABASE_URL defaults to ./taskeval.db, the store every command reads by default.",
    )
    serve.add_argument("--bind", metavar="HOST:PORT", default=None,
                       help="listen address (default: $TASKEVAL_BIND or 127.0.0.1:8000)")
    serve.add_argument("--no-workers", action="store_true",
                       help="receiver only (web nodes); run 'taskeval worker' elsewhere")
    serve.add_argument("--log-level", choices=LOG_LEVELS, default=_default_level(),
                       help="log detail (default: $TASKEVAL_LOG_LEVEL or info)")
    serve.set_defaults(func=cmd_serve)

    worker = subparsers.add_parser(
        "worker", help="run queue workers only (worker nodes)",
        description="Claim and run evaluation jobs from DATABASE_URL ($TASKEVAL_QUEUE_WORKERS "
                    "processes). Needs GitHub App or token credentials and DATABASE_URL; not "
                    "GITHUB_WEBHOOK_SECRET, which only the web server uses.",
    )
    worker.add_argument("--log-level", choices=LOG_LEVELS, default=_default_level(),
                        help="log detail (default: $TASKEVAL_LOG_LEVEL or info)")
    worker.set_defaults(func=cmd_worker)
    add_backfill(subparsers)
    add_export(subparsers)
    add_load(subparsers)

    from dashboard.cli import add_command as add_dashboard

    add_dashboard(subparsers)
