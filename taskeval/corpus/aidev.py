"""Load the AIDev-pop dataset (real PRs opened by five coding agents) into per-PR records.

The dataset is a folder per agent (``Claude_Code``, ``Copilot``, ``Cursor``, ``Devin``,
``OpenAI_Codex``), each holding CSV tables keyed by ``pr_id`` (see the dataset's README). This
module reads them with the standard library's ``csv`` (bodies exceed its default 128 KiB field
limit, so the limit is raised) into small slotted records, and nothing else: no scoring, no HTTP.
:mod:`taskeval.corpus.replay` serves the records through GitHub's REST shape.

What a table does not exist for an agent (``pr_comments.csv`` for Devin and Codex,
``pr_timelines.csv`` for Devin) is ``None`` on the record, not an empty list: "not in the data"
and "there were none" must stay different all the way to the evaluation.

The whole dataset is about 37 MB of CSV; loaded it takes a few hundred MB at most. Strings that
repeat (logins, event names, states) are interned. ``load(..., ids=...)`` keeps only the PRs asked
for, which is what the CI sample tests use.
"""

from __future__ import annotations

import csv
import os
import re
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

AGENT_FOLDERS: Final = ("Claude_Code", "Copilot", "Cursor", "Devin", "OpenAI_Codex")
# The folder is the label: the agent id each folder's PRs were opened by (the ids of
# taskeval's attribution table).
FOLDER_AGENT: Final = {
    "Claude_Code": "claude-code",
    "Copilot": "copilot",
    "Cursor": "cursor",
    "Devin": "devin",
    "OpenAI_Codex": "codex",
}
DATA_ENV: Final = "TASKEVAL_CORPUS_DIR"

_REPO_URL: Final = re.compile(
    r"^https?://[^/]+/(?:repos/)?(?P<owner>[^/\s]+)/(?P<name>[^/\s]+?)(?:\.git)?/?$"
)


def _raise_field_limit() -> None:
    limit = sys.maxsize
    while True:  # sys.maxsize overflows a C long on some platforms
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:
            limit //= 10


_raise_field_limit()


@dataclass(slots=True)
class Commit:
    sha: str
    author: str | None  # login, None when GitHub could not tie the commit to an account
    committer: str | None
    message: str


@dataclass(slots=True)
class Review:
    id: int
    user: str
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED
    submitted_at: str | None
    body: str


@dataclass(slots=True)
class Comment:
    """A conversation (issue) comment on the PR."""

    id: int
    user: str
    created_at: str | None
    body: str


@dataclass(slots=True)
class TimelineEvent:
    """One row of ``/issues/{n}/timeline`` as the dataset kept it (no ids, no payload bodies)."""

    event: str
    created_at: str | None
    actor: str | None
    commit_id: str | None
    assignee: str | None
    label: str | None
    message: str | None  # the commit message, on ``committed`` events


@dataclass(slots=True)
class Issue:
    """An issue the PR links (the task the agent was given), with its own timeline."""

    id: int
    number: int
    title: str
    user: str
    state: str
    created_at: str | None
    closed_at: str | None
    html_url: str
    body: str
    timeline: list[TimelineEvent] = field(default_factory=list)


@dataclass(slots=True)
class PullRecord:
    """One PR with everything the dataset holds about it."""

    agent: str  # the dataset folder, e.g. "OpenAI_Codex": the label
    id: int
    number: int
    title: str
    user: str
    user_id: int | None
    state: str  # open | closed
    created_at: str
    closed_at: str | None
    merged_at: str | None
    repository: str  # OWNER/REPO
    html_url: str
    body: str
    commits: list[Commit] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)
    comments: list[Comment] | None = None  # None: this agent's folder has no comments table
    timeline: list[TimelineEvent] | None = None  # None: no timeline table for this agent
    linked_issues: list[int] = field(default_factory=list)  # issue numbers in the same repo

    @property
    def merged(self) -> bool:
        return bool(self.merged_at)

    @property
    def ref(self) -> str:
        """``OWNER/REPO#N``, what ``taskeval evaluate`` takes."""
        return f"{self.repository}#{self.number}"

    @property
    def agent_id(self) -> str:
        return FOLDER_AGENT[self.agent]

    @property
    def file_stem(self) -> str:
        """``owner__repo__number``: a result file name that cannot collide across repositories."""
        owner, name = self.repository.split("/", 1)
        return f"{owner}__{name}__{self.number}"


