"""``taskeval outcomes``, ``taskeval validate`` and ``taskeval calibrate``: registered by cli.py.

Sources, the same for all three: a directory (or files) of stored results (``--results``), the bot's
store (``--store URL``, default ``DATABASE_URL``), or the AIDev corpus folder (``--corpus DIR``,
which adds the corpus-only ``post_pr_issue`` outcome to results replayed from it). Outcomes are
derived from the results themselves and merged with any ``--outcomes FILE`` (JSON lines, as
``taskeval outcomes`` writes them, with built-in kinds or a team's own labels) or the store's
outcomes table. The store is only read: never created, written or migrated by these commands.
Every source is checked before anything is computed; one that cannot be read is one line, exit 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: `taskeval --help` and the bot's commands stay fast
    from taskeval import outcomes as oc

EXIT_OK, EXIT_SIDE_EFFECT, EXIT_INPUT, EXIT_RETRY_LATER = 0, 1, 2, 3
# Bootstrap resamples: fewer make the 2.5/97.5 % percentiles noise; each resample holds one index
# per PR, so more than this costs gigabytes on a large history for no visible change.
MIN_ROUNDS, MAX_ROUNDS = 20, 10_000
MAX_FOLDS = 10  # outcomes need 10 PRs on each side to be fitted: more folds leave some without one


def _fail(message: str, code: int = EXIT_INPUT) -> int:
    print(f"taskeval: {message}", file=sys.stderr)
    return code


def _add_sources(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", nargs="*", default=[], metavar="PATH",
                   help="result JSON files or directories of them")
    p.add_argument("--store", metavar="URL", help="the bot's database, read only (default: "
                   "DATABASE_URL when no --results are given)")
    p.add_argument("--corpus", metavar="DIR", help="the AIDev corpus folder: adds post_pr_issue")
    p.add_argument("--outcomes", nargs="*", default=[], metavar="FILE",
                   help="outcome JSON lines files to merge in; their labels may be your own "
                        "(up to 32 characters, e.g. the reasons your triage records)")


def _corpus(folder: Path) -> tuple[dict[tuple[str, int], str], list[oc.OutcomeRecord]]:
    """From one pass over each agent folder's ``prs.csv``: the folder's agent of every PR, and
    ``post_pr_issue`` for every closed PR (an issue cross-linked after it closed)."""
    from taskeval import outcomes as oc
    from taskeval.corpus.aidev import FOLDER_AGENT, repository_of

    labels: dict[tuple[str, int], str] = {}
    out = []
    for agent in sorted(p for p in folder.iterdir() if (p / "prs.csv").is_file()):
        label = FOLDER_AGENT.get(agent.name)
        later: dict[str, list[str]] = {}
        if (agent / "post_pr_issues.csv").is_file():
            with (agent / "post_pr_issues.csv").open(encoding="utf-8", newline="") as f:
                for row in csv.DictReader(f):
                    later.setdefault(row["pr_id"], []).append(row.get("issue_url") or "")
        with (agent / "prs.csv").open(encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                repo = repository_of(row.get("repo_url") or "")
                if not repo:
                    continue
                if label is not None:
                    labels[(repo.lower(), int(row["number"]))] = label
                if row.get("state") != "closed":
                    continue
                hits = later.get(row["id"], [])
                out.append(oc.OutcomeRecord(repo, int(row["number"]), "post_pr_issue",
                                            bool(hits), hits or [f"pr:{row['number']}"],
                                            f"{len(hits)} issue(s) cross-linked after it closed",
                                            "corpus"))
    return labels, out


class SourceError(ValueError):
    """A source that cannot be read (a missing file, a URL that is none, an empty database); the
    message is the one line users see."""


def _store_url(args: argparse.Namespace) -> tuple[str, str] | None:
    """(the store's URL, where it came from) when the sources include the store."""
    if args.store:
        return args.store, "--store"
    env = (os.environ.get("DATABASE_URL") or "").strip()
    return (env, "DATABASE_URL") if env and not args.results else None


def store_url_of(url: str, flag: str) -> Any:
    """``url`` parsed (SQLAlchemy's URL, ``postgres://`` mapped to the bot's driver), or a
    SourceError naming ``flag`` when it is no database URL."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from taskeval.store.db import normalise_database_url

    try:
        return make_url(normalise_database_url(url.strip()))
    except ArgumentError:
        raise SourceError(f"{flag} {url!r} is not a database URL (e.g. sqlite:///taskeval.db or "
                          "postgresql://USER@HOST/DB)") from None


def _writable_store(url: str) -> None:
    """``--write-store URL``: a store, a new SQLite file or an empty database (never another
    application's), that can be written; checked before GitHub is read or anything derived."""
    from taskeval.store.access import store_problem

    problem = store_problem(store_url_of(url, "--write-store").render_as_string(hide_password=False))
    if problem:
        raise SourceError(f"--write-store: {problem}")


def open_store(url: str, flag: str) -> Any:
    """An engine that reads the bot's store at ``url`` and never writes it: a SQLite file is
    opened read-only (a missing one is not created), and a database without the store's tables
    is refused rather than migrated."""
    import sqlite3
    from urllib.parse import quote

    from sqlalchemy import create_engine

    from taskeval.store.access import StoreError, check_store
    from taskeval.store.db import describe_url

    parsed = store_url_of(url, flag)
    shown = describe_url(parsed.render_as_string(hide_password=False))
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if not database or database == ":memory:":
            raise SourceError(f"{flag} {shown}: an in-memory database holds no store; name the "
                              "file, e.g. sqlite:///taskeval.db")
        path = Path(database).resolve()
        if not path.is_file():
            raise SourceError(f"{flag}: no store at {path} (write one with 'taskeval backfill "
                              "OWNER/REPO' or the bot)")
        target = f"file:{quote(str(path))}?mode=ro"
        engine = create_engine("sqlite://", creator=lambda: sqlite3.connect(target, uri=True))
    else:
        try:
            engine = create_engine(parsed)
        except Exception as exc:  # an unknown dialect or a driver that is not installed
            raise SourceError(f"{flag} {shown}: cannot open it ({_first_line(exc)})") from None
    try:  # the rule every reader keeps (taskeval.store.access), read without writing
        check_store(parsed.render_as_string(hide_password=False), create=False)
    except StoreError as exc:
        engine.dispose()
        raise SourceError(f"{flag}: {exc}") from None
    except Exception as exc:  # not a database file, a server that does not answer
        engine.dispose()
        raise SourceError(f"cannot open the store {shown} ({flag}): {_first_line(exc)}") from None
    return engine


def _first_line(exc: BaseException) -> str:
    from taskeval.redact import redact

    text = str(exc).strip().splitlines()
    return redact(text[0]) if text else type(exc).__name__


def _store_results(engine: Any) -> list[dict[str, Any]]:
    """The latest stored result of every PR in the bot's store."""
    from sqlalchemy import text

    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT e.result_json FROM evaluations e JOIN (SELECT repo, number, MAX(id) AS id "
            "FROM evaluations GROUP BY repo, number) last ON e.id = last.id")).all()
    return [json.loads(r[0]) for r in rows]


def _result_paths(paths: list[str], flag: str = "--results") -> list[Path]:
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise SourceError(f"{flag} {missing[0]}: no such file or directory")
    return [Path(p) for p in paths]


def check_sources(args: argparse.Namespace) -> None:
    """Every source the command line names exists and is of its kind: checked before any work
    (a GitHub scan, a read of the store, a fit), so a mistyped one is one line, not a late
    failure or a silently empty source."""
    _result_paths(args.results)
    for name in args.outcomes:
        if not Path(name).exists():
            raise SourceError(f"--outcomes {name}: no such file")
    if args.corpus:
        folder = Path(args.corpus)
        if not folder.is_dir():
            raise SourceError(f"--corpus {args.corpus}: no such directory")
        if not any((p / "prs.csv").is_file() for p in folder.iterdir() if p.is_dir()):
            raise SourceError(f"--corpus {args.corpus} is not the AIDev corpus folder: it holds no "
                              "agent folder with a prs.csv (e.g. Copilot/prs.csv)")
    store = _store_url(args)
    if store:
        store_url_of(*store)


def _outcome_files(paths: list[str]) -> list[oc.OutcomeRecord]:
    from taskeval import outcomes as oc

    out: list[oc.OutcomeRecord] = []
    for name in paths:
        path = Path(name)
        try:
            out += oc.read_jsonl(path)
        except FileNotFoundError:
            raise SourceError(f"--outcomes {name}: no such file") from None
        except IsADirectoryError:
            raise SourceError(f"--outcomes {name} is a directory; give the JSON lines file "
                              "(taskeval outcomes writes outcomes.jsonl)") from None
        except OSError as exc:
            raise SourceError(f"--outcomes {name}: cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise SourceError(f"--outcomes {name}: not UTF-8 text (expected JSON lines)") from None
        except ValueError as exc:  # names the file, the line and what is wrong with it
            raise SourceError(f"--outcomes {exc}") from None
    return out


def load(args: argparse.Namespace) -> tuple[list[Any], list[oc.OutcomeRecord], list[str]]:
    """Rows, outcome records and notes from the sources the arguments name; a SourceError when
    one of them cannot be read (checked before anything is computed or written)."""
    from taskeval import outcomes as oc
    from taskeval.validity import Row, read_results

    notes: list[str] = []
    check_sources(args)
    extra = _outcome_files(args.outcomes)
    rows, raws = read_results(_result_paths(args.results))
    if args.results and not rows:
        raise SourceError(f"--results {' '.join(args.results)}: no taskeval result there (a result "
                          "is the JSON of 'taskeval evaluate --output'; bundles are skipped)")
    store = _store_url(args)
    records_store: list[oc.OutcomeRecord] = []
    if store:
        from taskeval.store.outcomes import read_outcomes

        engine = open_store(*store)
        try:
            stored = _store_results(engine)
            records_store = read_outcomes(engine, migrate=False)
        finally:
            engine.dispose()
        rows += [Row.of(r) for r in stored]
        raws += stored
    corpus: list[oc.OutcomeRecord] = []
    if args.corpus:  # the folder is the label (the ground truth), not the attribution
        labels, corpus = _corpus(Path(args.corpus))
        for row in rows:
            row.agent = labels.get(row.key) or row.agent
    derived = [r for raw in raws for r in oc.from_result(raw)]
    records = oc.with_composite(oc.merge_records(extra, records_store, derived, corpus))
    if not rows:
        notes.append("no stored results found")
    return rows, records, notes


# --------------------------------------------------------------------------- outcomes


def cmd_outcomes(args: argparse.Namespace) -> int:
    from taskeval import outcomes as oc
    from taskeval.cli import OutputError, check_output

    if not args.repo and not (args.results or args.store or args.corpus):
        return _fail("name OWNER/REPO to scan, or --results/--store/--corpus to derive from")
    if args.since and not args.repo:
        return _fail("--since limits the scan of OWNER/REPO's history: name the repository, or "
                     "leave --since out")
    derives = bool(args.results or args.store or args.corpus)
    from_sources: list[oc.OutcomeRecord] = []
    try:
        check_output(args.output)
        check_sources(args)
        if args.write_store:
            _writable_store(args.write_store)
        if derives:  # local, and before the scan: a bad source must not cost its requests
            _, from_sources, _ = load(args)
    except (OutputError, SourceError) as exc:
        return _fail(str(exc))
    records: list[oc.OutcomeRecord] = []
    notes: list[str] = []
    if args.repo:
        from taskeval.github import AuthError, GitHubError, NotFoundError, api_url, env_token, make_client
        from taskeval.github.client import repo_path
        from taskeval.github.errors import translate

        try:
            repo_path(args.repo)
            gh = make_client(env_token(), base_url=api_url(os.environ))
        except ValueError as exc:
            return _fail(str(exc))
        from taskeval.github.client import clone
        from taskeval.github.etags import disk_cache

        # A scan is repeated from cron: its reads of the base branch are conditional on the last
        # run's answers (kept on disk), and GitHub does not charge a 304.
        requester = clone(gh, etags=disk_cache(os.environ))

        def get(path: str, params: dict[str, Any]) -> Any:
            try:
                return requester.requestJsonAndCheck("GET", path, parameters=params)[1]
            except Exception as exc:  # PyGithub's and requests' errors as one plain line
                what = f"repository {args.repo}" if path == repo_path(args.repo) else path
                raise translate(exc, what, "repository") from exc

        try:
            found, notes = oc.scan_history(get, args.repo, args.since, args.max_requests,
                                           args.window_days)
        except (NotFoundError, AuthError) as exc:  # no such repository, or no access to it
            return _fail(str(exc))
        except GitHubError as exc:  # outage, rate limit, network: try again later
            return _fail(str(exc), EXIT_RETRY_LATER)
        records += found
    if derives:
        records = oc.merge_records(records, from_sources)
    for note in notes:
        print(f"taskeval: note: {note}", file=sys.stderr)
    if args.write_store:
        from taskeval.store.db import describe_url
        from taskeval.store.outcomes import write_outcomes

        try:
            count = write_outcomes(args.write_store, records)
        except Exception as exc:  # a database that cannot be opened or written: one line
            return _fail(f"could not store the outcomes in {describe_url(args.write_store)}: "
                         f"{_first_line(exc)}", EXIT_SIDE_EFFECT)
        print(f"{count} outcome records stored in {describe_url(args.write_store)}")
    if args.output or not args.write_store:
        target = Path(args.output or "outcomes.jsonl")
        count = oc.write_jsonl(target, records)
        print(f"{count} outcome records written to {target}")
    return EXIT_OK


# --------------------------------------------------------------------------- validate


def cmd_validate(args: argparse.Namespace) -> int:
    from taskeval import validity  # the extra's modules were looked for by cli.missing_extra

    out_dir = Path(args.output_dir)
    if out_dir.exists() and not out_dir.is_dir():
        return _fail(f"--output-dir {out_dir} is a file; give a directory")
    try:
        rows, records, notes = load(args)
        base_paths = _result_paths(args.baseline, "--baseline")
    except SourceError as exc:
        return _fail(str(exc))
    if not rows:
        return _fail("no stored results to validate (give --results DIR or --store URL)")
    report = validity.analyse(rows, records, args.bootstrap)
    baseline = None
    if base_paths:
        base_rows, _ = validity.read_results(base_paths)
        wanted = {r.key for r in rows}
        baseline = validity.analyse([r for r in base_rows if r.key in wanted], records,
                                    args.bootstrap)
    command = args.command_line or ("taskeval " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    try:
        written = validity.write_report(report, out_dir, baseline=baseline, command=command,
                                        with_plots=not args.no_plots)
    except OSError as exc:
        return _fail(f"--output-dir {out_dir}: cannot write: {exc.strerror or exc}")
    for note in notes:
        print(f"taskeval: note: {note}", file=sys.stderr)
    print(f"{len(rows)} PRs, {len(report['outcomes'])} outcomes; wrote "
          + ", ".join(str(p) for p in written))
    return EXIT_OK


# --------------------------------------------------------------------------- calibrate


def cmd_calibrate(args: argparse.Namespace) -> int:
    from taskeval import calibration
    from taskeval.cli import OutputError, check_output

    try:
        check_output(args.output)
        rows, records, _ = load(args)
    except (OutputError, SourceError) as exc:
        return _fail(str(exc))
    if not rows:
        return _fail("no stored results to calibrate on (give --results DIR or --store URL)")
    try:
        proposal = calibration.calibrate(rows, records, args.outcome, args.category,
                                         folds=args.folds, strength=args.strength)
    except ValueError as exc:
        return _fail(str(exc))
    text = calibration.snippet(proposal)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    print(text, end="")
    return EXIT_OK


def add_commands(sub: Any) -> None:
    from taskeval.cli import float_at_least, int_at_least, iso_date
    from taskeval.contract import CATEGORIES

    ou = sub.add_parser(
        "outcomes", help="record what happened to PRs after evaluation (reverts, follow-up fixes, "
        "reopened tasks, rejections) as JSON lines or in the store",
        description="Record what happened to pull requests after they were evaluated: scan "
                    "OWNER/REPO's later history on GitHub (reverts, follow-up fixes, reopened "
                    "tasks, rejections) and/or derive outcomes from stored results, the bot's "
                    "store or the AIDev corpus. Writes JSON lines (default outcomes.jsonl) or the "
                    "store's outcomes table; `taskeval validate` reads either.")
    ou.add_argument("repo", nargs="?", metavar="OWNER/REPO", help="scan this repository's history")
    ou.add_argument("--since", metavar="DATE", type=iso_date,
                    help="only PRs updated since (YYYY-MM-DD or ISO 8601; with OWNER/REPO)")
    ou.add_argument("--max-requests", type=int_at_least(1), default=500, metavar="N",
                    help="request budget (default 500)")
    ou.add_argument("--window-days", type=float_at_least(0, above=True), default=14.0,
                    metavar="DAYS", help="follow-up fix window after the merge (default 14 days)")
    ou.add_argument("--output", metavar="PATH", help="JSON lines file (default outcomes.jsonl)")
    ou.add_argument("--write-store", metavar="URL", help="store the records in the bot's database")
    _add_sources(ou)
    ou.set_defaults(func=cmd_outcomes)

    va = sub.add_parser(
        "validate", help="does the score predict outcomes? writes validity.md, validity.json and "
        "PNG plots",
        description="Relate stored scores to what later happened to the PRs: the share of PRs "
                    "each signal is conclusive on, AUC with "
                    "bootstrap intervals and a verdict (predicts / no evidence either way / "
                    "points the wrong way) for each category and the overall score against each "
                    "outcome, outcome rate per band, and the signals that separate nothing. "
                    "Outcomes are the built-in kinds derived from the results plus any --outcomes "
                    "files, whose labels may be the team's own. Needs the validate extra.")
    _add_sources(va)
    va.add_argument("--baseline", nargs="*", default=[], metavar="PATH",
                    help="results of the same PRs by another scorer, for a before/after table")
    va.add_argument("--output-dir", default="validity", metavar="DIR",
                    help="where validity.md, validity.json and the plots go (default ./validity)")
    va.add_argument("--bootstrap", type=int_at_least(MIN_ROUNDS, MAX_ROUNDS), default=1000,
                    metavar="N", help=f"bootstrap resamples for the 95 %% intervals (default 1000; "
                    f"{MIN_ROUNDS} to {MAX_ROUNDS})")
    va.add_argument("--no-plots", action="store_true",
                    help="write validity.md and validity.json only (no PNG plots)")
    va.add_argument("--command-line", help=argparse.SUPPRESS)  # the command shown in validity.md
    va.set_defaults(func=cmd_validate)

    ca = sub.add_parser(
        "calibrate", help="propose signal_weights fitted on outcomes (a config snippet for review; "
        "changes nothing)",
        description="Fit one category's signal weights against one outcome (non-negative, "
                    "L2-regularised logistic fit) and compare the category score under the "
                    "current and the fitted weights on held-out PRs (k-fold cross-validation). "
                    "A signal_weights block is proposed only when the held-out gain is clear: "
                    "the 95 % paired-bootstrap interval of the AUC gain lies wholly above 0. "
                    "Signals never conclusive (or never varying) in the data keep their weights. "
                    "Prints a YAML snippet to review; changes nothing. Needs the validate extra.")
    _add_sources(ca)
    ca.add_argument("--outcome", default="agent_failed",
                    help="outcome to fit, a built-in kind or a label of --outcomes files "
                         "(default agent_failed)")
    ca.add_argument("--category", default="agentPerformance", choices=CATEGORIES,
                    help="category whose signal weights to fit (default agentPerformance)")
    ca.add_argument("--folds", type=int_at_least(2, MAX_FOLDS), default=5, metavar="K",
                    help=f"cross-validation folds (default 5; 2 to {MAX_FOLDS})")
    ca.add_argument("--strength", type=float_at_least(0), default=1.0, metavar="L2",
                    help="L2 regularisation strength, 0 for none (default 1.0)")
    ca.add_argument("--output", metavar="PATH", help="also write the snippet here")
    ca.set_defaults(func=cmd_calibrate)
