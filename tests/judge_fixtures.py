"""Evidence bundles for judge tests, built directly from the models (no GitHub, no builder).

Items follow docs/internals.md's ID format. Every piece of untrusted text (PR body, commit
messages, review and comment bodies, check output, agent logs) can be set, so injection tests can
plant text anywhere a PR author or tool could.
"""

from __future__ import annotations

import hashlib

from taskeval.models import (
    GROUP_CAPS,
    GROUP_ORDER,
    BundleFacts,
    CommitEntry,
    EvidenceBundle,
    EvidenceGroup,
    EvidenceItem,
    FileEntry,
    PullFacts,
)

MARKER = "… [truncated]"
NUMBER = 482
REPO = "octo-org/widgets"


def bounded(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - len(MARKER)] + MARKER


def sha(n: int) -> str:
    return hashlib.sha1(f"commit-{n}".encode()).hexdigest()


def _group(source: str, items: list[EvidenceItem], total: int | None = None) -> EvidenceGroup:
    cap = GROUP_CAPS[source]  # type: ignore[index]
    total = max(len(items), total or 0)
    kept = items[:cap]
    return EvidenceGroup(
        source=source, items=kept, total=total, omitted=total - len(kept)  # type: ignore[arg-type]
    )


def make_bundle(
    *,
    title: str = "Add retry to the widget fetcher",
    body: str = "Fixes #12. Adds exponential backoff to the fetcher and tests for it.",
    commit_messages: list[str] | None = None,
    total_commits: int | None = None,
    review_body: str = "Looks good, thanks for the tests.",
    comment_body: str = "CI is green on the latest push.",
    check_output: str = "42 passed in 3.1s",
    log_text: str = "collected 42 items\n42 passed",
    audit_text: str = "re-run of job test requested by maintainer",
    files: int = 3,
    per_group: int = 1,
) -> EvidenceBundle:
    """A merged PR with one item per group by default; ``per_group`` fills the capped groups."""
    messages = commit_messages or ["feat: add retry with backoff", "test: cover retry paths"]
    head = sha(len(messages) - 1)
    commits = [
        CommitEntry(sha=sha(n), subject=bounded(m.splitlines()[0] if m else "", 160),
                    message_excerpt=bounded(m), author_login="agent-bot[bot]",
                    author_is_bot=True, committed_at=f"2026-01-01T{n % 24:02d}:00:00Z")
        for n, m in enumerate(messages)
    ]
    pull = PullFacts(
        number=NUMBER, title=title, body=bounded(body, 4000), author="agent-bot[bot]",
        author_is_bot=True, state="closed", merged=True, merged_by="maintainer",
        created_at="2026-01-01T00:00:00Z", merged_at="2026-01-02T00:00:00Z", head_sha=head,
        head_ref="feature/retry", base_ref="main", additions=120, deletions=8,
        changed_files=files, commit_count=total_commits or len(messages),
        url=f"https://github.com/{REPO}/pull/{NUMBER}",
    )
    file_entries = [
        FileEntry(path=p, status="modified", additions=40, deletions=2)
        for p in (["src/fetch.py", "tests/test_fetch.py", "docs/usage.md"] * files)[:files]
    ]

    groups: dict[str, list[EvidenceItem]] = {g: [] for g in GROUP_ORDER}
    groups["taskMetadata"].append(EvidenceItem(
        id=f"pr:{NUMBER}", kind="pull_request", label=f"PR #{NUMBER}: {title}",
        excerpt=bounded(body), url=pull.url, facts={"merged": True, "author": pull.author},
    ))
    # Newest commits are the ones kept under the cap, as GitHub lists oldest first.
    for c in commits[-GROUP_CAPS["commits"]:]:
        groups["commits"].append(EvidenceItem(
            id=f"commit:{c.sha[:7]}", kind="commit", label=c.subject,
            excerpt=c.message_excerpt or None, facts={"sha": c.sha, "author": c.author_login},
        ))
    for n in range(per_group):
        groups["workflow"].append(EvidenceItem(
            id=f"check:ci/test#{5000 + n}" if n else "check:ci/test", kind="check_run",
            label="ci/test: completed / success", excerpt=bounded(check_output),
            facts={"status": "completed", "conclusion": "success", "headSha": head},
        ))
        groups["reviews"].append(EvidenceItem(
            id=f"review:{7000 + n}", kind="review", label="maintainer: APPROVED",
            excerpt=bounded(review_body), facts={"state": "APPROVED"},
        ))
        groups["documents"].append(EvidenceItem(
            id=f"file:docs/usage{n}.md", kind="file", label="docs/usage.md (modified, +10 -1)",
            facts={"status": "modified"},
        ))
        groups["taskActivity"].append(EvidenceItem(
            id=f"comment:{8000 + n}", kind="issue_comment", label="maintainer commented",
            excerpt=bounded(comment_body),
        ))
        groups["agentLogs"].append(EvidenceItem(
            id=f"log:check-{5000 + n}", kind="check_output", label="ci/test output",
            excerpt=bounded(log_text),
        ))
        groups["runAudit"].append(EvidenceItem(
            id=f"audit:rerun-{9000 + n}", kind="rerun", label="workflow re-run",
            excerpt=bounded(audit_text), facts={"attempt": 2},
        ))
    totals = {"commits": total_commits or len(messages)}
    return EvidenceBundle(
        repository=REPO, pull_request=NUMBER, head_sha=head,
        groups=[_group(g, groups[g], totals.get(g)) for g in GROUP_ORDER],
        facts=BundleFacts(pull=pull, commits=commits[-250:], files=file_entries),
    )