@dataclass
class Corpus:
    root: Path
    prs: list[PullRecord]
    issues: dict[tuple[str, int], Issue]  # (owner/repo lowercased, number) -> linked issue
    _by_ref: dict[tuple[str, int], PullRecord] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_ref = {(p.repository.lower(), p.number): p for p in self.prs}

    def pull(self, repository: str, number: int) -> PullRecord | None:
        return self._by_ref.get((repository.lower(), number))

    def issue(self, repository: str, number: int) -> Issue | None:
        return self.issues.get((repository.lower(), number))

    def by_agent(self) -> dict[str, list[PullRecord]]:
        out: dict[str, list[PullRecord]] = {a: [] for a in AGENT_FOLDERS}
        for p in self.prs:
            out.setdefault(p.agent, []).append(p)
        return out

    def __len__(self) -> int:
        return len(self.prs)


def default_data_dir(repo_root: Path | None = None) -> Path:
    """``TASKEVAL_CORPUS_DIR``, else ``<checkout>/../shared/data/aidev-pop-v1`` (the first
    ``shared/data/aidev-pop-v1`` beside the checkout or one of its parents, so a worktree nested
    a level deeper finds it too; the plain ``../shared`` path when none exists)."""
    value = os.environ.get(DATA_ENV, "").strip()
    if value:
        return Path(value)
    root = repo_root or Path(__file__).resolve().parents[2]
    first = root.parent / "shared" / "data" / "aidev-pop-v1"
    for parent in root.parents:
        candidate = parent / "shared" / "data" / "aidev-pop-v1"
        if candidate.is_dir():
            return candidate
    return first


def is_corpus_dir(path: Path) -> bool:
    return all((path / folder / "prs.csv").is_file() for folder in AGENT_FOLDERS)


def repository_of(url: str) -> str | None:
    """``https://api.github.com/repos/O/R`` or ``https://github.com/O/R`` -> ``O/R``."""
    match = _REPO_URL.match(url.strip())
    if match is None:
        return None
    return f"{match['owner']}/{match['name']}"


