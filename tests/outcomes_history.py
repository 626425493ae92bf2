"""Repository histories for :func:`taskeval.outcomes.detect`, and the rules as first written.

:func:`reference_detect` is the pairwise candidate selection as first written (which later PRs and
commits revert a PR, which later PRs fix it), the reference the indexed one must agree with record
for record, in the same order (tests/test_outcomes_detect.py) and is measured against
(benchmarks/outcomes_detect_bench.py). It compares every merged PR with every later one and every
commit: quadratic. Both build the records from what they select with the same
:func:`taskeval.outcomes._history_records`, so the check is of the selection, the part that differs.

:func:`random_history` makes repositories full of the shapes the rules look at: revert PRs by title
and by ``Reverts o/r#N`` (of this repository, of another, of no repository), reverts of reverts,
follow-ups by number and by URL with and without fix words, merge times that tie, unmerged PRs,
other base branches, PR numbers listed twice (pages of a listing sorted by update time overlap),
merge SHAs that share their first seven digits, and commits reverting a SHA by any prefix of it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from taskeval.evidence.vocabulary import linked_issues, reverted_sha
from taskeval.outcomes import (
    FIX_WORDS,
    REVERT_TITLE,
    REVERTS_PR,
    Candidates,
    CommitSummary,
    OutcomeRecord,
    PullSummary,
    Reopened,
    _history_records,
    _parse,
)

REPO = "acme/widgets"


# --------------------------------------------------------------------------- the reference


def _mentions(pr: PullSummary, other: PullSummary, repository: str) -> bool:
    text = f"{other.title}\n{other.body}"
    if pr.url and pr.url in text:
        return True
    return any(link.number == pr.number and link.repo in (None, repository)
               for link in linked_issues(text, repository))


def reference_detect(repository: str, pulls: Sequence[PullSummary],
                     commits: Sequence[CommitSummary] = (), reopened: Reopened | None = None,
                     default_branch: str | None = None, window_days: float = 14.0
                     ) -> list[OutcomeRecord]:
    """:func:`taskeval.outcomes.detect`, finding each PR's candidates by comparing it with every
    later merged PR and every commit."""
    merged = [p for p in pulls if p.merged_at]
    # Each merge time parsed once: every PR is compared with every later one.
    merged_when = {p.number: at for p in merged if (at := _parse(p.merged_at)) is not None}
    window = timedelta(days=window_days)

    def candidates(pr: PullSummary) -> Candidates:
        merged_at = merged_when[pr.number]
        later = [o for o in merged if o.number != pr.number and merged_when[o.number] > merged_at]
        # Reverted: GitHub's revert PR (title 'Revert "<title>"', body 'Reverts o/r#N') or a
        # commit on the base branch whose message says 'This reverts commit <merge sha>'.
        reverts = [o for o in later
                   if ((m := REVERT_TITLE.match(o.title)) and m.group("title") == pr.title)
                   or any(int(x.group("n")) == pr.number and x.group("repo") in (None, repository)
                          for x in REVERTS_PR.finditer(o.body))]
        by_commit = [c for c in commits if pr.merge_commit_sha
                     and (target := reverted_sha(c.message))
                     and pr.merge_commit_sha.startswith(target)]
        # Follow-up fix: a later merged PR within the window that refers to this one with fix words.
        fixes = [o for o in later if o not in reverts
                 and merged_when[o.number] - merged_at <= window
                 and _mentions(pr, o, repository) and FIX_WORDS.search(f"{o.title}\n{o.body}")]
        return reverts, by_commit, fixes

    return _history_records(repository, pulls, candidates, reopened, default_branch, window_days)


# --------------------------------------------------------------------------- random histories

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
WORDS = ("retries", "parser", "cache", "docs build", "login page", "CLI flags", "exporter", "queue")
FIX = ("Fix", "Hotfix:", "Follow-up to", "Repair", "Correct", "Regression in")
PLAIN = ("Add", "Speed up", "Tidy", "Refactor", "Document", "Bump")


def _when(rng: random.Random, at: datetime) -> str:
    """GitHub's spelling, now and then with an offset instead of ``Z`` (the same instant)."""
    text = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return text.replace("Z", "+00:00") if rng.random() < 0.1 else text


