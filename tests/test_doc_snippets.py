"""Every YAML block in README.md and docs/*.md is valid: workflows (and workflow fragments: a
``permissions:`` block, a list of steps) against GitHub's workflow schema, config examples against
``taskeval schema config``, and action.yml against the action schema. The schemas are the ones
check-jsonschema vendors, so this runs offline; a snippet a user copies cannot break again."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from taskeval.config import Settings, parse_config
from taskeval.schema import schema_of

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>ya?ml)[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.MULTILINE | re.DOTALL)
CONFIG_KEYS = set(Settings.model_fields)


@dataclass(frozen=True)
class Snippet:
    where: str  # README.md:75
    text: str

    def __str__(self) -> str:
        return self.where


def snippets() -> list[Snippet]:
    out = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            out.append(Snippet(f"{path.relative_to(ROOT)}:{line}", textwrap.dedent(m.group("body"))))
    return out


SNIPPETS = snippets()
_STUB_JOB = {"runs-on": "ubuntu-latest", "steps": [{"run": "true"}]}


def kind_of(data: Any) -> tuple[str, Any]:
    """(workflow | config, the document to validate). Fragments are wrapped in a minimal
    workflow so the schema sees them where a user pastes them."""
    if isinstance(data, dict) and True in data:  # YAML 1.1 reads the key `on` as true
        data = {("on" if k is True else k): v for k, v in data.items()}
    if isinstance(data, dict) and ("jobs" in data or "on" in data):
        return "workflow", data
    if isinstance(data, dict) and set(data) == {"permissions"}:
        return "workflow", {"on": "push", **data, "jobs": {"j": _STUB_JOB}}
    if isinstance(data, list) and data and all(isinstance(s, dict) and ("uses" in s or "run" in s)
                                              for s in data):
        return "workflow", {"on": "push", "jobs": {"j": {"runs-on": "ubuntu-latest", "steps": data}}}
    if isinstance(data, dict) and set(data) <= CONFIG_KEYS:
        return "config", data
    raise AssertionError(f"a YAML block this test does not know how to check: {str(data)[:80]}")


def check_jsonschema(schema_args: list[str], files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", *schema_args, *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_the_docs_hold_yaml_snippets_of_every_kind() -> None:
    kinds = [kind_of(yaml.safe_load(s.text))[0] for s in SNIPPETS]
    assert kinds.count("workflow") >= 4 and kinds.count("config") >= 2, kinds


@pytest.mark.parametrize("snippet", SNIPPETS, ids=str)
def test_snippet_is_valid_yaml(snippet: Snippet) -> None:
    try:
        yaml.safe_load(snippet.text)
    except yaml.YAMLError as exc:
        pytest.fail(f"{snippet.where}: not valid YAML: {exc}")


def test_workflow_snippets_validate_against_githubs_workflow_schema(tmp_path: Path) -> None:
    files = []
    for n, snippet in enumerate(SNIPPETS):
        kind, doc = kind_of(yaml.safe_load(snippet.text))
        if kind == "workflow":
            path = tmp_path / f"{n:02d}-{snippet.where.replace('/', '_').replace(':', '-')}.yml"
            # Dumped as JSON (valid YAML): the schema sees exactly what PyYAML parsed, `on` included.
            path.write_text(json.dumps(doc, default=str), encoding="utf-8")
            files.append(path)
    proc = check_jsonschema(["--builtin-schema", "vendor.github-workflows"], files)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_config_snippets_validate_against_taskeval_schema_config(tmp_path: Path) -> None:
    schema = tmp_path / "taskeval.schema.json"
    schema.write_text(json.dumps(schema_of("config")), encoding="utf-8")
    files = []
    for n, snippet in enumerate(SNIPPETS):
        kind, _ = kind_of(yaml.safe_load(snippet.text))
        if kind == "config":
            loaded = parse_config(snippet.text, snippet.where)
            assert loaded.errors == [], loaded.errors
            path = tmp_path / f"config-{n:02d}.yml"
            path.write_text(snippet.text, encoding="utf-8")
            files.append(path)
    proc = check_jsonschema(["--schemafile", str(schema)], files)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_action_yml_validates_against_the_vendored_action_schema() -> None:
    proc = check_jsonschema(["--builtin-schema", "vendor.github-actions"], [ROOT / "action.yml"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_broken_snippet_users_hit_is_caught(tmp_path: Path) -> None:
    """The line that shipped in README.md: a flow mapping holding `${{ }}` does not parse."""
    bad = "with: { name: taskeval-result, path: ${{ steps.eval.outputs.result-path }} }\n"
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(bad)
    wrong = tmp_path / "wrong.yml"
    wrong.write_text("on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n"
                     "      - uses: actions/upload-artifact@v4\n        with: [name, path]\n")
    proc = check_jsonschema(["--builtin-schema", "vendor.github-workflows"], [wrong])
    assert proc.returncode != 0
