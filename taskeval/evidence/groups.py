"""The eight evidence groups of a bundle, built from a normalised :class:`RawCollection`.

Which GitHub data goes where (IDs as in docs/internals.md; caps from the contract):

``taskMetadata``
    ``pr:<n>``: the PR itself (title, body excerpt, author, labels, merge facts, size, default
    branch), then ``issue:<n>`` / ``issue:<owner>/<repo>#<n>`` for each issue the title or body
    links (closing keywords first, then plain mentions, by number).
``commits`` (cap 20)
    ``commit:<sha7>`` (lengthened only if two SHAs share 7 characters). Kept when capped: the
    first and last commit, then every commit with failing CI, every revert and merge, then
    fixup/squash commits and commits by someone other than the PR author, then the newest of the
    rest. Shown in PR order; ``total`` is GitHub's commit count, which can exceed the 250 it lists.
``workflow``
    ``check:<name>`` (``#<id>`` added when two check runs share a name) and ``run:<id>``. Kept and
    shown in this order: failing checks at head, unfinished/cancelled checks at head, failing or
    cancelled workflow runs at head, passing checks at head, failures at earlier commits (the
    fail-then-fix story), passing runs at head, the rest.
``reviews``
    ``review:<id>`` and ``review-comment:<id>``. Kept: decisive reviews (approved, changes
    requested, dismissed), reviews with a body, top-level review comments, replies, empty
    "commented" reviews. Shown chronologically.
``documents``
    ``file:<path>``: changed files. Kept: the biggest file of each kind (source, test, docs,
    generated), then the biggest of the rest. Shown by kind, biggest first; ``total`` is GitHub's
    changed-file count (it lists at most 3,000).
``taskActivity``
    ``timeline:<n>`` (opened, first review, first approval, merge, hours between them, commits
    after opening, comment counts), then ``comment:<id>`` issue comments: people before bots,
    shown chronologically. taskeval's own comment (the marker, not written by the PR author) is
    left out everywhere, so re-evaluating a PR does not change its evidence.
``agentLogs``
    ``log:check-<id>``: bounded output of failing check runs, head first; ``log:comment-<id>`` /
    ``log:review-comment-<id>``: agent session notes (comments by a bot account or by the PR
    author that carry agent session markers). Empty when there are none.
``runAudit``
    ``audit:unavailable-<resource>`` for each part collection could not read, ``audit:ci-<n>``
    (run counts, failures, cancellations, re-runs, CI wall time), ``audit:flaky-check-<id>`` /
    ``audit:flaky-run-<id>`` (same commit failed, then passed), ``audit:rerun-<id>`` (attempt > 1),
    ``audit:cancelled-<id>``.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final, TypeVar

from taskeval.contract import COMMENT_MARKER
from taskeval.evidence.vocabulary import (
    DEFAULT_PATTERNS,
    EVENTS_WITHOUT_NODE_ID,
    SUBJECT_LIMIT,
    IssueLink,
    Outcome,
    agent_run_event,
    check_ids,
    ci_state,
    commit_ids,
    event_id,
    excerpt,
    file_kind,
    hours_between,
    is_fixup,
    is_revert,
    iso,
    linked_issues,
    message_body,
    outcome_of,
    parse_trailers,
    pr_id,
    pr_text,
    reverted_sha,
    seconds_between,
    subject_of,
)
from taskeval.models import (
    GROUP_CAPS,
    GROUP_ORDER,
    EvidenceGroup,
    EvidenceItem,
    GroupName,
    Scalar,
)
from taskeval.raw import (
    RawCheckRun,
    RawCollection,
    RawCommit,
    RawFile,
    RawIssueComment,
    RawReviewComment,
    RawTimelineEvent,
    RawUser,
    RawWorkflowRun,
)

# taskeval's own PR comment starts with this marker; such comments are our output, not evidence.
OWN_COMMENT_MARKER: Final = COMMENT_MARKER
_SESSION_NOTE = re.compile(
    r"(?i)app\.devin\.ai/sessions|chatgpt\.com/codex|/copilot/|copilot coding agent|"
    r"(?:started|finished) work on behalf of|agent session|session (?:log|link|id|summary)|"
    r"\bsession:|trajector(?:y|ies)|tool calls?\b|run log"
)


# --------------------------------------------------------------------------- raw helpers


def is_bot(user: RawUser | None) -> bool:
    return bool(user and user.is_bot)


def login_of(user: RawUser | None) -> str | None:
    return user.login if user else None


def _own_comment(comment: RawIssueComment, pr_author: str) -> bool:
    """taskeval's earlier report on this PR. Anyone can type the marker, so a comment by the PR
    author is never taken for one: an author cannot hide its own text from the evidence."""
    return comment.body.lstrip().startswith(OWN_COMMENT_MARKER) and login_of(comment.user) != pr_author


# --------------------------------------------------------------------------- CI per commit


def _check_time(c: RawCheckRun) -> tuple[str, int]:
    return (iso(c.started_at or c.completed_at) or "", c.id)


def _run_time(r: RawWorkflowRun) -> tuple[str, int, int]:
    return (iso(r.run_started_at or r.created_at) or "", r.run_attempt, r.id)


def _latest_outcomes(raw: RawCollection) -> dict[str, list[Outcome]]:
    """Per SHA, the latest outcome of each check name (or of each workflow when no checks)."""
    checks: dict[str, dict[str, RawCheckRun]] = defaultdict(dict)
    for c in sorted(raw.check_runs, key=_check_time):
        checks[c.head_sha][c.name] = c
    runs: dict[str, dict[str, RawWorkflowRun]] = defaultdict(dict)
    for r in sorted(raw.workflow_runs, key=_run_time):
        runs[r.head_sha][str(r.workflow_id or r.name)] = r
    out: dict[str, list[Outcome]] = {}
    for sha in set(checks) | set(runs):
        if checks.get(sha):
            out[sha] = [outcome_of(c.status, c.conclusion) for c in checks[sha].values()]
        else:
            out[sha] = [outcome_of(r.status, r.conclusion) for r in runs[sha].values()]
    return out


# --------------------------------------------------------------------------- groups


@dataclass
class _Candidate:
    rank: tuple[object, ...]  # lower is kept first when the group is capped
    show: tuple[object, ...]  # display order of the kept items
    item: EvidenceItem


def _group(
    source: GroupName, candidates: list[_Candidate], total: int | None = None
) -> EvidenceGroup:
    cap = GROUP_CAPS[source]
    kept = sorted(candidates, key=lambda c: c.rank)[:cap]
    kept.sort(key=lambda c: c.show)
    count = max(total if total is not None else 0, len(candidates))
    return EvidenceGroup(
        source=source,
        items=[c.item for c in kept],
        total=count,
        omitted=count - len(kept),
    )


def _facts(**values: Scalar) -> dict[str, Scalar]:
    return {k: v for k, v in values.items() if v is not None}


def _task_metadata(raw: RawCollection, links: list[IssueLink]) -> EvidenceGroup:
    pull = raw.pull
    closing = [f"{i.repo or ''}#{i.number}" for i in links if i.closing]
    pr_item = EvidenceItem(
        id=pr_id(pull.number),
        kind="pull_request",
        label=subject_of(pull.title) or f"PR #{pull.number}",
        excerpt=excerpt(pull.body) or None,
        url=pull.html_url,
        facts=_facts(
            number=pull.number,
            state=pull.state,
            draft=pull.draft,
            merged=pull.merged,
            author=pull.user.login,
            authorIsBot=pull.user.is_bot,
            authorAssociation=pull.author_association,
            labels=", ".join(sorted(pull.labels)) or None,
            createdAt=iso(pull.created_at),
            mergedAt=iso(pull.merged_at),
            closedAt=iso(pull.closed_at),
            mergedBy=login_of(pull.merged_by),
            headSha=pull.head_sha,
            headRef=excerpt(pull.head_ref, SUBJECT_LIMIT),
            baseRef=excerpt(pull.base_ref, SUBJECT_LIMIT),
            defaultBranch=raw.default_branch,
            mergeCommitSha=pull.merge_commit_sha,
            isFork=is_fork(raw),
            additions=pull.additions,
            deletions=pull.deletions,
            changedFiles=pull.changed_files,
            commitCount=pull.commits,
            commitsListed=len(raw.commits),
            hoursToMerge=hours_between(pull.created_at, pull.merged_at),
            closingIssues=", ".join(closing) or None,
            viaApp=pull.performed_via_github_app,
            assignees=", ".join(u.login for u in pull.assignees) or None,
            requestedReviewers=", ".join(u.login for u in pull.requested_reviewers) or None,
        ),
    )
    candidates = [_Candidate((0,), (0,), pr_item)]
    base = raw.html_base.rstrip("/")
    read = {i.number: i for i in raw.linked_issues}
    for pos, link in enumerate(links, start=1):
        repo = link.repo or raw.repository
        verb = link.keyword or "mentions"
        # The labels of an issue collection read (``RawCollection.linked_issues``), only then.
        got = read.get(link.number) if link.repo is None else None
        candidates.append(
            _Candidate(
                (1, pos), (1, pos),
                EvidenceItem(
                    id=link.id,
                    kind="issue",
                    label=f"{verb} {repo}#{link.number}",
                    url=f"{base}/{repo}/issues/{link.number}",
                    facts=_facts(number=link.number, repository=repo, keyword=link.keyword,
                                 closing=link.closing,
                                 labels=(", ".join(sorted(got.labels)) or None) if got else None,
                                 isPullRequest=True if got and got.is_pull else None),
                ),
            )
        )
    return _group("taskMetadata", candidates)


def is_fork(raw: RawCollection) -> bool:
    head = raw.pull.head_repo
    return head is not None and head.lower() != raw.repository.lower()


def _commit_flags(commits: list[RawCommit], author: str) -> list[dict[str, bool]]:
    shas = {c.sha for c in commits}
    flags = []
    for c in commits:
        subject = subject_of(c.message)
        target = reverted_sha(c.message)
        flags.append({
            "revert": is_revert(subject) or target is not None,
            "revertsPrCommit": target is not None and any(s.startswith(target) for s in shas),
            "fixup": is_fixup(subject),
            "merge": len(c.parents) > 1,
            "otherAuthor": c.author_login is not None and c.author_login != author,
        })
    return flags


def _commits(raw: RawCollection, ci: dict[str, list[Outcome]]) -> EvidenceGroup:
    ids = commit_ids(c.sha for c in raw.commits)
    flags = _commit_flags(raw.commits, raw.pull.user.login)
    last = len(raw.commits) - 1
    candidates = []
    for pos, (c, f) in enumerate(zip(raw.commits, flags, strict=True)):
        state = ci_state(ci.get(c.sha, []))
        if pos in (0, last):
            tier = 0
        elif state == "fail" or f["revert"] or f["merge"]:
            tier = 1
        elif f["fixup"] or f["otherAuthor"]:
            tier = 2
        else:
            tier = 3
        trailers = parse_trailers(c.message)
        item = EvidenceItem(
            id=ids[c.sha],
            kind="commit",
            label=subject_of(c.message) or "(no subject)",
            excerpt=excerpt(message_body(c.message)) or None,
            url=c.html_url,
            facts=_facts(
                sha=c.sha,
                position=pos + 1,
                author=c.author_login or c.author_name,
                authorIsBot=c.author_type == "Bot" or (c.author_login or "").endswith("[bot]"),
                committer=c.committer_login or c.committer_name,
                authoredAt=iso(c.authored_at),
                committedAt=iso(c.committed_at),
                verified=c.verified,
                parents=len(c.parents),
                isMerge=f["merge"],
                isRevert=f["revert"],
                revertsPrCommit=f["revertsPrCommit"] or None,
                isFixup=f["fixup"],
                ciState=state,
                trailers=excerpt("; ".join(f"{k}: {v}" for k, v in trailers.items())) or None,
            ),
        )
        # Tier 3 keeps the newest first: the commits closest to what shipped.
        candidates.append(_Candidate((tier, -pos if tier == 3 else pos), (pos,), item))
    return _group("commits", candidates, total=max(raw.pull.commits, len(raw.commits)))


def _check_item(c: RawCheckRun, cid: str, head: str) -> EvidenceItem:
    state = outcome_of(c.status, c.conclusion)
    return EvidenceItem(
        id=cid,
        kind="check_run",
        label=excerpt(f"{c.name}: {c.conclusion or c.status}", SUBJECT_LIMIT),
        excerpt=excerpt(c.output_title) or None,
        url=c.html_url,
        facts=_facts(
            checkRunId=c.id, name=excerpt(c.name, SUBJECT_LIMIT), sha=c.head_sha, status=c.status,
            conclusion=c.conclusion, outcome=state, app=c.app_slug,
            startedAt=iso(c.started_at), completedAt=iso(c.completed_at),
            durationSeconds=seconds_between(c.started_at, c.completed_at), atHead=c.head_sha == head,
        ),
    )


def _run_item(r: RawWorkflowRun, head: str) -> EvidenceItem:
    state = outcome_of(r.status, r.conclusion)
    name = r.name or f"workflow {r.workflow_id}"
    number = f" #{r.run_number}" if r.run_number is not None else ""
    end = r.updated_at if r.status == "completed" else None
    return EvidenceItem(
        id=f"run:{r.id}",
        kind="workflow_run",
        label=excerpt(f"{name}{number} (attempt {r.run_attempt}): {r.conclusion or r.status}",
                      SUBJECT_LIMIT),
        url=r.html_url,
        facts=_facts(
            runId=r.id, name=excerpt(name, SUBJECT_LIMIT), workflowId=r.workflow_id, sha=r.head_sha,
            event=r.event, status=r.status, conclusion=r.conclusion, outcome=state,
            attempt=r.run_attempt, runNumber=r.run_number, createdAt=iso(r.created_at),
            startedAt=iso(r.run_started_at), updatedAt=iso(r.updated_at),
            durationSeconds=seconds_between(r.run_started_at or r.created_at, end),
            actor=r.actor, triggeringActor=r.triggering_actor, atHead=r.head_sha == head,
        ),
    )


def _workflow(raw: RawCollection, cids: dict[int, str]) -> EvidenceGroup:
    head = raw.pull.head_sha
    candidates = []
    for c in raw.check_runs:
        state = outcome_of(c.status, c.conclusion)
        at_head = c.head_sha == head
        if at_head:
            tier = {"fail": 0, "pending": 1, "cancelled": 1}.get(state, 3)
        else:
            tier = 4 if state == "fail" else 6
        key: tuple[object, ...] = (tier, 0, c.name, c.id)
        candidates.append(_Candidate(key, key, _check_item(c, cids[c.id], head)))
    for r in raw.workflow_runs:
        state = outcome_of(r.status, r.conclusion)
        if r.head_sha == head:
            tier = 2 if state in ("fail", "cancelled", "pending") else 5
        else:
            tier = 4 if state == "fail" else 6
        key = (tier, 1, iso(r.created_at) or "", str(r.id).zfill(20))
        candidates.append(_Candidate(key, key, _run_item(r, head)))
    return _group("workflow", candidates)


def _reviews(raw: RawCollection) -> EvidenceGroup:
    candidates = []
    for r in raw.reviews:
        decisive = r.state in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED")
        tier = 0 if decisive else (1 if r.body.strip() else 4)
        who = login_of(r.user) or "ghost"
        when = iso(r.submitted_at) or ""
        item = EvidenceItem(
            id=f"review:{r.id}",
            kind="review",
            label=f"{r.state} by {who}",
            excerpt=excerpt(r.body) or None,
            url=r.html_url,
            facts=_facts(
                reviewId=r.id, state=r.state, author=login_of(r.user), authorIsBot=is_bot(r.user),
                authorAssociation=r.author_association, submittedAt=iso(r.submitted_at),
                commitId=r.commit_id,
                atHead=r.commit_id == raw.pull.head_sha if r.commit_id else None,
            ),
        )
        candidates.append(_Candidate((tier, when, r.id), (when, 0, r.id), item))
    for rc in raw.review_comments:
        tier = 2 if rc.in_reply_to_id is None else 3
        who = login_of(rc.user) or "ghost"
        when = iso(rc.created_at) or ""
        where = f" on {rc.path}" if rc.path else ""
        item = EvidenceItem(
            id=f"review-comment:{rc.id}",
            kind="review_comment",
            label=excerpt(f"comment by {who}{where}", SUBJECT_LIMIT),
            excerpt=excerpt(rc.body) or None,
            url=rc.html_url,
            facts=_facts(
                commentId=rc.id, author=login_of(rc.user), authorIsBot=is_bot(rc.user),
                path=rc.path, createdAt=iso(rc.created_at), inReplyTo=rc.in_reply_to_id,
            ),
        )
        candidates.append(_Candidate((tier, when, rc.id), (when, 1, rc.id), item))
    return _group("reviews", candidates)


_KIND_ORDER = ("source", "test", "docs", "generated")


def _documents(raw: RawCollection) -> EvidenceGroup:
    files_url = f"{raw.pull.html_url}/files"
    kinds = {f.filename: file_kind(f.filename) for f in raw.files}
    biggest: dict[str, RawFile] = {}
    for f in sorted(raw.files, key=lambda f: (-_size(f), f.filename)):
        biggest.setdefault(kinds[f.filename], f)
    candidates = []
    for f in raw.files:
        kind = kinds[f.filename]
        first = biggest[kind] is f
        item = EvidenceItem(
            id=f"file:{f.filename}",
            kind="file",
            # GitHub anchors each file of a PR diff at "diff-" + sha256 of its path.
            url=f"{files_url}#diff-{hashlib.sha256(f.filename.encode()).hexdigest()}",
            label=excerpt(f"{f.filename} ({f.status}, +{f.additions}/-{f.deletions})",
                          SUBJECT_LIMIT),
            facts=_facts(
                path=f.filename, status=f.status, additions=f.additions, deletions=f.deletions,
                changes=_size(f), previousPath=f.previous_filename, kind=kind,
                publicSurface=any(fnmatchcase(f.filename, g)
                                  for g in DEFAULT_PATTERNS.public_surface_paths),
            ),
        )
        candidates.append(_Candidate(
            (0 if first else 1, -_size(f), f.filename),
            (_KIND_ORDER.index(kind), -_size(f), f.filename),
            item,
        ))
    return _group("documents", candidates, total=max(raw.pull.changed_files, len(raw.files)))


def _size(f: RawFile) -> int:
    return f.changes or (f.additions + f.deletions)


def visible_comments(raw: RawCollection) -> list[RawIssueComment]:
    return [c for c in raw.issue_comments if not _own_comment(c, raw.pull.user.login)]


# Timeline events that tell what happened to the work; each becomes an ``event:…`` item in
# ``taskActivity`` (agent failure events too, and agent run starts when there is room).
NOTABLE_EVENTS: Final = frozenset({
    "head_ref_force_pushed", "reopened", "closed", "convert_to_draft", "review_dismissed",
    "cross-referenced",
})


def timeline_ref(e: RawTimelineEvent) -> tuple[str, str | None]:
    """A timeline event's evidence ID, and the ``owner/repo#n`` it cross-references (None when it
    names none): one spelling for the bundle's ``facts.timeline`` and the ``taskActivity`` items,
    so each item cites an event of the timeline."""
    source = (f"{e.source_repository}#{e.source_number}"
              if e.source_repository and e.source_number is not None else None)
    node = None if e.event in EVENTS_WITHOUT_NODE_ID else e.node_id
    eid = event_id(e.event, node, e.commit_id if e.event == "committed" else None,
                   iso(e.created_at), source)
    return eid, source


def _task_activity(raw: RawCollection) -> EvidenceGroup:
    pull = raw.pull
    human_reviews = sorted(
        (r for r in raw.reviews if r.user and not r.user.is_bot and r.user.login != pull.user.login
         and r.submitted_at is not None and r.state != "PENDING"),
        key=lambda r: (iso(r.submitted_at) or "", r.id),
    )
    approvals = [r for r in human_reviews if r.state == "APPROVED"]
    commit_times = [c.committed_at or c.authored_at for c in raw.commits]
    known = [t for t in commit_times if t is not None]
    opened = iso(pull.created_at) or ""
    after_open = sum(1 for t in known if (iso(t) or "") > opened)
    first_review = human_reviews[0].submitted_at if human_reviews else None
    comments = visible_comments(raw)
    people = {c.user.login for c in comments if c.user and not c.user.is_bot}
    people |= {r.user.login for r in raw.reviews if r.user and not r.user.is_bot}
    people |= {rc.user.login for rc in raw.review_comments if rc.user and not rc.user.is_bot}
    people.discard(pull.user.login)
    timeline = EvidenceItem(
        id=f"timeline:{pull.number}",
        kind="timeline",
        label=f"PR #{pull.number} timeline",
        url=pull.html_url,
        facts=_facts(
            openedAt=opened or None,
            firstCommitAt=iso(min(known)) if known else None,
            lastCommitAt=iso(max(known)) if known else None,
            firstHumanReviewAt=iso(first_review),
            firstApprovalAt=iso(approvals[0].submitted_at) if approvals else None,
            lastApprovalAt=iso(approvals[-1].submitted_at) if approvals else None,
            mergedAt=iso(pull.merged_at),
            closedAt=iso(pull.closed_at),
            hoursToFirstReview=hours_between(pull.created_at, first_review),
            hoursToMerge=hours_between(pull.created_at, pull.merged_at),
            commitsAfterOpening=after_open,
            issueComments=len(comments),
            reviewComments=len(raw.review_comments),
            reviews=len(raw.reviews),
            otherParticipants=len(people),
        ),
    )
    candidates = [_Candidate((0,), (0, ""), timeline)]
    events = raw.timeline or []
    if raw.timeline is not None:
        timeline.facts.update(_facts(
            timelineEvents=len(events),
            forcePushes=sum(1 for e in events if e.event == "head_ref_force_pushed"),
            agentRuns=sum(1 for e in events if agent_run_event(e.event) == "started"),
            agentFailures=sum(1 for e in events if agent_run_event(e.event) == "failed"),
            reopenings=sum(1 for e in events if e.event == "reopened"),
            crossReferences=sum(1 for e in events if e.event == "cross-referenced"),
        ))
    for n, e in enumerate(events):
        kind = agent_run_event(e.event)
        if e.event not in NOTABLE_EVENTS and kind not in ("failed", "started"):
            continue
        when = iso(e.created_at) or ""
        eid, source = timeline_ref(e)
        label = f"{e.event} by {login_of(e.actor) or 'someone'}"
        if source:
            label += f" from {source}"
        candidates.append(_Candidate(
            (0, 0 if kind == "failed" or e.event in NOTABLE_EVENTS else 1, when, n),
            (1, when, n),
            EvidenceItem(
                id=eid, kind="timeline_event", label=excerpt(label, SUBJECT_LIMIT),
                facts=_facts(event=e.event, actor=login_of(e.actor), actorIsBot=is_bot(e.actor),
                             createdAt=when or None, commitId=e.commit_id, source=source,
                             sourceIsPull=e.source_is_pull if source else None,
                             sourceState=e.source_state),
            ),
        ))
    for c in comments:
        when = iso(c.created_at) or ""
        who = login_of(c.user) or "ghost"
        candidates.append(_Candidate(
            (1 if is_bot(c.user) else 0, 1, when, c.id),
            (1, when, c.id),
            EvidenceItem(
                id=f"comment:{c.id}",
                kind="issue_comment",
                label=f"comment by {who}",
                excerpt=excerpt(c.body) or None,
                url=c.html_url,
                facts=_facts(commentId=c.id, author=login_of(c.user), authorIsBot=is_bot(c.user),
                             authorAssociation=c.author_association, createdAt=when or None),
            ),
        ))
    return _group("taskActivity", candidates)


def _check_output(c: RawCheckRun) -> str:
    parts = [p for p in (c.output_title, c.output_summary, c.output_text) if p and p.strip()]
    return "\n".join(parts)


def _agent_logs(raw: RawCollection) -> EvidenceGroup:
    head = raw.pull.head_sha
    author = raw.pull.user.login
    candidates = []
    for c in raw.check_runs:
        output = _check_output(c)
        if outcome_of(c.status, c.conclusion) != "fail" or not output:
            continue
        key: tuple[object, ...] = (0 if c.head_sha == head else 1, c.name, c.id)
        candidates.append(_Candidate(key, key, EvidenceItem(
            id=f"log:check-{c.id}",
            kind="check_output",
            label=excerpt(f"{c.name} output ({c.conclusion})", SUBJECT_LIMIT),
            excerpt=excerpt(output),
            url=c.html_url,
            facts=_facts(checkRunId=c.id, name=excerpt(c.name, SUBJECT_LIMIT), sha=c.head_sha,
                         conclusion=c.conclusion, outputChars=len(output),
                         atHead=c.head_sha == head),
        )))
    notes: list[tuple[str, RawIssueComment | RawReviewComment]] = [
        ("comment", c) for c in visible_comments(raw)
    ] + [("review-comment", rc) for rc in raw.review_comments]
    for prefix, note in notes:
        by_agent = is_bot(note.user) or login_of(note.user) == author
        if not by_agent or not _SESSION_NOTE.search(note.body):
            continue
        when = iso(note.created_at) or ""
        key = (2, when, prefix, note.id)
        candidates.append(_Candidate(key, key, EvidenceItem(
            id=f"log:{prefix}-{note.id}",
            kind="session_note",
            label=f"agent session note by {login_of(note.user) or 'ghost'}",
            excerpt=excerpt(note.body),
            url=note.html_url,
            facts=_facts(commentId=note.id, author=login_of(note.user), createdAt=when or None,
                         source=prefix),
        )))
    return _group("agentLogs", candidates)


_Attempt = TypeVar("_Attempt", RawCheckRun, RawWorkflowRun)


def _flaky_pairs(items: list[_Attempt], series_key: Callable[[_Attempt], tuple[str, str]],
                 when: Callable[[_Attempt], Any]) -> list[tuple[_Attempt, _Attempt]]:
    """(failed, passed) pairs: the same check or workflow on the same commit failed, then passed."""
    pairs = []
    series: dict[tuple[str, str], list[_Attempt]] = defaultdict(list)
    for item in sorted(items, key=when):
        series[series_key(item)].append(item)
    for attempts in series.values():
        failed = None
        for item in attempts:
            state = outcome_of(item.status, item.conclusion)
            if state == "fail":
                failed = item
            elif state == "pass" and failed is not None:
                pairs.append((failed, item))
                failed = None
    return pairs


def _flaky_checks(raw: RawCollection) -> list[tuple[RawCheckRun, RawCheckRun]]:
    return _flaky_pairs(raw.check_runs, lambda c: (c.head_sha, c.name), _check_time)


def _flaky_runs(raw: RawCollection) -> list[tuple[RawWorkflowRun, RawWorkflowRun]]:
    return _flaky_pairs(raw.workflow_runs, lambda r: (r.head_sha, str(r.workflow_id or r.name)), _run_time)


def _run_audit(raw: RawCollection, cids: dict[int, str]) -> EvidenceGroup:
    pull = raw.pull
    head = pull.head_sha
    candidates: list[_Candidate] = []
    by_resource: dict[str, list[str]] = defaultdict(list)
    statuses: dict[str, int | None] = {}
    for issue in raw.issues:
        by_resource[issue.resource].append(issue.message)
        statuses.setdefault(issue.resource, issue.status)
    for resource in sorted(by_resource):
        status = statuses[resource]
        key: tuple[object, ...] = (0, resource)
        candidates.append(_Candidate(key, key, EvidenceItem(
            id=f"audit:unavailable-{resource}",
            kind="collection_gap",
            label=excerpt(f"could not read {resource}" + (f" (HTTP {status})" if status else ""),
                          SUBJECT_LIMIT),
            excerpt=excerpt("\n".join(by_resource[resource])),
            facts=_facts(resource=resource, httpStatus=status),
        )))

    runs = raw.workflow_runs
    states = [outcome_of(r.status, r.conclusion) for r in runs]
    starts = [t for r in runs if (t := r.run_started_at or r.created_at) is not None]
    ends = [r.updated_at for r in runs if r.updated_at is not None and r.status == "completed"]
    durations = [
        d for r in runs if r.status == "completed"
        and (d := seconds_between(r.run_started_at or r.created_at, r.updated_at)) is not None
    ]
    wall = seconds_between(min(starts), max(ends)) if starts and ends else None
    head_checks = [outcome_of(c.status, c.conclusion) for c in raw.check_runs if c.head_sha == head]
    flaky_checks = _flaky_checks(raw)
    flaky_runs = _flaky_runs(raw)
    key = (1,)
    candidates.append(_Candidate(key, key, EvidenceItem(
        id=f"audit:ci-{pull.number}",
        kind="ci_summary",
        label=f"CI activity on PR #{pull.number}",
        facts=_facts(
            workflowRuns=len(runs),
            failedRuns=states.count("fail"),
            cancelledRuns=states.count("cancelled"),
            rerunRuns=sum(1 for r in runs if r.run_attempt > 1),
            maxAttempt=max((r.run_attempt for r in runs), default=0),
            commitsWithRuns=len({r.head_sha for r in runs} | {c.head_sha for c in raw.check_runs}),
            checkRuns=len(raw.check_runs),
            checksAtHead=len(head_checks),
            failingChecksAtHead=head_checks.count("fail"),
            pendingChecksAtHead=head_checks.count("pending"),
            flakyPairs=len(flaky_checks) + len(flaky_runs),
            firstRunAt=iso(min(starts)) if starts else None,
            lastRunEndedAt=iso(max(ends)) if ends else None,
            ciWallMinutes=round(wall / 60, 1) if wall is not None else None,
            runMinutes=round(sum(durations) / 60, 1) if durations else None,
        ),
    )))
    for failed, passed in flaky_checks:
        key = (2, passed.name, passed.id)
        candidates.append(_Candidate(key, key, EvidenceItem(
            id=f"audit:flaky-check-{passed.id}",
            kind="flaky",
            label=excerpt(f"{passed.name} failed, then passed on the same commit", SUBJECT_LIMIT),
            facts=_facts(name=excerpt(passed.name, SUBJECT_LIMIT), sha=passed.head_sha,
                         failedCheck=cids[failed.id], passedCheck=cids[passed.id]),
        )))
    for failed_run, passed_run in flaky_runs:
        key = (2, passed_run.name or "", passed_run.id)
        candidates.append(_Candidate(key, key, EvidenceItem(
            id=f"audit:flaky-run-{passed_run.id}",
            kind="flaky",
            label=excerpt(f"{passed_run.name or 'workflow'} failed, then passed on the same commit",
                          SUBJECT_LIMIT),
            facts=_facts(name=passed_run.name, sha=passed_run.head_sha,
                         failedRun=f"run:{failed_run.id}", passedRun=f"run:{passed_run.id}"),
        )))
    for r in runs:
        if r.run_attempt > 1:
            key = (3, r.id)
            candidates.append(_Candidate(key, key, EvidenceItem(
                id=f"audit:rerun-{r.id}",
                kind="rerun",
                label=excerpt(f"{r.name or 'workflow'} re-run: attempt {r.run_attempt}, "
                              f"{r.conclusion or r.status}", SUBJECT_LIMIT),
                url=r.html_url,
                facts=_facts(run=f"run:{r.id}", attempts=r.run_attempt, conclusion=r.conclusion,
                             sha=r.head_sha, atHead=r.head_sha == head,
                             triggeringActor=r.triggering_actor),
            )))
        if outcome_of(r.status, r.conclusion) == "cancelled":
            key = (4, r.id)
            candidates.append(_Candidate(key, key, EvidenceItem(
                id=f"audit:cancelled-{r.id}",
                kind="cancelled",
                label=excerpt(f"{r.name or 'workflow'} cancelled", SUBJECT_LIMIT),
                url=r.html_url,
                facts=_facts(run=f"run:{r.id}", sha=r.head_sha, atHead=r.head_sha == head,
                             updatedAt=iso(r.updated_at)),
            )))
    return _group("runAudit", candidates)


def build_groups(raw: RawCollection) -> list[EvidenceGroup]:
    """The eight groups, in contract order, of a normalised collection."""
    pull = raw.pull
    links = linked_issues(pr_text(pull.title, pull.body), raw.repository)
    cids = check_ids((c.id, c.name) for c in raw.check_runs)
    ci = _latest_outcomes(raw)
    builders: dict[GroupName, Callable[[], EvidenceGroup]] = {
        "taskMetadata": lambda: _task_metadata(raw, links),
        "commits": lambda: _commits(raw, ci),
        "workflow": lambda: _workflow(raw, cids),
        "reviews": lambda: _reviews(raw),
        "documents": lambda: _documents(raw),
        "taskActivity": lambda: _task_activity(raw),
        "agentLogs": lambda: _agent_logs(raw),
        "runAudit": lambda: _run_audit(raw, cids),
    }
    return [builders[name]() for name in GROUP_ORDER]
