"""The shared vocabulary of evidence: how PR text, commits, CI outcomes and IDs are read.

Used by the bundle builder and by the signals alike, so both read a commit subject, a trailer, a
closing keyword, a check's outcome or an evidence ID the same way. Everything here is a pure
function of its arguments: no GitHub, no clock, no config beyond the default path patterns.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Final, Literal

from taskeval.config import Patterns

EXCERPT_LIMIT: Final = 500
SUBJECT_LIMIT: Final = 160
# Repeats of one trailer key kept (the first ones): every name a commit's co-authors need, while
# a message of thousands of ``Co-authored-by`` lines stays a bounded piece of evidence.
TRAILER_REPEATS: Final = 50
TRUNCATION_MARKER: Final = "… [truncated]"
BODY_LIMIT: Final = 8_000
TITLE_LIMIT: Final = 256  # GitHub's own limit on PR titles

PASSING_CONCLUSIONS: Final = frozenset({"success"})
FAILING_CONCLUSIONS: Final = frozenset(
    {"failure", "timed_out", "action_required", "startup_failure"}
)
CANCELLED_CONCLUSIONS: Final = frozenset({"cancelled"})
# Workflow-run events that are not the PR's CI even when they ran on its head commit: a nightly
# schedule that happened to find the branch, and "dynamic" runs, which are GitHub's own agent
# sessions (Copilot's "Running Copilot coding agent"), read as the agent's sessions, not as CI.
NOT_PR_CI_EVENTS: Final = frozenset({"schedule", "dynamic"})

Outcome = Literal["pass", "fail", "cancelled", "neutral", "pending"]

# C0/C1 controls except tab and newline, bidi overrides/isolates (they can hide text), BOM.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ufeff]")
# Lone UTF-16 halves arrive as JSON escapes ("\ud800") and cannot be encoded as UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,40})")
_FIXUP = re.compile(r"^(fixup|squash|amend)! ", re.IGNORECASE)
_REVERT_SUBJECT = re.compile(r'^(Revert "|revert(\([^)]*\))?!?: )', re.IGNORECASE)
_TRAILER = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*)\s*:\s+(\S.*)$")
# GitHub's closing keywords (docs: "Linking a pull request to an issue") and plain mentions. The
# lookbehinds anchor each alternative at a word start, keeping the scan linear on long bodies.
_ISSUE_REF = re.compile(
    r"(?i)(?:\b(?P<kw>close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+)?"
    r"(?:(?<![\w.-])(?P<repo>[\w.-]+/[\w.-]+)#|https?://[^\s/]+/(?P<urlrepo>[\w.-]+/[\w.-]+)/issues/|"
    r"(?<![\w/#])#)"
    r"(?P<num>\d+)\b"
)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
# What every issue reference contains: ``#`` or ``/issues/`` right before its number.
_ISSUE_ANCHOR = re.compile(r"#\d|/issues/\d", re.IGNORECASE)

# --------------------------------------------------------------------------- text helpers


def excerpt(text: str | None, limit: int = EXCERPT_LIMIT) -> str:
    """Bounded, clean text: at most ``limit`` characters including the marker when cut.

    Newlines are normalised to ``\\n`` and control/bidi characters removed, so stored text is
    inert wherever it is shown and stable across platforms.
    """
    if limit <= len(TRUNCATION_MARKER):
        raise ValueError(f"limit must exceed the marker length ({len(TRUNCATION_MARKER)})")
    if not text:
        return ""
    clean = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n")
    clean = _CONTROL.sub("", clean.replace("\u2029", "\n"))
    clean = encodable(clean).strip()
    if len(clean) <= limit:
        return clean
    return clean[: limit - len(TRUNCATION_MARKER)].rstrip() + TRUNCATION_MARKER


def encodable(text: str) -> str:
    """``text`` with lone UTF-16 surrogates replaced by U+FFFD, so it can be encoded as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def subject_of(message: str | None) -> str:
    """First line of a commit message, bounded to :data:`SUBJECT_LIMIT`."""
    first = excerpt(message, 1 << 30).split("\n", 1)[0]
    return excerpt(first, SUBJECT_LIMIT)


def message_body(message: str) -> str:
    parts = excerpt(message, 1 << 30).split("\n", 1)
    return parts[1].strip() if len(parts) > 1 else ""


