"""Re-scoring throughput: stored files per second, offline, through `taskeval score`'s path.

Generates variations of realistic agent PRs (commit counts and messages, CI histories, reviews,
changed files, PR text, open or merged) and stores each one, then re-scores the files with
:func:`taskeval.pipeline.rescore` (what ``taskeval score`` runs for each file), in chunks of 1,000
so disk use stays small. Every re-score is compared with what scoring the PR from scratch gives:
the run fails if a single byte differs. What is stored and how it is re-scored (``--mode``):

- ``bundles``: bare evidence bundles, re-scored with the defaults: every signal is measured;
- ``weights``: results stored with the defaults, re-scored after a change of weights (what
  ``taskeval calibrate`` suggests): the stored signals still hold, none is measured again;
- ``thresholds``: results stored with the defaults, re-scored after a change of a curve
  threshold: the one signal that reads it is measured again, the others are kept;
- ``patterns``: results stored with the defaults, re-scored after a change of a path pattern:
  the four signals that classify files are measured again.

Run from the repository root:

    python -m benchmarks.rescore_bench --count 10000
    python -m benchmarks.rescore_bench --count 10000 --mode weights
    python -m benchmarks.rescore_bench --count 2000 --write /tmp/bundles   # a corpus for the CLI
    python -m benchmarks.rescore_bench --count 2000 --mode weights --write /tmp/results

``--file PATH`` re-scores ``--count`` copies of one stored file instead (``--mode bundles`` for a
bundle, any other mode for a result), clearing the text caches before each copy so every copy
costs what a new file of the same shape costs:

    python -m benchmarks.rescore_bench --file examples/agent-pr-482.bundle.json --count 2000
    python -m benchmarks.rescore_bench --file examples/agent-pr-482.result.json --count 2000 --mode weights

``--dir DIR --config FILE`` re-scores stored files a team already has (for example the results
of the AIDev-pop replay, ``python -m benchmarks.real_corpus --output-dir results/``), each compared
with ``--recompute``:

    python -m benchmarks.rescore_bench --dir results/ --config weights.yml --count 2000
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.rescore_profile import clear_caches
from taskeval.batch import freeze_heap
from taskeval.config import load_config
from taskeval.evidence import build_bundle
from taskeval.models import EvidenceBundle
from taskeval.pipeline import Options, score_bundle
from taskeval.pipeline import rescore as rescore_path
from taskeval.raw import CollectionIssue, RawCollection
from tests import builders as b

BODIES = (
    b.GREEN_BODY, b.LEAKY_BODY, b.TEMPLATE_BODY, "",
    "Fixes #7. Small refactor of the retry helper; no behaviour change.",
    "## Summary\nAdds `--dry-run`.\n\n- [x] tests added\n- [ ] docs updated\n\nCloses #31",
    "I hope this helps! Let me know if you need anything else.\n\nAll tests pass.",
)
SUBJECTS = (
    "feat(fetcher): retry transient failures", "fix: handle empty input", "test: cover retries",
    "docs: explain retries", "chore: bump deps", "refactor(core): split parser",
    "Update fetcher.py", "WIP", "fixup! fix: handle empty input", 'Revert "chore: bump deps"',
    "Merge branch 'main' into copilot/retry", "Initial plan",
)
PATHS = (
    ("src/widgets/fetcher.py", 60), ("src/widgets/parser.py", 25), ("tests/test_fetcher.py", 40),
    ("tests/test_parser.py", 12), ("README.md", 9), ("docs/usage.md", 20), ("CHANGELOG.md", 3),
    ("poetry.lock", 400), ("src/widgets/cli.py", 30), ("pyproject.toml", 2),
    ("src/widgets/api/routes.py", 80), ("vendor/lib.js", 900),
)
PEOPLE = (b.ALICE, b.BOB, b.AGENT, b.RENOVATE)
STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED")


def variant(rng: random.Random, n: int) -> RawCollection:
    """One realistic PR: everything drawn from ``rng``, so a seed gives the same corpus anywhere."""
    count = rng.choice((1, 2, 3, 3, 4, 6, 10, 25, 60))
    commits = []
    for i in range(count):
        subject = rng.choice(SUBJECTS)
        body = rng.choice(("", "\n\nTask-Id: WID-12", "\n\nCo-authored-by: alice <a@example.com>"))
        author = b.AGENT if rng.random() < 0.8 else rng.choice(PEOPLE)
        commits.append(b.commit(f"v{n}-c{i}", subject + body, 5 + 7 * i, author=author,
                                parents=2 if subject.startswith("Merge") else 1))
    head = commits[-1].sha
    end = 10 + 7 * count
    runs, checks = [], []
    if rng.random() < 0.9:  # most repositories have CI
        for i, c in enumerate(commits):
            conclusion = rng.choices(("success", "failure", "cancelled", None), (7, 3, 1, 0.3))[0]
            runs.append(b.run(50_000 + 100 * n + i, c.sha, conclusion, start=6 + 7 * i,
                              attempt=rng.choice((1, 1, 1, 2))))
        for j, name in enumerate(rng.sample(("lint", "test (3.11)", "test (3.12)", "build"),
                                            rng.randint(1, 4))):
            conclusion = rng.choices(("success", "failure", "timed_out"), (8, 2, 0.5))[0]
            output = "2 failed, 40 passed\nFAILED tests/test_x.py::test_y" if conclusion != "success" else None
            checks.append(b.check(90_000 + 10 * n + j, name, head, conclusion, start=end,
                                  output=output))
    files = [b.file(path, max(1, int(size * rng.uniform(0.2, 2.0))), rng.randint(0, 10))
             for path, size in rng.sample(PATHS, rng.randint(1, 8))]
    reviews = [b.review(70_000 + 10 * n + k, rng.choice(PEOPLE[:2]), rng.choice(STATES),
                        end + 5 + k, body=rng.choice(("", "Looks good.", "Please add tests.")),
                        commit_id=rng.choice((head, commits[0].sha)))
               for k in range(rng.choice((0, 1, 1, 2, 3)))]
    comments = [b.issue_comment(80_000 + 10 * n + k, rng.choice(PEOPLE),
                                rng.choice(("Thanks!", "@copilot please rebase", "Done.")), 20 + k)
                for k in range(rng.randint(0, 3))]
    merged = rng.random() < 0.85
    issues = [CollectionIssue(resource="workflow_runs", status=403,
                              message="Resource not accessible by integration")] \
        if rng.random() < 0.05 else []
    return b.merged_agent_pr(
        number=100 + n, title=rng.choice(SUBJECTS), body=rng.choice(BODIES), commits=commits,
        files=files, check_runs=checks, workflow_runs=runs, reviews=reviews,
        issue_comments=comments, issues=issues, merged=merged,
        state="closed" if merged or rng.random() < 0.5 else "open",
        closed_at=b.at(end + 60) if merged else None, merged_at=b.at(end + 60) if merged else None,
        created_at=b.at(0) + timedelta(minutes=rng.randint(-30, 0)),
    )


def variants(count: int, seed: int = 0) -> Iterator[RawCollection]:
    rng = random.Random(seed)
    for n in range(count):
        yield variant(rng, n)


# The configs each mode re-scores with (None: the stored one, or the defaults for a bundle).
CONFIGS: dict[str, str | None] = {
    "bundles": None,
    "weights": "signal_weights:\n  agent.ci_recovery: 3\n  outcome.claims: 1.5\n  agent.objections: 2.5\n"
               "  process.change_size: 0\ndisabled_signals: [process.description]\n",
    "thresholds": "thresholds:\n  red_push_half_life: 2.5\n",
    "patterns": "patterns:\n  doc_paths: ['docs/**', 'handbook/**']\n",
}


@dataclass
class Stored:
    path: Path
    scored: str  # the result JSON scoring the PR from scratch gives, with the mode's config


class Store:
    """Writes PRs as ``taskeval`` stores them for ``mode`` (a bundle, or the result of its
    evaluation with the defaults), with both configs loaded once: the defaults results are stored
    with, and ``config``, the mode's (:func:`config_file`), that a re-score reads."""

    def __init__(self, mode: str = "bundles", config: Path | None = None) -> None:
        self.mode = mode
        self.defaults = load_config(None)
        self.rescored = load_config(None, config)

    def write(self, raw: RawCollection, folder: Path, n: int) -> tuple[Path, EvidenceBundle, Options]:
        """Store the PR; its bundle as read back, and the options a re-score of it runs with."""
        bundle = build_bundle(raw)
        reread = EvidenceBundle.model_validate_json(bundle.to_json())
        pull = reread.facts.pull
        stamp = str(pull.merged_at or pull.closed_at or pull.created_at)
        options = Options(ai="off", trigger="rescore", evaluated_at=stamp, env={})
        path = folder / f"{'bundle' if self.mode == 'bundles' else 'result'}-{n:05d}.json"
        if self.mode == "bundles":
            path.write_text(bundle.to_json(), encoding="utf-8")
        else:
            evaluated = score_bundle(reread, self.defaults, replace(options, trigger="pull_request"))
            path.write_text(evaluated.to_json(), encoding="utf-8")
        return path, reread, options

    def __call__(self, raw: RawCollection, folder: Path, n: int) -> Stored:
        """Store the PR and score it from scratch with the mode's config."""
        path, reread, options = self.write(raw, folder, n)
        return Stored(path, score_bundle(reread, self.rescored, options).to_json())


