"""The labelled set's sample and the reading aid its labellers use (docs/labelling.md).

``sample`` draws the PRs to label from AIDev-pop, stratified by agent and end state, with a fixed
seed, so the set can be drawn again and checked; ``show`` prints one PR as a maintainer would read
it (title, body, commits, reviews, comments and the timeline, in time order, and the linked issue),
with no score of any kind: labels are given before anyone looks at scores.

    python benchmarks/label_tool.py sample > /tmp/sample.csv
    python benchmarks/label_tool.py show OWNER/REPO#N [...]
    python benchmarks/label_tool.py show --ids 3158615630,...

Nothing of the data is written into the project: only the labels file (IDs, labels, one-line
notes) is committed.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from taskeval import csvcells
from taskeval.corpus import aidev

# PRs per (agent folder, end state): closed-unmerged PRs carry the closure classes, merged ones the
# rescue classes. Each stratum is capped at what the corpus has; open PRs are not labelled.
STRATA: dict[str, dict[str, int]] = {
    "Claude_Code": {"closed": 30, "merged": 30},
    "Copilot": {"closed": 70, "merged": 50},
    "Cursor": {"closed": 28, "merged": 30},
    "Devin": {"closed": 60, "merged": 45},
    "OpenAI_Codex": {"closed": 50, "merged": 45},
}
SEED = 18  # the issue that asked for the set


def end_state(pr: aidev.PullRecord) -> str:
    return "merged" if pr.merged else ("closed" if pr.state == "closed" else "open")


def sample(corpus: aidev.Corpus, seed: int = SEED) -> list[aidev.PullRecord]:
    rng = random.Random(seed)
    out: list[aidev.PullRecord] = []
    for folder, prs in sorted(corpus.by_agent().items()):
        for state, n in STRATA.get(folder, {}).items():
            pool = sorted((p for p in prs if end_state(p) == state), key=lambda p: p.id)
            out += sorted(rng.sample(pool, min(n, len(pool))), key=lambda p: p.id)
    return out


def _short(text: str, limit: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + " … [cut]"


def show(pr: aidev.PullRecord, corpus: aidev.Corpus, limit: int = 1500) -> str:
    lines = [f"=== {pr.agent} {pr.ref} id={pr.id} state={end_state(pr)} author={pr.user}",
             f"opened {pr.created_at}  closed {pr.closed_at or '-'}  merged {pr.merged_at or '-'}",
             f"TITLE: {pr.title}", "BODY:", _short(pr.body, limit), "", "COMMITS (listing order):"]
    for c in pr.commits:
        first = (c.message or "").splitlines()[0] if c.message else ""
        lines.append(f"  {c.sha[:7]} author={c.author} committer={c.committer}: {_short(first, 160)}")
    events: list[tuple[str, str]] = []
    for r in pr.reviews:
        events.append((r.submitted_at or "", f"REVIEW {r.state} by {r.user}: {_short(r.body, limit)}"))
    for m in pr.comments or []:
        size = 300 if m.user.endswith("[bot]") else limit  # bots' boilerplate is long
        events.append((m.created_at or "", f"COMMENT by {m.user}: {_short(m.body, size)}"))
    for e in pr.timeline or []:
        if e.event in {"commented", "reviewed"}:
            continue  # shown from the comments and reviews tables
        extra = " ".join(x for x in (e.assignee and f"assignee={e.assignee}",
                                      e.label and f"label={e.label}",
                                      e.commit_id and f"commit={e.commit_id[:7]}") if x)
        events.append((e.created_at or "", f"EVENT {e.event} by {e.actor} {extra}".rstrip()))
    lines.append("ACTIVITY (time order):")
    lines += [f"  {when or '?'}  {what}" for when, what in sorted(events, key=lambda x: x[0])]
    if pr.comments is None:
        lines.append("  (this agent's folder has no conversation comments)")
    if pr.timeline is None:
        lines.append("  (this agent's folder has no timeline)")
    for number in pr.linked_issues:
        issue = corpus.issue(pr.repository, number)
        if issue is not None:
            lines += [f"LINKED ISSUE #{issue.number} by {issue.user} ({issue.state}): {issue.title}",
                      _short(issue.body, 600)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="print the stratified sample as CSV")
    s.add_argument("--seed", type=int, default=SEED)
    v = sub.add_parser("show", help="print PRs for reading")
    v.add_argument("refs", nargs="*", help="OWNER/REPO#N")
    v.add_argument("--ids", default="", help="comma-separated prs.id values")
    for p in (s, v):
        p.add_argument("--data", type=Path, default=None, help="the AIDev-pop folder")
    args = parser.parse_args(argv)
    root = args.data or aidev.default_data_dir()
    if not aidev.is_corpus_dir(root):
        print(f"label_tool: no AIDev-pop data at {root} (set TASKEVAL_CORPUS_DIR)", file=sys.stderr)
        return 2
    corpus = aidev.load(root)
    if args.command == "sample":
        out = csvcells.writer(sys.stdout, lineterminator="\n")
        out.writerow(["agent", "pr_id", "repository", "number", "state"])
        for pr in sample(corpus, args.seed):
            out.writerow([pr.agent, pr.id, pr.repository, pr.number, end_state(pr)])
        return 0
    wanted = [int(i) for i in args.ids.split(",") if i.strip()]
    by_id = {p.id: p for p in corpus.prs}
    picked = [by_id[i] for i in wanted if i in by_id]
    for ref in args.refs:
        repo, _, number = ref.partition("#")
        found = corpus.pull(repo, int(number))
        if found is not None:
            picked.append(found)
    for pr in picked:
        sys.stdout.write(show(pr, corpus))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
