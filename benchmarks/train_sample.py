"""A second round of labels, on ``train`` repositories only, for fitting the reader and the closure.

Why: the first round (benchmarks/comment_sample.py) has 80 ``work_wrong`` units and 75 written
faults on the train side: too few to fit a reader or a closure that holds on repositories it has
never seen. This round labels every remaining train unit a person or the operator wrote, the
agent's own comments on closed PRs and a capped share of bots, and every remaining train PR that
was closed without merging and has anything said on it. Nothing here touches a ``heldout``
repository, so the held-out figures stay out-of-sample; no score, closure class or signal is
imported or printed, so labels are made before anyone looks at an output.

    python benchmarks/train_sample.py sample            # IDs into docs/labels/*.train2.csv
    python benchmarks/train_sample.py batch --out DIR   # the labellers' files, outside the repo
    python benchmarks/train_sample.py check

The labellers read the same guide (docs/labelling.md) and the same batch format as round one.

A third round (``--round heldout3``) draws the same way from the ``heldout`` repositories, to
make the held-out measurement larger; it is labelled as blindly, and its labels are never fitted
on except where docs/labelling.md ("The held-out side, split again") says a repository was moved
to the fitting side before any of its outputs was read.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import comment_sample as cs
from benchmarks import label_tool
from taskeval.corpus import aidev
from taskeval.corpus.labels import cohen_kappa

COMMENT_SECOND: Final = cs.LABELS_DIR / "comments.train2.second.csv"
FAULT_SECOND: Final = cs.LABELS_DIR / "faults.train2.second.csv"
# 300 train units of the FIRST round labelled again by a labeller of this round: whether the two
# rounds label alike (a model fitted on both is measured against the first round's held-out labels).
CROSS: Final = cs.LABELS_DIR / "comments.cross.csv"
DOUBLE_UNITS: Final = 300  # labelled a second time, independently, for this round's kappa
DOUBLE_FAULTS: Final = 60
SEED: Final = 2027
PEOPLE_PER_REPO: Final = 60  # units by a person or the operator, per repository
BOTS_TOTAL: Final = 250  # bots' units (AI reviewers, CI), drawn at random, 15 per repository at most
BOTS_PER_REPO: Final = 15
FAULTS_PER_REPO: Final = 12
COMMENT_BATCHES: Final = 5
FAULT_BATCHES: Final = 2
K = TypeVar("K")


@dataclass(frozen=True)
class Round:
    """One round of labels drawn by this module: its side, seed and files."""

    name: str
    side: str  # train | heldout | fit (the fitting side's parts, train and heldout-dev)
    seed: int
    people_per_repo: int = PEOPLE_PER_REPO

    def path(self, stem: str) -> Path:
        return cs.LABELS_DIR / f"{stem}.{self.name}.csv"

    @property
    def comment_sample(self) -> Path:
        return self.path("comments-sample")

    @property
    def fault_sample(self) -> Path:
        return self.path("fault-sample")

    @property
    def comment_labels(self) -> Path:
        return self.path("comments")

    @property
    def fault_labels(self) -> Path:
        return self.path("faults")


# Round four: what the fitting side had left unlabelled of people's and operators' words (no cap
# per repository), and of bots': the reader's learning curve was still rising with more units.
ROUNDS: Final = {"train2": Round("train2", "train", SEED), "heldout3": Round("heldout3", "heldout", 2028),
                 "fit4": Round("fit4", "fit", 2032, people_per_repo=10**6)}
TRAIN2: Final = ROUNDS["train2"]  # the round labelled twice in part (COMMENT_SECOND, FAULT_SECOND)


def on_side(where: str, repository: str) -> bool:
    """Whether a repository is on side ``where``: ``train`` or ``heldout`` (``comment_sample.side``),
    or ``fit``, the parts the reader is fitted on (``comment_sample.FIT_PARTS``)."""
    return cs.part(repository) in cs.FIT_PARTS if where == "fit" else cs.side(repository) == where


def sample_units(units: Sequence[cs.Unit], taken: set[str], seed: int = SEED,
                 where: str = "train", people_per_repo: int = PEOPLE_PER_REPO) -> list[cs.Unit]:
    """Units of side ``where`` not labelled before: people's and the operator's (at most
    :data:`PEOPLE_PER_REPO` per repository, at random), the agent's comments and reviews on closed
    PRs, and :data:`BOTS_TOTAL` bots' units."""
    rng = random.Random(seed)
    pool = [u for u in units if on_side(where, u.repository) and u.id not in taken and u.kind != "body"]
    people: dict[str, list[cs.Unit]] = defaultdict(list)
    for u in pool:
        if u.role in ("person", "operator"):
            people[u.repository].append(u)
    picked = [u for repo in sorted(people) for u in rng.sample(people[repo], min(len(people[repo]),
                                                                                 people_per_repo))]
    picked += [u for u in pool if u.role == "agent" and u.end == "closed"]
    bots = rng.sample([u for u in pool if u.role == "bot"], len([u for u in pool if u.role == "bot"]))
    per_repo: Counter[str] = Counter()
    for u in bots:
        if sum(per_repo.values()) >= BOTS_TOTAL:
            break
        if per_repo[u.repository] < BOTS_PER_REPO:
            picked.append(u)
            per_repo[u.repository] += 1
    return sorted(picked, key=lambda u: (u.pr_id, u.when, cs.KIND_ORDER[u.kind], u.id))


