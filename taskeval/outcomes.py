"""What happened to the work after it was evaluated: outcomes, each with the evidence showing it.

An outcome is a yes/no fact about one PR (``rejected``, ``reverted`` ...), recorded with the
evidence IDs or URLs that show it, where it came from (a history scan, the bot, a stored result,
a corpus) and when it was seen. A PR an outcome does not apply to (``rejected`` of an open PR,
``reverted`` of an unmerged one) has no record for it, which is different from a ``false`` one.

Three ways to get them:

* :func:`from_result` / :func:`from_facts`: from a stored result or bundle alone (closed unmerged,
  reviews that sent the work back, force-pushes, reopenings and the agent's own failure events on
  the timeline). No GitHub access; this is how a team backfills outcomes for stored results.
* :func:`scan_history`: later history of the base branch (``taskeval outcomes OWNER/REPO``):
  reverts (git's ``This reverts commit …`` or GitHub's ``Revert "<title>"`` PR), follow-up fixes
  (a later merged PR that references this one with fix words within a window, default 14 days)
  and reopened tasks (an issue the PR closes, reopened after the merge).
* the bot, from ``push`` and ``pull_request`` events on the default branch
  (:func:`from_pull_request_event`, :func:`from_push_event`).

Nothing here scores anything; :mod:`taskeval.validity` relates outcomes to the scores.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from taskeval.agents import is_other_person, machine_accounts
from taskeval.config import Settings, stored_config
from taskeval.evidence.vocabulary import agent_run_event, linked_issues, reverted_sha

# Every built-in outcome kind, with what it means. All are "bad" events: the score should be lower
# when one happened (an AUC above 0.5 means it is); a team's own labels are read the same way.
OUTCOMES: Final[dict[str, str]] = {
    "rejected": "closed without merging",
    "reverted": "merged, then reverted on the base branch",
    "follow_up_fix": "merged, then a later merged PR fixed it (references it with fix words)",
    "reopened_task": "merged, then an issue it closed was reopened",
    "changes_requested": "a reviewer sent the work back (CHANGES_REQUESTED)",
    "force_pushed": "the branch was force-pushed (timeline head_ref_force_pushed)",
    "reopened": "the PR was reopened after being closed (timeline)",
    "agent_failure": "the agent's own run failed (e.g. copilot_work_finished_failure)",
    "post_pr_issue": "an issue cross-linked to the PR after it closed (corpus only)",
    "agent_failed": "any of: rejected, changes requested, agent failure, reverted, follow-up fix",
}
# A team's own outcome labels (the reasons its triage records, say) are welcome beside the built-in
# kinds: any name a person reads, kept as given, short enough for the store's column.
MAX_LABEL: Final = 32


def label_problem(name: object) -> str | None:
    """Why ``name`` cannot be an outcome label, or None. A label is any text of 1 to
    :data:`MAX_LABEL` printable characters without leading or trailing space; built-in kinds and
    a team's own labels alike, compared exactly as written."""
    if not isinstance(name, str):
        return f"an outcome label is text, got {json.dumps(name)}"
    if not name or name != name.strip():
        return f"outcome label {name!r} is empty or starts or ends with space"
    if len(name) > MAX_LABEL or not name.isprintable():
        return (f"outcome label {name[:40]!r} must be at most {MAX_LABEL} printable characters "
                "on one line")
    return None


def meaning(outcome: str) -> str:
    """What an outcome means: the built-in kinds say; a team's own label is its own."""
    return OUTCOMES.get(outcome, "your own label (from the outcome files)")


COMPOSITE: Final = ("rejected", "changes_requested", "agent_failure", "reverted", "follow_up_fix")
FIX_WORDS: Final = re.compile(
    r"(?i)\b(?:fix(?:es|ed|ing)?|bug|regression|broke(?:n)?|hotfix|follow[- ]?up|repair|"
    r"correct(?:s|ed|ion)?|revert(?:s|ed)?)\b")