def store(raw: RawCollection, folder: Path, n: int, mode: str = "bundles", config: Path | None = None) -> Stored:
    """One PR stored and scored from scratch (:class:`Store`, for many)."""
    return Store(mode, config)(raw, folder, n)


def rescore(stored: Stored, config: Path | None = None) -> tuple[float, bool]:
    """Seconds to re-score one stored file, and whether the bytes match its first score."""
    timing = rescore_all([stored.path], Options(ai="off", env={}, config_path=config), freeze=False)
    return timing.per_bundle[0], timing.texts[0] == stored.scored


@dataclass
class Timing:
    per_bundle: list[float]  # wall seconds of each re-score
    cpu_seconds: float  # CPU seconds of this process for all of them
    texts: list[str]  # the result JSON each gave


def rescore_all(paths: list[Path], options: Options, fresh: bool = False, freeze: bool = True) -> Timing:
    """Re-score the stored files as ``taskeval score`` does, each timed. CPU time is what one core
    spends; on a shared machine the wall time also counts the time other processes held the core.
    ``fresh``: clear the text caches before each file (untimed), so a copy of one file costs what
    a new file of the same shape costs. ``freeze``: first freeze the heap, as ``taskeval score``
    does before a batch."""
    timing = Timing([], 0.0, [])
    if freeze:
        freeze_heap()
    for path in paths:
        if fresh:
            clear_caches()
        wall, cpu = time.perf_counter(), time.process_time()
        written = rescore_path(path, options).json_bytes()
        timing.per_bundle.append(time.perf_counter() - wall)
        timing.cpu_seconds += time.process_time() - cpu
        timing.texts.append(written.decode())  # compared untimed
    return timing


