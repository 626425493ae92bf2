"""Same bundle + same config + same scorer version => the same result, byte for byte.

Every stored result and bundle in the repository, results produced here through the CLI (with
and without the AI judge), and 200 generated variations of realistic PRs are written to disk,
read back and re-scored offline; the deterministic scores must come back identical, and with
``--no-ai`` and the stored timestamp the whole result must. ``benchmarks/rescore_bench.py`` runs
the same identity check over 10,000 bundles and reports the throughput.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.rescore_bench import rescore, run, store, variants
from taskeval import cli
from taskeval.github import make_client
from taskeval.models import EvaluationResult
from taskeval.pipeline import Options, evaluate_pull_request
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault
from tests.fakeopenai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
# The examples taskeval writes now, and results and bundles stored by earlier versions (bundle
# schema version 1: timeline events keyed by REST's event ids), which must re-score as they did.
EXAMPLES = sorted((ROOT / "examples").glob("*.json")) + sorted((ROOT / "tests" / "stored").glob("*/*.json"))
REPO = "octo-org/widgets"
DETERMINISTIC = ("repository", "pullRequest", "headSha", "evaluatedAt", "evidence", "bundleHash",
                 "signals", "config")


def score(path: Path, *extra: str) -> str:
    """``taskeval score PATH --no-ai`` in process; its stdout."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["score", str(path), "--no-ai", *extra])
    assert (code, err.getvalue()) == (0, ""), err.getvalue()
    return out.getvalue()


def reloaded(text: str, folder: Path, name: str) -> Path:
    """The JSON written as a user would store it after a parse/dump round trip."""
    path = folder / name
    path.write_text(json.dumps(json.loads(text), indent=1, ensure_ascii=False), encoding="utf-8")
    return path


def deterministic(result: dict[str, Any]) -> dict[str, Any]:
    """What scoring alone decides: everything but the trigger and the AI's part."""
    out = {key: result[key] for key in DETERMINISTIC}
    out["deterministic"] = [(c["category"], c["deterministicScore"], c["rationale"], c["evidence"])
                            for c in result["categoryScores"]]
    return out


