"""``taskeval score PATH…`` over many files and directories, as a user runs it (subprocesses)."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.rescore_bench import variants
from taskeval.config import load_config
from taskeval.evidence import build_bundle
from taskeval.pipeline import Options, score_bundle

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent-pr-482.bundle.json"


def taskeval(*args: str, stderr: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "OPENAI_", "TASKEVAL_"))}
    return subprocess.run([sys.executable, "-m", "taskeval", *args], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=stderr, timeout=300, check=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Bare bundles and stored results, one sub-directory, and two files that are not results."""
    root = tmp_path_factory.mktemp("history")
    (root / "2026" / "11").mkdir(parents=True)
    shutil.copy(EXAMPLE, root / "agent-pr-482.bundle.json")
    for n, raw in enumerate(variants(4, seed=3)):
        bundle = build_bundle(raw)
        folder = root / "2026" / "11" if n % 2 else root
        (folder / f"pr-{n}.bundle.json").write_text(bundle.to_json(), encoding="utf-8")
        result = score_bundle(bundle, load_config(None), Options(
            ai="off", trigger="cli", evaluated_at="2026-11-01T00:00:00Z", env={}))
        (folder / f"pr-{n}.result.json").write_text(result.to_json(), encoding="utf-8")
    (root / "notes.txt").write_text("not JSON, not *.json: never picked up", encoding="utf-8")
    return root


@pytest.fixture
def history(corpus: Path, tmp_path: Path) -> Path:
    """The corpus plus a broken file and a JSON file that is no bundle."""
    root = tmp_path / "history"
    shutil.copytree(corpus, root)
    (root / "broken.json").write_text("{not json", encoding="utf-8")
    (root / "2026" / "11" / "settings.json").write_text('{"theme": "dark"}', encoding="utf-8")
    return root


def good_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if p.name not in ("broken.json", "settings.json"))


def test_a_directory_rescores_into_one_result_per_input_and_reports_bad_files(
    history: Path, tmp_path: Path
) -> None:
    out = tmp_path / "rescored"
    done = taskeval("score", str(history), "--no-ai", "--output-dir", str(out))
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert any(line.startswith(f"taskeval: {history / 'broken.json'}: not valid JSON") for line in lines)
    assert any(str(history / "2026" / "11" / "settings.json") in line for line in lines)
    good = good_files(history)
    assert len(good) == 9
    assert lines[-1].startswith(f"taskeval: scored {len(good)}, failed 2 in ")
    assert lines[-1].endswith(" bundles/s); 4 kept their stored signals (a changed setting measures "
                              "again only the signals that read it; --recompute measures all)")
    assert "\r" not in done.stderr, "no progress bar when stderr is not a terminal"
    written = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(history) for p in good)
    for source in good[::4]:  # each is exactly what `taskeval score FILE` prints for that file
        single = taskeval("score", str(source), "--no-ai")
        assert single.returncode == 0, single.stderr
        assert (out / source.relative_to(history)).read_text(encoding="utf-8") == single.stdout


