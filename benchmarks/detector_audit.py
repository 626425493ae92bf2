"""Run taskeval's text detectors over every real PR description and commit message of the
AIDev-pop corpus, count hits per detector, and print samples of hits to read by hand.

    python -m benchmarks.detector_audit [--data DIR] [--show RULE ...] [--samples 30] [--json F]

Detectors (the same code the signals call):

* ``hygiene:<kind>:<rule>``: ``taskeval.signals.hygiene.detect_text_issues`` (leakage,
  boilerplate, template) on the PR title + body and on each commit message;
* ``claim:<kind>``: the claims ``outcome.claims`` reads from the PR text ("tests pass", "adds
  tests", "updates docs");
* ``task:closing-link`` / ``task:mention``: issue links (``evidence.linked_issues``);
* ``task:reference-keyword`` / ``task:reference-tracker-key``: what ``process.task_reference``
  accepts (the default ``task_id_pattern``: a closing keyword + #N, or a key like ABC-123).

Counts are PRs with at least one hit (for commit messages: commits). ``--show`` prints up to
``--samples`` hits of the named detectors (a seeded random sample, so a rerun shows the same
ones) with the surrounding text, for estimating the false-positive rate by reading.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from taskeval import evidence as ev
from taskeval.config import Settings
from taskeval.corpus.aidev import AGENT_FOLDERS, PullRecord, default_data_dir, load
from taskeval.signals.hygiene import detect_text_issues, visible_text
from taskeval.signals.outcome import _CLAIMS, _find, claim_text

Hit = tuple[str, str, str, str]  # (detector, pr ref, where, context)


def _context(text: str, needle: str, width: int = 110) -> str:
    flat = " ".join(text.split())
    at = flat.lower().find(" ".join(needle.split()).lower()[:40])
    if at < 0:
        return flat[: 2 * width]
    return flat[max(0, at - width): at + len(needle) + width]


def scan(pr: PullRecord, task_pattern: re.Pattern[str]) -> list[Hit]:
    hits: list[Hit] = []
    pr_text = f"{pr.title}\n\n{pr.body}"
    texts = [("description", pr_text)] + [(f"commit {c.sha[:7]}", c.message) for c in pr.commits]
    for where, text in texts:
        seen: set[str] = set()
        for f in detect_text_issues(text):
            name = f"hygiene:{f.kind}:{f.rule}"
            if name not in seen:
                seen.add(name)
                hits.append((name, pr.ref, where, f"line {f.line}: [{f.match}] … "
                             + _context(text, f.match)))
    claims = claim_text(pr.title, pr.body)
    for kind, pattern in _CLAIMS:
        quote = _find(claims, pattern)
        if quote is not None:
            hits.append((f"claim:{kind}", pr.ref, "description",
                         f"[{quote}] … " + _context(claims, quote)))
    links = ev.linked_issues(claims, pr.repository)
    if any(link.closing for link in links):
        first = next(link for link in links if link.closing)
        hits.append(("task:closing-link", pr.ref, "description",
                     f"[{first.keyword} {first.id}] … " + _context(claims, f"#{first.number}")))
    if any(not link.closing for link in links):
        first = next(link for link in links if not link.closing)
        hits.append(("task:mention", pr.ref, "description",
                     f"[{first.id}] … " + _context(claims, f"#{first.number}")))
    match = task_pattern.search(visible_text(pr_text))
    if match:
        kind = "keyword" if "#" in match.group(0) else "tracker-key"
        hits.append((f"task:reference-{kind}", pr.ref, "description",
                     f"[{match.group(0)}] … " + _context(visible_text(pr_text), match.group(0))))
    return hits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--show", nargs="*", default=[], metavar="DETECTOR",
                        help="print samples of these detectors' hits (prefix match)")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None, help="write the counts here")
    args = parser.parse_args(argv)
    data = args.data or default_data_dir()
    corpus = load(data)
    task_pattern = re.compile(Settings().patterns.task_id_pattern)
    per_agent: dict[str, Counter[str]] = defaultdict(Counter)
    all_hits: dict[str, list[Hit]] = defaultdict(list)
    commits = Counter(p.agent for p in corpus.prs for _ in p.commits)
    for pr in corpus.prs:
        seen_pr: set[str] = set()
        for hit in scan(pr, task_pattern):
            detector, _, where, _ = hit
            all_hits[detector].append(hit)
            scope = "commits" if where.startswith("commit") else "prs"
            key = f"{detector}@{scope}"
            if scope == "commits" or key not in seen_pr:
                seen_pr.add(key)
                per_agent[pr.agent][key] += 1
    totals: Counter[str] = Counter()
    for counts in per_agent.values():
        totals.update(counts)
    prs = Counter(p.agent for p in corpus.prs)
    print(f"{len(corpus)} PRs, {sum(commits.values())} commit messages from {data}\n")
    header = "| detector (hits in) | " + " | ".join(AGENT_FOLDERS) + " | all |"
    print(header)
    print("|---|" + "---:|" * (len(AGENT_FOLDERS) + 1))
    for key in sorted(totals):
        row = [str(per_agent[a][key]) for a in AGENT_FOLDERS]
        print(f"| {key} | " + " | ".join(row) + f" | {totals[key]} |")
    print("| (PRs / commits) | " + " | ".join(f"{prs[a]} / {commits[a]}" for a in AGENT_FOLDERS)
          + f" | {len(corpus)} / {sum(commits.values())} |")
    rng = random.Random(args.seed)
    for detector in sorted(all_hits):
        if not any(detector.startswith(prefix) for prefix in args.show):
            continue
        hits = all_hits[detector]
        chosen = rng.sample(hits, min(args.samples, len(hits)))
        print(f"\n## {detector}: {len(chosen)} of {len(hits)} hits")
        for _, ref, where, context in chosen:
            print(f"- {ref} ({where}): {context}")
    if args.json:
        out: dict[str, Any] = {"prs": dict(prs), "commits": dict(commits),
                               "hits": {a: dict(per_agent[a]) for a in AGENT_FOLDERS}}
        args.json.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
