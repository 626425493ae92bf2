"""`taskeval schema config`: the JSON Schema of .github/taskeval.yml that editors use. It accepts
and rejects what the loader accepts and rejects, so an editor never contradicts taskeval."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from taskeval.config import parse_config
from taskeval.signals import signal_specs
from tests.test_cli import run_cli


@pytest.fixture(scope="module")
def schema() -> dict:
    proc = run_cli("schema", "config")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_schema_config_is_a_valid_2020_12_schema_with_every_key(schema: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith("/config-v1.json")
    assert {"patterns", "thresholds", "signal_weights", "disabled_signals", "ai"} <= set(schema["properties"])
    thresholds = schema["$defs"]["Thresholds"]["properties"]
    assert "comfortable_change_lines" in thresholds
    assert thresholds["comfortable_change_lines"]["default"] == 200  # editors show the default
    assert thresholds["comfortable_change_lines"]["description"]      # and the meaning
    ids = {s.id for s in signal_specs()}
    assert set(schema["properties"]["signal_weights"]["propertyNames"]["enum"]) == ids


CASES = [
    # (config text, the loader and the schema both accept it)
    ("", True),
    ("# yaml-language-server: $schema=taskeval.schema.json\nai: false\n", True),
    ("thresholds:\n  comfortable_change_lines: 300\n", True),
    ("patterns:\n  test_paths: ['tests/*']\n  bot_logins: [my-ci-bot]\n", True),
    ("signal_weights:\n  process.conventional_commits: 0\n", True),
    ("disabled_signals: [agent.text_hygiene]\n", True),
    ("tresholds:\n  comfortable_change_lines: 300\n", False),  # unknown key (typo)
    ("thresholds:\n  comfortable_change_lines: lots\n", False),  # wrong type
    ("thresholds:\n  comfortable_change_lines: 0\n", False),  # below its minimum
    ("thresholds:\n  change_size_floor: 101\n", False),  # above its maximum
    ("signal_weights:\n  process.conventional_commits: 11\n", False),  # weight out of 0..10
    ("ai: sometimes\n", False),
    ("patterns:\n  test_paths: tests/*\n", False),  # a string, not a list
]


@pytest.mark.parametrize(("text", "valid"), CASES)
def test_schema_and_loader_agree(schema: dict, text: str, valid: bool) -> None:
    loaded = parse_config(text, "test")
    assert (loaded.errors == []) is valid, loaded.errors
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(text) or {}))
    assert (errors == []) is valid, [e.message for e in errors]


def test_schema_flags_an_unknown_signal_id_the_loader_only_warns_about(schema: dict) -> None:
    doc = {"disabled_signals": ["agent.text_hygeine"]}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    assert parse_config(yaml.safe_dump(doc), "test").errors == []  # a warning in the result, not an error


def test_plain_schema_still_prints_the_result_schema() -> None:
    proc = run_cli("schema")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema["$id"].endswith("/result-v2.json") and "overallScore" in schema["properties"]
