"""The ``taskeval`` command: argument parsing, exit codes and printing only.

Exit codes: 0 done; 1 the evaluation ran but a requested side effect failed (e.g. the comment
could not be posted); 2 bad input (unknown repo/PR, bad reference, unreadable file, credentials);
3 GitHub could not answer (outage, rate limit, network, malformed answer): try again later.
Expected failures print one line to stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from taskeval import SCORER_VERSION, __version__

EXIT_OK, EXIT_SIDE_EFFECT, EXIT_INPUT, EXIT_RETRY_LATER = 0, 1, 2, 3
# What `pip install 'taskeval[bot]'` adds; without them `serve`/`worker` explain instead of vanishing.
BOT_EXTRA_MODULES = frozenset({"bot", "flask", "gunicorn", "sqlalchemy", "psycopg", "werkzeug"})


def _fail(message: str, code: int = EXIT_INPUT) -> int:
    print(f"taskeval: {message}", file=sys.stderr)
    return code


def _write_output(path: str | None, text: str) -> None:
    if path:
        target = Path(path)
        if target.parent and not target.parent.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n", encoding="utf-8")


def _options(args: argparse.Namespace, trigger: str, token: str | None):
    from taskeval.pipeline import Options

    return Options(
        ai="off" if args.no_ai else "auto",
        config_path=Path(args.config) if args.config else None,
        trigger=trigger,
        env=dict(os.environ),
        github_token=token,
    )


def cmd_evaluate(args: argparse.Namespace) -> int:
    from taskeval.github import AuthError, GitHubError, NotFoundError, api_url, make_client, parse_pr_ref
    from taskeval.pipeline import evaluate_pull_request, publish_comment

    try:
        repository, number = parse_pr_ref(args.pr)
    except ValueError as exc:
        return _fail(str(exc))
    if args.config and not Path(args.config).is_file():
        return _fail(f"config file {args.config} does not exist")
    token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN") or None
    if not token:
        print("taskeval: GITHUB_TOKEN is not set; reading as an anonymous client "
              "(public repositories only, 60 requests/hour)", file=sys.stderr)
    gh = make_client(token, base_url=api_url(os.environ))
    try:
        evaluation = evaluate_pull_request(gh, repository, number, _options(args, "cli", token))
    except (NotFoundError, AuthError) as exc:
        return _fail(str(exc))
    except GitHubError as exc:  # rate limits, 5xx, timeouts, malformed answers: transient
        return _fail(str(exc), EXIT_RETRY_LATER)
    _write_output(args.output, evaluation.result.to_json())
    print(evaluation.markdown, end="")
    for warning in evaluation.result.warnings:
        print(f"taskeval: warning: {warning}", file=sys.stderr)
    if args.comment:
        if not token:
            return _fail("--comment needs GITHUB_TOKEN", EXIT_SIDE_EFFECT)
        try:
            url, created = publish_comment(gh, repository, number, evaluation.markdown)
        except (AuthError, GitHubError) as exc:
            return _fail(f"could not post the comment: {exc}", EXIT_SIDE_EFFECT)
        print(f"taskeval: comment {'created' if created else 'updated'}: {url}", file=sys.stderr)
    return EXIT_OK


def cmd_score(args: argparse.Namespace) -> int:
    from taskeval.pipeline import BundleFileError, rescore_file
    from taskeval.report import render_comment

    if args.config and not Path(args.config).is_file():
        return _fail(f"config file {args.config} does not exist")
    token = os.environ.get("GITHUB_TOKEN") or None
    try:
        result = rescore_file(Path(args.file), _options(args, "rescore", token))
    except BundleFileError as exc:
        return _fail(str(exc))
    text = result.to_json()
    _write_output(args.output, text)
    if args.markdown:
        print(render_comment(result), end="")
    else:
        print(text)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from taskeval.models import EvaluationResult, EvidenceBundle

    model = EvidenceBundle if args.what == "bundle" else EvaluationResult
    schema = model.model_json_schema(by_alias=True)
    schema["$id"] = f"https://taskeval.dev/schema/{args.what}-v1.json"
    text = json.dumps(schema, indent=2, sort_keys=True)
    _write_output(args.output, text)
    print(text)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    ev.add_argument("--no-ai", action="store_true", help="deterministic scores only")
    ev.add_argument("--config", metavar="PATH", help="config file instead of the repo's .github/taskeval.yml")
    ev.set_defaults(func=cmd_evaluate)

    sc = sub.add_parser("score", help="re-score a stored bundle or result offline (prints JSON)")
    sc.add_argument("file", help="a stored result JSON or bare evidence bundle JSON")
    sc.add_argument("--output", metavar="PATH", help="also write the JSON result here")
    sc.add_argument("--no-ai", action="store_true", help="deterministic scores only")
    sc.add_argument("--config", metavar="PATH", help="config file (default: the one stored in the result)")
    sc.add_argument("--markdown", action="store_true", help="print the comment markdown instead of JSON")
    sc.set_defaults(func=cmd_score)

    sh = sub.add_parser("schema", help="print the JSON Schema of the result (or bundle)")
    sh.add_argument("what", nargs="?", choices=["result", "bundle"], default="result")
    sh.add_argument("--output", metavar="PATH")
    sh.set_defaults(func=cmd_schema)

    try:
        from bot.cli import add_commands
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in BOT_EXTRA_MODULES:
            raise  # a bug in the bot, not a missing extra
        for name in ("serve", "worker", "dashboard"):
            missing = sub.add_parser(name, help="run the webhook bot (needs: pip install 'taskeval[bot]')")
            missing.set_defaults(func=lambda _args, why=exc.name: _fail(
                f"the webhook bot needs the bot extra ({why} is not installed): pip install 'taskeval[bot]'"))
    else:
        add_commands(sub)
    return parser


def _quiet_libraries(verbose: bool) -> None:
    """PyGithub and urllib3 log every retry and backoff to stderr; users get taskeval's one line
    instead, and ``--verbose`` shows the library detail (credentials never reach these logs)."""
    import taskeval.github  # noqa: F401  - imported first: it tames PyGithub's import-time logger

    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(name)s: %(message)s")
    for name in ("github", "urllib3", "openai", "httpx"):
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    # The CLI prints the result's warnings itself; the core's log lines would say them twice.
    logging.getLogger("taskeval").setLevel(logging.DEBUG if verbose else logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in ("evaluate", "score", "schema"):  # the bot's commands configure their own logs
        _quiet_libraries(args.verbose)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
