"""Task types (taskeval.tasktypes): the title's prefix, then the labels, then the linked issues'
labels; the config's ``task_types:`` tables; the result's ``taskType`` computed at every scoring,
on the fast re-score path too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskeval.config import LoadedConfig, Settings, load_config
from taskeval.models import PullFacts
from taskeval.pipeline import Options, rescore, score_bundle
from taskeval.schema import config_schema
from taskeval.tasktypes import LinkedIssue, classify, label_key
from tests import builders


def _pull(title: str, labels: list[str] | None = None) -> PullFacts:
    return PullFacts(number=7, title=title, author="a", labels=labels or [], state="closed",
                     created_at="2025-01-01T00:00:00Z", head_sha="a" * 40, head_ref="x", base_ref="main",
                     url="https://github.com/o/r/pull/7")


# (title, labels, expected type, expected source, what it matched)
CASES: list[tuple[str, list[str], str, str, list[str]]] = [
    ("feat(x)!: drop the v1 API", [], "feature", "title", ["feat(x)!"]),
    ("feat: add retries", ["bug"], "feature", "title", ["feat"]),  # the title wins over labels
    ("fix: handle empty input", [], "fix", "title", ["fix"]),
    ("fix!: stop accepting tabs", [], "fix", "title", ["fix!"]),
    ("docs: explain the cache", [], "docs", "title", ["docs"]),
    ("Doc: add hint for setup with Vite", [], "docs", "title", ["Doc"]),
    ("refactor(core): split the parser", [], "refactor", "title", ["refactor(core)"]),
    ("perf: cache the lookup", [], "refactor", "title", ["perf"]),
    ("test: cover the retry path", [], "test", "title", ["test"]),
    ("tests(api): add cases", [], "test", "title", ["tests(api)"]),
    ("chore: tidy the Makefile", [], "chore", "title", ["chore"]),
    ("build: switch to hatch", [], "chore", "title", ["build"]),
    ("style: run black", [], "chore", "title", ["style"]),
    ("ci: cache pip", [], "ci", "title", ["ci"]),
    ("chore(deps): bump requests from 2.31 to 2.32", ["dependencies"], "deps", "title", ["chore(deps)"]),
    ("build(deps): bump actions/checkout", [], "deps", "title", ["build(deps)"]),
    ("build(deps-dev): bump pytest", [], "deps", "title", ["build(deps-dev)"]),
    ("fix(deps): update module golang.org/x/net", [], "deps", "title", ["fix(deps)"]),
    ("revert: undo the cache", [], "fix", "title", ["revert"]),
    ("FIX : spaced colon", [], "fix", "title", ["FIX"]),
    ("[Docs] Update the README", [], "docs", "title", ["[Docs]"]),
    ("[FIX] crash on start", [], "fix", "title", ["[FIX]"]),
    ("[WIP] fix: a race in the queue", [], "fix", "title", ["fix"]),  # a marker is stepped over
    ("WIP: docs: new page", [], "docs", "title", ["docs"]),
    ("Draft: [Feature] dark mode", [], "feature", "title", ["[Feature]"]),
    ("🐛 Fix crash on empty file", [], "fix", "title", ["🐛"]),
    ("✨ Add dark mode", [], "feature", "title", ["✨"]),
    ("♻️ Split the parser", [], "refactor", "title", ["♻"]),
    ("⬆️ Bump lodash", [], "deps", "title", ["⬆"]),
    (":memo: Document the flags", [], "docs", "title", [":memo:"]),
    ("✨ fix(ui): the button", [], "fix", "title", ["fix(ui)"]),  # the written type is more precise
    # No prefix: the labels decide.
    ("Fix the login page", ["bug"], "fix", "label", ["bug"]),
    ("Update the guide", ["documentation"], "docs", "label", ["documentation"]),
    ("Bump lodash", ["dependencies", "javascript"], "deps", "label", ["dependencies"]),
    ("Split the parser", ["refactoring"], "refactor", "label", ["refactoring"]),
    ("Dark mode", ["Type: Enhancement ✨"], "feature", "label", ["Type: Enhancement ✨"]),
    ("Bump actions/cache", ["dependencies", "github_actions"], "deps", "label", ["dependencies", "github_actions"]),
    ("Typo", ["bug", "documentation"], "docs", "label", ["bug", "documentation"]),  # the more specific
    ("[DEVIN: Moritz] Add auth endpoints", ["kind/feature"], "feature", "label", ["kind/feature"]),
    # Nothing says.
    ("Add auth endpoints", [], "unknown", "none", []),
    ("[DEVIN: Moritz] Add auth endpoints", [], "unknown", "none", []),
    ("Python: support 3.13", ["good first issue"], "unknown", "none", []),  # not a type
    ("Feature/login page", [], "unknown", "none", []),  # a branch name, not a prefix
    ("", [], "unknown", "none", []),
]


@pytest.mark.parametrize(("title", "labels", "kind", "source", "matched"), CASES)
def test_task_type_of_title_and_labels(title: str, labels: list[str], kind: str, source: str,
                                       matched: list[str]) -> None:
    got = classify(_pull(title, labels))
    assert (got.type, got.source, got.matched) == (kind, source, matched)
    assert got.evidence == ["pr:7"]
    assert got.reason


def test_linked_issue_labels_come_after_the_pr_s_own() -> None:
    issues = [LinkedIssue("issue:3", ("question",)), LinkedIssue("issue:4", ("bug",))]
    got = classify(_pull("Handle the empty file"), None, issues)
    assert (got.type, got.source, got.matched, got.evidence) == ("fix", "issue-label", ["bug"], ["pr:7", "issue:4"])
    assert classify(_pull("Handle it", ["documentation"]), None, issues).source == "label"
    assert classify(_pull("docs: x"), None, issues).source == "title"


@pytest.mark.parametrize(("label", "key"), [
    ("Bug", "bug"), ("type: bug", "bug"), ("Type/Documentation", "documentation"), ("kind/feature", "feature"),
    ("🐛 bug", "bug"), ("[bug]", "bug"), ("  New   Feature ", "new feature"), ("t: test", "test"),
])
def test_label_keys(label: str, key: str) -> None:
    assert label_key(label) == key


def test_the_config_adds_overrides_and_removes_entries() -> None:
    loaded = load_config(
        "task_types:\n"
        "  prefixes:\n    story: feature\n    chore: ci\n    perf: none\n    '🚧': chore\n"
        "  scopes:\n    docs: docs\n"
        "  labels:\n    'Type: Triage-Fix': fix\n    bug: none\n", None)
    assert loaded.errors == []
    settings = loaded.settings
    cases = [("story: login", [], "feature"), ("chore: x", [], "ci"), ("perf: x", [], "unknown"),
             ("🚧 x", [], "chore"), ("feat(docs): x", [], "docs"), ("x", ["triage-fix"], "fix"),
             ("x", ["bug"], "unknown"), ("x", ["enhancement"], "feature")]
    for title, labels, kind in cases:
        assert classify(_pull(title, labels), settings).type == kind, title


@pytest.mark.parametrize(("text", "error"), [
    ("task_types:\n  labels:\n    bug: bugfix\n", "task_types.labels.bug"),
    ("task_types:\n  colours: {}\n", "task_types.colours: unknown key"),
    ("task_types:\n  prefixes:\n    '': fix\n", "task_types.prefixes"),
])
def test_a_bad_task_types_section_is_reported_by_key(text: str, error: str) -> None:
    loaded = load_config(text, None)
    assert loaded.errors and error in loaded.errors[0]
    assert loaded.settings == Settings()


def test_the_config_schema_lists_the_task_types() -> None:
    props = config_schema()["properties"]
    assert "task_types" in props
    schema = json.dumps(config_schema())
    assert '"deps"' in schema and '"none"' in schema


def _stored(tmp_path: Path, title: str, labels: list[str]) -> Path:
    raw = builders.merged_agent_pr(title=title, labels=labels)
    result = score_bundle(builders.bundle(raw), LoadedConfig(Settings(), "defaults"), Options(ai="off", env={}))
    path = tmp_path / "result.json"
    path.write_text(result.to_json(), encoding="utf-8")
    return path


def test_the_result_carries_the_task_type(tmp_path: Path) -> None:
    data = json.loads(_stored(tmp_path, "fix(fetcher): retry 502s", ["enhancement"]).read_text())
    task = data["taskType"]
    assert (task["type"], task["source"], task["matched"]) == ("fix", "title", ["fix(fetcher)"])
    assert "fix(fetcher)" in task["reason"]
    cited = {i["id"] for g in data["evidence"]["groups"] for i in g["items"]}
    assert task["evidence"] == [f"pr:{builders.NUMBER}"] and set(task["evidence"]) <= cited


@pytest.mark.parametrize("trust", [True, False])
def test_re_scoring_computes_the_task_type_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  trust: bool) -> None:
    """A stored result from before task types, and a config that maps a label differently: both
    the fast path (every signal kept) and the full one compute it from the facts and the config."""
    monkeypatch.setattr("taskeval.pipeline.TRUST_STORED", trust)
    path = _stored(tmp_path, "Retry transient 502s", ["triage"])
    data = json.loads(path.read_text())
    assert data["taskType"]["type"] == "unknown"
    del data["taskType"]
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    config = tmp_path / "taskeval.yml"
    config.write_text("task_types:\n  labels:\n    triage: fix\n", encoding="utf-8")
    again = rescore(path, Options(ai="off", env={}, config_path=config))
    assert again.kept  # no signal was measured again for a task type mapping
    out = json.loads(again.json())
    assert (out["taskType"]["type"], out["taskType"]["source"], out["taskType"]["matched"]) == (
        "fix", "label", ["triage"])
    assert again.result.task_type is not None and again.result.task_type.type == "fix"
    plain = json.loads(rescore(path, Options(ai="off", env={})).json())
    assert plain["taskType"]["type"] == "unknown"


def test_a_stored_mapping_is_used_again_and_an_empty_one_leaves_the_config_hash_alone(tmp_path: Path) -> None:
    raw = builders.merged_agent_pr(title="Retry transient 502s", labels=["triage"])
    loaded = load_config("task_types:\n  labels:\n    triage: fix\n", None)
    result = score_bundle(builders.bundle(raw), loaded, Options(ai="off", env={}))
    path = tmp_path / "result.json"
    path.write_text(result.to_json(), encoding="utf-8")
    assert json.loads(rescore(path, Options(ai="off", env={})).json())["taskType"]["type"] == "fix"
    assert "task_types" not in Settings().model_dump(mode="json")  # results from before keep their hash
    assert loaded.settings.digest() != Settings().digest()


def test_agreement_with_the_dataset_s_types_on_a_fixed_sample() -> None:
    """On a fixed tenth of AIDev-pop (docs/tasktypes.md has the whole corpus): where taskeval
    names a type it is mostly the one the dataset's authors assigned, and it names one for the
    PRs whose titles carry a prefix (about 3 in 10; the rest have neither prefix nor labels)."""
    from taskeval.corpus import tasktypes as corpus
    from taskeval.corpus.aidev import default_data_dir

    root = default_data_dir()
    if not (root / "Copilot" / corpus.GPT_FILE).is_file():
        pytest.skip(f"AIDev-pop data not found at {root} (set TASKEVAL_CORPUS_DIR)")
    found = [r for r in corpus.rows(root) if corpus.in_sample(r.id)]
    assert len(found) > 500
    cells = corpus.agreement(found)
    assert cells["all"].precision >= 0.85 and 0.2 <= cells["all"].coverage <= 0.5
    for kind in ("feature", "fix", "docs"):
        assert cells[kind].precision >= 0.85, (kind, cells[kind])
    assert not [r for r in found if r.source == "title" and r.title[:1].isalpha() and ":" not in r.title
                and "[" not in r.title]
