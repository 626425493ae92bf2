"""Held-out samples of people's words and of rejected PRs, for labelling by people (docs/labelling.md).

Why: taskeval reads what people wrote on an agent's PR (a reviewer's "this is wrong", a
maintainer's "superseded by #12", a stale bot's notice) to tell why the PR ended and whose fault
that was. To measure that reading honestly it needs a corpus labelled by people, before anyone
looks at a score, on repositories the rules were never tuned on. This tool draws that corpus from
AIDev-pop and nothing else: it never runs, imports or prints any scoring, closure class or signal.

* :func:`side` splits repositories, each wholly, into ``train`` and ``heldout`` by a salted hash.
* ``sample-comments`` draws 2,100 units of people's words (conversation comments, non-empty
  review bodies, PR descriptions), stratified, with a fixed seed, and marks 300 of them for a
  second, independent labelling; ``sample-faults`` draws 420 closed-unmerged PRs for PR-level
  fault labels. Both write IDs only into ``docs/labels/``.
* ``batch`` writes the files the labellers read (the texts) OUTSIDE the repository.
* ``check`` validates the label files; ``kappa`` computes Cohen's kappa of the double labels.

    python benchmarks/comment_sample.py sample-comments
    python benchmarks/comment_sample.py sample-faults
    python benchmarks/comment_sample.py batch --out /work/label-batches
    python benchmarks/comment_sample.py check
    python benchmarks/comment_sample.py kappa

Nothing of the data is committed: the sample files hold IDs and strata, the label files IDs,
classes, labeller names and (faults only) a short note in the labeller's own words.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Final, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import label_tool
from taskeval import csvcells
from taskeval.corpus import aidev
from taskeval.corpus.labels import cohen_kappa

ROOT: Final = Path(__file__).resolve().parents[1]
LABELS_DIR: Final = ROOT / "docs" / "labels"
COMMENT_SAMPLE: Final = LABELS_DIR / "comments-sample.csv"
FAULT_SAMPLE: Final = LABELS_DIR / "fault-sample.csv"
COMMENT_LABELS: Final = LABELS_DIR / "comments.csv"
COMMENT_SECOND: Final = LABELS_DIR / "comments.second.csv"
FAULT_LABELS: Final = LABELS_DIR / "faults.csv"

# One verdict per unit, in tie-break order: when several fit, the first one wins
# (docs/labelling.md, "People's words: one verdict per comment").
VERDICTS: Final = (
    "relayed",
    "work_wrong",
    "elsewhere",
    "trial",
    "not_wanted",
    "inactivity",
    "change_request",
    "approval",
    "neutral",
)
# Whose fault a closed-unmerged PR's rejection was (docs/labelling.md, "Whose fault").
FAULTS: Final = ("agent", "project", "unclear")

SPLIT_SALT: Final = "taskeval-heldout-split-v7"  # the most even PR count of v1..v7 (docs/labelling.md)
SIDES: Final = ("train", "heldout")
SEED: Final = 2026
COMMENT_TOTAL: Final = 2100
DOUBLE_TOTAL: Final = 300
FAULT_TOTAL: Final = 420
REPO_CAP_UNITS: Final = 25  # units per repository in the comment sample
PR_CAP_UNITS: Final = 6  # units per PR in the comment sample
REPO_CAP_FAULTS: Final = 8  # PRs per repository in the fault sample
COMMENT_BATCHES: Final = 5
FAULT_BATCHES: Final = 2
TEXT_LIMIT: Final = 2500
CONTEXT_LIMIT: Final = 300
NOTE_LIMIT: Final = 80
# A comment posted this soon after the close or merge still belongs to it ("closing because…"
# is often written a moment after the button).
CLOSE_GRACE: Final = timedelta(minutes=10)

# The agent's own accounts where the agent has one; Codex, Claude Code and Cursor work under their
# operator's account (the PR author).
AGENT_LOGINS: Final[dict[str, frozenset[str]]] = {
    "Copilot": frozenset({"Copilot", "copilot-swe-agent[bot]"}),
    "Devin": frozenset({"devin-ai-integration[bot]"}),
}
OPERATOR_IS_AUTHOR: Final = frozenset({"Claude_Code", "Cursor", "OpenAI_Codex"})
KIND_ORDER: Final = {"body": 0, "review": 1, "comment": 2}

K = TypeVar("K", bound=Hashable)


def side(repository: str) -> str:
    """``train`` or ``heldout`` for a repository ``owner/name`` (case-insensitive): the first byte
    of ``sha256(SPLIT_SALT + ":" + owner/name lowercased)``, even -> train, odd -> heldout."""
    digest = hashlib.sha256(f"{SPLIT_SALT}:{repository.strip().lower()}".encode()).digest()
    return SIDES[digest[0] & 1]


# The held-out side split again, by another salted hash fixed before any of its outputs was read
# unit by unit (docs/labelling.md, "The held-out side, split again"): ``heldout-dev`` repositories
# join the fitting side (their mistakes may be read and their labels fitted on); ``heldout-test``
# repositories are the ones the reported figures come from, and nobody reads their mistakes.
PARTS_SALT: Final = "taskeval-heldout-dev-v1"
PARTS: Final = ("train", "heldout-dev", "heldout-test")
FIT_PARTS: Final = ("train", "heldout-dev")


def part(repository: str) -> str:
    """``train``, ``heldout-dev`` or ``heldout-test`` for a repository: its :func:`side`, and for a
    held-out one the first byte of ``sha256(PARTS_SALT + ":" + owner/name lowercased)``, even ->
    dev, odd -> test."""
    if side(repository) == "train":
        return "train"
    digest = hashlib.sha256(f"{PARTS_SALT}:{repository.strip().lower()}".encode()).digest()
    return ("heldout-dev", "heldout-test")[digest[0] & 1]


def end_state(pr: aidev.PullRecord) -> str:
    return "merged" if pr.merged else ("closed" if pr.state == "closed" else "open")


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of people's words with text, and what the sample is stratified by."""

    id: str  # comment:<id> | review:<id> | body:<pr_id>
    pr_id: int
    agent: str  # the dataset folder
    repository: str
    side: str
    kind: str  # comment | review | body
    role: str  # agent | operator | bot | person
    position: str  # last3 | earlier | after | open
    author: str
    when: str
    end: str  # the PR's end state: merged | closed | open
    text: str

    def stratum(self) -> tuple[str, str, str, str, str, str]:
        return (self.agent, self.side, self.end, self.position, self.role, self.kind)


