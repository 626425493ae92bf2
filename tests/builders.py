"""Tiny builders of realistic :class:`RawCollection` objects (what collection fills from GitHub's
REST answers) and the bundles made from them.

Every scenario starts from :func:`merged_agent_pr`: a Copilot-authored PR on ``acme/widgets`` with
three conventional commits, source + test + docs changes, green CI at head, and one human
approval. Scenarios change only what they are about, so a test that compares two of them
measures exactly that difference.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from taskeval.evidence import build_bundle
from taskeval.models import EvidenceBundle
from taskeval.raw import (
    CollectionIssue,
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

REPO = "acme/widgets"
BASE = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NUMBER = 482
AGENT = RawUser(login="Copilot", type="Bot")
ALICE = RawUser(login="alice")
BOB = RawUser(login="bob")
RENOVATE = RawUser(login="renovate[bot]", type="Bot")

GREEN_BODY = """## Summary
Adds retry with exponential backoff to the widget fetcher so transient 502s no longer fail a sync.

## Changes
- `fetcher.py`: wrap the HTTP call in a bounded retry loop
- tests: added unit tests for the retry schedule
- docs: updated the README troubleshooting section

Fixes #12. All tests pass.
"""


def sha(seed: str) -> str:
    """A stable 40-hex SHA for a readable seed."""
    return hashlib.sha1(seed.encode()).hexdigest()


def at(minutes: float) -> datetime:
    return BASE + timedelta(minutes=minutes)


def commit(
    seed: str,
    message: str,
    minutes: float,
    *,
    author: RawUser | None = AGENT,
    parents: int = 1,
    name: str | None = None,
    email: str | None = None,
    committer: tuple[str | None, str, str] | None = None,
) -> RawCommit:
    """A commit; ``author=None``: GitHub links its author to no account, and only the git
    identity (``name``, ``email``; ``committer`` as (login, name, e-mail), by default the author
    committing locally) says who wrote it."""
    if committer is None:
        committer = ("web-flow", "GitHub", "noreply@github.com") if author else (
            None, name or "Unlinked Person", email or "unlinked@example.com")
    return RawCommit(
        sha=sha(seed),
        message=message,
        author_login=author.login if author else None,
        author_type=author.type if author else None,
        author_name=name or (author.login if author else "Unlinked Person"),
        author_email=email or ("unlinked@example.com" if author is None else None),
        authored_at=at(minutes),
        committer_login=committer[0],
        committer_name=committer[1],
        committer_email=committer[2],
        committed_at=at(minutes),
        verified=True,
        parents=[sha(f"{seed}-parent-{n}") for n in range(parents)],
        html_url=f"https://github.com/{REPO}/commit/{sha(seed)}",
    )


def check(
    run_id: int,
    name: str,
    head: str,
    conclusion: str | None = "success",
    *,
    start: float = 0,
    minutes: float = 4,
    status: str = "completed",
    output: str | None = None,
) -> RawCheckRun:
    done = status == "completed"
    return RawCheckRun(
        id=run_id,
        name=name,
        status=status,
        conclusion=conclusion if done else None,
        head_sha=head,
        started_at=at(start),
        completed_at=at(start + minutes) if done else None,
        app_slug="github-actions",
        output_title=f"{name} {conclusion}" if output else None,
        output_summary=output,
        html_url=f"https://github.com/{REPO}/runs/{run_id}",
    )


def run(
    run_id: int,
    head: str,
    conclusion: str | None = "success",
    *,
    start: float = 0,
    minutes: float = 5,
    attempt: int = 1,
    name: str = "CI",
    workflow_id: int = 77,
) -> RawWorkflowRun:
    return RawWorkflowRun(
        id=run_id,
        name=name,
        workflow_id=workflow_id,
        head_sha=head,
        head_branch="copilot/retry-backoff",
        event="pull_request",
        status="completed" if conclusion else "in_progress",
        conclusion=conclusion,
        run_attempt=attempt,
        run_number=run_id % 1000,
        created_at=at(start),
        run_started_at=at(start),
        updated_at=at(start + minutes),
        actor="Copilot",
        triggering_actor="Copilot",
        html_url=f"https://github.com/{REPO}/actions/runs/{run_id}",
    )


def review(
    review_id: int, user: RawUser | None, state: str, minutes: float, *, body: str = "",
    commit_id: str | None = None,
) -> RawReview:
    return RawReview(
        id=review_id, user=user, state=state, body=body, submitted_at=at(minutes),
        commit_id=commit_id, author_association="MEMBER",
        html_url=f"https://github.com/{REPO}/pull/{NUMBER}#pullrequestreview-{review_id}",
    )


def review_comment(comment_id: int, user: RawUser, body: str, minutes: float, *,
                   path: str = "src/widgets/fetcher.py",
                   reply_to: int | None = None) -> RawReviewComment:
    return RawReviewComment(
        id=comment_id, user=user, body=body, path=path, created_at=at(minutes),
        in_reply_to_id=reply_to,
        html_url=f"https://github.com/{REPO}/pull/{NUMBER}#discussion_r{comment_id}",
    )


def issue_comment(comment_id: int, user: RawUser, body: str, minutes: float) -> RawIssueComment:
    return RawIssueComment(
        id=comment_id, user=user, body=body, created_at=at(minutes), author_association="MEMBER",
        html_url=f"https://github.com/{REPO}/pull/{NUMBER}#issuecomment-{comment_id}",
    )


def file(path: str, additions: int, deletions: int = 0, status: str = "modified") -> RawFile:
    return RawFile(filename=path, status=status, additions=additions, deletions=deletions,
                   changes=additions + deletions)


DEFAULT_COMMITS = (
    ("c1", "feat(fetcher): retry transient failures\n\nTask-Id: WID-12", 10),
    ("c2", "test(fetcher): cover the backoff schedule", 40),
    ("c3", "docs: explain retries in the README", 60),
)
HEAD = sha("c3")


def default_commits() -> list[RawCommit]:
    return [commit(seed, msg, minutes) for seed, msg, minutes in DEFAULT_COMMITS]


def default_files() -> list[RawFile]:
    return [
        file("src/widgets/fetcher.py", 60, 12),
        file("tests/test_fetcher.py", 48),
        file("README.md", 9, 2),
    ]


def green_checks(head: str = HEAD, start: float = 62) -> list[RawCheckRun]:
    return [
        check(9001, "lint", head, start=start),
        check(9002, "test (3.11)", head, start=start),
        check(9003, "test (3.12)", head, start=start),
    ]


def merged_agent_pr(
    *,
    body: str = GREEN_BODY,
    title: str = "feat(fetcher): retry transient 502s with backoff",
    commits: list[RawCommit] | None = None,
    files: list[RawFile] | None = None,
    check_runs: list[RawCheckRun] | None = None,
    workflow_runs: list[RawWorkflowRun] | None = None,
    reviews: list[RawReview] | None = None,
    review_comments: list[RawReviewComment] | None = None,
    issue_comments: list[RawIssueComment] | None = None,
    issues: list[CollectionIssue] | None = None,
    commit_count: int | None = None,
    **pull: Any,
) -> RawCollection:
    """The baseline: a merged Copilot PR with green CI and one human approval at the head."""
    commits = default_commits() if commits is None else commits
    head = commits[-1].sha if commits else HEAD
    files = default_files() if files is None else files
    fields: dict[str, Any] = {
        "number": NUMBER,
        "title": title,
        "body": body,
        "state": "closed",
        "merged": True,
        "user": AGENT,
        "author_association": "NONE",
        "labels": ["enhancement"],
        "created_at": at(0),
        "closed_at": at(120),
        "merged_at": at(120),
        "merged_by": ALICE,
        "merge_commit_sha": sha("merge"),
        "head_sha": head,
        "head_ref": "copilot/retry-backoff",
        "head_repo": REPO,
        "base_ref": "main",
        "additions": sum(f.additions for f in files),
        "deletions": sum(f.deletions for f in files),
        "changed_files": len(files),
        "commits": len(commits) if commit_count is None else commit_count,
        "html_url": f"https://github.com/{REPO}/pull/{NUMBER}",
    }
    fields.update(pull)
    if not fields["merged"]:
        fields["merged_at"] = None
        fields["merged_by"] = None
    return RawCollection(
        repository=REPO,
        default_branch="main",
        pull=RawPullRequest(**fields),
        commits=commits,
        reviews=[review(7001, ALICE, "APPROVED", 90, body="Looks good.", commit_id=head)]
        if reviews is None else reviews,
        review_comments=review_comments or [],
        issue_comments=issue_comments or [],
        files=files,
        check_runs=green_checks(head) if check_runs is None else check_runs,
        workflow_runs=[run(5001, head, start=62)] if workflow_runs is None else workflow_runs,
        issues=issues or [],
    )


# --------------------------------------------------------------------------- scenarios


def red_ci_at_merge(body: str = GREEN_BODY) -> RawCollection:
    """The head's test job failed before the merge, and the PR was merged anyway."""
    checks = green_checks()
    checks[1] = check(9002, "test (3.11)", HEAD, "failure", start=62,
                      output="FAILED tests/test_fetcher.py::test_backoff - AssertionError")
    return merged_agent_pr(body=body, check_runs=checks,
                           workflow_runs=[run(5001, HEAD, "failure", start=62)])


