"""A repository's patterns cannot freeze an evaluation: every regex a config gives runs on RE2
(linear time), and one RE2 cannot take is refused when the config is loaded.

The freeze is real: with Python's backtracking ``re``, ``(a+)+$`` against a 30-character title
runs for minutes holding the interpreter lock. So the evaluations here run as ``taskeval score``
processes with a timeout, one per place a config pattern is matched, each against a bundle whose
texts are that pattern's worst case.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from taskeval.config import Settings, parse_config
from taskeval.regex import LinearPattern
from tests import builders
from tests.processes import child_env

SOURCE = "repo:.github/taskeval.yml"
ATTACK = "a" * 34 + "!"  # the worst case of (a+)+$ and its kin
CATASTROPHIC = ["(a+)+$", "(a|a)+$", "(a|aa)+$", "(.*a){12}$", "^(a+)+b"]


def _config(field: str, pattern: str) -> dict[str, Any]:
    """A config whose ``field`` holds ``pattern`` (an agents field: on the built-in Copilot entry,
    the agent of the PR, so its standard texts and commits are the ones read)."""
    if field.startswith("patterns."):
        return {"patterns": {field.split(".", 1)[1]: pattern}}
    return {"agents": [{"id": "copilot", field.split(".", 1)[1]: [pattern]}]}


FIELDS = ["patterns.commit_convention", "patterns.task_id_pattern", "agents.co_authors", "agents.text_marks",
          "agents.standard_texts", "agents.standard_commits"]
# What RE2 does not have: it refuses them at load, so no backtracking engine ever runs them.
PYTHON_ONLY = {
    "lookahead": "fix(?=:)", "negative-lookahead": "^(?!wip)", "lookbehind": "(?<=#)\\d+",
    "backreference": "(a)\\1", "named-backreference": "(?P<x>a)(?P=x)", "atomic-group": "(?>a+)b",
    "possessive": "a++b", "conditional": "(a)?(?(1)b|c)", "repeat-over-1000": "a{1001}",
}


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("construct", list(PYTHON_ONLY))
def test_a_pattern_re2_cannot_take_is_refused_at_load(field: str, construct: str) -> None:
    loaded = parse_config(yaml.safe_dump(_config(field, PYTHON_ONLY[construct])), SOURCE)
    [error] = loaded.errors
    section, key = field.split(".")
    where = f"{SOURCE}: {section}.{key}: " if section == "patterns" else f"{SOURCE}: agents.0.{key}: "
    assert error.startswith(where) and "RE2" in error, error
    assert loaded.settings == Settings(), "the defaults apply"


@pytest.mark.parametrize("field", FIELDS)
def test_taskevals_own_patterns_keep_their_lookarounds(field: str) -> None:
    """A config that repeats a built-in pattern word for word (the default task pattern has a
    lookahead) is taskeval's own pattern, not refused."""
    from taskeval.agent_table import BUILTIN_RULES

    defaults = Settings().patterns
    own = {"patterns.commit_convention": defaults.commit_convention,
           "patterns.task_id_pattern": defaults.task_id_pattern}.get(field)
    if own is None:
        key = field.split(".", 1)[1]
        own = next(x for r in BUILTIN_RULES for x in getattr(r, key))
    assert parse_config(yaml.safe_dump(_config(field, own)), SOURCE).errors == []


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_a_catastrophic_pattern_is_matched_in_linear_time(pattern: str) -> None:
    """Matched by RE2, whose automaton has no backtracking to blow up: the engine is asserted,
    not a duration (the process test below bounds a whole evaluation with a timeout)."""
    import re2

    compiled = LinearPattern(pattern)
    assert isinstance(compiled._compiled, type(re2.compile("a")))
    for size in (30, 3_000, 300_000):
        found = compiled.search("a" * size + "!")
        assert found is None or found.group(0) != ""


