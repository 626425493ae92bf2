"""The ``taskeval`` command: argument parsing, exit codes and printing only.

Exit codes, shared by every command (the bot's and the statistics commands follow them): 0 done;
1 the work ran but a requested side effect failed (e.g. the comment could not be posted); 2 bad
input (a flag value argparse refuses, unknown repo/PR, bad reference, unreadable file or store,
credentials, a missing extra); 3 GitHub could not answer (outage, rate limit, network, malformed
answer): try again later; 130 interrupted. Expected failures print one line to stderr, never a
traceback, before any work is done.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn
from urllib.parse import urlsplit

from taskeval import SCORER_VERSION, __version__
from taskeval.transports import API_CHOICES, default_api

if TYPE_CHECKING:  # the CLI imports the pipeline lazily, to start fast
    from taskeval.pipeline import Options

EXIT_OK, EXIT_SIDE_EFFECT, EXIT_INPUT, EXIT_RETRY_LATER = 0, 1, 2, 3
# What `pip install 'taskeval[bot]'` adds; without them `serve`/`worker` explain instead of vanishing.
BOT_EXTRA_MODULES = frozenset({"bot", "flask", "gunicorn", "sqlalchemy", "psycopg", "werkzeug"})
# The modules each command imports from an extra (pyproject.toml's optional dependencies): looked
# for before the command runs, so a core-only install names the extra in one line instead of
# failing halfway (validate used to write half its report first).
_STORE = ("sqlalchemy", "alembic")
COMMAND_NEEDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "serve": ("bot", ("flask", "gunicorn", *_STORE)),
    "worker": ("bot", _STORE),
    "backfill": ("bot", _STORE),
    "export": ("bot", _STORE),
    "load": ("bot", _STORE),
    "dashboard": ("bot", ("flask", "cmarkgfm", *_STORE)),
    "validate": ("validate", ("numpy", "scipy", "matplotlib")),
    "calibrate": ("validate", ("numpy", "scipy")),
}


def _fail(message: str, code: int = EXIT_INPUT) -> int:
    print(f"taskeval: {message}", file=sys.stderr)
    return code


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``taskeval: argument --jobs: must be ...``), exit 2,
    as every other bad input is; ``--help`` shows the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"taskeval: {message} (see {self.prog} --help)\n")


def int_at_least(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in ``low..high`` (no upper bound when ``high`` is None)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"at least {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {value}")
        return value

    parse.__name__ = "whole number"  # what argparse names in "invalid <type> value"
    return parse


def float_at_least(low: float, *, above: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number >= ``low`` (> ``low`` with ``above``)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value) or value < low or (above and value == low):
            raise argparse.ArgumentTypeError(
                f"must be {'more than' if above else 'at least'} {low:g}, got {text}")
        return value

    parse.__name__ = "number"
    return parse


def iso_date(text: str) -> str:
    """An argparse type: a date (``YYYY-MM-DD``) or an ISO 8601 time, kept as written."""
    from datetime import datetime

    try:
        datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a date as YYYY-MM-DD (or ISO 8601), got {text!r}") from None
    return text.strip()


class OutputError(Exception):
    """An ``--output`` path that cannot be written; the message is the one line users see."""


def check_output(path: str | None) -> None:
    """Refuse an ``--output`` path that cannot be written, before any work is done: a directory,
    a path under a file, or a place this user may not write."""
    if not path:
        return
    target = Path(path)
    if target.is_dir():
        raise OutputError(f"--output {path} is a directory; give a file path such as "
                          f"{target / 'result.json'}")
    if target.exists():
        if not os.access(target, os.W_OK):
            raise OutputError(f"--output {path}: permission denied")
        return
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"--output {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"--output {path}: permission denied in {parent}")


def _write_output(path: str | None, text: str) -> None:
    if path:
        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"--output {path}: cannot write: {exc.strerror or exc}") from exc


def resolve_api(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> str | None:
    """Fill in the transport of a command that reads GitHub and was given no ``--api``
    (``TASKEVAL_API``, else GraphQL); the problem with ``TASKEVAL_API``, if it has one."""
    if "api" in vars(args) and args.api is None:
        try:
            args.api = default_api(env)
        except ValueError as exc:
            return str(exc)
    return None


def add_api_argument(parser: argparse.ArgumentParser) -> None:
    """``--api rest|graphql``: how a command that reads GitHub collects (docs/collection.md)."""
    parser.add_argument("--api", choices=API_CHOICES, default=None,
                        help="collect over GraphQL (the default unless TASKEVAL_API says rest: "
                             "fewer requests; REST for what GraphQL lacks, and for all of it "
                             "when the server refuses GraphQL, said in the warnings) or REST")


def web_host(api: str) -> str:
    """The host of GitHub's web pages for an API root: github.com for api.github.com (and
    SUBDOMAIN.ghe.com for api.SUBDOMAIN.ghe.com), the server itself for GHES (HOST/api/v3)."""
    host = urlsplit(api).netloc.lower()
    if host == "api.github.com" or (host.startswith("api.") and host.endswith(".ghe.com")):
        return host[len("api."):]
    return host


def check_pr_host(ref: str, api: str) -> None:
    """Refuse a pull request URL on another host than the configured GitHub's: a GitLab or
    another server's URL must not be read from GitHub as OWNER/REPO#N."""
    if "://" not in ref:
        return
    host = urlsplit(ref.strip()).netloc.lower()
    expected = web_host(api)
    if host not in (expected, f"www.{expected}"):
        hint = ("; for GitHub Enterprise Server set GITHUB_API_URL=https://HOST/api/v3"
                if expected == "github.com" else f" (GITHUB_API_URL is {api})")
        raise ValueError(f"{ref.strip()} is not a pull request on {expected}{hint}")