def test_the_repository_has_stored_examples_to_check() -> None:
    kinds = {"result" if "bundleHash" in json.loads(p.read_text()) else "bundle" for p in EXAMPLES}
    assert kinds == {"result", "bundle"}


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_stored_example_rescores_to_the_same_bytes(example: Path, tmp_path: Path) -> None:
    first = score(example)
    copy = reloaded(example.read_text(), tmp_path, example.name)
    assert score(copy) == first, "a JSON reload changes nothing"
    again = reloaded(first, tmp_path, "rescored.json")
    assert score(again) == first, "re-scoring a re-scored result is a fixed point"
    stored = json.loads(example.read_text())
    if "bundleHash" in stored:
        rescored = json.loads(first)
        assert deterministic(rescored) == deterministic(stored)
        assert rescored == {**stored, "trigger": "rescore"}, "only the trigger says it was re-scored"


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Results taskeval writes for several kinds of PR, judged by a local model, stored as files."""
    folder = tmp_path_factory.mktemp("produced")
    fake = FakeGitHub()
    shapes = {
        "fail-then-fix": {"commits": 5, "ci": "fail-then-fix"},
        "red-at-merge": {"commits": 2, "ci": "red"},
        "no-ci": {"ci": "none", "reviews": []},
        "rerun": {"rerun": True, "reviews": [{"user": "octocat", "state": "CHANGES_REQUESTED"}]},
        "fork": {"fork": "someone", "commits": 1},
        "open-draft": {"merged": False, "draft": True, "state": "open"},
        "long": {"commits": 300, "ci": "green"},
    }
    paths = {}
    with fake.mock(), FakeOpenAI() as model:
        env = {"OPENAI_API_KEY": model.api_key, "OPENAI_BASE_URL": model.base_url}
        gh = make_client(FAKE_TOKEN, base_url=fake.url, retries=0)
        for number, (name, shape) in enumerate(shapes.items(), start=1):
            fake.add_pr(REPO, number, **shape)  # type: ignore[arg-type]
            result = evaluate_pull_request(gh, REPO, number, Options(
                ai="on", env=env, cache=_Memory(), evaluated_at="2026-03-02T11:00:00Z")).result
            assert result.judge.status == "ok"
            paths[name] = folder / f"{name}.json"
            paths[name].write_text(result.to_json(), encoding="utf-8")
    return paths


class _Memory:
    def __init__(self) -> None:
        self.data: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value


@pytest.mark.parametrize("name", ["fail-then-fix", "red-at-merge", "no-ci", "rerun", "fork",
                                  "open-draft", "long"])
def test_results_taskeval_writes_rescore_offline_to_the_same_scores(
    produced: dict[str, Path], tmp_path: Path, name: str,
) -> None:
    stored = json.loads(produced[name].read_text())
    first = score(reloaded(produced[name].read_text(), tmp_path, "stored.json"))
    rescored = json.loads(first)
    assert deterministic(rescored) == deterministic(stored)
    for category in rescored["categoryScores"]:  # --no-ai: the finals are the deterministic ones
        assert category["aiScore"] is None
        assert category["finalScore"] == category["deterministicScore"]
    assert score(reloaded(first, tmp_path, "again.json")) == first
    assert EvaluationResult.model_validate_json(first).bundle_hash == stored["bundleHash"]


def test_rescoring_does_not_depend_on_hash_seed_timezone_or_locale(
    produced: dict[str, Path], tmp_path: Path,
) -> None:
    """Set iteration order, local time and locale must not leak into a result: two processes
    that differ in all three print the same bytes."""
    files = [str(p) for p in produced.values()] + [str(p) for p in EXAMPLES]
    script = ("import sys\nfrom taskeval import cli\nfor path in sys.argv[1:]:\n"
              "    assert cli.main(['score', path, '--no-ai']) == 0\n")
    outputs = []
    for seed, zone, lang in (("1", "UTC", "C.UTF-8"), ("4242", "Asia/Kathmandu", "de_DE.UTF-8")):
        env = {**{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GITHUB_"))},
               "PYTHONHASHSEED": seed, "TZ": zone, "LANG": lang, "LC_ALL": lang,
               "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, "-c", script, *files], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1] and outputs[0].count('"schemaVersion"') >= len(files)


def test_200_generated_pr_variations_rescore_byte_identically(tmp_path: Path) -> None:
    """The benchmark's corpus in small: each bundle stored to disk, read back and re-scored."""
    mismatched = []
    kinds = set()
    for n, raw in enumerate(variants(200, seed=7)):
        stored = store(raw, tmp_path, n)
        _, same = rescore(stored)
        if not same:
            mismatched.append(stored.path.name)
        kinds.add((raw.pull.merged, bool(raw.check_runs or raw.workflow_runs), len(raw.commits) > 20))
    assert mismatched == []
    for axis in range(3):  # the corpus mixes merged/open, with/without CI, short/long PRs
        assert {kind[axis] for kind in kinds} == {True, False}


def test_a_result_from_partial_evidence_rescores_with_its_warnings(tmp_path: Path) -> None:
    fake = FakeGitHub()
    pr = fake.add_pr(REPO, 9, commits=300)
    fake.inject(f"/repos/{REPO}/commits/{pr.head_sha}/check-runs", Fault.forbidden())
    with fake.mock():
        result = evaluate_pull_request(make_client(FAKE_TOKEN, base_url=fake.url, retries=0),
                                       REPO, 9, Options(ai="off", env={})).result
    assert len(result.warnings) == 2
    stored = reloaded(result.to_json(), tmp_path, "stored.json")
    rescored = json.loads(score(stored))
    assert rescored == {**json.loads(result.to_json()), "trigger": "rescore"}


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("TASKEVAL_SLOW") != "1", reason="long-running: set TASKEVAL_SLOW=1")
def test_10000_generated_pr_variations_rescore_byte_identically() -> None:
    """The benchmark's full corpus (about two minutes on two cores)."""
    report = run(10_000, seed=0)
    assert report.count == 10_000 and report.mismatches == 0