def _time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def is_agent(pr: aidev.PullRecord, login: str) -> bool:
    return login in AGENT_LOGINS.get(pr.agent, frozenset())


def operator_of(pr: aidev.PullRecord) -> str | None:
    """Who ran the agent. Codex, Claude Code, Cursor: the PR author. Copilot: the person who
    started its session or assigned it, from the timeline; Copilot without that, and Devin (no
    timeline): the first person, neither agent nor bot, who commented on or reviewed the PR."""
    if pr.agent in OPERATOR_IS_AUTHOR:
        return pr.user

    def person(login: str | None) -> bool:
        return bool(login) and not is_agent(pr, login or "") and not (login or "").endswith("[bot]")

    events = pr.timeline or []
    for kinds in (("copilot_work_started",), ("assigned",)):
        for e in events:
            if e.event in kinds:
                for login in (e.actor, e.assignee):
                    if person(login):
                        return login
    said = [(m.created_at or "", m.user) for m in pr.comments or []]
    said += [(r.submitted_at or "", r.user) for r in pr.reviews]
    for _, login in sorted(said):
        if person(login):
            return login
    return None


def role_of(pr: aidev.PullRecord, login: str, operator: str | None) -> str:
    if is_agent(pr, login):
        return "agent"
    if pr.agent in OPERATOR_IS_AUTHOR and login == pr.user:
        return "operator"
    if login.endswith("[bot]"):
        return "bot"
    if operator is not None and login == operator:
        return "operator"
    return "person"