def _attack_bundle(tmp_path: Path) -> Path:
    """A Copilot PR whose title, body, commit subjects and co-author trailers are all the worst
    case of the patterns above."""
    commits = [builders.commit(f"c{n}", f"{ATTACK}\n\nCo-authored-by: {ATTACK} <a@example.com>", 10 + n)
               for n in range(3)]
    raw = builders.merged_agent_pr(title=ATTACK, body=f"{ATTACK}\n\nCo-authored-by: {ATTACK} <a@example.com>",
                                   commits=commits)
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(builders.bundle(raw).json_form()))
    return path


@pytest.mark.parametrize("field", FIELDS)
def test_a_catastrophic_pattern_cannot_freeze_an_evaluation(tmp_path: Path, field: str) -> None:
    bundle = _attack_bundle(tmp_path)
    config = tmp_path / "taskeval.yml"
    config.write_text(yaml.safe_dump(_config(field, "(a+)+$")))
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-m", "taskeval", "score", str(bundle), "--no-ai",
                               "--config", str(config)], env=child_env(), capture_output=True, text=True,
                              timeout=30, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a config pattern in {field} held the evaluation past 30 s")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["config"]["errors"] == [] and result["config"]["source"] == f"file:{config}"
    assert time.monotonic() - started < 20


# The reader's own phrases run on Python's ``re`` over every word people write on a PR. Their worst
# cases: long runs of punctuation (where a sentence may start) and chains of links (where a PR may
# be named), as long as GitHub lets a comment be (65,536 characters). An evaluation cuts what it
# reads (a body at 8,000 characters, a comment at 500), so the reader is run on them whole, in a
# child process with a timeout: an unbounded ``\W*`` after every full stop took 14 s on 20,000 dots
# and grows with the square of the length.
READER_ATTACKS = {"punctuation": "." * 65_000, "spaced punctuation": ". " * 32_500,
                  "links": "http://" * 9_000, "pull links": "https://github.com/o/r/pull/1" * 2_000}


@pytest.mark.parametrize("name", READER_ATTACKS)
def test_the_readers_phrases_cannot_freeze_a_reading(name: str) -> None:
    program = ("import sys\nfrom taskeval.signals.reader import read\ntext = sys.stdin.read()\n"
               "for kind in ('comment', 'review', 'body'):\n    read(text, kind, 'person', 'last3')\nprint('read')")
    try:
        proc = subprocess.run([sys.executable, "-c", program], input=READER_ATTACKS[name], env=child_env(),
                              capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a comment of {name} held the reader past 60 s")
    assert proc.returncode == 0 and proc.stdout.strip() == "read", proc.stderr


def test_a_commit_of_a_thousand_co_author_lines_cannot_freeze_an_evaluation(tmp_path: Path) -> None:
    """Co-author trailers of nothing but ``<``: read as names, they once took seconds a commit
    (a ``<[^>]*>`` tried from every ``<``); now the trailer is bounded and the name read in one pass."""
    message = "feat: x\n\nbody\n\n" + "\n".join("Co-authored-by: " + "<" * 150 for _ in range(1000))
    raw = builders.merged_agent_pr(commits=[builders.commit(f"c{n}", message, 10 + n) for n in range(10)])
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps(builders.bundle(raw).json_form()))
    try:
        proc = subprocess.run([sys.executable, "-m", "taskeval", "score", str(bundle), "--no-ai"],
                              env=child_env(), capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("co-author trailers held the evaluation past 60 s")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["overallScore"] is not None


def test_the_worst_case_benchmark_times_every_kind_of_package_pattern(capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/pattern_worst_case.py finds the modules' compiled patterns, the reader's phrase
    rules and the literals written inline, and times each on every worst-case shape."""
    from benchmarks import pattern_worst_case as bench
    from taskeval.signals.reader import RULES

    found = dict(bench.module_patterns())
    assert {f"taskeval.signals.reader.RULES[{i}]" for i in range(len(RULES))} <= set(found)
    inline = dict(bench.inline_patterns())
    assert any(where.startswith("taskeval/evidence/vocabulary.py:") for where in inline)
    assert bench.main(["--length", "40", "--slow", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == (f"{len(found) + len(inline)} patterns, {(len(found) + len(inline)) * len(bench.UNITS)} "
                       "pairings timed at 40 and 80 characters")