def config_problem(path: str | None) -> str | None:
    """Why a ``--config`` file cannot be used, or None. A file the user names must be read and
    must parse: a broken one is refused (exit 2, nothing written) rather than the run going on
    with the defaults, which only a repository's own ``.github/taskeval.yml`` does (its
    problems are reported in the result and the comment)."""
    if not path:
        return None
    target = Path(path)
    if target.is_dir():
        return (f"--config {path} is a directory; give the config file itself, e.g. "
                f"{target / '.github' / 'taskeval.yml'}")
    if not target.exists():
        return f"config file {path} does not exist"
    if not os.access(target, os.R_OK):
        return f"--config {path}: permission denied"
    from taskeval.config import load_config

    errors = [e.removeprefix(f"file:{target}: ") for e in load_config(None, target).errors]
    if errors:
        more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        return f"--config {path}: {errors[0]}{more}; fix the file (taskeval schema config), or leave --config out"
    return None


def config_warnings(path: str | None) -> list[str]:
    """What a ``--config`` file that parses still gets wrong, said on stderr as the result says it:
    signal ids no signal has (likely typos; those entries do nothing)."""
    if not path:
        return []
    from taskeval.config import load_config
    from taskeval.signals import unknown_signal_ids

    unknown = unknown_signal_ids(load_config(None, Path(path)).settings)
    if not unknown:
        return []
    return [f"--config {path} names signals that do not exist (typo?): {', '.join(unknown)}; "
            "'taskeval schema config' and docs/signals.md list them"]


def _options(args: argparse.Namespace, trigger: str, token: str | None) -> Options:
    from taskeval.pipeline import Options

    return Options(
        ai="off" if args.no_ai else "auto",
        config_path=Path(args.config) if args.config else None,
        trigger=trigger,
        env=dict(os.environ),
        github_token=token,
        keep_signals=not getattr(args, "recompute", False),
        api=getattr(args, "api", None) or default_api(),
    )