def parse_trailers(message: str) -> dict[str, str]:
    """Git-style trailers (``Key: value`` lines) of the last paragraph, never of the subject.

    Hand-written because no library parses trailers without running git; repeated keys are
    joined with ``", "`` in order, the first :data:`TRAILER_REPEATS` of them.
    """
    body = message_body(message)
    if not body:
        return {}
    last = re.split(r"\n\s*\n", body)[-1].strip("\n")
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    for line in last.split("\n"):
        if not line.strip():
            continue
        if line[0].isspace() and out:  # continuation of the previous trailer
            continue
        match = _TRAILER.match(line)
        if not match:
            return {}
        key, value = match.group(1), excerpt(match.group(2).strip(), SUBJECT_LIMIT)
        if key not in out:
            out[key] = value
            seen[key] = 1
        elif seen[key] < TRAILER_REPEATS:
            out[key] = f"{out[key]}, {value}"
            seen[key] += 1
    return out


def blank_code(text: str) -> str:
    """``text`` with fenced code blocks and inline code spans blanked out: same length, same
    newlines, so line numbers survive. Quoted code is neither a claim nor a leak.

    A line scan rather than one regex so that a body full of unclosed fences stays linear; an
    unclosed fence runs to the end, as CommonMark renders it.
    """
    if "```" not in text and "~~~" not in text:
        # No fence anywhere: only inline spans, which never cross a line, so one pass over the
        # whole text blanks exactly what the line scan would (and nothing when there is no `).
        return _blank_inline(text)
    if _FAST_FENCES:
        return _blank_fenced(text)
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        marker = stripped[:3] if len(line) - len(stripped) <= 3 else ""
        is_fence = marker in ("```", "~~~")
        if fence is None and not is_fence:
            out.append(_INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line))
            continue
        out.append(" " * len(line))
        if fence is None:
            fence = marker
        elif marker == fence:
            fence = None
    return "\n".join(out)


# A line that opens or closes a fence: at most three spaces, then ``` or ~~~ (what the line scan
# above calls a fence line).
_FENCE_LINE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)
_FAST_FENCES = True  # False: the line scan (the tests compare both ways)


def _blank_inline(text: str) -> str:
    return _INLINE_CODE.sub(lambda m: " " * len(m.group(0)), text) if "`" in text else text


def _blank_fenced(text: str) -> str:
    """:func:`blank_code`'s line scan, visiting only the fence lines: the lines between fenced
    blocks get their inline spans blanked in one pass (spans never cross a line), each fenced
    block from its opening line to its closing line (or the end) is blanked whole."""
    out: list[str] = []
    pos = 0  # start of the text not yet copied
    opened: tuple[int, str] | None = None  # (start of the opening line, its marker)
    for line in _FENCE_LINE.finditer(text):
        marker = line.group(1)
        if opened is None:
            out.append(_blank_inline(text[pos:line.start()]))
            opened = (line.start(), marker)
        elif marker == opened[1]:
            end = text.find("\n", line.start())
            end = len(text) if end == -1 else end
            out.append(_blank_lines(text[opened[0]:end]))
            pos, opened = end, None
    if opened is not None:
        out.append(_blank_lines(text[opened[0]:]))
    else:
        out.append(_blank_inline(text[pos:]))
    return "".join(out)


def _blank_lines(text: str) -> str:
    return "\n".join(" " * len(line) for line in text.split("\n"))


def is_fixup(subject: str) -> bool:
    return bool(_FIXUP.match(subject))


def is_revert(subject: str) -> bool:
    return bool(_REVERT_SUBJECT.match(subject))


def reverted_sha(message: str | None) -> str | None:
    match = _REVERTS.search(message or "")
    return match.group(1) if match else None