def closed_by(pr: aidev.PullRecord) -> str | None:
    """The actor of the last ``closed`` event, when the PR has a timeline."""
    for e in reversed(pr.timeline or []):
        if e.event == "closed" and e.actor:
            return e.actor
    return None


def units_of(pr: aidev.PullRecord) -> list[Unit]:
    """The PR's units with text, in time order (the description at the PR's creation)."""
    operator = operator_of(pr)
    where = side(pr.repository)
    end = end_state(pr)
    raw: list[tuple[str, str, str, str, str]] = []  # when, kind, id, author, text
    if pr.body.strip():
        raw.append((pr.created_at, "body", f"body:{pr.id}", pr.user, pr.body))
    for r in pr.reviews:
        if r.body.strip():
            raw.append((r.submitted_at or pr.created_at, "review", f"review:{r.id}", r.user, r.body))
    for m in pr.comments or []:
        if m.body.strip():
            raw.append((m.created_at or pr.created_at, "comment", f"comment:{m.id}", m.user, m.body))
    raw.sort(key=lambda u: (u[0], KIND_ORDER[u[1]], u[2]))
    positions = ["open"] * len(raw)
    finish = _time(pr.merged_at or pr.closed_at) if end != "open" else None
    if finish is not None:
        before = [i for i, u in enumerate(raw) if (_time(u[0]) or finish) <= finish + CLOSE_GRACE]
        for i in range(len(raw)):
            positions[i] = "after"
        for i in before:
            positions[i] = "earlier"
        for i in before[-3:]:
            positions[i] = "last3"
    return [
        Unit(id=uid, pr_id=pr.id, agent=pr.agent, repository=pr.repository, side=where, kind=kind,
             role="agent" if kind == "body" else role_of(pr, author, operator), position=pos,
             author=author, when=when, end=end, text=text)
        for (when, kind, uid, author, text), pos in zip(raw, positions, strict=True)
    ]


def all_units(corpus: aidev.Corpus) -> list[Unit]:
    return [u for pr in sorted(corpus.prs, key=lambda p: p.id) for u in units_of(pr)]


def allocate(sizes: dict[K, int], total: int, power: float) -> dict[K, int]:
    """Split ``total`` over strata in proportion to ``size ** power`` (0: equal, 0.5: square
    root, 1: proportional), never above a stratum's size; what a full stratum cannot take goes
    to the others. Largest remainders round, ties by key order."""
    out = {k: 0 for k in sizes}
    left = min(total, sum(sizes.values()))
    open_ = {k for k, n in sizes.items() if n > 0}
    while left > 0 and open_:
        weights = {k: (sizes[k] - out[k]) ** power if power else 1.0 for k in open_}
        norm = sum(weights.values())
        shares = {k: left * w / norm for k, w in weights.items()}
        give = {k: min(math.floor(s), sizes[k] - out[k]) for k, s in shares.items()}
        given = sum(give.values())
        if given < left:
            order = sorted(open_, key=lambda k: (-(shares[k] - math.floor(shares[k])), str(k)))
            for k in order:
                if given >= left:
                    break
                if out[k] + give[k] < sizes[k]:
                    give[k] += 1
                    given += 1
        for k, n in give.items():
            out[k] += n
        left -= given
        open_ = {k for k in open_ if out[k] < sizes[k]}
        if given == 0:
            break
    return out


