"""Who wrote the commits of stored results: how many commits have no GitHub account, how many the git
identity attributes and by which rule (taskeval/signals/identity.py), how many stay unattributed,
and how the rescue classes and ``agent.human_intervention`` moved against results of an older
scorer on the same evidence.

    python -m benchmarks.real_corpus --output-dir AFTER          # this scorer, every PR
    PYTHONPATH=<older checkout> python benchmarks/validity_baseline.py AFTER/<folder> BEFORE/<folder>
    python -m benchmarks.git_identity --results AFTER [--before BEFORE] [--json out.json]

Results are read recursively (``<agent folder>/<owner>__<repo>__<number>.json``, as real_corpus
writes them); ``--before`` holds the same files re-scored by the older scorer. The authors are
computed again from each stored bundle with this scorer and the default settings. Prints a
markdown report (the BENCHMARKS.md section) on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from taskeval.config import Settings
from taskeval.models import EvidenceBundle
from taskeval.signals import Ctx
from taskeval.signals.identity import RULES, authors_of
from taskeval.signals.turns import intervention_of

RESCUES = ("clean", "feedback_loop", "taken_over", "unknown", "none")


def _signal(result: dict[str, Any], sid: str) -> str:
    found = next((s for s in result.get("signals") or [] if s.get("id") == sid), None)
    return str(found.get("status")) if found else "absent"


def _rescue(result: dict[str, Any] | None) -> str:
    if result is None:
        return "none"
    return str((result.get("rescue") or {}).get("class") or "none")


def measure(results: Path, before: Path | None) -> dict[str, Any]:
    settings = Settings()
    commits = unlinked = unlinked_merges = prs_unlinked = 0
    rules: Counter[str] = Counter()
    work_unattributed = prs_work_unattributed = 0
    moves: Counter[tuple[str, str]] = Counter()
    signal_moves: Counter[tuple[str, str]] = Counter()
    signal_all: Counter[tuple[str, str]] = Counter()  # every PR, any state
    by_folder: dict[str, Counter[str]] = defaultdict(Counter)
    files = sorted(results.rglob("*.json"))
    for path in files:
        result = json.loads(path.read_text(encoding="utf-8"))
        folder = path.parent.name
        bundle = EvidenceBundle.model_validate(result["evidence"])
        listed = bundle.facts.commits
        commits += len(listed)
        mine = [c for c in listed if not c.author_login]
        unlinked += len(mine)
        unlinked_merges += sum(c.is_merge for c in mine)
        by_folder[folder]["prs"] += 1
        by_folder[folder]["commits"] += len(listed)
        by_folder[folder]["unlinked"] += len(mine)
        if mine:
            prs_unlinked += 1
            ctx = Ctx(bundle, settings)
            authors = authors_of(ctx)
            for c in mine:
                rules[authors[c.sha].rule] += 1
                by_folder[folder][f"rule:{authors[c.sha].rule}"] += 1
            unknown = intervention_of(ctx).unattributed
            work_unattributed += len(unknown)
            prs_work_unattributed += bool(unknown)
            by_folder[folder]["work_unattributed"] += len(unknown)
        after = _rescue(result)
        old = None
        if before is not None:
            other = before / path.relative_to(results)
            old = json.loads(other.read_text(encoding="utf-8")) if other.is_file() else None
        signal_all[(_signal(old, "agent.human_intervention") if old else "?",
                    _signal(result, "agent.human_intervention"))] += 1
        if bundle.facts.pull.merged:
            moves[(_rescue(old) if before is not None else "?", after)] += 1
            by_folder[folder][f"after:{after}"] += 1
            if old is not None:
                by_folder[folder][f"before:{_rescue(old)}"] += 1
            signal_moves[(_signal(old, "agent.human_intervention") if old else "?",
                          _signal(result, "agent.human_intervention"))] += 1
    return {"prs": len(files), "commits": commits, "unlinked": unlinked, "unlinkedMerges": unlinked_merges,
            "prsWithUnlinked": prs_unlinked, "rules": dict(rules), "workUnattributed": work_unattributed,
            "prsWorkUnattributed": prs_work_unattributed,
            "rescueMoves": {f"{a}->{b}": n for (a, b), n in sorted(moves.items())},
            "signalMoves": {f"{a}->{b}": n for (a, b), n in sorted(signal_moves.items())},
            "signalMovesAll": {f"{a}->{b}": n for (a, b), n in sorted(signal_all.items())},
            "byFolder": {k: dict(v) for k, v in sorted(by_folder.items())}}


def markdown(m: dict[str, Any]) -> str:
    lines = [f"{m['prs']} PRs, {m['commits']:,} commits listed; **{m['unlinked']} commits have no GitHub "
             f"account** ({m['unlinkedMerges']} of them merge commits) in {m['prsWithUnlinked']} PRs.", ""]
    attributed = sum(n for r, n in m["rules"].items() if r not in ("account", "unattributed"))
    lines += [f"Attributed by their git identity: **{attributed}**; unattributed: "
              f"{m['rules'].get('unattributed', 0)}. By rule:", "", "| rule | commits |", "|---|---:|"]
    lines += [f"| `{r}` | {m['rules'].get(r, 0)} |" for r in RULES if r != "account"]
    lines += ["", f"Commits of the PR's work whose writer stays unknown (the rescue's `unattributedCommits`): "
              f"{m['workUnattributed']} in {m['prsWorkUnattributed']} PRs.", ""]
    lines += ["| agent folder | PRs | commits | no account | web editor | co-author | unattributed | "
              "of the PR's work, unknown |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for folder, c in m["byFolder"].items():
        lines.append(f"| {folder} | {c.get('prs', 0)} | {c.get('commits', 0)} | {c.get('unlinked', 0)} | "
                     f"{c.get('rule:web-editor', 0)} | {c.get('rule:co-author', 0)} | "
                     f"{c.get('rule:unattributed', 0)} | {c.get('work_unattributed', 0)} |")
    moves = {tuple(k.split("->")): n for k, n in m["rescueMoves"].items()}
    befores = [r for r in RESCUES if any(a == r for a, _ in moves)]
    afters = [r for r in RESCUES if any(b == r for _, b in moves)]
    lines += ["", "Rescue class of the merged PRs, before (rows) and after (columns):", "",
              "| before \\ after | " + " | ".join(afters) + " | all |", "|---|" + "---:|" * (len(afters) + 1)]
    for a in befores:
        row = [moves.get((a, b), 0) for b in afters]
        lines.append(f"| {a} | " + " | ".join(str(n) for n in row) + f" | {sum(row)} |")
    totals = [sum(n for (_, b), n in moves.items() if b == col) for col in afters]
    lines.append("| all | " + " | ".join(str(n) for n in totals) + f" | {sum(totals)} |")
    lines += ["", "`agent.human_intervention` on the merged PRs, before -> after: "
              + ", ".join(f"{k} {n}" for k, n in m["signalMoves"].items()) + "; on every PR: "
              + ", ".join(f"{k} {n}" for k, n in m["signalMovesAll"].items()) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    found = measure(args.results, args.before)
    if args.json:
        args.json.write_text(json.dumps(found, indent=1), encoding="utf-8")
    print(markdown(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