# What `taskeval evaluate` reads to name the account its token posts as (GitHub will not say for
# an App or installation token); each adapter names only the settings it reads.
COMMENT_AS_HINT = ("name the account with --comment-as LOGIN (or TASKEVAL_COMMENT_AS), for a GitHub "
                   "App '<app-slug>[bot]'")


def _comment_as(args: argparse.Namespace) -> str | None:
    """``--comment-as`` or ``TASKEVAL_COMMENT_AS``: the account the token posts comments as."""
    from taskeval.github.client import LOGIN_RE

    value = (args.comment_as or os.environ.get("TASKEVAL_COMMENT_AS") or "").strip() or None
    if value is not None and not LOGIN_RE.fullmatch(value):
        source = "--comment-as" if args.comment_as else "TASKEVAL_COMMENT_AS"
        raise ValueError(f"{source} must be a GitHub login such as my-app[bot], got {value!r}")
    return value


def cmd_evaluate(args: argparse.Namespace) -> int:
    from taskeval.github import (
        AuthError,
        GitHubError,
        NotFoundError,
        api_url,
        comment_login,
        env_token,
        make_client,
        parse_pr_ref,
    )
    from taskeval.pipeline import evaluate_pull_request, publish_comment

    try:
        repository, number = parse_pr_ref(args.pr)
        check_pr_host(args.pr, api_url(os.environ))
        own_login = _comment_as(args)
        check_output(args.output)
    except (ValueError, OutputError) as exc:
        return _fail(str(exc))
    problem = config_problem(args.config)
    if problem:
        return _fail(problem)
    token = env_token()
    if args.comment and not token:
        return _fail("--comment needs a token that may write to the PR: set GITHUB_TOKEN")
    if not token:
        print("taskeval: GITHUB_TOKEN is not set; reading as an anonymous client "
              "(public repositories only, 60 requests/hour)", file=sys.stderr)
    try:
        gh = make_client(token, base_url=api_url(os.environ))
    except ValueError as exc:
        return _fail(str(exc))
    options = _options(args, "cli", token)
    if args.comment and own_login is None and options.api == "rest":
        # Who posts decides which existing comment is ours: find out before the work is done.
        # (Over GraphQL the read says which comments the token wrote, and a fallback to REST
        # asks when it writes.)
        try:
            own_login = comment_login(gh, COMMENT_AS_HINT)
        except AuthError as exc:
            return _fail(str(exc))
        except GitHubError as exc:
            return _fail(str(exc), EXIT_RETRY_LATER)
    try:
        evaluation = evaluate_pull_request(gh, repository, number, options)
    except (NotFoundError, AuthError) as exc:
        return _fail(str(exc))
    except GitHubError as exc:  # rate limits, 5xx, timeouts, malformed answers: transient
        return _fail(str(exc), EXIT_RETRY_LATER)
    try:
        _write_output(args.output, evaluation.result.to_json())
    except OutputError as exc:
        return _fail(str(exc))
    print(evaluation.markdown, end="")
    for warning in evaluation.result.warnings:
        print(f"taskeval: warning: {warning}", file=sys.stderr)
    if args.comment:
        try:
            url, created = publish_comment(gh, repository, number, evaluation.markdown,
                                           own_login=own_login, seed=evaluation.comment_seed,
                                           login_hint=COMMENT_AS_HINT)
        except (AuthError, GitHubError) as exc:
            return _fail(f"could not post the comment: {exc}", EXIT_SIDE_EFFECT)
        print(f"taskeval: comment {'created' if created else 'updated'}: {url}", file=sys.stderr)
    return EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    from taskeval.github import env_token
    from taskeval.pipeline import BundleFileError, rescore
    from taskeval.report import render_comment

    problem = config_problem(args.config)  # a broken file: refused before any work, batch or not
    if problem:
        return _fail(problem)
    for warning in config_warnings(args.config):
        print(f"taskeval: warning: {warning}", file=sys.stderr)
    token = env_token()  # as `evaluate` reads it: blank is absent, GH_TOKEN as fallback
    if len(args.file) > 1 or args.output_dir or Path(args.file[0]).is_dir():
        return _score_many(args, token)
    try:
        check_output(args.output)
        rescored = rescore(Path(args.file[0]), _options(args, "rescore", token))
        text = rescored.json()
        _write_output(args.output, text)
        shown = render_comment(rescored.result) if args.markdown else text + "\n"
    except (BundleFileError, OutputError) as exc:
        return _fail(str(exc))
    print(shown, end="")
    return EXIT_OK