def random_history(rng: random.Random, size: int, *, days: float = 40.0, dense: bool = True
                   ) -> tuple[list[PullSummary], list[CommitSummary]]:
    """``size`` closed PRs over ``days`` days and the base branch's commits. ``dense``: a few
    titles, shared SHA prefixes and tied merge times, so every rule fires often (the tests);
    otherwise a repository's usual spread (the benchmark)."""
    pulls: list[PullSummary] = []
    shas: list[str] = []
    # Merge times on a grid: dense, half-days (ties, and PRs exactly a window apart); otherwise
    # spread over minutes.
    step = timedelta(hours=12) if dense else timedelta(minutes=1)
    slots = int(timedelta(days=days) / step)
    titles: list[str] = []
    for i in range(size):
        twice = dense and pulls and rng.random() < 0.08  # now and then a PR listed twice
        number = rng.choice(pulls).number if twice else 100 + i
        url = f"https://github.com/{REPO}/pull/{number}" if rng.random() > 0.05 else ""
        # Dense: any earlier PR; otherwise a recent one, as real reverts and fixes are.
        others = [p.number for p in (pulls if dense else pulls[-40:])] or [number]
        kind = rng.random()
        if kind < 0.12 and titles:  # GitHub's revert PR
            target = rng.choice(titles if dense else titles[-40:])
            title = f'Revert "{target}"' + (" " if rng.random() < 0.1 else "")
            repo = rng.choice([REPO, "", "other/repo"])
            body = f"Reverts {repo}#{rng.choice(others)}" if rng.random() < 0.8 else ""
        elif kind < 0.35:  # a fix, naming an earlier PR (or not)
            ref = rng.choice(others)
            mention = rng.choice([f"#{ref}", f"{REPO}#{ref}", f"other/repo#{ref}",
                                  f"https://github.com/{REPO}/pull/{ref}", f"closes #{ref}",
                                  f"see #{ref}0", ""])
            title = f"{rng.choice(FIX)} {rng.choice(WORDS)}" + (f" from {mention}" if dense else "")
            body = f"{mention}\n\nThe {rng.choice(WORDS)} broke after the change."
        else:
            title = f"{rng.choice(PLAIN)} {rng.choice(WORDS)}" + ("" if dense else f" ({i})")
            body = rng.choice(["", f"Fixes #{rng.randrange(1, 60)}", f"Closes #{rng.randrange(1, 60)}",
                               "Part of the roadmap.", f"Related to #{rng.choice(others)}"])
        titles.append(title)
        merged = rng.random() > 0.15
        # Dense: anywhere in the period; otherwise in number order, give or take a few hours.
        at = START + step * (rng.randrange(slots) if dense
                             else max(0, i * slots // max(size, 1) + rng.randrange(-240, 240)))
        if shas and dense and rng.random() < 0.15:  # the same first seven digits as another
            sha: str | None = rng.choice(shas)[:7] + "".join(rng.choices("0123456789abcdef", k=33))
        else:
            sha = "".join(rng.choices("0123456789abcdef", k=40))
        if rng.random() < 0.05:
            sha = None
        if sha:
            shas.append(sha)
        base = rng.choices(["main", "release", ""], [0.85, 0.1, 0.05])[0]
        when = _when(rng, at)
        pulls.append(PullSummary(number, title, body, when if merged else None,
                                 when if rng.random() > 0.05 else None,
                                 sha if merged else rng.choice([sha, None]), base, url))
    commits = []
    for j in range(size if dense else size * 3 // 2):
        if shas and rng.random() < (0.3 if dense else 0.03):
            target = rng.choice(shas)
            message = f'Revert "x"\n\nThis reverts commit {target[:rng.randrange(7, 41)]}.'
        else:
            message = f"{rng.choice(PLAIN)} {rng.choice(WORDS)}"
        at = START + timedelta(days=days * rng.random())
        commits.append(CommitSummary("".join(rng.choices("0123456789abcdef", k=40)), message,
                                     _when(rng, at) if rng.random() > 0.05 else None,
                                     f"https://github.com/{REPO}/commit/{j}"))
    return pulls, commits


def reopened_log(seed: int) -> tuple[Reopened, list[tuple[int, str]]]:
    """A deterministic ``reopened`` answer, and the log of every question asked of it (the scan
    pays a request for each, so the questions must be the same too)."""
    asked: list[tuple[int, str]] = []

    def reopened(issue: int, after: str) -> tuple[str, str] | None:
        asked.append((issue, after))
        if (issue * 7 + seed) % 3:
            return None
        return "2026-02-20T00:00:00Z", f"https://api.github.com/repos/{REPO}/issues/events/{issue}"

    return reopened, asked