def iso(value: datetime | None) -> str | None:
    """UTC, second precision, ``Z`` suffix: one spelling, so strings compare in time order."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_between(start: datetime | None, end: datetime | None) -> int | None:
    if start is None or end is None:
        return None
    a = start if start.tzinfo else start.replace(tzinfo=UTC)
    b = end if end.tzinfo else end.replace(tzinfo=UTC)
    return max(0, int((b - a).total_seconds()))


def hours_between(start: datetime | None, end: datetime | None) -> float | None:
    secs = seconds_between(start, end)
    return None if secs is None else round(secs / 3600, 2)


# --------------------------------------------------------------------------- outcomes and IDs


def outcome_of(status: str | None, conclusion: str | None) -> Outcome:
    """One word for a check or run: a conclusion wins over a status, unknown ones are neutral."""
    if conclusion:
        if conclusion in PASSING_CONCLUSIONS:
            return "pass"
        if conclusion in FAILING_CONCLUSIONS:
            return "fail"
        if conclusion in CANCELLED_CONCLUSIONS:
            return "cancelled"
        return "neutral"  # neutral, skipped, stale and anything GitHub adds later
    return "neutral" if status == "completed" else "pending"


def commit_ids(shas: Iterable[str]) -> dict[str, str]:
    """``sha -> commit:<prefix>``: 7 characters, longer only where two SHAs would collide."""
    unique = sorted(set(shas))
    if len({sha[:7] for sha in unique}) == len(unique):  # nearly always: no pair to compare
        return {sha: f"commit:{sha[:7]}" for sha in unique}
    out: dict[str, str] = {}
    # Another SHA starts with ``sha[:n]`` exactly when it shares at least n leading characters
    # with ``sha``, and in sorted order the SHA sharing the most is a neighbour: so the prefix
    # needs one character more than the longer of the two neighbours' shared prefixes.
    for index, sha in enumerate(unique):
        shared = max(_shared_prefix(sha, unique[index - 1]) if index else 0,
                     _shared_prefix(sha, unique[index + 1]) if index + 1 < len(unique) else 0)
        out[sha] = f"commit:{sha[:min(len(sha), max(7, shared + 1))]}"
    return out


def _shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def check_ids(checks: Iterable[tuple[int, str]]) -> dict[int, str]:
    """``check run id -> check:<name>``, with ``#<id>`` when another check run has that name."""
    pairs = list(checks)
    counts: dict[str, int] = defaultdict(int)
    for _, name in pairs:
        counts[name] += 1
    return {
        cid: f"check:{name}" if counts[name] == 1 else f"check:{name}#{cid}"
        for cid, name in pairs
    }


def pr_id(number: int) -> str:
    return f"pr:{number}"


def issue_id(number: int, repo: str | None = None) -> str:
    return f"issue:{repo}#{number}" if repo else f"issue:{number}"


@dataclass(frozen=True)
class IssueLink:
    number: int
    repo: str | None  # None: the PR's own repository
    keyword: str | None  # closing keyword as written (lower case), None for a plain mention

    @property
    def closing(self) -> bool:
        return self.keyword is not None

    @property
    def id(self) -> str:
        return issue_id(self.number, self.repo)


def linked_issues(text: str, repository: str) -> list[IssueLink]:
    """Issues a PR text links: closing-keyword links first, then mentions, each by number."""
    return list(_linked_issues(text, repository))


# Linked issues read for their labels (the third source of a PR's task type): a body naming fifty
# issues must not cost fifty reads, and the closing links, read first, are the task itself.
MAX_LINKED_ISSUE_READS: Final = 3


def pr_text(title: str, body: str) -> str:
    """The PR text links are read from: the title and the bounded body the bundle keeps, so the
    ``issue:<n>`` items and the issues collection reads for them come from the same text."""
    return f"{title}\n{excerpt(body, BODY_LIMIT)}"


def issues_to_read(title: str, body: str, number: int, repository: str,
                   cap: int = MAX_LINKED_ISSUE_READS) -> list[int]:
    """The linked issues collection reads labels from: those the bundle lists as ``issue:<n>``
    (:func:`linked_issues` of :func:`pr_text`) in the PR's own repository, closing-keyword links
    first, never the PR itself, at most ``cap``. Another repository's issue is left out: its
    labels follow another project's conventions, and reading it needs access the token may
    not have."""
    out: list[int] = []
    for link in linked_issues(pr_text(title, body), repository):
        if link.repo is None and link.number != number and link.number not in out:
            out.append(link.number)
            if len(out) >= cap:
                break
    return out


