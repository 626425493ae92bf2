"""``taskeval outcomes``, ``taskeval validate`` and ``taskeval calibrate``: registered by cli.py.

Sources, the same for all three: a directory (or files) of stored results (``--results``), the bot's
store (``--store URL``, default ``DATABASE_URL``), or the AIDev corpus folder (``--corpus DIR``,
which adds the corpus-only ``post_pr_issue`` outcome to results replayed from it). Outcomes are
derived from the results themselves and merged with any ``--outcomes FILE`` (JSON lines, as
``taskeval outcomes`` writes them) or the store's outcomes table.
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


def _fail(message: str, code: int = EXIT_INPUT) -> int:
    print(f"taskeval: {message}", file=sys.stderr)
    return code


def _add_sources(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", nargs="*", default=[], metavar="PATH",
                   help="result JSON files or directories of them")
    p.add_argument("--store", metavar="URL", help="the bot's database (default: DATABASE_URL)")
    p.add_argument("--corpus", metavar="DIR", help="the AIDev corpus folder: adds post_pr_issue")
    p.add_argument("--outcomes", nargs="*", default=[], metavar="FILE",
                   help="outcome JSON lines files to merge in")


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


def _store_url(args: argparse.Namespace) -> str | None:
    return args.store or os.environ.get("DATABASE_URL") or None


def _store_results(url: str) -> list[dict[str, Any]]:
    """The latest stored result of every PR in the bot's store."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text(
                "SELECT e.result_json FROM evaluations e JOIN (SELECT repo, number, MAX(id) AS id "
                "FROM evaluations GROUP BY repo, number) last ON e.id = last.id")).all()
    finally:
        engine.dispose()
    return [json.loads(r[0]) for r in rows]


def load(args: argparse.Namespace) -> tuple[list[Any], list[oc.OutcomeRecord], list[str]]:
    """Rows, outcome records and notes from the sources the arguments name."""
    from taskeval import outcomes as oc
    from taskeval.validity import Row, read_results

    notes: list[str] = []
    rows, raws = read_results(Path(p) for p in args.results)
    url = _store_url(args)
    if url and (args.store or not args.results):
        stored = _store_results(url)
        rows += [Row.of(r) for r in stored]
        raws += stored
        from bot.outcomes_store import read_outcomes

        records_store = read_outcomes(url)
    else:
        records_store = []
    corpus: list[oc.OutcomeRecord] = []
    if args.corpus:  # the folder is the label (the ground truth), not the attribution
        labels, corpus = _corpus(Path(args.corpus))
        for row in rows:
            row.agent = labels.get(row.key) or row.agent
    derived = [r for raw in raws for r in oc.from_result(raw)]
    extra = [r for path in args.outcomes for r in oc.read_jsonl(Path(path))]
    records = oc.with_composite(oc.merge_records(extra, records_store, derived, corpus))
    if not rows:
        notes.append("no stored results found")
    return rows, records, notes


# --------------------------------------------------------------------------- outcomes


def cmd_outcomes(args: argparse.Namespace) -> int:
    from taskeval import outcomes as oc

    records: list[oc.OutcomeRecord] = []
    notes: list[str] = []
    if args.repo:
        from taskeval.github import GitHubError, api_url, env_token, make_client

        gh = make_client(env_token(), base_url=api_url(os.environ))

        def get(path: str, params: dict[str, Any]) -> Any:
            return gh.requester.requestJsonAndCheck("GET", path, parameters=params)[1]

        try:
            found, notes = oc.scan_history(get, args.repo, args.since, args.max_requests,
                                           args.window_days)
        except GitHubError as exc:
            return _fail(str(exc), EXIT_RETRY_LATER)
        except Exception as exc:  # PyGithub's own errors for 404/403 on the repository
            return _fail(f"could not scan {args.repo}: {exc}", EXIT_RETRY_LATER)
        records += found
    if args.results or args.store or args.corpus:
        _, from_sources, _ = load(args)
        records = oc.merge_records(records, from_sources)
    if not args.repo and not (args.results or args.store or args.corpus):
        return _fail("name OWNER/REPO to scan, or --results/--store/--corpus to derive from")
    for note in notes:
        print(f"taskeval: note: {note}", file=sys.stderr)
    if args.write_store:
        from bot.outcomes_store import write_outcomes

        count = write_outcomes(args.write_store, records)
        print(f"{count} outcome records stored in {args.write_store.split('@')[-1]}")
    if args.output or not args.write_store:
        target = Path(args.output or "outcomes.jsonl")
        count = oc.write_jsonl(target, records)
        print(f"{count} outcome records written to {target}")
    return EXIT_OK


