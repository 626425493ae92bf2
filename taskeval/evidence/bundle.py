"""Raw GitHub data -> the capped, truncated, ID'd evidence bundle.

:func:`build_bundle` is pure and config-independent: the same :class:`RawCollection` always gives a
byte-identical bundle, because every list is put in a documented, stable order and no clock,
environment or repository config is read. Signals re-read the bundle's ``facts`` with the repo's
config, so nothing configurable is baked in here (file ``kind`` in ``documents`` is descriptive
only, from the default patterns). What goes in each group is described in
:mod:`taskeval.evidence.groups`.

``facts`` (:class:`BundleFacts`) holds compact, complete lists up to GitHub's own listing limits,
so every count a signal needs stays exact after capping: no patches, logs or payloads, ever.
Request counts and rate-limit figures are deliberately not stored: they differ between two
collections of the same PR and would change the bundle hash.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from taskeval.evidence.groups import (
    build_groups,
    is_bot,
    is_fork,
    login_of,
    timeline_ref,
    visible_comments,
)
from taskeval.evidence.vocabulary import (
    BODY_LIMIT,
    SUBJECT_LIMIT,
    TITLE_LIMIT,
    encodable,
    excerpt,
    iso,
    message_body,
    parse_trailers,
    subject_of,
)
from taskeval.models import (
    SCHEMA_VERSION,
    BundleFacts,
    CheckEntry,
    CommentEntry,
    CommitEntry,
    EvidenceBundle,
    FileEntry,
    LinkedIssueEntry,
    PullFacts,
    ReviewEntry,
    RunEntry,
    TimelineEntry,
)
from taskeval.raw import RawCollection, RawCommit, RawTimelineEvent

_T = TypeVar("_T")


# --------------------------------------------------------------------------- facts


def _pull_facts(raw: RawCollection) -> PullFacts:
    pull = raw.pull
    return PullFacts(
        number=pull.number,
        title=excerpt(pull.title, TITLE_LIMIT),
        body=excerpt(pull.body, BODY_LIMIT),
        author=pull.user.login,
        author_is_bot=pull.user.is_bot,
        author_association=pull.author_association,
        labels=sorted(pull.labels),
        state=pull.state,
        draft=pull.draft,
        merged=pull.merged,
        merged_by=login_of(pull.merged_by),
        created_at=iso(pull.created_at) or "",
        closed_at=iso(pull.closed_at),
        merged_at=iso(pull.merged_at),
        head_sha=pull.head_sha,
        head_ref=excerpt(pull.head_ref, SUBJECT_LIMIT),
        base_ref=excerpt(pull.base_ref, SUBJECT_LIMIT),
        merge_commit_sha=pull.merge_commit_sha,
        is_fork=is_fork(raw),
        additions=pull.additions,
        deletions=pull.deletions,
        changed_files=pull.changed_files,
        commit_count=max(pull.commits, len(raw.commits)),
        url=pull.html_url,
        via_app=excerpt(pull.performed_via_github_app, SUBJECT_LIMIT) or None,
        assignees=[u.login for u in pull.assignees],
        requested_reviewers=[u.login for u in pull.requested_reviewers],
    )


def _commit_entry(c: RawCommit) -> CommitEntry:
    unlinked = c.author_login is None
    name = _identity(c.author_name, NAME_LIMIT)
    if name is not None and not unlinked and name.lower() == (c.author_login or "").lower():
        name = None  # the login says it all
    return CommitEntry(
        sha=c.sha,
        subject=subject_of(c.message),
        message_excerpt=excerpt(message_body(c.message)),
        trailers=parse_trailers(c.message),
        author_login=c.author_login,
        author_is_bot=c.author_type == "Bot" or (c.author_login or "").endswith("[bot]"),
        committer_login=c.committer_login,
        authored_at=iso(c.authored_at),
        committed_at=iso(c.committed_at),
        verified=c.verified,
        is_merge=len(c.parents) > 1,
        # The git identity is kept where it is the evidence of who wrote the commit
        # (taskeval.signals.identity): an e-mail only of an identity GitHub links to no account.
        author_name=name,
        author_email=_identity(c.author_email, EMAIL_LIMIT) if unlinked else None,
        committer_name=_identity(c.committer_name, NAME_LIMIT) if unlinked else None,
        committer_email=(_identity(c.committer_email, EMAIL_LIMIT)
                         if unlinked and c.committer_login is None else None),
    )


NAME_LIMIT = 100  # a git name: longer ones are cut (no person's name is near it)
EMAIL_LIMIT = 254  # an e-mail address: RFC 5321's limit


def _identity(value: str | None, limit: int) -> str | None:
    """A git name or e-mail as stored: one line, trimmed, at most ``limit`` characters; None
    when empty."""
    flat = " ".join((value or "").split())[:limit]
    return encodable(flat) or None


def _by_time_id(when: datetime | None, ident: int) -> tuple[str, int]:
    return (iso(when) or "", ident)


def timeline_entry(e: RawTimelineEvent) -> TimelineEntry:
    when = iso(e.created_at)
    eid, source = timeline_ref(e)
    return TimelineEntry(
        id=eid, event=e.event, actor=login_of(e.actor), actor_is_bot=is_bot(e.actor), created_at=when,
        commit_id=e.commit_id, state=e.state, source=source, source_is_pull=e.source_is_pull,
        source_state=e.source_state, source_author=e.source_author,
        source_created_at=iso(e.source_created_at), assignee=e.assignee or None,
        label=excerpt(e.label, SUBJECT_LIMIT) if e.label else None,
    )


def _facts_of(raw: RawCollection) -> BundleFacts:
    comments = [
        CommentEntry(id=c.id, author=login_of(c.user), author_is_bot=is_bot(c.user), kind="issue",
                     created_at=iso(c.created_at), body_excerpt=excerpt(c.body))
        for c in visible_comments(raw)
    ] + [
        CommentEntry(id=c.id, author=login_of(c.user), author_is_bot=is_bot(c.user), kind="review",
                     created_at=iso(c.created_at), body_excerpt=excerpt(c.body))
        for c in raw.review_comments
    ]
    return BundleFacts(
        pull=_pull_facts(raw),
        commits=[_commit_entry(c) for c in raw.commits],
        files=[
            FileEntry(path=f.filename, status=f.status, additions=f.additions,
                      deletions=f.deletions, previous_path=f.previous_filename)
            for f in sorted(raw.files, key=lambda f: f.filename)
        ],
        reviews=[
            ReviewEntry(id=r.id, author=login_of(r.user), author_is_bot=is_bot(r.user),
                        state=r.state, submitted_at=iso(r.submitted_at), commit_id=r.commit_id,
                        body_excerpt=excerpt(r.body))
            for r in sorted(raw.reviews, key=lambda r: _by_time_id(r.submitted_at, r.id))
        ],
        comments=sorted(comments, key=lambda c: (c.created_at or "", c.kind, c.id)),
        checks=[
            CheckEntry(id=c.id, name=c.name, status=c.status, conclusion=c.conclusion,
                       head_sha=c.head_sha, app=c.app_slug, started_at=iso(c.started_at),
                       completed_at=iso(c.completed_at))
            for c in sorted(raw.check_runs, key=lambda c: c.id)
        ],
        runs=[
            RunEntry(id=r.id, name=r.name, workflow_id=r.workflow_id, head_sha=r.head_sha,
                     event=r.event, status=r.status, conclusion=r.conclusion, attempt=r.run_attempt,
                     created_at=iso(r.created_at), started_at=iso(r.run_started_at),
                     updated_at=iso(r.updated_at))
            for r in sorted(raw.workflow_runs, key=lambda r: r.id)
        ],
        unavailable=sorted({i.resource for i in raw.issues}),
        timeline=None if raw.timeline is None else [timeline_entry(e) for e in raw.timeline],
        linked_issues=[LinkedIssueEntry(number=i.number, labels=sorted(i.labels), is_pull=i.is_pull)
                       for i in raw.linked_issues],
    )


def _clean(value: object) -> object:
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def _unique(items: list[_T], key: Callable[[_T], object]) -> list[_T]:
    seen: set[object] = set()
    out = []
    for item in items:
        if key(item) not in seen:
            seen.add(key(item))
            out.append(item)
    return out


def normalise(raw: RawCollection) -> RawCollection:
    """A copy safe to build from: every string encodable (lone surrogates -> U+FFFD, since file
    paths, names and refs are kept as they are) and every listing free of repeats (a list that
    shifted between pages can hand back the same commit twice), first occurrence kept."""
    clean = RawCollection.model_validate(_clean(raw.model_dump()))
    clean.commits = _unique(clean.commits, lambda c: c.sha)
    clean.reviews = _unique(clean.reviews, lambda r: r.id)
    clean.review_comments = _unique(clean.review_comments, lambda c: c.id)
    clean.issue_comments = _unique(clean.issue_comments, lambda c: c.id)
    clean.files = _unique(clean.files, lambda f: f.filename)
    clean.check_runs = _unique(clean.check_runs, lambda c: c.id)
    clean.workflow_runs = _unique(clean.workflow_runs, lambda r: r.id)
    return clean


def build_bundle(raw: RawCollection) -> EvidenceBundle:
    """The evidence bundle for one PR: pure, config-independent and deterministic."""
    raw = normalise(raw)
    return EvidenceBundle(
        schema_version=SCHEMA_VERSION,
        repository=raw.repository,
        pull_request=raw.pull.number,
        head_sha=raw.pull.head_sha,
        html_base=raw.html_base,
        groups=build_groups(raw),
        facts=_facts_of(raw),
    )