def near_anchors(pattern: re.Pattern[str], text: str, anchors: re.Pattern[str]) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)`` for a pattern whose every match holds an anchor and spans at
    most the anchor's whitespace-delimited token and the two tokens ahead of it, ending
    within the anchor's token (a lookahead may read on to the whitespace after it, no further):
    e.g. "Fixes : owner/repo#12", two tokens before the one holding the anchor "#1".

    Such a pattern can only match inside those windows, and a window starts at a token and ends
    at whitespace (or the text's ends), so searching each window (its bounds are ``pos`` and
    ``endpos``; lookbehinds and ``\\b`` still see the text around it) finds the same matches as
    searching the whole text. Skipping the rest matters: ``_ISSUE_REF`` tries a repository
    name at every word of a long PR body, and most words are nowhere near a ``#``.
    """
    if not _FAST_ANCHORS or len(text) < _WHOLE_BELOW:
        yield from pattern.finditer(text)
        return
    start = end = -1
    backwards: str | None = None
    for anchor in anchors.finditer(text):
        at = anchor.start()
        if at < end:
            continue  # inside the window already taken
        if backwards is None:
            backwards = text[::-1]
        # Back to the start of this token, then two more (whitespace, token: read on the
        # reversed text, where they follow).
        walked = _TOKENS_BACK.match(backwards, len(text) - at)
        head = at - (walked.end() - walked.start()) if walked else at
        space = _SPACE.search(text, at)
        tail = len(text) if space is None else space.start()
        if head <= end:  # touching the previous window: one window
            end = tail
            continue
        if end > start:
            yield from pattern.finditer(text, start, end)
        start, end = head, tail
    if end > start:
        yield from pattern.finditer(text, start, end)


_FAST_ANCHORS = True  # False: search whole texts (the tests compare both ways)
_WHOLE_BELOW = 128  # a text this short is searched whole: its windows would cost more than they spare
_SPACE = re.compile(r"\s")


# Whitespace then a token, three times: on the reversed text, the token an anchor is in and the
# two tokens before it (as a loop stepping back over whitespace and then a token would).
_TOKENS_BACK: Final = re.compile(r"(?:\s*\S*){3}")


class NeedleFinder:
    """The first position at or after a given one where one of ``needles`` starts in ``low``,
    for increasing positions: each needle's next occurrence is searched once and kept, so a text
    full of one needle does not rescan it for the others (linear in the text per needle)."""

    def __init__(self, low: str, needles: Iterable[str]) -> None:
        self.low = low
        self.next = {needle: low.find(needle) for needle in needles}

    def first(self, start: int) -> int:
        """-1 when no needle starts at or after ``start``."""
        best = -1
        for needle, at in list(self.next.items()):
            if at != -1 and at < start:
                at = self.next[needle] = self.low.find(needle, start)
            if at == -1:
                del self.next[needle]
            elif best == -1 or at < best:
                best = at
        return best


def in_clauses(
    pattern: re.Pattern[str], text: str, low: str, needles: Sequence[str],
    outside: re.Pattern[str],
) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)`` for a pattern whose every match holds one of ``needles`` in
    ``low`` (``text`` case-folded, same length) and no character that ``outside`` matches, and
    which has no lookahead (it would read past a clause's end).

    A match then lies inside one clause (a run of characters ``outside`` does not match) that
    holds a needle, so only those clauses are searched (``pos`` and ``endpos``; a clause ends at
    a character the pattern cannot consume, so ``\\b`` and ``\\s+`` read the same there). The
    claim patterns try every word of a long PR body, and their words sit in a few sentences.
    """
    if not _FAST_ANCHORS or len(low) != len(text):
        yield from pattern.finditer(text)
        return
    backwards: list[str] = []  # the text reversed, made when a first needle is found

    def clause(at: int) -> tuple[int, int]:
        if not backwards:
            backwards.append(text[::-1])
        before = outside.search(backwards[0], len(text) - at)
        after = outside.search(text, at)
        start = 0 if before is None else len(text) - before.start()
        return start, max(at + 1, len(text) if after is None else after.start())

    yield from in_windows(pattern, text, low, needles, clause)


def in_windows(
    pattern: re.Pattern[str], text: str, low: str, needles: Iterable[str],
    window: Callable[[int], tuple[int, int]],
) -> Iterator[re.Match[str]]:
    """``pattern``'s matches in the windows around each needle found in ``low``, in order:
    ``window(at)`` gives the (start, end) of the window around a needle at ``at``, ending past
    ``at``; the next needle is looked for from that end."""
    end = 0
    finder = NeedleFinder(low, needles)
    while True:
        at = finder.first(end)
        if at == -1:
            return
        start, end = window(at)
        yield from pattern.finditer(text, start, end)


@lru_cache(maxsize=1024)
def _linked_issues(text: str, repository: str) -> tuple[IssueLink, ...]:
    """Cached: the claims and task-reference signals read the same PR text."""
    found: dict[tuple[str | None, int], IssueLink] = {}
    for match in near_anchors(_ISSUE_REF, blank_code(text), _ISSUE_ANCHOR):
        repo = match.group("repo") or match.group("urlrepo")
        if repo and repo.lower() == repository.lower():
            repo = None
        key = (repo, int(match.group("num")))
        kw = match.group("kw")
        link = IssueLink(key[1], repo, kw.lower() if kw else None)
        if key not in found or (link.closing and not found[key].closing):
            found[key] = link
    return tuple(sorted(found.values(), key=lambda i: (not i.closing, i.repo or "", i.number)))


