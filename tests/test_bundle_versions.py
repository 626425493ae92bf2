"""Bundle schema versions: version 2 keys timeline events by GitHub's global node id (the same
through REST and GraphQL); bundles and results stored with version 1 (REST's event ids) keep
their IDs and re-score byte for byte; a re-evaluation makes a version-2 bundle."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from taskeval import cli
from taskeval.github import make_client
from taskeval.models import SCHEMA_VERSION, SCHEMA_VERSIONS, EvidenceBundle
from taskeval.pipeline import Options, evaluate_pull_request
from taskeval.schema import schema_of
from tests.fakegithub import FAKE_TOKEN

ROOT = Path(__file__).resolve().parent.parent
STORED = ROOT / "tests" / "stored" / "schema-v1"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_example", ROOT / "examples" / "make_example.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _score(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["score", *argv, "--no-ai"])
    many = "--output-dir" in argv  # the batch path says what it did on stderr
    assert code == 0 and (many or err.getvalue() == ""), err.getvalue()
    return out.getvalue()


def _event_ids(bundle: dict[str, Any]) -> list[str]:
    return [e["id"] for e in bundle["facts"]["timeline"]]


def test_version_2_is_current_and_each_version_is_documented() -> None:
    assert SCHEMA_VERSION == "2" and set(SCHEMA_VERSIONS) == {"1", "2"}
    for what in ("bundle", "result"):
        schema = schema_of(what)  # type: ignore[arg-type]
        said = schema["properties"]["schemaVersion"]["description"]
        assert schema["$id"].endswith(f"/{what}-v2.json")
        assert "1: " in said and "REST's numeric event id" in said
        assert "2: " in said and "node id" in said and "cross-referenced" in said
    entry = schema_of("bundle")["$defs"]["TimelineEntry"]["properties"]["id"]["description"]
    assert "node id" in entry and "version 1" in entry


@pytest.mark.parametrize("name", ["agent-pr-482.result.json", "agent-pr-482.bundle.json"])
def test_a_version_1_file_rescores_as_it_did_keeping_its_ids(name: str, tmp_path: Path) -> None:
    stored = json.loads((STORED / name).read_text())
    evidence = stored.get("evidence", stored)
    assert evidence["schemaVersion"] == "1" and "event:1000001" in _event_ids(evidence)
    rescored = json.loads(_score(str(STORED / name)))
    assert rescored["schemaVersion"] == "1", "a result carries its bundle's version"
    assert rescored["evidence"] == evidence and _event_ids(rescored["evidence"]) == _event_ids(evidence)
    if "bundleHash" in stored:
        assert rescored == {**stored, "trigger": "rescore"}
    # Many files at once (the batch path) give the same bytes as one.
    (tmp_path / "out").mkdir()
    copies = [tmp_path / f"{n}-{name}" for n in (1, 2)]
    for copy in copies:
        copy.write_bytes((STORED / name).read_bytes())
    _score(*map(str, copies), "--output-dir", str(tmp_path / "out"))
    written = sorted((tmp_path / "out").iterdir())
    assert written and all(json.loads(p.read_text()) == rescored for p in written)


def test_a_re_evaluation_of_the_same_pr_makes_a_version_2_bundle_with_node_ids() -> None:
    example = _example()
    fake = example.build()
    with fake.mock():
        evaluation = evaluate_pull_request(
            make_client(FAKE_TOKEN, base_url=fake.url), example.REPO, example.NUMBER,
            Options(ai="off", trigger="pull_request", evaluated_at="2025-03-04T12:00:00Z", env={}))
    new = json.loads(evaluation.result.to_json())
    old = json.loads((STORED / "agent-pr-482.result.json").read_text())
    assert (new["schemaVersion"], new["evidence"]["schemaVersion"]) == ("2", "2")
    served = {e["node_id"] for e in fake.repos[example.REPO].pulls[example.NUMBER].reviews}
    new_ids, old_ids = _event_ids(new["evidence"]), _event_ids(old["evidence"])
    assert len(new_ids) == len(old_ids) and new_ids != old_ids
    assert {i.removeprefix("event:") for i in new_ids} >= served, "reviews keyed by node id"
    # Only the keys of the events changed: the scores are the same.
    assert (new["overallScore"], new["categoryScores"]) == (old["overallScore"], old["categoryScores"])


def test_a_bundle_that_names_no_version_is_version_1() -> None:
    data = json.loads((STORED / "agent-pr-482.bundle.json").read_text())
    digest = EvidenceBundle.model_validate(data).hash()
    del data["schemaVersion"]
    unnamed = EvidenceBundle.model_validate(data)
    assert unnamed.schema_version == "1" and unnamed.hash() == digest