def _score_many(args: argparse.Namespace, token: str | None) -> int:
    """Several files or directories: ``taskeval.batch`` (one result per input, a summary)."""
    from taskeval import batch

    if args.output or args.markdown:
        return _fail("--output and --markdown take a single file; use --output-dir DIR for many")
    output_dir = Path(args.output_dir) if args.output_dir else None
    return batch.run(args.file, _options(args, "rescore", token), output_dir, workers=args.jobs)


def cmd_schema(args: argparse.Namespace) -> int:
    from taskeval.schema import schema_of

    text = json.dumps(schema_of(args.what), indent=2, sort_keys=True)
    try:
        check_output(args.output)
        _write_output(args.output, text)
    except OutputError as exc:
        return _fail(str(exc))
    print(text)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="taskeval",
        description="Grade a finished pull request from the evidence GitHub holds.",
    )
    parser.add_argument("--version", action="version",
                        version=f"taskeval {__version__} (scorer {SCORER_VERSION})")
    parser.add_argument("-v", "--verbose", action="store_true", help="show HTTP retries and library logs")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ev = sub.add_parser("evaluate", help="evaluate one pull request (prints the comment markdown)")
    ev.add_argument("pr", help="OWNER/REPO#N or a pull request URL")
    ev.add_argument("--output", metavar="PATH", help="write the JSON result here")
    ev.add_argument("--comment", action="store_true", help="create or update the PR comment")
    ev.add_argument("--comment-as", metavar="LOGIN",
                    help="the account the token posts as, for App/installation tokens that cannot "
                    "read GET /user, e.g. my-app[bot] (env TASKEVAL_COMMENT_AS)")
    ev.add_argument("--no-ai", action="store_true", help="deterministic scores only")
    ev.add_argument("--config", metavar="PATH", help="config file instead of the repo's .github/taskeval.yml")
    add_api_argument(ev)
    ev.set_defaults(func=cmd_evaluate)

    sc = sub.add_parser("score", help="re-score stored bundles or results offline (prints JSON)")
    sc.add_argument("file", nargs="+", metavar="PATH",
                    help="a stored result JSON or bare evidence bundle JSON; several files or "
                         "directories (their *.json files, recursively) re-score in a batch")
    sc.add_argument("--output-dir", metavar="DIR",
                    help="write one result per input here, under the input's file name")
    sc.add_argument("--jobs", type=int_at_least(1), default=1, metavar="N",
                    help="re-score a batch in N processes (default 1; results are the same)")
    sc.add_argument("--output", metavar="PATH", help="also write the JSON result here")
    sc.add_argument("--no-ai", action="store_true", help="deterministic scores only")
    sc.add_argument("--config", metavar="PATH", help="config file (default: the one stored in the result)")
    sc.add_argument("--markdown", action="store_true", help="print the comment markdown instead of JSON")
    sc.add_argument("--recompute", action="store_true",
                    help="measure every signal and validate all evidence again; by default a "
                         "stored result keeps the signals whose inputs did not change, and "
                         "evidence that still matches its bundleHash is written out as stored "
                         "(validated in full only when a signal must be measured again)")
    sc.set_defaults(func=cmd_score)

    sh = sub.add_parser("schema", help="print a JSON Schema: the result (default), the bundle, or "
                        "the config file .github/taskeval.yml (for editors)")
    sh.add_argument("what", nargs="?", choices=["result", "bundle", "config"], default="result",
                    help="result: the JSON result (default); bundle: the evidence bundle; config: "
                         ".github/taskeval.yml")
    sh.add_argument("--output", metavar="PATH", help="also write the schema here")
    sh.set_defaults(func=cmd_schema)

    add_registered_commands(sub)  # outcomes, validate, calibrate; serve, worker, backfill, export, load, dashboard
    return parser


