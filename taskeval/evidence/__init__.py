"""Evidence: raw GitHub data -> the capped, truncated, ID'd evidence bundle, and the vocabulary
the bundle and the signals share.

* ``vocabulary``: bounded excerpts, commit subjects and trailers, fixup/revert detection, linked
  issues, code blanking, timestamps, CI outcomes, evidence IDs, file kinds (pure, shared);
* ``groups``: the eight evidence groups, what each keeps when capped and in which order;
* ``bundle``: ``normalise`` and ``build_bundle`` (groups + complete ``facts``).
"""

from taskeval.evidence.bundle import build_bundle, normalise
from taskeval.evidence.groups import OWN_COMMENT_MARKER
from taskeval.evidence.vocabulary import (
    BODY_LIMIT,
    CANCELLED_CONCLUSIONS,
    DEFAULT_PATTERNS,
    EXCERPT_LIMIT,
    FAILING_CONCLUSIONS,
    PASSING_CONCLUSIONS,
    SUBJECT_LIMIT,
    TITLE_LIMIT,
    TRUNCATION_MARKER,
    IssueLink,
    Outcome,
    blank_code,
    check_ids,
    ci_state,
    commit_ids,
    excerpt,
    file_kind,
    is_fixup,
    is_revert,
    iso,
    issue_id,
    linked_issues,
    outcome_of,
    parse_trailers,
    pr_id,
    reverted_sha,
    subject_of,
)

__all__ = [
    "BODY_LIMIT",
    "CANCELLED_CONCLUSIONS",
    "DEFAULT_PATTERNS",
    "EXCERPT_LIMIT",
    "FAILING_CONCLUSIONS",
    "OWN_COMMENT_MARKER",
    "PASSING_CONCLUSIONS",
    "SUBJECT_LIMIT",
    "TITLE_LIMIT",
    "TRUNCATION_MARKER",
    "IssueLink",
    "Outcome",
    "blank_code",
    "build_bundle",
    "check_ids",
    "ci_state",
    "commit_ids",
    "excerpt",
    "file_kind",
    "is_fixup",
    "is_revert",
    "iso",
    "issue_id",
    "linked_issues",
    "normalise",
    "outcome_of",
    "parse_trailers",
    "pr_id",
    "reverted_sha",
    "subject_of",
]