def test_all_good_files_exit_0_and_rerunning_gives_the_same_bytes(corpus: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    assert taskeval("score", str(corpus), "--no-ai", "--output-dir", str(first)).returncode == 0
    done = taskeval("score", str(corpus), "--no-ai", "--output-dir", str(second))
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("taskeval: scored 9, failed 0 in ")
    for path in first.rglob("*.json"):
        assert path.read_bytes() == (second / path.relative_to(first)).read_bytes()


def test_several_files_without_output_dir_print_one_json_line_each(corpus: Path) -> None:
    files = [str(p) for p in good_files(corpus)[:3]]
    done = taskeval("score", *files, "--no-ai")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    for line, path in zip(lines, files, strict=True):
        assert json.loads(line) == json.loads(taskeval("score", path, "--no-ai").stdout)


def test_a_missing_path_is_reported_and_the_rest_go_on(corpus: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    done = taskeval("score", str(missing), str(EXAMPLE), "--no-ai", "--output-dir", str(tmp_path / "o"))
    assert done.returncode == 2
    assert f"taskeval: {missing}: no such file or directory" in done.stderr
    assert (tmp_path / "o" / EXAMPLE.name).is_file()
    assert "scored 1, failed 1" in done.stderr


def test_two_inputs_with_the_same_name_do_not_overwrite_each_other(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(EXAMPLE, tmp_path / name / "pr.json")
    out = tmp_path / "out"
    done = taskeval("score", str(tmp_path / "a" / "pr.json"), str(tmp_path / "b" / "pr.json"),
                    "--no-ai", "--output-dir", str(out))
    assert done.returncode == 2
    assert "same output file as" in done.stderr and str(tmp_path / "b" / "pr.json") in done.stderr
    assert [p.name for p in out.iterdir()] == ["pr.json"]


def test_the_input_directory_is_never_overwritten(corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    shutil.copy(EXAMPLE, folder.mkdir() or folder / "pr.json")
    before = (folder / "pr.json").read_bytes()
    done = taskeval("score", str(folder), "--no-ai", "--output-dir", str(folder))
    assert done.returncode == 2 and "would overwrite the input" in done.stderr
    assert (folder / "pr.json").read_bytes() == before


def test_single_file_behaviour_is_unchanged() -> None:
    done = taskeval("score", str(EXAMPLE), "--no-ai")
    assert done.returncode == 0
    assert done.stdout.startswith("{\n") and done.stderr == ""
    bad = taskeval("score", str(EXAMPLE), str(EXAMPLE), "--no-ai", "--output", "/tmp/x.json")
    assert bad.returncode == 2 and "--output-dir" in bad.stderr


def test_workers_change_nothing_but_speed(corpus: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    assert taskeval("score", str(corpus), "--no-ai", "--output-dir", str(one)).returncode == 0
    done = taskeval("score", str(corpus), "--no-ai", "--output-dir", str(two), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert sorted(p.relative_to(one) for p in one.rglob("*.json")) == \
        sorted(p.relative_to(two) for p in two.rglob("*.json"))
    for path in one.rglob("*.json"):
        assert path.read_bytes() == (two / path.relative_to(one)).read_bytes()


def test_a_terminal_gets_a_progress_bar(history: Path, tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    try:
        done = taskeval("score", str(history), "--no-ai", "--output-dir", str(tmp_path / "o"),
                        stderr=follower)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    shown = b"".join(chunks).decode()
    assert done.returncode == 2
    assert "\r[" in shown and "/11" in shown, shown  # the bar: done/total
    assert "broken.json: not valid JSON" in shown
    assert "scored 9, failed 2" in shown.splitlines()[-1]


def test_a_change_of_weights_keeps_stored_signals_and_says_so(corpus: Path, tmp_path: Path) -> None:
    """The summary says how many results kept their stored signals; --recompute measures every
    signal again and writes the same bytes."""
    config = tmp_path / "taskeval.yml"
    config.write_text("signal_weights:\n  agent.ci_recovery: 3\n  outcome.claims: 0\n", encoding="utf-8")
    kept = taskeval("score", str(corpus), "--no-ai", "--config", str(config), "--output-dir", str(tmp_path / "kept"))
    assert kept.returncode == 0, kept.stderr
    assert "scored 9, failed 0" in kept.stderr
    assert "; 4 kept their stored signals" in kept.stderr  # the 4 stored results, not the bundles
    again = taskeval("score", str(corpus), "--no-ai", "--config", str(config), "--recompute",
                     "--output-dir", str(tmp_path / "again"))
    assert again.returncode == 0, again.stderr
    assert "kept" not in again.stderr
    for path in good_files(tmp_path / "kept"):
        assert path.read_bytes() == (tmp_path / "again" / path.relative_to(tmp_path / "kept")).read_bytes()
    assert any('"weight": 3.0' in p.read_text() for p in good_files(tmp_path / "kept"))


def test_paths_are_resolved_as_path_resolve_resolves_them(tmp_path: Path) -> None:
    """Inputs and outputs are compared by real path (never overwrite an input, never write one
    result twice); resolving each directory once must give what resolving each file gives."""
    from taskeval.batch import _RealPaths

    real_dir = tmp_path / "real"
    real_dir.mkdir()
    (real_dir / "a.json").write_text("{}", encoding="utf-8")
    (tmp_path / "linked").symlink_to(real_dir, target_is_directory=True)
    (real_dir / "b.json").symlink_to(real_dir / "a.json")
    (real_dir / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    paths = [real_dir / "a.json", tmp_path / "linked" / "a.json", real_dir / "b.json",
             tmp_path / "linked" / "b.json", real_dir / "missing.json", tmp_path / "new" / "x.json",
             real_dir / "dangling.json", tmp_path / "linked" / ".." / "real" / "a.json", tmp_path / "linked"]
    resolve = _RealPaths()
    for path in paths * 2:  # the second round answers from the directory cache
        assert resolve(path) == path.resolve(), path


def _bundles_with_text_beyond_ascii(folder: Path) -> list[str]:
    from tests import builders as b

    paths = []
    for n, title in enumerate(["Retry transient failures ✅", "Handle naïve timestamps — 日付"]):
        path = folder / f"pr-{n}.bundle.json"
        path.write_text(build_bundle(b.merged_agent_pr(number=n + 1, title=title)).to_json(), encoding="utf-8")
        paths.append(str(path))
    return paths


def _expected_lines(paths: list[str], options: Options) -> bytes:
    from taskeval.pipeline import rescore

    return b"".join(rescore(Path(p), options).json_bytes(indent=False) + b"\n" for p in paths)


def test_results_on_stdout_are_the_utf8_bytes_of_each_result_whatever_the_text_encoding(
    tmp_path: Path,
) -> None:
    """The bytes go to stdout's binary buffer: a stream whose text layer cannot even encode the
    titles still gets exact UTF-8 lines, after what was written to it before."""
    import io

    from taskeval import batch

    paths = _bundles_with_text_beyond_ascii(tmp_path)
    options = Options(ai="off", env={}, trigger="rescore")
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="ascii", write_through=False)
    stdout.write("earlier output\n")
    assert batch.run(paths, options, stdout=stdout, stderr=io.StringIO()) == 0
    stdout.flush()
    assert raw.getvalue() == b"earlier output\n" + _expected_lines(paths, options)
    assert "✅".encode() in raw.getvalue()


def test_results_on_a_stdout_without_a_buffer_are_written_as_text(tmp_path: Path) -> None:
    import io

    from taskeval import batch

    paths = _bundles_with_text_beyond_ascii(tmp_path)
    options = Options(ai="off", env={}, trigger="rescore")
    stdout = io.StringIO()  # as a test's capture may be: no .buffer beneath
    assert batch.run(paths, options, stdout=stdout, stderr=io.StringIO()) == 0
    assert stdout.getvalue() == _expected_lines(paths, options).decode()
    assert [json.loads(line)["pullRequest"]["title"] for line in stdout.getvalue().splitlines()] == [
        "Retry transient failures ✅", "Handle naïve timestamps — 日付"]