def add_registered_commands(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add the commands registered in the ``taskeval.commands`` entry-point group (pyproject.toml):
    each entry is an ``add_commands(subparsers)`` function, called in the order of the entries'
    names (installers do not keep the order written), so ``--help`` lists them the same way.

    Why an entry-point group and not a composing module: the core names no adapter (``bot.cli``
    imports this module's helpers, so importing it back made a circle), while ``taskeval.cli:main``
    stays the console script and the one ``main`` every caller and test runs, with every command;
    a composing module would have had to take over both. The group is written at install time,
    so an older (editable) install lists only evaluate, score and schema until it is reinstalled.

    When the bot's entry cannot load for want of the ``bot`` extra (or of ``bot/`` itself: the
    Action image ships without it), its commands are still listed, and running one names the
    extra in one line.
    """
    from importlib.metadata import entry_points

    for entry in sorted(entry_points(group="taskeval.commands"), key=lambda e: e.name):
        try:
            add_commands = entry.load()
        except ModuleNotFoundError as exc:
            if entry.module != "bot.cli" or (exc.name or "").split(".")[0] not in BOT_EXTRA_MODULES:
                raise  # a bug in the command's module, not a missing extra
            for name in ("serve", "worker", "backfill", "dashboard", "export", "load"):
                missing = sub.add_parser(name, help="run the webhook bot (needs: pip install 'taskeval[bot]')")
                missing.set_defaults(func=lambda _args, why=exc.name: _fail(
                    f"the webhook bot needs the bot extra ({why} is not installed): pip install 'taskeval[bot]'"))
        else:
            add_commands(sub)


def quiet_libraries(verbose: bool) -> None:
    """PyGithub and urllib3 log every retry and backoff to stderr; users get taskeval's one line
    instead, and ``--verbose`` shows the library detail (credentials never reach these logs)."""
    import taskeval.github  # noqa: F401  - imported first: it tames PyGithub's import-time logger

    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(name)s: %(message)s")
    for name in ("github", "urllib3", "openai", "httpx"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    # The CLI prints the result's warnings itself; the core's log lines would say them twice.
    logging.getLogger("taskeval").setLevel(logging.DEBUG if verbose else logging.ERROR)


def missing_extra(args: argparse.Namespace) -> str | None:
    """What to install for this command, or None when its extras are there. The statistics
    commands need the store's modules only when they read or write a store."""
    from importlib.util import find_spec

    extra, modules = COMMAND_NEEDS.get(args.command, ("", ()))
    if args.command in ("outcomes", "validate", "calibrate"):
        uses_store = bool(getattr(args, "store", None) or getattr(args, "write_store", None)
                          or (os.environ.get("DATABASE_URL") and not getattr(args, "results", None)
                              and args.command != "outcomes"))
        if uses_store and all(find_spec(m) is not None for m in modules):
            extra, modules = "bot", _STORE
    for module in modules:
        if find_spec(module) is None:
            return (f"{args.command} needs the {extra} extra ({module} is not installed): "
                    f"pip install 'taskeval[{extra}]'")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = missing_extra(args)
    if problem:
        return _fail(problem)
    problem = resolve_api(args)
    if problem:
        return _fail(problem)
    if args.command in ("evaluate", "score", "schema"):  # the bot's commands configure their own logs
        quiet_libraries(args.verbose)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except BrokenPipeError:  # `taskeval schema | head`: the reader left; nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