def sample_faults(corpus: aidev.Corpus, taken: set[int], seed: int = SEED,
                  where: str = "train") -> list[aidev.PullRecord]:
    """PRs of side ``where`` closed without merging, not labelled before, with at least one comment
    or review (a PR nobody said anything on is ``unclear`` by definition), at most
    :data:`FAULTS_PER_REPO` per repository."""
    rng = random.Random(seed)
    pool = [p for p in sorted(corpus.prs, key=lambda p: p.id)
            if cs.end_state(p) == "closed" and on_side(where, p.repository) and p.id not in taken
            and any(u.kind != "body" for u in cs.units_of(p))]
    per_repo: Counter[str] = Counter()
    out = []
    for p in rng.sample(pool, len(pool)):
        if per_repo[p.repository] < FAULTS_PER_REPO:
            out.append(p)
            per_repo[p.repository] += 1
    return sorted(out, key=lambda p: p.id)


def _comments_file(corpus: aidev.Corpus, ids: Sequence[str], name: str, out: Path) -> int:
    """One labeller's file of units ``ids`` (in that order), each with the two units before it."""
    by_pr = {p.id: p for p in corpus.prs}
    wanted = set(ids)
    units: dict[str, tuple[cs.Unit, list[cs.Unit]]] = {}
    for p in corpus.prs:
        seq = cs.units_of(p)
        for i, u in enumerate(seq):
            if u.id in wanted:
                units[u.id] = (u, seq[max(0, i - 2):i])
    parts = [cs.COMMENT_HEADER.format(name=f"{name}.txt", count=len(ids), classes=" | ".join(cs.VERDICTS),
                                      csv_name=f"{name}.csv")]
    parts += [cs.render_unit(n, len(ids), units[uid][0], by_pr[units[uid][0].pr_id], units[uid][1])
              for n, uid in enumerate(ids, start=1)]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.txt").write_text("\n".join(parts), encoding="utf-8")
    return len(ids)


def _faults_file(corpus: aidev.Corpus, ids: Sequence[int], name: str, out: Path) -> int:
    """One labeller's file of closed PRs ``ids``, each shown whole."""
    by_pr = {p.id: p for p in corpus.prs}
    parts = [cs.FAULT_HEADER.format(name=f"{name}.txt", count=len(ids), csv_name=f"{name}.csv")]
    parts += [f"##### PR {n}/{len(ids)}  pr_id={pid}\n" + label_tool.show(by_pr[pid], corpus)
              for n, pid in enumerate(ids, start=1)]
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.txt").write_text("\n".join(parts), encoding="utf-8")
    return len(ids)


