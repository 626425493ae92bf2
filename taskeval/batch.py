"""``taskeval score PATH…``: re-score many stored results or bundles at once.

How a team applies a new policy to its whole history: every ``*.json`` file given, or found under a
given directory (recursively, in sorted order), is re-scored offline. With ``--output-dir DIR``
each result is written to ``DIR`` under the input's file name (inputs found under a directory keep
their path relative to it); without it, each result is printed on stdout as one JSON line. A file
that cannot be re-scored is reported by name on stderr and the rest go on; the exit code is 2 when
any failed. A progress bar is drawn on stderr only when stderr is a terminal; a summary line ends
every run.

Results do not depend on ``--jobs``: each file is scored on its own, and results are written and
printed in input order.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from taskeval.pipeline import BundleFileError, Options, rescore

EXIT_OK, EXIT_INPUT = 0, 2


class _RealPaths:
    """``Path.resolve()`` for many files in few directories: each directory is resolved once
    (a resolve costs a system call per path component), a file on its own only when it is a
    symbolic link, which is what ``resolve`` would give."""

    def __init__(self) -> None:
        self.dirs: dict[Path, Path] = {}

    def __call__(self, path: Path) -> Path:
        if path.name in ("", ".", "..") or path.is_symlink():
            return path.resolve()
        parent = self.dirs.get(path.parent)
        if parent is None:
            parent = self.dirs[path.parent] = path.parent.resolve()
        return parent / path.name


@dataclass(frozen=True)
class Job:
    """One input file and where its result goes (``None``: stdout)."""

    source: Path
    target: Path | None


@dataclass(frozen=True)
class Outcome:
    source: Path
    text: bytes | None  # the result JSON (UTF-8), or None when the file failed
    error: str | None = None
    kept: bool = False  # the stored result's signals were used, not measured again


def expand(paths: Iterable[str], output_dir: Path | None) -> tuple[list[Job], list[str]]:
    """Input files (given, or ``*.json`` under given directories) and problems found on the way:
    missing paths, empty directories, two inputs that would write the same result file."""
    jobs: list[Job] = []
    problems: list[str] = []
    claimed: dict[Path, Path] = {}
    real = _RealPaths()
    out_root = output_dir.resolve() if output_dir else None
    for given in paths:
        path = Path(given)
        if path.is_dir():
            # Results already written under an output directory inside this one are not inputs.
            skip = out_root if out_root and not path.resolve().is_relative_to(out_root) else None
            found = [p for p in sorted(path.rglob("*.json"))
                     if p.is_file() and not (skip and real(p).is_relative_to(skip))]
            if not found:
                problems.append(f"{given}: no .json files in this directory")
            pairs = [(p, p.relative_to(path)) for p in found]
        elif path.exists():
            pairs = [(path, Path(path.name))]
        else:
            problems.append(f"{given}: no such file or directory")
            continue
        for source, relative in pairs:
            target = output_dir / relative if output_dir else None
            if target is not None:
                key = real(target)
                if key == real(source):
                    problems.append(f"{source}: the result would overwrite the input; choose another --output-dir")
                    continue
                if key in claimed:
                    problems.append(f"{source}: same output file as {claimed[key]} ({target}); "
                                    "give the inputs different names or score them separately")
                    continue
                claimed[key] = source
            jobs.append(Job(source, target))
    return jobs, problems


def _score_one(job: tuple[str, Options, bool]) -> tuple[bytes | None, str | None, bool]:
    """(result JSON as UTF-8, None, kept) or (None, one-line error, False): never raises, so one bad file
    stops nothing. ``compact``: the result on one line (for stdout) instead of the indented file
    form. ``kept``: the stored result's signals still held and were used."""
    path, options, compact = job
    try:
        rescored = rescore(Path(path), options)
        return rescored.json_bytes(indent=not compact), None, rescored.kept
    except BundleFileError as exc:
        return None, str(exc), False
    except Exception as exc:  # a bug or an unforeseen file shape: report it by name, go on
        return None, f"{path}: could not be re-scored: {type(exc).__name__}: {exc}", False