def no_ci() -> RawCollection:
    return merged_agent_pr(check_runs=[], workflow_runs=[])


def fail_then_fix() -> RawCollection:
    """The second commit broke the tests; the third fixed them."""
    checks = [
        check(8001, "test (3.11)", sha("c1"), start=12),
        check(8002, "test (3.11)", sha("c2"), "failure", start=42, output="1 failed, 30 passed"),
        check(9002, "test (3.11)", HEAD, start=62),
    ]
    runs = [run(5000, sha("c2"), "failure", start=42), run(5001, HEAD, start=62)]
    return merged_agent_pr(check_runs=checks, workflow_runs=runs)


def flaky_rerun() -> RawCollection:
    """At the head, the test job failed, was re-run on the same commit and passed."""
    checks = [
        check(9001, "lint", HEAD, start=62),
        check(9002, "test (3.11)", HEAD, "failure", start=62, output="timeout talking to redis"),
        check(9005, "test (3.11)", HEAD, start=80),
    ]
    return merged_agent_pr(check_runs=checks, workflow_runs=[run(5001, HEAD, start=80, attempt=2)])


def many_commits(listed: int = 250, github_count: int = 300) -> RawCollection:
    """A long-running PR: GitHub counts ``github_count`` commits but lists only 250."""
    commits = [commit(f"m{n}", f"chore: step {n}", n) for n in range(listed)]
    commits[100] = commit("m100", 'Revert "chore: step 99"\n\nThis reverts commit '
                          f"{sha('m99')}.", 100)
    commits[150] = commit("m150", "Merge branch 'main' into copilot/retry-backoff", 150,
                          parents=2, author=ALICE)
    return merged_agent_pr(commits=commits, workflow_runs=[], commit_count=github_count,
                           check_runs=green_checks(sha(f"m{listed - 1}"), 300))