@dataclass
class Report:
    per_bundle: list[float] = field(default_factory=list)  # wall seconds of each re-score
    mismatches: int = 0
    sizes: list[int] = field(default_factory=list)
    cpu_seconds: float = 0.0

    @property
    def count(self) -> int:
        return len(self.per_bundle)

    @property
    def seconds(self) -> float:
        return sum(self.per_bundle)

    @property
    def rate(self) -> float:
        return self.count / self.seconds

    @property
    def cpu_rate(self) -> float:
        return self.count / self.cpu_seconds if self.cpu_seconds else 0.0

    def add(self, timing: Timing, expected: list[str], sizes: list[int]) -> None:
        """Count a batch: its timings, and each text that differs from what was expected."""
        self.per_bundle += timing.per_bundle
        self.cpu_seconds += timing.cpu_seconds
        self.mismatches += sum(text != want for text, want in zip(timing.texts, expected, strict=True))
        self.sizes += sizes


def run(count: int, seed: int = 0, chunk: int = 1000, mode: str = "bundles") -> Report:
    report = Report()
    made = variants(count, seed)
    with tempfile.TemporaryDirectory(prefix="taskeval-rescore-") as root:
        config = config_file(Path(root), mode)
        store = Store(mode, config)
        options = Options(ai="off", env={}, config_path=config)
        while report.count < count:
            with tempfile.TemporaryDirectory(dir=root) as folder:  # a chunk's files, then gone
                batch = [store(next(made), Path(folder), report.count + i)
                         for i in range(min(chunk, count - report.count))]
                paths = [s.path for s in batch]
                report.add(rescore_all(paths, options), [s.scored for s in batch],
                           [p.stat().st_size for p in paths])
    return report