def score_files(jobs: list[Job], options: Options, workers: int = 1) -> Iterator[Outcome]:
    """Re-score each job's file, in input order; ``workers`` > 1 spreads files over processes."""
    tasks = [(str(j.source), options, j.target is None) for j in jobs]
    if workers <= 1 or len(jobs) < 2:
        for job, task in zip(jobs, tasks, strict=True):
            yield Outcome(job.source, *_score_one(task))
        return
    with multiprocessing.get_context("spawn").Pool(workers, initializer=freeze_heap) as pool:
        chunk = max(1, min(64, len(tasks) // (workers * 8)))
        for job, (text, error, kept) in zip(jobs, pool.imap(_score_one, tasks, chunksize=chunk), strict=True):
            yield Outcome(job.source, text, error, kept)


class Progress:
    """A one-line bar redrawn on a terminal at most 10 times a second; silent elsewhere."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = total
        self.live = total > 1 and stream.isatty()
        self.start = time.perf_counter()
        self.drawn = 0.0

    def note(self, line: str) -> None:
        """Print a line (an error) without tearing the bar."""
        self.stream.write(("\r\x1b[K" if self.live else "") + line + "\n")
        self.stream.flush()

    def update(self, done: int, failed: int) -> None:
        if not self.live:
            return
        now = time.perf_counter()
        if done < self.total and now - self.drawn < 0.1:
            return
        self.drawn = now
        width = 30
        filled = width * done // self.total
        rate = done / max(now - self.start, 1e-9)
        eta = (self.total - done) / rate if rate else 0.0
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total}"
                          f"  {failed} failed  {rate:,.0f}/s  eta {eta:.0f}s")
        self.stream.flush()

    def close(self) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def freeze_heap() -> None:
    """Move every object alive now (modules, compiled patterns, pydantic schemas: a few hundred
    thousand) out of the garbage collector's reach. Each full collection otherwise walks them all,
    about 50 ms every few hundred files, a sixth of the time a batch spends; the files' own
    objects are still collected as before."""
    gc.collect()
    gc.freeze()


def _line_printer(out: TextIO) -> Callable[[bytes], object]:
    """Print a result's UTF-8 bytes as one line of ``out``: straight to the binary buffer beneath
    the text stream when it has one (not decoded for the text layer to encode again), else, for a
    stream with no buffer (``io.StringIO``, some test captures), as text."""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        return lambda text: out.write(text.decode() + "\n")
    out.flush()  # whatever was written to the text layer before goes out first
    each_line = bool(getattr(out, "line_buffering", False))  # a terminal sees each as it comes

    def to_buffer(text: bytes) -> None:
        buffer.write(text)
        buffer.write(b"\n")
        if each_line:
            buffer.flush()

    return to_buffer


def _write(target: Path, text: bytes, made: set[Path]) -> None:
    """Write through a temporary file so a killed run never leaves half a result. ``made``: the
    directories already created in this run (each is made once, not once per file)."""
    parent = target.parent
    if parent not in made:
        parent.mkdir(parents=True, exist_ok=True)
        made.add(parent)
    final = os.fspath(target)
    partial = os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.partial")
    with open(partial, "wb") as out:
        out.write(text)
        out.write(b"\n")
    os.replace(partial, final)


def run(
    paths: list[str],
    options: Options,
    output_dir: Path | None = None,
    *,
    workers: int = 1,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Re-score every input; write or print each result; report failures and a summary line."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    if output_dir is not None and output_dir.exists() and not output_dir.is_dir():
        err.write(f"taskeval: --output-dir {output_dir} is not a directory\n")
        return EXIT_INPUT
    jobs, problems = expand(paths, output_dir)
    freeze_heap()
    progress = Progress(err, len(jobs))
    for problem in problems:
        progress.note(f"taskeval: {problem}")
    scored, failed, kept = 0, len(problems), 0
    made: set[Path] = set()
    print_line = _line_printer(out)
    start = time.perf_counter()
    for done, (job, outcome) in enumerate(zip(jobs, score_files(jobs, options, workers), strict=True), 1):
        if outcome.text is None:
            failed += 1
            progress.note(f"taskeval: {outcome.error}")
        else:
            try:
                if job.target is not None:
                    _write(job.target, outcome.text, made)
                else:  # one result per line, so the stream splits with `jq -c` or a line reader
                    print_line(outcome.text)
                scored += 1
                kept += outcome.kept
            except OSError as exc:
                failed += 1
                progress.note(f"taskeval: {job.source}: could not write {job.target}: {exc.strerror}")
        progress.update(done, failed)
    progress.close()
    seconds = time.perf_counter() - start
    rate = scored / seconds if seconds > 0 else 0.0
    reuse = (f"; {kept} kept their stored signals (a changed setting measures again only the "
             "signals that read it; --recompute measures all)") if kept else ""
    err.write(f"taskeval: scored {scored}, failed {failed} in {seconds:.1f} s ({rate:,.0f} bundles/s){reuse}\n")
    return EXIT_INPUT if failed else EXIT_OK