def draw(
    pools: dict[K, list[Unit]],
    total: int,
    power: float,
    rng: random.Random,
    taken_repo: Counter[str],
    taken_pr: Counter[int],
) -> list[Unit]:
    """Draw ``total`` units over the strata by :func:`allocate`, at random within a stratum,
    skipping units whose repository or PR is at its cap; a stratum that runs short passes its
    share on in the next round."""
    queues = {k: rng.sample(v, len(v)) for k, v in sorted(pools.items(), key=lambda kv: str(kv[0]))}
    picked: list[Unit] = []

    def fits(u: Unit) -> bool:
        return taken_repo[u.repository] < REPO_CAP_UNITS and taken_pr[u.pr_id] < PR_CAP_UNITS

    while len(picked) < total:
        for k in queues:
            queues[k] = [u for u in queues[k] if fits(u)]
        sizes = {k: len(q) for k, q in queues.items() if q}
        if not sizes:
            break
        shares = allocate(sizes, total - len(picked), power)
        before = len(picked)
        for k, n in shares.items():
            queue, got = queues[k], 0
            while queue and got < n:
                u = queue.pop(0)
                if fits(u):
                    picked.append(u)
                    taken_repo[u.repository] += 1
                    taken_pr[u.pr_id] += 1
                    got += 1
        if len(picked) == before:
            break
    return picked


def sample_comments(units: Sequence[Unit], seed: int = SEED) -> tuple[list[Unit], set[str]]:
    """The comment sample and its double-labelled subset. Half the sample is the last three units
    before the close of closed-unmerged PRs (where the reason for a rejection is written); the
    other half is everything else (merged, open, earlier, after). Within each half the strata
    (agent folder, side, end state, position, role, kind) get shares by the square root of their
    sizes, so that every stratum is seen and none swamps the rest."""
    rng = random.Random(seed)
    taken_repo: Counter[str] = Counter()
    taken_pr: Counter[int] = Counter()
    heavy: dict[tuple[str, ...], list[Unit]] = defaultdict(list)
    rest: dict[tuple[str, ...], list[Unit]] = defaultdict(list)
    for u in units:
        (heavy if (u.end, u.position) == ("closed", "last3") else rest)[u.stratum()].append(u)
    half = COMMENT_TOTAL // 2
    picked = draw(heavy, half, 0.5, rng, taken_repo, taken_pr)
    picked += draw(rest, COMMENT_TOTAL - len(picked), 0.5, rng, taken_repo, taken_pr)
    picked.sort(key=lambda u: (u.pr_id, u.when, KIND_ORDER[u.kind], u.id))
    by_stratum: dict[tuple[str, ...], list[Unit]] = defaultdict(list)
    for u in picked:
        key = (u.agent, u.side, "closed-last3" if (u.end, u.position) == ("closed", "last3") else "other",
               u.role)
        by_stratum[key].append(u)
    shares = allocate({k: len(v) for k, v in by_stratum.items()}, DOUBLE_TOTAL, 0.5)
    double: set[str] = set()
    for k in sorted(by_stratum):
        double.update(u.id for u in rng.sample(by_stratum[k], shares[k]))
    return picked, double