def run_file(source: Path, count: int, mode: str) -> Report:
    """``count`` copies of one stored file, re-scored as the mode says; each compared with
    scoring its bundle from scratch with the mode's config."""
    data = json.loads(source.read_text(encoding="utf-8"))
    bundle = EvidenceBundle.model_validate(data.get("evidence", data))
    report = Report()
    with tempfile.TemporaryDirectory(prefix="taskeval-rescore-") as folder:
        config = config_file(Path(folder), mode)
        stamp = data.get("evaluatedAt") or str(bundle.facts.pull.merged_at or bundle.facts.pull.closed_at
                                                or bundle.facts.pull.created_at)
        expected = score_bundle(bundle, load_config(None, config), Options(
            ai="off", trigger="rescore", evaluated_at=stamp, env={})).to_json()
        copies = [Path(folder) / f"copy-{n:05d}.json" for n in range(count)]
        for copy in copies:
            shutil.copyfile(source, copy)
        report.add(rescore_all(copies, Options(ai="off", env={}, config_path=config), fresh=True),
                   [expected] * count, [source.stat().st_size] * count)
    return report


def run_dir(folder: Path, config: Path | None, count: int) -> Report:
    """The stored files under ``folder`` (the first ``count`` in path order), re-scored with
    ``config`` as ``taskeval score`` re-scores them; each compared, untimed, with re-scoring it
    with every signal measured and all evidence validated again (``--recompute``)."""
    files = sorted(folder.rglob("*.json"))[:count]
    options = Options(ai="off", env={}, config_path=config)
    timing = rescore_all(files, options)
    # After timing, so it cools no cache:
    expected = [rescore_path(path, replace(options, keep_signals=False)).json() for path in files]
    report = Report()
    report.add(timing, expected, [p.stat().st_size for p in files])
    return report


def config_file(folder: Path, mode: str) -> Path | None:
    text = CONFIGS[mode]
    if text is None:
        return None
    path = folder / "taskeval.yml"
    path.write_text(text, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mode", choices=list(CONFIGS), default="bundles",
                        help="what is stored and how it is re-scored (see above)")
    parser.add_argument("--write", metavar="DIR", type=Path,
                        help="only store the generated files in DIR (for timing `taskeval score DIR`); "
                             "the mode's config is written beside them as taskeval.yml")
    parser.add_argument("--file", type=Path, help="re-score --count copies of this stored file")
    parser.add_argument("--dir", type=Path,
                        help="re-score the stored files under DIR (at most --count) with --config")
    parser.add_argument("--config", type=Path, help="with --dir: the config to re-score with")
    args = parser.parse_args(argv)
    if args.dir:
        report = run_dir(args.dir, args.config, args.count)
        _print(report, f"stored files under {args.dir} (config {args.config or 'stored'})")
        return 1 if report.mismatches else 0
    if args.file:
        report = run_file(args.file, args.count, args.mode)
        _print(report, f"copies of {args.file} ({args.mode})")
        return 1 if report.mismatches else 0
    if args.write:
        args.write.mkdir(parents=True, exist_ok=True)
        files = args.write / "stored"
        files.mkdir(exist_ok=True)
        config = config_file(args.write, args.mode)
        store = Store(args.mode, config)
        for n, raw in enumerate(variants(args.count, args.seed)):
            store.write(raw, files, n)  # only the file: nothing is compared here
        print(f"{args.count} stored files in {files}" + (f", config {config}" if config else ""))
        return 0
    report = run(args.count, args.seed, mode=args.mode)
    kind = "bundles" if args.mode == "bundles" else f"results re-scored after a change of {args.mode}"
    _print(report, f"stored {kind} (seed {args.seed})")
    return 1 if report.mismatches else 0


def _print(report: Report, what: str) -> None:
    ms = sorted(s * 1000 for s in report.per_bundle)
    print(f"{report.count} {what}, median {statistics.median(report.sizes) / 1024:.1f} KB, "
          f"largest {max(report.sizes) / 1024:.1f} KB")
    print("| bundles | re-score time | bundles/s | CPU time | bundles/s of CPU | median ms | p95 ms | "
          "max ms | byte mismatches |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {report.count:,} | {report.seconds:.1f} s | {report.rate:,.0f} | "
          f"{report.cpu_seconds:.1f} s | {report.cpu_rate:,.0f} | "
          f"{statistics.median(ms):.2f} | {ms[int(len(ms) * 0.95) - 1]:.2f} | {ms[-1]:.2f} | "
          f"{report.mismatches} |")


if __name__ == "__main__":
    raise SystemExit(main())
