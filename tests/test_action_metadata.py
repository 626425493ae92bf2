"""action.yml is valid action metadata, matches the entrypoint, and the docs table matches it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from action import docs
from action.main import OUTPUT_NAMES

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((Path(__file__).parent / "schemas" / "github-action.json").read_text())


@pytest.fixture(scope="module")
def meta() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def test_schema_itself_is_a_valid_draft7_schema() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)


def test_action_yml_validates_against_the_action_metadata_schema(meta: dict[str, Any]) -> None:
    jsonschema.validate(meta, SCHEMA)


@pytest.mark.parametrize(
    ("mutate", "what"),
    [
        (lambda m: m.pop("description"), "missing description"),
        (lambda m: m["runs"].pop("image"), "docker without image"),
        (lambda m: m["runs"].update(using="docker2"), "unknown runner"),
        (lambda m: m["inputs"]["ai"].update(type="string"), "unknown input key"),
        (lambda m: m["branding"].update(icon="rocket-ship"), "unknown icon"),
        (lambda m: m["outputs"]["overall-score"].update(value="x"), "value on a docker output"),
        (lambda m: m.update(inputs={"bad name": {"description": "x"}}), "bad input id"),
    ],
)
def test_schema_rejects_broken_metadata(meta: dict[str, Any], mutate: Any, what: str) -> None:
    broken = json.loads(json.dumps(meta))
    mutate(broken)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)


def test_container_action_builds_the_repo_dockerfile(meta: dict[str, Any]) -> None:
    assert meta["runs"] == {"using": "docker", "image": "Dockerfile"}
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert 'ENTRYPOINT ["python", "-m", "action"]' in dockerfile


def test_required_inputs_and_defaults(meta: dict[str, Any]) -> None:
    inputs = meta["inputs"]
    for name in ("github-token", "pull-request", "config-path", "comment", "ai", "model",
                 "openai-api-key", "openai-base-url", "fail-under", "result-path"):
        assert name in inputs, name
    assert inputs["github-token"]["default"] == "${{ github.token }}"
    assert inputs["comment"]["default"] == "true"
    assert inputs["ai"]["default"] == "auto"
    assert inputs["fail-under"]["default"] == "0"


def test_declared_outputs_are_exactly_those_the_entrypoint_sets(meta: dict[str, Any]) -> None:
    assert tuple(meta["outputs"]) == OUTPUT_NAMES


def test_every_input_is_read_by_the_entrypoint(meta: dict[str, Any]) -> None:
    source = (ROOT / "action" / "inputs.py").read_text(encoding="utf-8")
    read = set(re.findall(r'(?:raw_input|_reserve)\(env, "([a-z-]+)"', source))
    assert read == set(meta["inputs"])


def test_docs_table_matches_action_yml(meta: dict[str, Any]) -> None:
    block = docs.render_reference(meta)
    checked = 0
    for name in docs.DEFAULT_FILES:
        path = ROOT / name
        if not path.is_file() or docs.START not in path.read_text(encoding="utf-8"):
            continue
        text = path.read_text(encoding="utf-8")
        assert docs.replace_block(text, block) == text, (
            f"{name}: the inputs/outputs table drifted from action.yml; "
            "run `python -m action.docs` to regenerate it")
        checked += 1
    assert (ROOT / "docs" / "action.md").read_text(encoding="utf-8").count(docs.START) == 1
    assert checked >= 1


def test_docs_table_lists_every_input_and_output(meta: dict[str, Any]) -> None:
    block = docs.render_reference(meta)
    for name in [*meta["inputs"], *meta["outputs"]]:
        assert f"| `{name}` |" in block


def test_docs_check_mode_reports_drift(tmp_path: Path, meta: dict[str, Any]) -> None:
    stale = tmp_path / "README.md"
    stale.write_text(f"intro\n{docs.START}\n| `old-input` | x |\n{docs.END}\noutro\n")
    check = subprocess.run([sys.executable, "-m", "action.docs", "--check", str(stale)],
                           capture_output=True, text=True, cwd=ROOT, check=False)
    assert check.returncode == 1 and "out of date" in check.stderr
    fix = subprocess.run([sys.executable, "-m", "action.docs", str(stale)],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    assert fix.returncode == 0
    text = stale.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n")
    assert "old-input" not in text and "| `github-token` |" in text


def test_dockerignore_keeps_tests_and_git_out_of_the_build_context() -> None:
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    rules = [ln for ln in lines if ln and not ln.startswith("#")]
    assert rules[0] == "*", "the context must start from nothing and allow-list what is built"
    allowed = {ln[1:].rstrip("/") for ln in rules if ln.startswith("!")}
    assert allowed == {"pyproject.toml", "README.md", "taskeval", "action", "bot"}