def ci_state(outcomes: Sequence[Outcome]) -> str:
    """Worst-first summary of several outcomes: fail > pending > cancelled > pass > neutral."""
    for state in ("fail", "pending", "cancelled", "pass"):
        if state in outcomes:
            return state
    return "neutral" if outcomes else "none"


DEFAULT_PATTERNS: Final = Patterns()


def file_kind(path: str) -> str:
    """Descriptive kind from the *default* patterns; signals re-classify with the repo config."""
    for kind, globs in (
        ("generated", DEFAULT_PATTERNS.ignore_paths),
        ("test", DEFAULT_PATTERNS.test_paths),
        ("docs", DEFAULT_PATTERNS.doc_paths),
    ):
        if any(fnmatchcase(path, g) for g in globs):
            return kind
    return "source"




# --------------------------------------------------------------------------- timeline events

# Agent session events GitHub records on the issue timeline. Started/finished mark a run; a failure
# event is the agent itself saying its run did not complete. Unknown future events that follow the
# same naming (``<agent>_work_…failure``) are recognised by the patterns below.
AGENT_RUN_EVENTS: Final[dict[str, str]] = {
    "copilot_work_started": "started",
    "copilot_work_finished": "finished",
    "copilot_work_finished_failure": "failed",
}
_AGENT_FAILURE: Final = re.compile(r"^[a-z]+_work_\w*(?:fail(?:ure|ed)?|error|stopped|cancel+ed)$")
_AGENT_RUN: Final = re.compile(r"^[a-z]+_work_(?:started|finished)$")


def agent_run_event(event: str) -> str | None:
    """``started``/``finished``/``failed`` for an agent session event, else None."""
    if "_work_" not in event:  # every agent session event is named "<agent>_work_..."
        return None
    if event in AGENT_RUN_EVENTS:
        return AGENT_RUN_EVENTS[event]
    if _AGENT_FAILURE.match(event):
        return "failed"
    if _AGENT_RUN.match(event):
        return event.rsplit("_", 1)[1]
    return None


# Timeline events keyed by what both transports share rather than by a node id: REST's
# ``/issues/{n}/timeline`` gives a cross-reference and its grouped line and commit comments no
# node id at all (GraphQL does), and a ``committed`` entry's node id is its commit's, which the
# SHA already names (GraphQL's ``PullRequestCommit`` has an id of its own).
EVENTS_WITHOUT_NODE_ID: Final = frozenset({"committed", "cross-referenced", "line-commented",
                                           "commit-commented"})


def event_id(event: str, node_id: str | None, commit: str | None, when: str | None,
             source: str | None = None) -> str:
    """A timeline event's evidence ID (bundle schema version 2): ``event:<node id>`` for an
    event GitHub gives a global node id (the same through REST and GraphQL); else
    ``event:committed-<sha7>`` for a commit, and ``event:<name>-<source>-<time>`` (a
    cross-reference: ``owner/repo#n``) or ``event:<name>-<time>`` for the rest.

    Bundles of schema version 1 keyed events by REST's numeric event id (``event:<id>``), which
    GraphQL does not give; they keep those IDs (a stored bundle is never rebuilt)."""
    if node_id:
        return f"event:{node_id}"
    if commit:
        return f"event:{event}-{commit[:7]}"
    stamp = re.sub(r"[^0-9]", "", when or "") or "undated"
    return f"event:{event}-{source}-{stamp}" if source else f"event:{event}-{stamp}"


# Under IGNORECASE, ``re`` matches an ASCII letter with exactly these non-ASCII characters besides
# its own two cases (tests/test_rescore_fast_paths.py derives the list from ``re`` itself). Folding
# them first makes ``fold(text)`` contain a rule's needle whenever the rule matches ``text``, so the
# needle prefilter holds for any text, not only ASCII ones: agent PRs are full of emoji and ✅.
_ASCII_FOLD: Final = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))


def fold(text: str) -> str:
    """Lower case in which every character that ``re.IGNORECASE`` matches with an ASCII letter
    becomes that letter (``str.lower`` alone turns "İ" into "i" plus a combining dot)."""
    if not text.isascii():
        for char, letter in _ASCII_FOLD:
            if char in text:
                text = text.replace(char, letter)
    return text.lower()