def _chunks(items: Sequence[K], parts: int) -> list[Sequence[K]]:
    size = math.ceil(len(items) / parts)
    return [items[b * size:(b + 1) * size] for b in range(parts)]


def write_batches(corpus: aidev.Corpus, out: Path, rnd: Round = ROUNDS["train2"]) -> dict[str, int]:
    """The labellers' files of a round: five of units, two of closed PRs."""
    sample = [r["id"] for r in cs.read_csv(rnd.comment_sample)]
    faults = [int(r["pr_id"]) for r in cs.read_csv(rnd.fault_sample)]
    written = {}
    for b, chunk in enumerate(_chunks(random.Random(rnd.seed + 1).sample(sample, len(sample)), COMMENT_BATCHES)):
        name = f"{rnd.name}-comments-{b + 1}"
        written[f"{name}.txt"] = _comments_file(corpus, chunk, name, out)
    for b, pids in enumerate(_chunks(random.Random(rnd.seed + 3).sample(faults, len(faults)), FAULT_BATCHES)):
        name = f"{rnd.name}-faults-{b + 1}"
        written[f"{name}.txt"] = _faults_file(corpus, pids, name, out)
    return written


def write_double(corpus: aidev.Corpus, out: Path, seed: int = SEED) -> dict[str, int]:
    """The second labellers' files: :data:`DOUBLE_UNITS` units and :data:`DOUBLE_FAULTS` PRs of this
    round, and (the cross-check) 300 train units of the first round, each drawn with a fixed seed."""
    rng = random.Random(seed + 7)
    units = rng.sample([r["id"] for r in cs.read_csv(TRAIN2.comment_sample)], DOUBLE_UNITS)
    faults = rng.sample([int(r["pr_id"]) for r in cs.read_csv(TRAIN2.fault_sample)], DOUBLE_FAULTS)
    first = [r["id"] for r in cs.read_csv(cs.COMMENT_SAMPLE) if r["side"] == "train"]
    cross = random.Random(2031).sample(first, DOUBLE_UNITS)
    return {"train2-double.txt": _comments_file(corpus, units, "train2-double", out),
            "train2-faults-double.txt": _faults_file(corpus, faults, "train2-faults-double", out),
            "cross-check.txt": _comments_file(corpus, cross, "cross-check", out)}


# Labelled a second time, independently, and a third time where the first two disagree: the
# settled label (two of three) is the reference the held-out test figures are also given against,
# and what the reader is fitted on, because one blind pass disagrees with another on ``work_wrong``
# often enough (round one's second labeller found 39 where the first found 28) to move a precision
# by more than its interval. Two groups are settled apart, so nothing of the test part's labelling
# touches the fitting side: the held-out test part (units and closed PRs) and the fitting side
# (units; its earlier double labels count as second labels).
@dataclass(frozen=True)
class Settling:
    """One group of labelled units or closed PRs settled by two of three labellers."""

    name: str
    parts: tuple[str, ...]
    seed: int
    kinds: tuple[str, ...]
    # Second labels made in earlier rounds, by kind.
    earlier: dict[str, tuple[Path, ...]] = dataclasses.field(default_factory=dict)

    def second(self, kind: str) -> Path:
        return cs.LABELS_DIR / f"{kind}.{self.name}.second.csv"

    def third(self, kind: str) -> Path:
        return cs.LABELS_DIR / f"{kind}.{self.name}.third.csv"


SETTLINGS: Final = {
    "heldout-test": Settling("heldout-test", ("heldout-test",), 4041, ("comments", "faults")),
    "fit": Settling("fit", cs.FIT_PARTS, 4051, ("comments", "faults"),
                    {"comments": (cs.COMMENT_SECOND, COMMENT_SECOND, CROSS), "faults": (FAULT_SECOND,)}),
}
TEST: Final = SETTLINGS["heldout-test"]


def _key(kind: str) -> tuple[str, str]:
    return ("id", "verdict") if kind == "comments" else ("pr_id", "fault")