# --------------------------------------------------------------------------- validate


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        from taskeval import validity
    except ModuleNotFoundError as exc:  # pragma: no cover - the extra is missing
        return _fail(f"validate needs the validate extra ({exc.name}): pip install "
                     "'taskeval[validate]'")
    rows, records, notes = load(args)
    if not rows:
        return _fail("no stored results to validate (give --results DIR or --store URL)")
    report = validity.analyse(rows, records, args.bootstrap)
    baseline = None
    if args.baseline:
        base_rows, _ = validity.read_results([Path(p) for p in args.baseline])
        wanted = {r.key for r in rows}
        baseline = validity.analyse([r for r in base_rows if r.key in wanted], records,
                                    args.bootstrap)
    command = args.command_line or ("taskeval " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    written = validity.write_report(report, Path(args.output_dir), baseline=baseline,
                                    command=command, with_plots=not args.no_plots)
    for note in notes:
        print(f"taskeval: note: {note}", file=sys.stderr)
    print(f"{len(rows)} PRs, {len(report['outcomes'])} outcomes; wrote "
          + ", ".join(str(p) for p in written))
    return EXIT_OK


# --------------------------------------------------------------------------- calibrate


def cmd_calibrate(args: argparse.Namespace) -> int:
    try:
        from taskeval import calibration
    except ModuleNotFoundError as exc:  # pragma: no cover
        return _fail(f"calibrate needs the validate extra ({exc.name}): pip install "
                     "'taskeval[validate]'")
    rows, records, _ = load(args)
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
    ou = sub.add_parser("outcomes", help="record what happened to PRs after evaluation (reverts, "
                        "follow-up fixes, reopened tasks, rejections) as JSON lines or in the store")
    ou.add_argument("repo", nargs="?", metavar="OWNER/REPO", help="scan this repository's history")
    ou.add_argument("--since", metavar="DATE", help="only PRs updated since (ISO date)")
    ou.add_argument("--max-requests", type=int, default=500, help="request budget (default 500)")
    ou.add_argument("--window-days", type=float, default=14.0,
                    help="follow-up fix window after the merge (default 14 days)")
    ou.add_argument("--output", metavar="PATH", help="JSON lines file (default outcomes.jsonl)")
    ou.add_argument("--write-store", metavar="URL", help="store the records in the bot's database")
    _add_sources(ou)
    ou.set_defaults(func=cmd_outcomes)

    va = sub.add_parser("validate", help="does the score predict outcomes? writes validity.md, "
                        "validity.json and PNG plots")
    _add_sources(va)
    va.add_argument("--baseline", nargs="*", default=[], metavar="PATH",
                    help="results of the same PRs by another scorer, for a before/after table")
    va.add_argument("--output-dir", default="validity", metavar="DIR")
    va.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
    va.add_argument("--no-plots", action="store_true")
    va.add_argument("--command-line", help=argparse.SUPPRESS)  # the command shown in validity.md
    va.set_defaults(func=cmd_validate)

    ca = sub.add_parser("calibrate", help="propose signal_weights fitted on outcomes (a config "
                        "snippet for review; changes nothing)")
    _add_sources(ca)
    ca.add_argument("--outcome", default="agent_failed", help="outcome to fit (default agent_failed)")
    ca.add_argument("--category", default="agentPerformance", help="category whose weights to fit")
    ca.add_argument("--folds", type=int, default=5)
    ca.add_argument("--strength", type=float, default=1.0, help="L2 regularisation strength")
    ca.add_argument("--output", metavar="PATH", help="also write the snippet here")
    ca.set_defaults(func=cmd_calibrate)
