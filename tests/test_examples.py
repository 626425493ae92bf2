"""The stored example is the README's offline demo: it must re-score cleanly and stay current."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from taskeval.report import MARKER

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def test_readme_offline_command_prints_the_comment() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "taskeval", "score", "examples/agent-pr-482.result.json", "--no-ai", "--markdown"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(MARKER)
    stored = json.loads((EXAMPLES / "agent-pr-482.result.json").read_text())
    assert f"{stored['overallScore']}/100" in proc.stdout


@pytest.mark.parametrize("name", ["agent-pr-482.result.json", "agent-pr-482.bundle.json"])
def test_examples_rescore_to_the_stored_scores(name: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "taskeval", "score", f"examples/{name}", "--no-ai"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    rescored = json.loads(proc.stdout)
    stored = json.loads((EXAMPLES / "agent-pr-482.result.json").read_text())
    assert rescored["overallScore"] == stored["overallScore"]
    assert rescored["categoryScores"] == stored["categoryScores"]
    assert rescored["signals"] == stored["signals"]


def test_stored_example_is_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scorer change that alters the example must come with a regenerated example."""
    spec = importlib.util.spec_from_file_location("make_example", EXAMPLES / "make_example.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    (tmp_path / "examples").mkdir()
    module.main()
    for name in ("agent-pr-482.result.json", "agent-pr-482.bundle.json", "agent-pr-482.comment.md"):
        assert (tmp_path / "examples" / name).read_text() == (EXAMPLES / name).read_text(), (
            f"examples/{name} is stale: run `python examples/make_example.py`"
        )
