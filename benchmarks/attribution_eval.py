"""Agent attribution over the real AIDev-pop PRs: precision and recall per agent.

Builds, for each of the corpus's 6,658 PRs, the raw collection that ``collect`` would have read
(author and type, body, commits with author/committer logins and messages, assignees from the
timeline's ``assigned``/``unassigned`` events), runs it through the real bundle builder and
:func:`taskeval.agents.attribute`, and compares the agent with the corpus folder (the label).
The corpus holds no branch names, no ``performed_via_github_app`` and no requested reviewers, so
marks that live only there are invisible here; "marked" counts the PRs whose data carries one
of the agent's own marks (its account, a description/commit mark or a trailer), which is where
recall must reach 95 %.

The Copilot operator is also checked against the timeline's ``copilot_work_started`` actor (the
person Copilot worked for), which attribution does not read.

    python -m benchmarks.attribution_eval [--data PATH] [--show N]

Without the data folder it says so and exits 0 (a clone without the corpus still passes).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taskeval.agents import attribute
from taskeval.evidence import build_bundle
from taskeval.models import AgentAttribution, EvidenceBundle
from taskeval.raw import RawCollection, RawCommit, RawPullRequest, RawUser

ROOT = Path(__file__).resolve().parents[1]
# "../shared/data/aidev-pop-v1" beside the checkout (one level further up from a worktree), or
# wherever AIDEV_POP_DATA points.
CANDIDATES = [ROOT.parent / "shared" / "data" / "aidev-pop-v1",
              ROOT.parent.parent / "shared" / "data" / "aidev-pop-v1"]
DEFAULT_DATA = Path(os.environ["AIDEV_POP_DATA"]) if os.environ.get("AIDEV_POP_DATA") else next(
    (p for p in CANDIDATES if p.is_dir()), CANDIDATES[0])
FOLDERS = {
    "Claude_Code": "claude-code",
    "Copilot": "copilot",
    "Cursor": "cursor",
    "Devin": "devin",
    "OpenAI_Codex": "codex",
}
csv.field_size_limit(1 << 30)


@dataclass
class Case:
    folder: str
    label: str
    url: str
    raw: RawCollection
    work_started_by: str | None = None  # Copilot's timeline: who it worked for
    marked: bool = False  # the data carries one of the label agent's own marks


@dataclass
class Tally:
    total: int = 0
    marked: int = 0
    found: int = 0  # attributed to the label agent
    found_marked: int = 0
    certain: int = 0
    claimed: int = 0  # PRs (any folder) attributed to this agent
    false_claims: list[str] = field(default_factory=list)
    misses: Counter[str] = field(default_factory=Counter)
    operator_known: int = 0
    operator_checked: int = 0
    operator_agrees: int = 0


def _rows(path: Path) -> Iterator[dict[str, str]]:
    if not path.exists():
        return
    with path.open(encoding="utf-8", newline="") as handle:
        yield from csv.DictReader(handle)


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def _user(login: str | None) -> RawUser | None:
    if not login:
        return None
    bot = login.endswith("[bot]") or login == "Copilot"
    return RawUser(login=login, type="Bot" if bot else "User")


def load(data: Path) -> list[Case]:
    cases: list[Case] = []
    for folder, label in FOLDERS.items():
        base = data / folder
        commits: dict[str, list[dict[str, str]]] = defaultdict(list)
        for row in _rows(base / "pr_commits.csv"):
            commits[row["pr_id"]].append(row)
        assignees: dict[str, list[str]] = defaultdict(list)
        started: dict[str, str] = {}
        for row in _rows(base / "pr_timelines.csv"):
            who = row.get("assignee") or ""
            if row["event"] == "assigned" and who and who not in assignees[row["pr_id"]]:
                assignees[row["pr_id"]].append(who)
            elif row["event"] == "unassigned" and who in assignees[row["pr_id"]]:
                assignees[row["pr_id"]].remove(who)
            elif row["event"] == "copilot_work_started" and row.get("actor"):
                started.setdefault(row["pr_id"], row["actor"])
        for row in _rows(base / "prs.csv"):
            owner_repo = row["repo_url"].split("/repos/", 1)[-1]
            pr_commits = commits.get(row["id"], [])
            head = pr_commits[-1]["sha"] if pr_commits else "0" * 40
            author = _user(row["user"]) or RawUser(login="ghost")
            pull = RawPullRequest(
                number=int(row["number"]), title=row["title"] or "", body=row["body"] or "",
                state=row["state"] or "closed", merged=bool(row["merged_at"]), user=author,
                created_at=_when(row["created_at"]) or datetime(2025, 1, 1, tzinfo=UTC),
                closed_at=_when(row["closed_at"]), merged_at=_when(row["merged_at"]),
                head_sha=head, head_ref="", base_ref="main", html_url=row["html_url"],
                commits=len(pr_commits),
                assignees=[u for a in assignees.get(row["id"], []) if (u := _user(a))],
            )
            raw = RawCollection(
                repository=owner_repo, pull=pull,
                commits=[
                    RawCommit(sha=c["sha"], message=c["message"] or "",
                              author_login=c["author"] or None, committer_login=c["committer"] or None)
                    for c in pr_commits
                ],
            )
            cases.append(Case(folder, label, row["html_url"], raw, started.get(row["id"])))
    return cases


def bundle_of(raw: RawCollection) -> EvidenceBundle:
    return build_bundle(raw)


def has_own_mark(case: Case, got: AgentAttribution) -> bool:
    """Whether the data carries a mark of the label agent: judged by attributing with that agent
    alone, so a mark hidden by a stronger mark of another agent still counts as present."""
    return got.id == case.label or _alone(case) is not None


def _alone(case: Case) -> AgentAttribution | None:
    from taskeval.config import AgentRuleConfig, Settings

    others = [AgentRuleConfig(id=a, enabled=False) for a in _ALL_IDS if a != case.label]
    got = attribute(bundle_of(case.raw), Settings(agents=others))
    return got if got.id == case.label else None


_ALL_IDS: list[str] = []


def run(data: Path, show: int) -> int:
    from taskeval.agents import BUILTIN_RULES

    _ALL_IDS.extend(r.id for r in BUILTIN_RULES)
    started = time.perf_counter()
    cases = load(data)
    tallies: dict[str, Tally] = defaultdict(Tally)
    outcome: Counter[str] = Counter()
    for case in cases:
        got = attribute(bundle_of(case.raw))
        t = tallies[case.label]
        t.total += 1
        tallies[got.id].claimed += 1
        if got.id == case.label:
            t.found += 1
            t.marked += 1
            t.found_marked += 1
            t.certain += got.confidence == "certain"
            if got.operator:
                t.operator_known += 1
            if case.work_started_by:
                t.operator_checked += 1
                t.operator_agrees += got.operator == case.work_started_by
        else:
            t.misses[got.id] += 1
            tallies[got.id].false_claims.append(f"{case.url} ({case.folder}): {got.reason}")
            if has_own_mark(case, got):
                t.marked += 1
        outcome[got.id] += 1
    elapsed = time.perf_counter() - started
    print(f"# Agent attribution over {len(cases)} AIDev-pop PRs ({elapsed:.1f} s)\n")
    print("| agent | PRs | carry a mark | attributed | recall | recall where marked | "
          "precision | certain | operator found | Copilot operator = work_started actor |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label in FOLDERS.values():
        t = tallies[label]
        precision = t.found / t.claimed if t.claimed else 0.0
        op_check = (f"{t.operator_agrees}/{t.operator_checked}" if t.operator_checked else "—")
        print(f"| {label} | {t.total} | {t.marked} | {t.found} | {t.found / t.total:.1%} | "
              f"{t.found_marked / t.marked if t.marked else 0:.1%} | {precision:.1%} | "
              f"{t.certain} | {t.operator_known} | {op_check} |")
    print("\nAttributed ids over all PRs:", dict(outcome.most_common()))
    for label in FOLDERS.values():
        t = tallies[label]
        if t.misses:
            print(f"- {label} attributed elsewhere: {dict(t.misses.most_common())}")
    for agent_id, t in sorted(tallies.items()):
        if t.false_claims and agent_id not in ("human", "unknown-bot"):
            print(f"\nFalse {agent_id} attributions ({len(t.false_claims)}):")
            for line in t.false_claims[:show]:
                print(f"  {line}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the aidev-pop-v1 folder")
    parser.add_argument("--show", type=int, default=10, help="false attributions to list per agent")
    args = parser.parse_args(argv)
    if not (args.data / "Copilot" / "prs.csv").exists():
        print(f"skipped: the AIDev-pop data folder is not at {args.data} (pass --data PATH)")
        return 0
    return run(args.data, args.show)


if __name__ == "__main__":
    raise SystemExit(main())