def first_labels(kind: str) -> dict[str, str]:
    """The first label of every unit (``comments``) or closed PR (``faults``), all rounds, by ID."""
    paths = [cs.COMMENT_LABELS if kind == "comments" else cs.FAULT_LABELS]
    paths += [r.comment_labels if kind == "comments" else r.fault_labels for r in ROUNDS.values()]
    return {k: v for path in paths for k, v in _labels_of(path, kind).items()}


def ids_of(group: Settling, kind: str) -> list[str]:
    """IDs of a group's labelled units or closed PRs, in the samples' order."""
    key, _ = _key(kind)
    paths = [cs.COMMENT_SAMPLE if kind == "comments" else cs.FAULT_SAMPLE]
    paths += [r.comment_sample if kind == "comments" else r.fault_sample for r in ROUNDS.values()]
    labelled = first_labels(kind)
    ids = [r[key] for path in paths if path.is_file() for r in cs.read_csv(path)
           if cs.part(r["repository"]) in group.parts and r[key] in labelled]
    return list(dict.fromkeys(ids))


def _labels_of(path: Path, kind: str) -> dict[str, str]:
    key, field = _key(kind)
    return {r[key]: r[field] for r in cs.read_csv(path)} if path.is_file() else {}


def second_labels(group: Settling, kind: str) -> dict[str, str]:
    """A group's second labels: earlier rounds' double labels of its units, then its own file."""
    mine = set(ids_of(group, kind))
    out = {k: v for path in group.earlier.get(kind, ()) for k, v in _labels_of(path, kind).items() if k in mine}
    return out | _labels_of(group.second(kind), kind)


def settled(kind: str, group: Settling = TEST) -> dict[str, str]:
    """A group's settled labels: the first and second labels where they agree, else the label two
    of the three give; where all three differ, or a label is missing, the first."""
    first, second = first_labels(kind), second_labels(group, kind)
    third = _labels_of(group.third(kind), kind)
    return {i: two_of_three(first[i], second.get(i), third.get(i)) for i in ids_of(group, kind)}


def two_of_three(first: str, second: str | None, third: str | None) -> str:
    """The label two of three labellers give; the first where there is no such label (a missing
    second or third, or three different labels)."""
    return second if second is not None and second == third else first


def _kind_file(corpus: aidev.Corpus, kind: str, ids: Sequence[str], name: str, out: Path) -> int:
    """One labeller's file of ``kind``'s units (``comments``) or closed PRs (``faults``)."""
    return (_comments_file(corpus, ids, name, out) if kind == "comments"
            else _faults_file(corpus, [int(i) for i in ids], name, out))


def write_second(corpus: aidev.Corpus, group: Settling, out: Path, batches: int,
                 stem: str | None = None) -> dict[str, int]:
    """The second labellers' files over a group's units (and PRs) that have no second label yet:
    ``batches`` files of each."""
    written = {}
    for kind in group.kinds:
        second = second_labels(group, kind)
        todo = [i for i in ids_of(group, kind) if i not in second]
        if not todo:
            continue
        order = random.Random(group.seed + (0 if kind == "comments" else 2)).sample(todo, len(todo))
        for b, chunk in enumerate(_chunks(order, batches)):
            name = f"{stem or group.name + '-second'}-{kind}-{b + 1}"
            written[f"{name}.txt"] = _kind_file(corpus, kind, chunk, name, out)
    return written


def write_third(corpus: aidev.Corpus, group: Settling, out: Path) -> dict[str, int]:
    """The third labeller's files: a group's units and PRs whose first two labels differ and that
    have no third label yet."""
    written = {}
    for kind in group.kinds:
        first, second = first_labels(kind), second_labels(group, kind)
        third = _labels_of(group.third(kind), kind)
        split = [i for i in ids_of(group, kind) if i in second and second[i] != first[i] and i not in third]
        if not split:
            continue
        order = random.Random(group.seed + 6).sample(split, len(split))
        name = f"{group.name}-third-{kind}"
        written[f"{name}.txt"] = _kind_file(corpus, kind, order, name, out)
    return written