def unresolved_change_request() -> RawCollection:
    """bob asked for changes; alice approved; the PR merged without bob's sign-off."""
    return merged_agent_pr(reviews=[
        review(7000, BOB, "CHANGES_REQUESTED", 50, body="Please cap the retry count.",
               commit_id=sha("c2")),
        review(7001, ALICE, "APPROVED", 90, commit_id=HEAD),
    ])


LEAKY_BODY = """As an AI language model, I have implemented the retry logic you asked for.

<|im_start|>system
You are a helpful coding assistant.<|im_end|>

I hope this helps! Let me know if you need anything else.
"""


def leakage_in_body() -> RawCollection:
    return merged_agent_pr(body=LEAKY_BODY)


TEMPLATE_BODY = """## Description
<!-- Describe your changes in detail -->

## Related issue
Fixes # (issue)

## Checklist
- [ ] I have added tests
- [ ] I have updated the documentation
"""


def unfilled_template() -> RawCollection:
    return merged_agent_pr(body=TEMPLATE_BODY)


def checks_unreadable() -> RawCollection:
    return merged_agent_pr(
        check_runs=[], workflow_runs=[],
        issues=[
            CollectionIssue(resource="check_runs", status=403,
                            message="Resource not accessible by integration (needs checks: read)"),
            CollectionIssue(resource="workflow_runs", status=403,
                            message="Resource not accessible by integration (needs actions: read)"),
        ],
    )


def bundle(raw: RawCollection) -> EvidenceBundle:
    return build_bundle(raw)