REVERT_TITLE: Final = re.compile(r'^Revert "(?P<title>.+)"\s*$')
REVERTS_PR: Final = re.compile(r"(?i)\bReverts\s+(?:(?P<repo>[\w.-]+/[\w.-]+))?#(?P<n>\d+)\b")


@dataclass
class OutcomeRecord:
    """One outcome of one PR, as stored (a JSON line, or a row of the bot's outcomes table)."""

    repository: str
    number: int
    outcome: str
    value: bool
    evidence: list[str] = field(default_factory=list)
    detail: str = ""
    source: str = "results"  # results | scan | bot | corpus
    observed_at: str | None = None  # when the outcome happened, if known

    def to_json(self) -> str:
        return json.dumps({"repository": self.repository, "pullRequest": self.number,
                           "outcome": self.outcome, "value": self.value,
                           "evidence": self.evidence, "detail": self.detail,
                           "source": self.source, "observedAt": self.observed_at},
                          ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OutcomeRecord:
        outcome = data["outcome"]
        problem = label_problem(outcome)
        if problem:
            raise ValueError(problem)
        if not isinstance(data["value"], bool):  # "false" would otherwise read as true
            raise ValueError(f"value must be true or false, got {json.dumps(data['value'])}")
        return cls(repository=str(data["repository"]), number=int(data["pullRequest"]),
                   outcome=outcome, value=data["value"],
                   evidence=[str(e) for e in data.get("evidence") or []],
                   detail=str(data.get("detail") or ""), source=str(data.get("source") or ""),
                   observed_at=data.get("observedAt"))

    def as_row(self) -> dict[str, Any]:
        return asdict(self)


Key = tuple[str, int]


def key_of(record: OutcomeRecord) -> Key:
    return (record.repository.lower(), record.number)


# --------------------------------------------------------------------------- from stored results


_DEFAULT_SETTINGS: Final = Settings()
def stored_settings(result: Mapping[str, Any]) -> Settings:
    """The settings a stored result was scored with (its ``config``, validated once per distinct
    config by :func:`taskeval.config.stored_config`, as re-scoring reads it); the defaults when it
    has none or it does not validate (a result written by hand, or by a version with other
    settings)."""
    try:
        return stored_config(result.get("config")).settings
    except ValidationError:
        return _DEFAULT_SETTINGS


def from_facts(repository: str, facts: Mapping[str, Any], source: str = "results",
               settings: Settings | None = None) -> list[OutcomeRecord]:
    """The outcomes a bundle's own facts show (``facts`` as stored: camelCase JSON). Who is
    another person (``changes_requested``) follows ``settings``' bot and agent accounts, as the
    signals do (:func:`taskeval.agents.is_other_person`); None is the defaults."""
    pull = facts.get("pull") or {}
    number = int(pull.get("number") or 0)
    author = str(pull.get("author") or "")
    machines = machine_accounts(settings or _DEFAULT_SETTINGS)
    pr = f"pr:{number}"
    out: list[OutcomeRecord] = []

    def add(kind: str, value: bool, evidence: Iterable[str], detail: str,
            when: str | None = None) -> None:
        out.append(OutcomeRecord(repository, number, kind, value, list(evidence) or [pr], detail,
                                 source, when))

    merged, state = bool(pull.get("merged")), pull.get("state")
    if merged or state == "closed":
        add("rejected", not merged and state == "closed", [pr],
            "closed without merging" if not merged else "merged",
            pull.get("closedAt") if not merged else None)
    reviews = [r for r in facts.get("reviews") or []
               if is_other_person(r.get("author"), author, bool(r.get("authorIsBot")), machines)]
    sent_back = [r for r in reviews if r.get("state") == "CHANGES_REQUESTED"]
    if "reviews" not in (facts.get("unavailable") or []):
        add("changes_requested", bool(sent_back), [f"review:{r['id']}" for r in sent_back],
            f"{len(sent_back)} change request(s) in {len(reviews)} human review(s)",
            sent_back[0].get("submittedAt") if sent_back else None)
    timeline = facts.get("timeline")
    if timeline is not None:
        pushes = [e for e in timeline if e.get("event") == "head_ref_force_pushed"]
        add("force_pushed", bool(pushes), [e["id"] for e in pushes],
            f"{len(pushes)} force-push(es)", pushes[0].get("createdAt") if pushes else None)
        reopened = [e for e in timeline if e.get("event") == "reopened"]
        add("reopened", bool(reopened), [e["id"] for e in reopened],
            f"reopened {len(reopened)} time(s)", reopened[0].get("createdAt") if reopened else None)
        runs = [(e, kind) for e in timeline if (kind := agent_run_event(str(e.get("event"))))]
        if runs:  # only agents that record their runs on the timeline can show a failure
            failed = [e for e, kind in runs if kind == "failed"]
            add("agent_failure", bool(failed), [e["id"] for e in failed],
                f"{len(failed)} failed agent run(s)", failed[0].get("createdAt") if failed else None)
    return out


def from_result(result: Mapping[str, Any], source: str = "results") -> list[OutcomeRecord]:
    """The outcomes a stored result's evidence shows (``result`` as stored JSON), under the
    settings it was scored with (:func:`stored_settings`)."""
    evidence = result.get("evidence") or {}
    return from_facts(str(result.get("repository") or evidence.get("repository") or ""),
                      evidence.get("facts") or {}, source, stored_settings(result))


def with_composite(records: Sequence[OutcomeRecord]) -> list[OutcomeRecord]:
    """``records`` plus one ``agent_failed`` per PR: true when any composite part is true; false
    only when ``rejected`` is known (the PR was closed) and every part seen is false."""
    by_pr: dict[Key, list[OutcomeRecord]] = {}
    for r in records:
        by_pr.setdefault(key_of(r), []).append(r)
    out = [r for r in records if r.outcome != "agent_failed"]
    for rs in by_pr.values():
        parts = [r for r in rs if r.outcome in COMPOSITE]
        hits = [r for r in parts if r.value]
        if hits or any(r.outcome == "rejected" for r in parts):
            first = rs[0]
            out.append(OutcomeRecord(
                first.repository, first.number, "agent_failed", bool(hits),
                [e for r in hits for e in r.evidence] or [f"pr:{first.number}"],
                ", ".join(sorted({r.outcome for r in hits})) or "none of " + ", ".join(COMPOSITE),
                "derived"))
    return out


def merge_records(*sources: Iterable[OutcomeRecord]) -> list[OutcomeRecord]:
    """One record per (PR, outcome); a true record wins over a false one, else the first seen."""
    chosen: dict[tuple[Key, str], OutcomeRecord] = {}
    for source in sources:
        for r in source:
            k = (key_of(r), r.outcome)
            if k not in chosen or (r.value and not chosen[k].value):
                chosen[k] = r
    return list(chosen.values())


def read_jsonl(path: Path) -> list[OutcomeRecord]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(OutcomeRecord.from_json(json.loads(line)))
            except KeyError as exc:
                raise ValueError(f"{path}:{n}: not an outcome record (missing {exc})") from exc
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not an outcome record (not JSON: {exc.msg} at "
                                 f"column {exc.colno})") from exc
            except (ValueError, TypeError, AttributeError) as exc:
                raise ValueError(f"{path}:{n}: not an outcome record ({exc})") from exc
    return out


def write_jsonl(path: Path, records: Iterable[OutcomeRecord]) -> int:
    lines = [r.to_json() for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return len(lines)


# --------------------------------------------------------------------------- history scan


@dataclass(frozen=True)
class PullSummary:
    """What the scan needs of one PR (from ``GET /repos/{o}/{r}/pulls?state=closed``)."""

    number: int
    title: str
    body: str
    merged_at: str | None
    closed_at: str | None
    merge_commit_sha: str | None
    base_ref: str
    url: str

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> PullSummary:
        return cls(number=int(data["number"]), title=str(data.get("title") or ""),
                   body=str(data.get("body") or ""), merged_at=data.get("merged_at"),
                   closed_at=data.get("closed_at"), merge_commit_sha=data.get("merge_commit_sha"),
                   base_ref=str((data.get("base") or {}).get("ref") or ""),
                   url=str(data.get("html_url") or ""))


@dataclass(frozen=True)
class CommitSummary:
    sha: str
    message: str
    date: str | None
    url: str


def _parse(when: str | None) -> datetime | None:
    if not when:
        return None
    return datetime.fromisoformat(when.replace("Z", "+00:00")).astimezone(UTC)


# The commit index's key length: reverted_sha matches 7 to 40 hex digits ([0-9a-f]{7,40}), so no
# SHA a commit reverts is shorter than the key, and every one is found by its first digits.
_SHA_KEY: Final = 7
assert reverted_sha("This reverts commit " + "0" * (_SHA_KEY - 1)) is None, "a SHA key too long"


@dataclass
class _History:
    """What :func:`detect` looks up about the merged PRs and the base branch's commits, indexed
    once, so each PR costs a few lookups instead of a pass over every later PR and every commit.

    Positions are indexes into ``merged`` (input order), which every answer is sorted back into:
    the records list their evidence in the order the PRs and commits were given. The ``sorted(...)``
    calls in :func:`detect` are what keep it so (the revert PRs found by title and by number are a
    set, the fix-word PRs come in merge-time order); ``commits_by_key`` is built in input order."""

    merged: list[PullSummary]
    when: list[datetime]  # merge time of merged[i] (by number, as the scan has always keyed it)
    fixes_by_time: list[int]  # positions of PRs with fix words, in merge-time order
    fix_times: list[datetime]  # their merge times in that order, for bisect
    revert_of_title: dict[str, list[int]]  # 'Revert "<title>"' PRs by the title they revert
    revert_of_number: dict[int, list[int]]  # 'Reverts o/r#N' PRs by N
    # Of the PRs with fix words (only they can be follow-up fixes; the others' are empty): the
    texts: list[str]  # title and body, where a later PR mentions this one by its URL ...
    links: list[frozenset[int]]  # ... or by number, linked in this repository
    # (position, the SHA it reverts) of the commits that revert one, by that SHA's first digits;
    # in input order
    commits_by_key: dict[str, list[tuple[int, str]]]


def _history(repository: str, merged: list[PullSummary], commits: Sequence[CommitSummary],
             merged_when: Mapping[int, datetime]) -> _History:
    when = [merged_when[p.number] for p in merged]
    revert_of_title: dict[str, list[int]] = {}
    revert_of_number: dict[int, list[int]] = {}
    texts, links, fixy = [], [], []
    for i, o in enumerate(merged):
        if m := REVERT_TITLE.match(o.title):
            revert_of_title.setdefault(m.group("title"), []).append(i)
        for n in {int(x.group("n")) for x in REVERTS_PR.finditer(o.body)
                  if x.group("repo") in (None, repository)}:
            revert_of_number.setdefault(n, []).append(i)
        text = f"{o.title}\n{o.body}"
        fix = bool(FIX_WORDS.search(text))
        fixy.append(fix)
        texts.append(text if fix else "")
        links.append(frozenset(link.number for link in linked_issues(text, repository)
                               if link.repo in (None, repository)) if fix else frozenset())
    commits_by_key: dict[str, list[tuple[int, str]]] = {}
    for j, c in enumerate(commits):
        if target := reverted_sha(c.message):
            commits_by_key.setdefault(target[:_SHA_KEY], []).append((j, target))
    fixes_by_time = sorted((i for i in range(len(merged)) if fixy[i]), key=when.__getitem__)
    return _History(merged, when, fixes_by_time, [when[i] for i in fixes_by_time],
                    revert_of_title, revert_of_number, texts, links, commits_by_key)


Reopened = Callable[[int, str], tuple[str, str] | None]
# What the history rules find about one merged PR: the later PRs that revert it, the base branch's
# commits that revert it, and the later PRs within the window that fix it.
Candidates = tuple[list[PullSummary], list[CommitSummary], list[PullSummary]]


def detect(
    repository: str,
    pulls: Sequence[PullSummary],
    commits: Sequence[CommitSummary] = (),
    reopened: Reopened | None = None,
    default_branch: str | None = None,
    window_days: float = 14.0,
) -> list[OutcomeRecord]:
    """Outcomes of ``pulls`` (closed PRs of one repository) from the later history around them.

    ``commits`` are the base branch's commits (for git's revert message); ``reopened(issue, since)``
    answers whether an issue was reopened after a time (the reopening's time and evidence URL), or
    None. Pure: the scan supplies the data, so the rules are testable without GitHub.

    Near-linear: revert PRs are indexed by the title and the PR numbers they revert, commits by
    the SHA they revert, and the merged PRs with fix words are sorted by merge time once, so a
    PR's follow-up window is a bisect away; only those candidates are compared with the PR."""
    merged = [p for p in pulls if p.merged_at]
    merged_when = {p.number: at for p in merged if (at := _parse(p.merged_at)) is not None}
    h = _history(repository, merged, commits, merged_when)
    window = timedelta(days=window_days)

    def candidates(pr: PullSummary) -> Candidates:
        merged_at = merged_when[pr.number]
        # Reverted: GitHub's revert PR (title 'Revert "<title>"', body 'Reverts o/r#N') or a
        # commit on the base branch whose message says 'This reverts commit <merge sha>'.
        found = {*h.revert_of_title.get(pr.title, ()), *h.revert_of_number.get(pr.number, ())}
        reverts = [h.merged[i] for i in sorted(found)
                   if h.merged[i].number != pr.number and h.when[i] > merged_at]
        sha = pr.merge_commit_sha
        by_commit = []
        if sha:
            by_commit = [commits[j] for j, target in h.commits_by_key.get(sha[:_SHA_KEY], ())
                         if sha.startswith(target)]
        # Follow-up fix: a later merged PR within the window that refers to this one with fix words.
        first = bisect_right(h.fix_times, merged_at)
        try:
            last = bisect_right(h.fix_times, merged_at + window, lo=first)
        except OverflowError:  # a window past either end of the calendar
            last = len(h.fix_times) if window > timedelta(0) else first
        fixes = [h.merged[i] for i in sorted(
            i for i in h.fixes_by_time[first:last]
            if h.merged[i].number != pr.number
            and ((pr.url and pr.url in h.texts[i]) or pr.number in h.links[i]))
            if h.merged[i] not in reverts]
        return reverts, by_commit, fixes

    return _history_records(repository, pulls, candidates, reopened, default_branch, window_days)


def _history_records(
    repository: str,
    pulls: Sequence[PullSummary],
    candidates: Callable[[PullSummary], Candidates],
    reopened: Reopened | None,
    default_branch: str | None,
    window_days: float,
) -> list[OutcomeRecord]:
    """The records of :func:`detect`, in its order, given how a merged PR's :data:`Candidates` are
    found (``candidates``, asked once for each merged PR on the default branch): how the records
    are built is kept apart from how the candidates are found, which tests/outcomes_history.py
    does the first, pairwise way."""
    out: list[OutcomeRecord] = []
    for pr in pulls:
        if not pr.merged_at:
            out.append(OutcomeRecord(repository, pr.number, "rejected", True, [pr.url or
                                     f"pr:{pr.number}"], "closed without merging", "scan",
                                     pr.closed_at))
            continue
        if default_branch and pr.base_ref and pr.base_ref != default_branch:
            continue
        out.append(OutcomeRecord(repository, pr.number, "rejected", False, [f"pr:{pr.number}"],
                                 "merged", "scan"))
        reverts, by_commit, fixes = candidates(pr)
        hits = [o.url for o in reverts] + [c.url for c in by_commit]
        when = min([o.merged_at or "" for o in reverts] + [c.date or "" for c in by_commit],
                   default=None)
        out.append(OutcomeRecord(repository, pr.number, "reverted", bool(hits), hits,
                                 f"reverted by {len(hits)} later change(s)" if hits else
                                 "no later revert found", "scan", when or None))
        out.append(OutcomeRecord(repository, pr.number, "follow_up_fix", bool(fixes),
                                 [o.url for o in fixes],
                                 f"fixed by #{', #'.join(str(o.number) for o in fixes)}" if fixes
                                 else f"no follow-up fix within {window_days:g} days", "scan",
                                 fixes[0].merged_at if fixes else None))
        # Reopened task: an issue this PR closes, reopened after the merge.
        closing = [link for link in linked_issues(f"{pr.title}\n{pr.body}", repository)
                   if link.closing and link.repo in (None, repository)]
        if closing and reopened is not None:
            seen = [(link.number, found) for link in closing
                    if (found := reopened(link.number, pr.merged_at))]
            out.append(OutcomeRecord(repository, pr.number, "reopened_task", bool(seen),
                                     [url for _, (_, url) in seen],
                                     ", ".join(f"#{n} reopened {w}" for n, (w, _) in seen) or
                                     f"none of {len(closing)} closed issue(s) was reopened",
                                     "scan", seen[0][1][0] if seen else None))
    return out


class Budget:
    """A request budget for a scan: ``spend`` returns False once it is used up."""

    def __init__(self, limit: int) -> None:
        self.limit, self.used = limit, 0

    def spend(self) -> bool:
        if self.used >= self.limit:
            return False
        self.used += 1
        return True


def scan_history(
    get: Callable[[str, dict[str, Any]], Any],
    repository: str,
    since: str | None = None,
    max_requests: int = 500,
    window_days: float = 14.0,
) -> tuple[list[OutcomeRecord], list[str]]:
    """Scan a repository's closed PRs (updated since ``since``) and its default branch, within a
    request budget. ``get(path, params)`` answers one REST GET (the JSON). Returns the outcomes
    and notes on what the budget or GitHub cut short."""
    budget = Budget(max_requests)
    notes: list[str] = []
    base = f"/repos/{repository}"
    if not budget.spend():
        return [], ["no request budget"]
    default_branch = str((get(base, {}) or {}).get("default_branch") or "") or None
    pulls: list[PullSummary] = []
    cutoff = _parse(since) if since else None
    page = 1
    while True:
        if not budget.spend():
            notes.append(f"request budget ({max_requests}) used up while listing PRs; older PRs "
                         "were not scanned")
            break
        batch = get(f"{base}/pulls", {"state": "closed", "sort": "updated", "direction": "desc",
                                      "per_page": 100, "page": page}) or []
        fresh = [PullSummary.of(d) for d in batch
                 if not cutoff or (_parse(d.get("updated_at")) or cutoff) >= cutoff]
        pulls.extend(fresh)
        if len(batch) < 100 or len(fresh) < len(batch):
            break
        page += 1
    commits: list[CommitSummary] = []
    page = 1
    while default_branch:
        if not budget.spend():
            notes.append("request budget used up while listing the default branch's commits; "
                         "reverts by commit message may be missed")
            break
        params: dict[str, Any] = {"sha": default_branch, "per_page": 100, "page": page}
        if since:
            params["since"] = since
        try:
            batch = get(f"{base}/commits", params) or []
        except Exception as exc:  # a 403/404 here costs the commit-message reverts, not the scan
            if getattr(exc, "status", None) not in (403, 404):
                raise
            notes.append(f"the default branch's commits could not be read ({getattr(exc, 'status', None)}); "
                         "reverts by commit message were not looked for")
            break
        commits.extend(CommitSummary(str(c["sha"]), str((c.get("commit") or {}).get("message")
                                                         or ""),
                                     ((c.get("commit") or {}).get("committer") or {}).get("date"),
                                     str(c.get("html_url") or "")) for c in batch)
        if len(batch) < 100:
            break
        page += 1

    def reopened(issue: int, after: str) -> tuple[str, str] | None:
        if not budget.spend():
            return None
        try:
            events = get(f"{base}/issues/{issue}/events", {"per_page": 100}) or []
        except Exception as exc:
            if getattr(exc, "status", None) not in (403, 404):
                raise
            notes.append(f"issue #{issue}'s events could not be read ({getattr(exc, 'status', None)})")
            return None
        for e in events:
            if e.get("event") == "reopened" and (e.get("created_at") or "") > after:
                return str(e["created_at"]), str(e.get("url") or f"issue:{issue}")
        return None

    records = detect(repository, pulls, commits, reopened, default_branch, window_days)
    if budget.used >= max_requests:
        notes.append(f"stopped at the request budget ({max_requests}); rerun with a larger "
                     "--max-requests or a later --since for the rest")
    return records, notes


# --------------------------------------------------------------------------- bot events


def from_pull_request_event(payload: Mapping[str, Any], default_branch: str | None = None
                            ) -> list[OutcomeRecord]:
    """A ``pull_request`` ``closed`` event on the default branch: the PR's own ``rejected``
    outcome, and for a merged revert PR (``Revert "<title>"`` / ``Reverts o/r#N``) the reverted
    PR's ``reverted`` outcome."""
    if payload.get("action") != "closed":
        return []
    data = payload.get("pull_request") or {}
    repository = str((payload.get("repository") or {}).get("full_name") or "")
    branch = default_branch or (payload.get("repository") or {}).get("default_branch")
    pr = PullSummary.of(data)
    if branch and pr.base_ref and pr.base_ref != branch:
        return []
    out = [OutcomeRecord(repository, pr.number, "rejected", not pr.merged_at,
                         [pr.url or f"pr:{pr.number}"],
                         "merged" if pr.merged_at else "closed without merging", "bot",
                         pr.closed_at if not pr.merged_at else None)]
    if pr.merged_at:
        for x in REVERTS_PR.finditer(pr.body):
            if x.group("repo") in (None, repository):
                out.append(OutcomeRecord(repository, int(x.group("n")), "reverted", True,
                                         [pr.url], f"reverted by #{pr.number}", "bot",
                                         pr.merged_at))
    return out


def from_push_event(payload: Mapping[str, Any],
                    merged_by_sha: Callable[[str], int | None]) -> list[OutcomeRecord]:
    """A ``push`` to the default branch: each pushed commit whose message says ``This reverts
    commit <sha>`` marks the PR that merged ``<sha>`` (``merged_by_sha`` looks it up in the
    store) as reverted."""
    repository = str((payload.get("repository") or {}).get("full_name") or "")
    branch = (payload.get("repository") or {}).get("default_branch")
    if branch and payload.get("ref") != f"refs/heads/{branch}":
        return []
    out = []
    for c in payload.get("commits") or []:
        target = reverted_sha(str(c.get("message") or ""))
        number = merged_by_sha(target) if target else None
        if number is not None:
            out.append(OutcomeRecord(repository, number, "reverted", True,
                                     [str(c.get("url") or c.get("id") or "")],
                                     f"reverted by commit {str(c.get('id') or '')[:7]}", "bot",
                                     c.get("timestamp")))
    return out


def iter_result_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Every ``*.json`` under the given files or directories, sorted."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.json") if p.is_file())
        elif path.is_file():
            yield path