def kappas() -> list[str]:
    """Cohen's kappa of this round's double labels (comments, then faults)."""
    lines = []
    for first, second, key, field in ((TRAIN2.comment_labels, COMMENT_SECOND, "id", "verdict"),
                                      (TRAIN2.fault_labels, FAULT_SECOND, "pr_id", "fault"),
                                      (cs.COMMENT_LABELS, CROSS, "id", "verdict")):
        if not (first.is_file() and second.is_file()):
            continue
        one = {r[key]: r[field] for r in cs.read_csv(first)}
        pairs = [(one[r[key]], r[field]) for r in cs.read_csv(second) if r[key] in one]
        kappa = cohen_kappa(pairs)
        lines.append(f"{second.name}: {len(pairs)} common, {sum(a == b for a, b in pairs)} agree, kappa "
                     + ("n/a" if kappa is None else f"{kappa:.3f}"))
    for group in SETTLINGS.values():
        for kind in group.kinds:
            first_of, second_of = first_labels(kind), second_labels(group, kind)
            third_of = _labels_of(group.third(kind), kind)
            if not second_of:
                continue
            pairs = [(first_of[i], second_of[i]) for i in ids_of(group, kind) if i in second_of]
            kappa = cohen_kappa(pairs)
            lines.append(f"{group.name} {kind}: {len(pairs)} of {len(ids_of(group, kind))} labelled twice, "
                         f"{sum(a == b for a, b in pairs)} agree, kappa {'n/a' if kappa is None else f'{kappa:.3f}'}; "
                         f"{len(third_of)} labelled a third time")
    return lines


def _file_problems(path: Path, key: str, field: str, allowed: tuple[str, ...],
                   placed: Callable[[str], str | None]) -> list[str]:
    """Problems with one label file: an ID ``placed`` finds out of place (it says how), an unknown
    class, an ID labelled twice."""
    problems = []
    seen: set[str] = set()
    for row in cs.read_csv(path):
        where = placed(row[key])
        if where:
            problems.append(f"{path.name}: {row[key]} {where}")
        if row[field] not in allowed:
            problems.append(f"{path.name}: {row[key]} has unknown {field} {row[field]!r}")
        if row[key] in seen:
            problems.append(f"{path.name}: {row[key]} labelled twice")
        seen.add(row[key])
    return problems


def check_settling() -> list[str]:
    """Problems with the second and third labels of each settled group: an ID outside the group or
    (third) one whose first two labels agree, an unknown class, a unit labelled twice in a file."""
    problems = []
    for group in SETTLINGS.values():
        for kind in group.kinds:
            key, field = _key(kind)
            allowed = cs.VERDICTS if kind == "comments" else cs.FAULTS
            ids, first, second = set(ids_of(group, kind)), first_labels(kind), second_labels(group, kind)
            for path in (group.second(kind), group.third(kind)):
                third = path == group.third(kind)

                def placed(i: str, third: bool = third, name: str = group.name, ids: set[str] = ids,
                           first: dict[str, str] = first, second: dict[str, str] = second) -> str | None:
                    if i not in ids:
                        return f"is not a labelled unit of {name}"
                    agree = third and second.get(i) == first[i]
                    return "needs no third label (the first two agree)" if agree else None

                if path.is_file():
                    problems += _file_problems(path, key, field, allowed, placed)
    return problems


def check() -> list[str]:
    """Problems with the label files of rounds two and three: unknown IDs or classes, a unit of
    the wrong side, a unit labelled twice in one file."""
    problems = []
    files: list[tuple[Round, Path, Path, str, str, tuple[str, ...]]] = [
        (r, r.comment_sample, r.comment_labels, "id", "verdict", cs.VERDICTS) for r in ROUNDS.values()]
    files += [(r, r.fault_sample, r.fault_labels, "pr_id", "fault", cs.FAULTS) for r in ROUNDS.values()]
    files += [(TRAIN2, TRAIN2.comment_sample, COMMENT_SECOND, "id", "verdict", cs.VERDICTS),
              (TRAIN2, TRAIN2.fault_sample, FAULT_SECOND, "pr_id", "fault", cs.FAULTS)]
    for rnd, sample_path, labels_path, key, field, allowed in files:
        if not labels_path.is_file():
            continue
        sample = {r[key]: r for r in cs.read_csv(sample_path)}

        def placed(i: str, sample: dict[str, dict[str, str]] = sample, rnd: Round = rnd,
                   name: str = sample_path.name) -> str | None:
            if i not in sample:
                return f"is not in {name}"
            return None if on_side(rnd.side, sample[i]["repository"]) else f"is not on the {rnd.side} side"

        problems += _file_problems(labels_path, key, field, allowed, placed)
    return problems + check_settling()