def sample_faults(corpus: aidev.Corpus, seed: int = SEED) -> list[aidev.PullRecord]:
    """Closed-unmerged PRs: per side, as equal a share per agent folder as the folder has, at most
    :data:`REPO_CAP_FAULTS` per repository, at random with a fixed seed."""
    rng = random.Random(seed)
    pools: dict[tuple[str, str], list[aidev.PullRecord]] = defaultdict(list)
    for pr in sorted(corpus.prs, key=lambda p: p.id):
        if end_state(pr) == "closed":
            pools[(pr.agent, side(pr.repository))].append(pr)
    queues = {k: rng.sample(v, len(v)) for k, v in sorted(pools.items())}
    taken: Counter[str] = Counter()
    out: list[aidev.PullRecord] = []
    per_side = {s: FAULT_TOTAL // len(SIDES) for s in SIDES}
    for where in SIDES:
        got = 0
        while got < per_side[where]:
            for k in queues:
                queues[k] = [p for p in queues[k] if taken[p.repository] < REPO_CAP_FAULTS]
            sizes = {k: len(q) for k, q in queues.items() if k[1] == where and q}
            if not sizes:
                break
            shares = allocate(sizes, per_side[where] - got, 0.0)
            before = got
            for k, n in shares.items():
                queue, have = queues[k], 0
                while queue and have < n:
                    pr = queue.pop(0)
                    if taken[pr.repository] < REPO_CAP_FAULTS:
                        out.append(pr)
                        taken[pr.repository] += 1
                        have += 1
                        got += 1
            if got == before:
                break
    return sorted(out, key=lambda p: p.id)


# --- label files -------------------------------------------------------------------------------


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csvcells.writer(handle, lineterminator="\n")
        out.writerow(header)
        for row in rows:
            out.writerow(row)
            n += 1
    return n


def class_agreement(pairs: Sequence[tuple[str, str]]) -> dict[str, dict[str, float | int | None]]:
    """Per class: how often each labeller used it, how often both did on the same unit, and the
    specific agreement ``2 * both / (first + second)`` (None when neither used it)."""
    out: dict[str, dict[str, float | int | None]] = {}
    names = sorted({a for a, _ in pairs} | {b for _, b in pairs},
                   key=lambda c: (VERDICTS.index(c) if c in VERDICTS else len(VERDICTS), c))
    for name in names:
        first = sum(a == name for a, _ in pairs)
        second = sum(b == name for _, b in pairs)
        both = sum(a == b == name for a, b in pairs)
        out[name] = {"first": first, "second": second, "both": both,
                     "agreement": 2 * both / (first + second) if first + second else None}
    return out


def pairs_of(first: Sequence[dict[str, str]], second: Sequence[dict[str, str]]) -> list[tuple[str, str]]:
    one = {r["id"]: r["verdict"] for r in first}
    two = {r["id"]: r["verdict"] for r in second}
    return [(one[i], two[i]) for i in sorted(one.keys() & two.keys())]


def check_rows(
    rows: Sequence[dict[str, str]],
    *,
    key: str,
    label: str,
    classes: Sequence[str],
    known: set[str],
    columns: Sequence[str],
    note: str | None = None,
) -> list[str]:
    """Problems in one label file's rows: missing columns, unknown ids, unknown classes,
    duplicate ids, empty labeller, notes too long or quoting."""
    problems: list[str] = []
    if rows:
        missing = [c for c in columns if c not in rows[0]]
        if missing:
            return [f"missing columns: {', '.join(missing)}"]
    seen: set[str] = set()
    for n, row in enumerate(rows, start=2):
        ident = (row.get(key) or "").strip()
        if not ident:
            problems.append(f"line {n}: no {key}")
            continue
        if ident in seen:
            problems.append(f"line {n}: duplicate {key} {ident}")
        seen.add(ident)
        if ident not in known:
            problems.append(f"line {n}: {key} {ident} is not in the sample")
        value = (row.get(label) or "").strip()
        if value not in classes:
            problems.append(f"line {n}: unknown {label} {value!r} (one of {', '.join(classes)})")
        if not (row.get("labeller") or "").strip():
            problems.append(f"line {n}: no labeller")
        if note is not None:
            text = row.get(note) or ""
            if len(text) > NOTE_LIMIT:
                problems.append(f"line {n}: note longer than {NOTE_LIMIT} characters")
            if '"' in text or "“" in text:
                problems.append(f"line {n}: note quotes text; write it in your own words")
    return problems


def check_files(labels_dir: Path = LABELS_DIR) -> tuple[list[str], list[str]]:
    """(problems, files checked) for the label files present under ``labels_dir``."""
    problems: list[str] = []
    checked: list[str] = []
    sample_path, fault_path = labels_dir / COMMENT_SAMPLE.name, labels_dir / FAULT_SAMPLE.name
    sample = read_csv(sample_path) if sample_path.is_file() else []
    comment_ids = {r["id"] for r in sample}
    double_ids = {r["id"] for r in sample if r.get("double") == "1"}
    fault_ids = {r["pr_id"] for r in read_csv(fault_path)} if fault_path.is_file() else set()
    specs: list[tuple[Path, str, str, Sequence[str], set[str], Sequence[str], str | None]] = [
        (labels_dir / COMMENT_LABELS.name, "id", "verdict", VERDICTS, comment_ids,
         ("id", "verdict", "labeller"), None),
        (labels_dir / COMMENT_SECOND.name, "id", "verdict", VERDICTS, double_ids,
         ("id", "verdict", "labeller"), None),
        (labels_dir / FAULT_LABELS.name, "pr_id", "fault", FAULTS, fault_ids,
         ("pr_id", "fault", "labeller", "note"), "note"),
    ]
    for path, key, label, classes, known, columns, note in specs:
        if not path.is_file():
            continue
        checked.append(path.name)
        found = check_rows(read_csv(path), key=key, label=label, classes=classes, known=known,
                           columns=columns, note=note)
        problems += [f"{path.name}: {p}" for p in found]
    first, second = labels_dir / COMMENT_LABELS.name, labels_dir / COMMENT_SECOND.name
    if first.is_file() and second.is_file():
        by_id = {r["id"]: r.get("labeller", "") for r in read_csv(first)}
        for r in read_csv(second):
            if r["id"] in by_id and by_id[r["id"]].strip() == (r.get("labeller") or "").strip():
                problems.append(f"{second.name}: {r['id']} labelled twice by the same labeller")
    return problems, checked


# --- batches -----------------------------------------------------------------------------------


def _short(text: str, limit: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + " … [cut]"


def _flat(text: str, limit: int) -> str:
    return _short(" ".join((text or "").split()), limit)


COMMENT_HEADER: Final = """\
# Labelling batch {name}: {count} units of people's words on AI-agent pull requests.
# Give each unit ONE verdict, from the guide docs/labelling.md, section
# "People's words: one verdict per comment" (read it first; first class that fits wins):
#   {classes}
# Judge the unit's own words (TEXT); BEFORE is only context. Do not look up any taskeval score.
# role: agent (for Codex, Claude Code and Cursor the PR description counts as the agent's,
# though posted under its operator's account), operator (who ran the agent), bot, person.
# Write a CSV file named {csv_name} with the header line
#   id,verdict,labeller
# and one line per unit, e.g.  comment:123456789,change_request,alice
# Your labeller name is the same on every line. Do not copy any text into the CSV.
"""

FAULT_HEADER: Final = """\
# Labelling batch {name}: {count} pull requests opened by AI agents and closed without merging.
# Give each PR ONE fault, from docs/labelling.md, section "Whose fault a rejection was":
#   agent | project | unclear
# Read everything shown; do not look up any taskeval score.
# Write a CSV file named {csv_name} with the header line
#   pr_id,fault,labeller,note
# one line per PR; note = at most 80 characters in your own words (no quoted PR text), e.g.
#   3158615630,project,alice,maintainer says done in another PR
"""


def render_unit(n: int, count: int, unit: Unit, pr: aidev.PullRecord, before: Sequence[Unit]) -> str:
    closer = closed_by(pr)
    state = {"merged": "merged", "closed": "closed without merging", "open": "open"}[end_state(pr)]
    if end_state(pr) != "open":
        state += f", closed by {closer}" if closer else ", closed by: unknown (not in the data)"
    lines = [
        f"===== UNIT {n}/{count}  id={unit.id}",
        f"kind={unit.kind}  role={unit.role}  position={unit.position}  author={unit.author}"
        f"  at={unit.when}",
        f"PR: {pr.ref} ({pr.agent})  state: {state}",
        f"PR title: {_flat(pr.title, 300)}",
        "BEFORE:" if before else "BEFORE: (nothing; this is the first unit)",
    ]
    lines += [f"  [{b.kind} by {b.author} ({b.role})] {_flat(b.text, CONTEXT_LIMIT)}" for b in before]
    lines += ["TEXT:", _short(unit.text, TEXT_LIMIT), ""]
    return "\n".join(lines) + "\n"


def write_batches(corpus: aidev.Corpus, out: Path, seed: int = SEED) -> dict[str, int]:
    """The labellers' files under ``out`` (outside the repository): comments-1..5 and
    comments-double (the double units in another order), faults-1..2."""
    sample = read_csv(COMMENT_SAMPLE)
    faults = read_csv(FAULT_SAMPLE)
    by_pr = {p.id: p for p in corpus.prs}
    units: dict[str, tuple[Unit, list[Unit]]] = {}
    wanted = {int(r["pr_id"]) for r in sample}
    for pid in sorted(wanted):
        seq = units_of(by_pr[pid])
        for i, u in enumerate(seq):
            units[u.id] = (u, seq[max(0, i - 2):i])
    missing = [r["id"] for r in sample if r["id"] not in units]
    if missing:
        raise SystemExit(f"comment_sample: {len(missing)} sampled ids not in the data, e.g. {missing[:3]}")
    rng = random.Random(seed + 1)
    ids = [r["id"] for r in sample]
    order = rng.sample(ids, len(ids))
    double = [r["id"] for r in sample if r["double"] == "1"]
    double_order = random.Random(seed + 2).sample(double, len(double))
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}

    def comments_file(name: str, chunk: Sequence[str], csv_name: str) -> None:
        parts = [COMMENT_HEADER.format(name=name, count=len(chunk), classes=" | ".join(VERDICTS),
                                       csv_name=csv_name)]
        if name == "comments-double.txt":
            parts[0] += ("# This file is for the SECOND labeller: if you labelled any of comments-1 to -5,\n"
                         "# do not label it. Do not look at anyone's labels of these units.\n")
        for n, uid in enumerate(chunk, start=1):
            unit, before = units[uid]
            parts.append(render_unit(n, len(chunk), unit, by_pr[unit.pr_id], before))
        (out / name).write_text("\n".join(parts), encoding="utf-8")
        written[name] = len(chunk)

    size = math.ceil(len(order) / COMMENT_BATCHES)
    for b in range(COMMENT_BATCHES):
        comments_file(f"comments-{b + 1}.txt", order[b * size:(b + 1) * size], f"comments-{b + 1}.csv")
    comments_file("comments-double.txt", double_order, "comments-double.csv")

    fault_order = random.Random(seed + 3).sample([int(r["pr_id"]) for r in faults], len(faults))
    size = math.ceil(len(fault_order) / FAULT_BATCHES)
    for b in range(FAULT_BATCHES):
        chunk = fault_order[b * size:(b + 1) * size]
        name = f"faults-{b + 1}.txt"
        parts = [FAULT_HEADER.format(name=name, count=len(chunk), csv_name=f"faults-{b + 1}.csv")]
        for n, pid in enumerate(chunk, start=1):
            parts.append(f"##### PR {n}/{len(chunk)}  pr_id={pid}\n" + label_tool.show(by_pr[pid], corpus))
        (out / name).write_text("\n".join(parts), encoding="utf-8")
        written[name] = len(chunk)
    return written


# --- commands ----------------------------------------------------------------------------------


def _load(data: Path | None) -> aidev.Corpus | None:
    root = data or aidev.default_data_dir(ROOT)
    if not aidev.is_corpus_dir(root):
        print(f"comment_sample: no AIDev-pop data at {root} (set TASKEVAL_CORPUS_DIR)", file=sys.stderr)
        return None
    return aidev.load(root)


def cmd_sample_comments(args: argparse.Namespace) -> int:
    corpus = _load(args.data)
    if corpus is None:
        return 2
    units = all_units(corpus)
    picked, double = sample_comments(units, args.seed)
    n = write_csv(args.out, ("id", "pr_id", "agent", "repository", "side", "kind", "role", "position",
                             "double"),
                  ((u.id, u.pr_id, u.agent, u.repository, u.side, u.kind, u.role, u.position,
                    int(u.id in double)) for u in picked))
    print(f"{n} units ({len(double)} double) of {len(units)} -> {args.out}")
    strata = Counter((u.agent, u.side, u.end, u.position, u.role) for u in picked)
    population = Counter((u.agent, u.side, u.end, u.position, u.role) for u in units)
    print("  agent         side          end           position      role          sample  of")
    for key in sorted(population):
        print("  " + " ".join(f"{k:<13}" for k in key) + f" {strata[key]:>5} {population[key]:>6}")
    return 0


def cmd_sample_faults(args: argparse.Namespace) -> int:
    corpus = _load(args.data)
    if corpus is None:
        return 2
    picked = sample_faults(corpus, args.seed)
    n = write_csv(args.out, ("pr_id", "agent", "repository", "side"),
                  ((p.id, p.agent, p.repository, side(p.repository)) for p in picked))
    print(f"{n} closed-unmerged PRs -> {args.out}")
    got = Counter((p.agent, side(p.repository)) for p in picked)
    pool = Counter((p.agent, side(p.repository)) for p in corpus.prs if end_state(p) == "closed")
    for key in sorted(pool):
        print(f"  {key[0]:<13} {key[1]:<8} {got[key]:>4} of {pool[key]:>5}")
    return 0


def cmd_batch(args: argparse.Namespace) -> int:
    out = args.out.resolve()
    if out == ROOT or ROOT in out.parents:
        print("comment_sample: batches hold the data's text; write them outside the repository",
              file=sys.stderr)
        return 2
    corpus = _load(args.data)
    if corpus is None:
        return 2
    for name, count in write_batches(corpus, out, args.seed).items():
        print(f"{out / name}: {count}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    problems, checked = check_files(args.labels)
    for p in problems:
        print(p)
    print(f"checked: {', '.join(checked) or 'no label files yet'}; {len(problems)} problem(s)")
    return 1 if problems else 0


def cmd_kappa(args: argparse.Namespace) -> int:
    first, second = args.labels / COMMENT_LABELS.name, args.labels / COMMENT_SECOND.name
    if not (first.is_file() and second.is_file()):
        print(f"comment_sample: need both {first} and {second}", file=sys.stderr)
        return 2
    pairs = pairs_of(read_csv(first), read_csv(second))
    kappa = cohen_kappa(pairs)
    agree = sum(a == b for a, b in pairs)
    print(f"common units: {len(pairs)}  agreement: {agree}  kappa: "
          + ("n/a" if kappa is None else f"{kappa:.3f}"))
    print(f"  {'class':<15} {'first':>6} {'second':>6} {'both':>6} {'agreement':>9}")
    for name, row in class_agreement(pairs).items():
        value = row["agreement"]
        print(f"  {name:<15} {row['first']:>6} {row['second']:>6} {row['both']:>6} "
              + ("      n/a" if value is None else f"{value:>9.2f}"))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sc = sub.add_parser("sample-comments", help="draw the comment sample (IDs) into docs/labels/")
    sc.add_argument("--out", type=Path, default=COMMENT_SAMPLE)
    sf = sub.add_parser("sample-faults", help="draw the closed-unmerged PR sample (IDs) into docs/labels/")
    sf.add_argument("--out", type=Path, default=FAULT_SAMPLE)
    ba = sub.add_parser("batch", help="write the labellers' batch files outside the repository")
    ba.add_argument("--out", type=Path, required=True)
    for p in (sc, sf, ba):
        p.add_argument("--seed", type=int, default=SEED)
        p.add_argument("--data", type=Path, default=None, help="the AIDev-pop folder")
    ch = sub.add_parser("check", help="validate the label files in docs/labels/")
    ka = sub.add_parser("kappa", help="Cohen's kappa of comments.csv against comments.second.csv")
    for p in (ch, ka):
        p.add_argument("--labels", type=Path, default=LABELS_DIR)
    args = parser.parse_args(argv)
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "sample-comments": cmd_sample_comments, "sample-faults": cmd_sample_faults,
        "batch": cmd_batch, "check": cmd_check, "kappa": cmd_kappa,
    }
    return commands[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
