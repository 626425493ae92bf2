"""Repository config: valid files apply, broken ones fall back to defaults with a message naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskeval.config import Settings, load_config, parse_config

SOURCE = "repo:.github/taskeval.yml"


def test_missing_config_is_defaults_without_errors() -> None:
    loaded = load_config(None)
    assert loaded.source == "defaults"
    assert loaded.errors == []
    assert loaded.settings == Settings()


def test_valid_config_overrides_defaults() -> None:
    text = """
patterns:
  test_paths: ["checks/*"]
  task_trailers: ["Linear-Id"]
thresholds:
  comfortable_change_lines: 150
signal_weights:
  process.conventional_commits: 0
ai: false
"""
    loaded = parse_config(text, SOURCE)
    assert loaded.errors == []
    assert loaded.settings.patterns.test_paths == ["checks/*"]
    assert loaded.settings.patterns.task_trailers == ["Linear-Id"]
    assert loaded.settings.thresholds.comfortable_change_lines == 150
    assert loaded.settings.signal_weights == {"process.conventional_commits": 0}
    assert loaded.settings.ai is False
    # untouched sections keep their documented defaults
    assert loaded.settings.patterns.doc_paths == Settings().patterns.doc_paths


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("patterns:\n  test_globs: ['x']\n", "patterns.test_globs: unknown key"),
        ("thresholds:\n  comfortable_change_lines: lots\n", "thresholds.comfortable_change_lines"),
        ("thresholds:\n  comfortable_change_lines: 0\n", "thresholds.comfortable_change_lines"),
        ("thresholds:\n  comfortable_change_lines: 500\n  max_change_lines: 400\n",
         "greater than comfortable_change_lines"),
        ("patterns:\n  commit_convention: '(unclosed'\n", "not a valid regular expression"),
        ("signal_weights:\n  ci.head_state: 50\n", "within 0..10"),
        ("- a\n- b\n", "top level must be a mapping"),
        ("patterns: [\n", "not valid YAML at line"),
        ("max_prompt_chars: 10\n", "max_prompt_chars"),
    ],
)
def test_broken_config_falls_back_to_defaults_and_names_the_problem(text: str, fragment: str) -> None:
    loaded = parse_config(text, SOURCE)
    assert loaded.settings == Settings(), "a broken config must not half-apply"
    assert loaded.errors, "a broken config must be reported"
    assert any(fragment in e for e in loaded.errors), loaded.errors
    assert all(e.startswith(SOURCE) for e in loaded.errors)


def test_local_file_overrides_repo_file(tmp_path: Path) -> None:
    local = tmp_path / "taskeval.yml"
    local.write_text("ai: false\n")
    loaded = load_config("ai: true\n", local)
    assert loaded.source == f"file:{local}"
    assert loaded.settings.ai is False


def test_unreadable_local_file_is_reported(tmp_path: Path) -> None:
    loaded = load_config(None, tmp_path / "missing.yml")
    assert loaded.settings == Settings()
    assert "cannot read" in loaded.errors[0]


def test_oversized_config_is_rejected() -> None:
    loaded = parse_config("# " + "x" * 70_000, SOURCE)
    assert "larger than" in loaded.errors[0]


def test_every_setting_has_a_documented_default() -> None:
    """Users read defaults from the schema; a field without a description is undocumented."""
    def walk(model: type) -> list[str]:
        missing = []
        for name, f in model.model_fields.items():
            if not f.description:
                missing.append(name)
            ann = f.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                missing += [f"{name}.{m}" for m in walk(ann)]
        return missing

    assert walk(Settings) == []