def _rows(path: Path) -> Iterator[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        yield from csv.DictReader(handle)


def _opt(value: str | None) -> str | None:
    return value if value else None


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _event(row: dict[str, str], intern: dict[str, str]) -> TimelineEvent:
    def i(value: str | None) -> str | None:
        return intern.setdefault(value, value) if value else None

    return TimelineEvent(
        event=i(row.get("event")) or "",
        created_at=_opt(row.get("created_at")),
        actor=i(row.get("actor")),
        commit_id=_opt(row.get("commit_id")),
        assignee=i(row.get("assignee")),
        label=i(row.get("label")),
        message=_opt(row.get("message")),
    )


def load(
    root: Path | str,
    *,
    agents: Collection[str] | None = None,
    ids: Collection[int] | None = None,
) -> Corpus:
    """Read the agent folders under ``root`` (all five unless ``agents`` names some), keeping
    only the PRs whose ``id`` is in ``ids`` when given. Row order is kept (commit order is the
    listing order; the last commit is the head)."""
    base = Path(root)
    wanted = set(ids) if ids is not None else None
    intern: dict[str, str] = {}

    def s(value: str) -> str:
        return intern.setdefault(value, value)

    prs: list[PullRecord] = []
    issues: dict[tuple[str, int], Issue] = {}
    for folder in agents or AGENT_FOLDERS:
        here = base / folder
        by_id: dict[int, PullRecord] = {}
        for row in _rows(here / "prs.csv"):
            pid = int(row["id"])
            if wanted is not None and pid not in wanted:
                continue
            repository = repository_of(row["repo_url"]) or repository_of(
                row["html_url"].split("/pull/")[0]
            )
            if repository is None:
                raise ValueError(f"{here / 'prs.csv'}: PR {pid} has no readable repository URL")
            record = PullRecord(
                agent=folder, id=pid, number=int(row["number"]), title=row["title"],
                user=s(row["user"]), user_id=_int(row.get("user_id")), state=s(row["state"]),
                created_at=row["created_at"], closed_at=_opt(row.get("closed_at")),
                merged_at=_opt(row.get("merged_at")), repository=s(repository),
                html_url=row["html_url"], body=row.get("body") or "",
            )
            by_id[pid] = record
            prs.append(record)
        for row in _rows(here / "pr_commits.csv"):
            pr = by_id.get(int(row["pr_id"]))
            if pr is not None:
                pr.commits.append(Commit(row["sha"], s(row["author"]) or None,
                                         s(row["committer"]) or None, row["message"]))
        for row in _rows(here / "pr_reviews.csv"):
            pr = by_id.get(int(row["pr_id"]))
            if pr is not None:
                pr.reviews.append(Review(int(row["id"]), s(row["user"]), s(row["state"]),
                                         _opt(row["submitted_at"]), row.get("body") or ""))
        if (here / "pr_comments.csv").is_file():
            for pr in by_id.values():
                pr.comments = []
            for row in _rows(here / "pr_comments.csv"):
                pr = by_id.get(int(row["pr_id"]))
                if pr is not None and pr.comments is not None:
                    pr.comments.append(Comment(int(row["id"]), s(row["user"]),
                                               _opt(row["created_at"]), row.get("body") or ""))
        if (here / "pr_timelines.csv").is_file():
            for pr in by_id.values():
                pr.timeline = []
            for row in _rows(here / "pr_timelines.csv"):
                pr = by_id.get(int(row["pr_id"]))
                if pr is not None and pr.timeline is not None:
                    pr.timeline.append(_event(row, intern))
        wanted_issues: dict[tuple[str, int], list[PullRecord]] = {}
        if (here / "related_issues.csv").is_file():
            for row in _rows(here / "related_issues.csv"):
                pr = by_id.get(int(row["pr_id"]))
                number = _int(row.get("issue_number"))
                repo = repository_of(row.get("issue_url", "").split("/issues/")[0])
                if pr is None or number is None or repo is None:
                    continue
                if repo.lower() == pr.repository.lower() and number not in pr.linked_issues:
                    pr.linked_issues.append(number)
                wanted_issues.setdefault((repo.lower(), number), []).append(pr)
        if wanted_issues and (here / "issues.csv").is_file():
            by_issue_key: dict[str, Issue] = {}
            for row in _rows(here / "issues.csv"):
                repo = repository_of(row["repo_url"])
                number = _int(row.get("number"))
                if repo is None or number is None or (repo.lower(), number) not in wanted_issues:
                    continue
                issue = Issue(
                    id=int(row["id"]), number=number, title=row["title"], user=s(row["user"]),
                    state=s(row["state"]), created_at=_opt(row.get("created_at")),
                    closed_at=_opt(row.get("closed_at")), html_url=row["html_url"],
                    body=row.get("body") or "",
                )
                issues[(repo.lower(), number)] = issue
                owner, name = repo.split("/", 1)
                by_issue_key[f"{owner}__{name}__{number}".lower()] = issue
            if (here / "issue_timelines.csv").is_file() and by_issue_key:
                for row in _rows(here / "issue_timelines.csv"):
                    found = by_issue_key.get(row["issue_id"].lower())
                    if found is not None:
                        found.timeline.append(_event(row, intern))
    return Corpus(base, prs, issues)
