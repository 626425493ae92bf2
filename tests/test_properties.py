"""Bad input, generated: repository config files, stored bundles and results, and PR text on its
way into the comment. Each property holds for any input hypothesis finds; the table tests next to
each property keep the hostile inputs it once found (NaN and infinite thresholds, nesting deep
enough to exhaust the parser's recursion, 400-digit counts, malformed stored config).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskeval import cli
from taskeval.config import Patterns, Settings, Thresholds, field_location, parse_config
from taskeval.pipeline import Options, score_bundle
from taskeval.report import render_comment
from tests import builders
from tests.test_secrets import EVIL, PLACES, assert_inert, result_with

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_RESULT = ROOT / "examples" / "agent-pr-482.result.json"
EXAMPLE_BUNDLE = ROOT / "examples" / "agent-pr-482.bundle.json"
SOURCE = "repo:.github/taskeval.yml"
JSON_SAFE_INT = 2**53  # the largest integer every JSON reader holds exactly (RFC 8259, 6)
WHOLE_PROBLEMS = ("not valid YAML", "top level must be a mapping", "larger than")

# Few examples per property so the suite stays fast; TASKEVAL_SLOW=1 searches much longer. No
# deadline: a 2-core CI box is slow.
EXAMPLES = 3000 if os.environ.get("TASKEVAL_SLOW") == "1" else 120
FAST = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ----------------------------------------------------------------------------------- config


TOP_KEYS = list(Settings.model_fields)
INNER_KEYS = [*Patterns.model_fields, *Thresholds.model_fields, "process.change_size",
              "agent.text_hygiene"]
scalars = (st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats()
           | st.text(max_size=30))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(INNER_KEYS) | st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)
documents = st.dictionaries(st.sampled_from(TOP_KEYS) | st.text(max_size=12), values, max_size=5)
YAML_BITS = ["key: value\n", "- item\n", "  nested: 1\n", "ai: maybe\n", "thresholds:\n",
             "  hygiene_half_life: -1\n", "&a [*a]\n", "!!python/object:os.system ls\n", "? \n",
             "{", "}", "[", "]", ": ", "'", '"', "\t", "%YAML 1.2\n", "---\n", "...\n", "\x00",
             "\ufeff", "é", "#", "|\n", ">\n", "*", "&", "!", "\u2028"]
config_texts = st.one_of(
    st.text(max_size=400),
    st.lists(st.sampled_from(YAML_BITS) | st.text(max_size=12), max_size=30).map("".join),
    documents.map(lambda doc: yaml.safe_dump(doc, allow_unicode=True)),
)


def _keys_of(text: str) -> set[str] | None:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    return {str(k) for k in data} if isinstance(data, dict) else None


@FAST
@given(config_texts)
def test_any_config_text_gives_settings_and_problems_that_name_a_key(text: str) -> None:
    loaded = parse_config(text, SOURCE)

    assert isinstance(loaded.settings, Settings)
    keys = _keys_of(text)
    for error in loaded.errors:
        assert error.startswith(f"{SOURCE}: ")
        problem = error.removeprefix(f"{SOURCE}: ")
        if problem.startswith(WHOLE_PROBLEMS):
            continue
        assert keys, f"a key-level problem for a document without keys: {error}"
        if "" in keys and problem.startswith("(top level): unknown key"):
            continue  # an empty key has no name to show (YAML "'': x")
        # A key with a control character in it is shown quoted and escaped, on one line.
        named = [field_location((k,)) for k in keys]
        assert any(problem.startswith((f"{k}.", f"{k}:")) for k in named), error
        assert "\n" not in error and "\r" not in error


valid_thresholds = st.fixed_dictionaries({}, optional={
    name: st.floats(min_value=0.01, max_value=1e6) for name in (
        "head_failing_half_life", "red_push_half_life", "hygiene_half_life", "claims_half_life",
        "test_ratio_half", "doc_ratio_half", "approval_half", "description_half_chars")})
valid_documents = st.fixed_dictionaries({}, optional={
    "thresholds": valid_thresholds,
    "signal_weights": st.dictionaries(
        st.sampled_from(["process.change_size", "agent.text_hygiene", "outcome.ci_head",
                         "process.conventional_commits"]),
        st.floats(min_value=0, max_value=10), max_size=3),
    "disabled_signals": st.lists(st.sampled_from(["process.change_size", "outcome.claims"]),
                                 max_size=2),
    "ai": st.booleans(),
})


@cache
def _baseline_bundle() -> Any:
    return builders.bundle(builders.red_ci_at_merge())


@FAST
@given(st.one_of(valid_documents, documents))
def test_settings_that_load_score_a_pr_and_survive_being_stored(doc: dict[str, Any]) -> None:
    """What a config yields always scores, and the settings a result stores re-create it."""
    loaded = parse_config(yaml.safe_dump(doc, allow_unicode=True), SOURCE)
    options = Options(ai="off", trigger="rescore", evaluated_at="2026-03-02T11:00:00Z")
    first = score_bundle(_baseline_bundle(), loaded, options)

    stored = json.loads(first.to_json())["config"]["settings"]
    again = Settings.model_validate(stored)
    assert again.digest() == loaded.settings.digest()
    loaded.settings = again
    assert score_bundle(_baseline_bundle(), loaded, options).to_json() == first.to_json()


def score_cli(path: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["score", str(path), "--no-ai", *extra])  # raising = a user's traceback
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("signal_weights:\n  process.change_size: .nan\n", id="nan-weight"),
        pytest.param("[" * 3000 + "]" * 3000, id="deep-nesting"),
        pytest.param("patterns:\n  commit_convention: 'a{1001}'\n", id="regex-repeat-too-large"),
        pytest.param("thresholds:\n  hygiene_half_life: .inf\n", id="infinite-threshold"),
        pytest.param("thresholds:\n  hygiene_half_life: -1\n", id="out-of-range"),
    ],
)
def test_a_hostile_config_file_is_reported_not_a_crash(tmp_path: Path, text: str) -> None:
    config = tmp_path / "taskeval.yml"
    config.write_text(text)
    code, out, err = score_cli(EXAMPLE_RESULT, "--config", str(config))
    errors = json.loads(out)["config"]["errors"]
    assert code == 0 and len(errors) == 1 and errors[0].startswith(f"file:{config}: ")
    # Said as evaluate says it, on stderr, and the result is still written on the defaults.
    assert "Config problem" in err and "Traceback" not in err


def test_an_infinite_threshold_cannot_make_a_result_unrescorable(tmp_path: Path) -> None:
    config = tmp_path / "taskeval.yml"
    config.write_text("thresholds:\n  hygiene_half_life: .inf\n")
    stored = tmp_path / "stored.json"
    code, out, _ = score_cli(EXAMPLE_RESULT, "--config", str(config), "--output", str(stored))
    assert code == 0
    again, out_again, err = score_cli(stored)
    assert again == 0, err
    assert json.loads(out_again)["categoryScores"] == json.loads(out)["categoryScores"]


# ------------------------------------------------------------------------ stored files for score


@cache
def _stored(name: str) -> str:
    return (EXAMPLE_RESULT if name == "result" else EXAMPLE_BUNDLE).read_text()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


@cache
def _mutable_paths(name: str) -> list[tuple[Any, ...]]:
    return [p for p in _paths(json.loads(_stored(name))) if p]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-JSON_SAFE_INT, JSON_SAFE_INT)
    | st.sampled_from([2**63, -(2**63), 10**400]) | st.floats()
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=6,
)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, tuple[Any, ...], str, str]:
    """(file kind, path, operation, file text) for one edit of a stored result or bundle."""
    name = draw(st.sampled_from(["result", "bundle"]))
    data = json.loads(_stored(name))
    path = draw(st.sampled_from(_mutable_paths(name)))
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    op = draw(st.sampled_from(["delete", "replace", "add-key"]))
    if op == "delete":
        del parent[path[-1]]
    elif op == "replace":
        parent[path[-1]] = draw(json_values)
    else:
        target = parent[path[-1]]
        if not isinstance(target, dict):
            op = "replace"
            parent[path[-1]] = {draw(st.text(min_size=1, max_size=8)): draw(json_values)}
        else:
            key = draw(st.text(min_size=1, max_size=8).filter(lambda k: k not in target))
            target[key] = draw(json_values)
            path = (*path, key)
    return name, path, op, json.dumps(data, ensure_ascii=False)


@FAST
@given(mutated())
def test_an_edited_stored_file_is_rescored_or_rejected_in_one_line(
    edit: tuple[str, tuple[Any, ...], str, str],
) -> None:
    name, path, _, text = edit
    with tempfile.TemporaryDirectory() as folder:
        stored = Path(folder) / "stored.json"
        stored.write_text(text, encoding="utf-8")
        code, out, err = score_cli(stored)
    assert code in (0, 2)
    if code == 0:
        assert err == "" and json.loads(out)["trigger"] == "rescore"
        return
    assert out == ""
    [line] = err.rstrip("\n").split("\n")  # keys may hold \x1e etc., which splitlines() splits on
    assert line.startswith(f"taskeval: {stored}: ")
    keys = [str(step) for step in path if isinstance(step, str)]
    named = any(key in line for key in keys)
    assert named or (name == "result" and path[0] == "evidence" and "bundleHash" in line), line


def _edited(mutate: Any, name: str = "result") -> str:
    data = json.loads(_stored(name))
    mutate(data)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        pytest.param(_edited(lambda d: d["config"].__setitem__("errors", 5)), "config.errors",
                     id="errors-not-a-list"),
        pytest.param(_edited(lambda d: d["config"].__setitem__("errors", [1, None])),
                     "config.errors", id="errors-not-strings"),
        pytest.param('{"evidence": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested",
                     id="deeply-nested"),
        pytest.param(_edited(lambda d: d["facts"]["files"][0].__setitem__("additions", 10**400),
                             "bundle"), "facts.files.0.additions", id="count-beyond-float"),
        pytest.param(_edited(lambda d: d.pop("bundleHash")), "bundleHash",
                     id="result-without-hash"),
        pytest.param(_edited(lambda d: d["evidence"]["groups"][2].__setitem__("total", -3)),
                     "evidence.groups.2.total", id="negative-total"),
        pytest.param(_edited(lambda d: d["groups"][1]["items"][0]["facts"].__setitem__("\n", []),
                             "bundle"), "groups.1.items.0.facts.'\\n'", id="key-holding-a-line-break"),
    ],
)
def test_a_hostile_stored_file_is_rejected_in_one_line(
    tmp_path: Path, text: str, field: str,
) -> None:
    stored = tmp_path / "stored.json"
    stored.write_text(text)
    code, out, err = score_cli(stored)
    assert (code, out) == (2, "")
    [line] = err.rstrip("\n").split("\n")  # keys may hold \x1e etc., which splitlines() splits on
    assert line.startswith(f"taskeval: {stored}: ") and field in line


# --------------------------------------------------------------------- PR text into the comment


MARKDOWN_BITS = ["<!-- taskeval:evaluation -->", "@octocat", "@octo-org/team", "<img src=x>",
                 "</details>", "<sub>", "[ok](https://evil.example)", "![x](https://evil.example)",
                 "<https://evil.example>", "[r]: https://evil.example", "`", "```", "*", "_", "~",
                 "#", "> ", "\n", "\r\n", "\u202e", "\u2066", "\x00", "&amp;", "&#60;", "\\", "(",
                 ")", "[", "]", "!", "|", "<", ">", "javascript:", "www.evil.example", " "]
pr_texts = st.lists(st.sampled_from(MARKDOWN_BITS) | st.text(max_size=8), min_size=1,
                    max_size=25).map("".join)


@pytest.mark.parametrize("text", ["[ok](https://evil.example)%00", "https://evil.example\\)x",
                                  "see www.evil.example/%41\\_", "https://evil.example/phish",
                                  "mail me: a@evil.example", "FTP://evil.example"])
def test_an_address_in_pr_text_is_shown_not_linked(text: str) -> None:
    """Found by the property below: GitHub autolinked an address from the PR title (escaped or
    not). It is shown as text, readable, and no link comes from it."""
    result = result_with("title", text)
    page = assert_inert(render_comment(result), result)
    shown = "".join(page.text).replace("\u2060", "")
    assert text.replace("\\", "") in shown.replace("\\", "")


SCHEMES = ["http://", "https://", "HTTPS://", "ftp://", "www.", "WwW.", "mailto:", "xmpp:", "", "hxxp://"]
addresses = st.builds(
    lambda before, scheme, user, host, path, after: f"{before}{scheme}{user}{host}{path}{after}",
    st.sampled_from(["", " ", "(", "*", "_", "~", "<", "[", "\n", "see "]),
    st.sampled_from(SCHEMES),
    st.sampled_from(["", "a@", "a.b+c@", "@", "x:y@"]),
    st.from_regex(r"[a-z0-9][a-z0-9-]{0,8}(\.[a-z]{2,5}){1,2}", fullmatch=True) | st.just(EVIL),
    st.sampled_from(["", "/", "/x?y=1#z", ":8080/p", "/%41\\_", ".", ")", "/a_b_"]),
    st.sampled_from(["", " ", ".", ")", "*", "_", "~", "\\", ">"]),
)


@FAST
@given(place=st.sampled_from(PLACES), parts=st.lists(addresses | pr_texts, min_size=1, max_size=4))
def test_no_address_in_untrusted_text_becomes_a_link(place: str, parts: list[str]) -> None:
    """Addresses in any form GitHub autolinks (schemes, www., e-mail, mailto:, in any case and
    between any punctuation), wherever untrusted text reaches the comment: the rendered comment
    links only to the evidence."""
    result = result_with(place, " ".join(parts))
    assert_inert(render_comment(result), result)


@FAST
@given(place=st.sampled_from(PLACES), text=pr_texts)
def test_any_pr_text_is_inert_in_the_comment(place: str, text: str) -> None:
    result = result_with(place, text)
    markdown = render_comment(result)
    assert len(markdown) < 65_536
    assert_inert(markdown, result)


def test_the_edit_strategy_reaches_every_part_of_a_stored_file() -> None:
    """Guards the generator itself: edits land in the evidence, its facts, the stored settings and
    the re-computed parts alike, and only the pinned paths are left out."""
    result = _mutable_paths("result")
    assert {p[0] for p in result} >= {"evidence", "config", "categoryScores", "signals"}
    assert any(p[:3] == ("evidence", "facts", "commits") for p in result)
    assert any(p[:2] == ("config", "settings") for p in result)
    assert {p[0] for p in _mutable_paths("bundle")} >= {"facts", "groups", "headSha"}
    assert ("bundleHash",) in result and ("config", "errors") in result