def draw(corpus: aidev.Corpus, rnd: Round) -> str:
    """Draw a round's IDs into docs/labels/, leaving out everything an earlier round drew."""
    taken = {r["id"] for r in cs.read_csv(cs.COMMENT_SAMPLE)}
    taken_prs = {int(r["pr_id"]) for r in cs.read_csv(cs.FAULT_SAMPLE)}
    for earlier in ROUNDS.values():
        if earlier is not rnd and earlier.comment_sample.is_file():
            taken |= {r["id"] for r in cs.read_csv(earlier.comment_sample)}
            taken_prs |= {int(r["pr_id"]) for r in cs.read_csv(earlier.fault_sample)}
    units = sample_units(cs.all_units(corpus), taken, rnd.seed, rnd.side, rnd.people_per_repo)
    cs.write_csv(rnd.comment_sample, ("id", "pr_id", "agent", "repository", "side", "kind", "role", "position"),
                 ((u.id, u.pr_id, u.agent, u.repository, u.side, u.kind, u.role, u.position) for u in units))
    faults = sample_faults(corpus, taken_prs, rnd.seed, rnd.side)
    cs.write_csv(rnd.fault_sample, ("pr_id", "agent", "repository", "side"),
                 ((p.id, p.agent, p.repository, rnd.side) for p in faults))
    return f"{len(units)} units ({dict(Counter(u.role for u in units))}), {len(faults)} closed PRs"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sa = sub.add_parser("sample", help="draw a round's IDs into docs/labels/")
    ba = sub.add_parser("batch", help="write a round's labellers' files outside the repository")
    ba.add_argument("--out", type=Path, required=True)
    for p in (sa, ba):
        p.add_argument("--round", choices=sorted(ROUNDS), default="train2")
    do = sub.add_parser("double", help="write the second labeller's files outside the repository")
    do.add_argument("--out", type=Path, required=True)
    th = sub.add_parser("third", help="a settled group's units whose first two labels differ")
    th.add_argument("--out", type=Path, required=True)
    for p in (do, th):
        p.add_argument("--settle", choices=sorted(SETTLINGS), default=None,
                       help="a group labelled again to settle its labels (double: its second labels)")
    do.add_argument("--batches", type=int, default=COMMENT_BATCHES)
    do.add_argument("--name", default=None, help="--settle: the batch files' stem (default GROUP-second)")
    sub.add_parser("check", help="validate the label files of rounds two and three")
    sub.add_parser("kappa", help="Cohen's kappa of round two's double labels and the cross-check")
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = check()
        print("\n".join([*problems, f"{len(problems)} problem(s)"]))
        return 1 if problems else 0
    if args.command == "kappa":
        print("\n".join(kappas() or ["no double labels yet"]))
        return 0
    corpus = cs._load(None)
    if corpus is None:
        return 2
    if args.command == "sample":
        print(draw(corpus, ROUNDS[args.round]))
        return 0
    out = args.out.resolve()
    if out == cs.ROOT or cs.ROOT in out.parents:
        print("train_sample: batches hold the data's text; write them outside the repository", file=sys.stderr)
        return 2
    if args.command == "third":
        written = write_third(corpus, SETTLINGS[args.settle or "heldout-test"], out)
    elif args.command == "double":
        written = (write_second(corpus, SETTLINGS[args.settle], out, args.batches, args.name) if args.settle
                   else write_double(corpus, out))
    else:
        written = write_batches(corpus, out, ROUNDS[args.round])
    for name, count in written.items():
        print(f"{out / name}: {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
