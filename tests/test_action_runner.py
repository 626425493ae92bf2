"""The runner protocol: outputs survive any value, annotations cannot be forged, inputs validate."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from action.inputs import ActionInputs, InputError, raw_input
from action.runner import LogBridge, Runner, escape_data, output_block


def parse_output_file(text: str) -> dict[str, str]:
    """Read ``$GITHUB_OUTPUT`` the way the runner does (``name=value`` and heredoc blocks)."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line:
            i += 1
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1:end])
            i = end + 1
        else:
            name, value = line.split("=", 1)
            outputs[name] = value
            i += 1
    return outputs


@settings(max_examples=200, deadline=None)
@given(value=st.text())
def test_any_output_value_round_trips(value: str) -> None:
    value = value.replace("\r", "")  # the runner reads the file in text mode
    parsed = parse_output_file(output_block("comment-url", value) + output_block("next", "x"))
    assert parsed == {"comment-url": value, "next": "x"}


def test_a_value_that_tries_to_close_its_block_cannot_inject_an_output() -> None:
    first = output_block("a", "x")
    delimiter = first.splitlines()[0].split("<<", 1)[1]
    hostile = f"line\n{delimiter}\nevaluated=true"
    assert parse_output_file(output_block("a", hostile)) == {"a": hostile}


@pytest.mark.parametrize("name", ["", "a\nb", "x=y", "a<<b"])
def test_output_names_that_would_corrupt_the_file_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        output_block(name, "v")


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("plain", "plain"),
        ("50% done", "50%25 done"),
        ("two\nlines", "two%0Alines"),
        ("x\r\n::error::forged", "x%0D%0A::error::forged"),
    ],
)
def test_messages_are_escaped(message: str, expected: str) -> None:
    assert escape_data(message) == expected


def test_untrusted_text_cannot_start_a_new_workflow_command() -> None:
    out = io.StringIO()
    runner = Runner({}, out)
    runner.warning("PR title\n::add-mask::nothing\n::error::fake", title="a: b, c")
    runner.info("line one\n::set-output name=x::y")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("::warning title=a%3A b%2C c::PR title%0A::add-mask")
    assert not lines[1].startswith("::")


def test_mask_covers_every_line_of_a_multiline_secret() -> None:
    out = io.StringIO()
    Runner({}, out).mask("-----BEGIN KEY-----\nabc123\n")
    assert out.getvalue().splitlines() == ["::add-mask::-----BEGIN KEY-----", "::add-mask::abc123"]


def test_outputs_and_summary_go_to_the_runner_files(tmp_path: Path) -> None:
    env = {"GITHUB_OUTPUT": str(tmp_path / "out"), "GITHUB_STEP_SUMMARY": str(tmp_path / "sum")}
    runner = Runner(env, io.StringIO())
    runner.set_outputs({"overall-score": "81", "note": "a\nb"})
    runner.append_summary("# one")
    runner.append_summary("# two\n")
    outputs = parse_output_file((tmp_path / "out").read_text())
    assert outputs == {"overall-score": "81", "note": "a\nb"}
    assert (tmp_path / "sum").read_text() == "# one\n# two\n"


def test_outside_a_runner_outputs_are_printed() -> None:
    out = io.StringIO()
    Runner({}, out).set_outputs({"overall-score": "81"})
    assert "output overall-score=81" in out.getvalue()


def test_library_logging_becomes_debug_and_taskeval_warnings_become_annotations() -> None:
    out = io.StringIO()
    bridge = LogBridge(Runner({}, out))
    for name, level, text in (("github.GithubRetry", logging.WARNING, "GET /user failed"),
                              ("taskeval.judge.cache", logging.WARNING, "cache store failed"),
                              ("taskeval.judge.run", logging.INFO, "asked the model")):
        bridge.handle(logging.LogRecord(name, level, __file__, 1, text, None, None))
    assert out.getvalue().splitlines() == [
        "::debug::github.GithubRetry: GET /user failed",
        "::warning title=taskeval::cache store failed",
        "::debug::taskeval.judge.run: asked the model",
    ]


# ---------------------------------------------------------------------------------------- inputs


def test_inputs_are_read_with_hyphens_as_the_runner_passes_them() -> None:
    env = {
        "INPUT_GITHUB-TOKEN": "ghs_example",
        "INPUT_PULL-REQUEST": "#12",
        "INPUT_CONFIG-PATH": "ci/taskeval.yml",
        "INPUT_COMMENT": "false",
        "INPUT_AI": "OFF",
        "INPUT_FAIL-UNDER": "60",
        "INPUT_RESULT-PATH": "out/result.json",
        "INPUT_OPENAI-BASE-URL": "https://models.example/v1",
    }
    inputs = ActionInputs.from_env(env)
    assert inputs.github_token == "ghs_example"
    assert inputs.pull_request == 12
    assert str(inputs.config_path) == "ci/taskeval.yml"
    assert inputs.comment is False
    assert inputs.ai == "off"
    assert inputs.fail_under == 60
    assert inputs.result_path == "out/result.json"
    assert inputs.openai_base_url == "https://models.example/v1"


def test_underscore_spelling_is_a_fallback_for_shell_use() -> None:
    assert raw_input({"INPUT_GITHUB_TOKEN": "t"}, "github-token") == "t"
    assert raw_input({"INPUT_GITHUB-TOKEN": "a", "INPUT_GITHUB_TOKEN": "b"}, "github-token") == "a"


@pytest.mark.parametrize(("env", "reserves"), [
    ({}, (0, 0)),
    ({"INPUT_RATE-RESERVE": "", "INPUT_GRAPHQL-RESERVE": ""}, (0, 0)),  # action.yml's defaults
    ({"INPUT_RATE-RESERVE": "200", "INPUT_GRAPHQL-RESERVE": "50"}, (200, 50)),
    ({"TASKEVAL_RATE_RESERVE": "300", "TASKEVAL_GRAPHQL_RESERVE": "30"}, (300, 30)),  # step env
    ({"INPUT_RATE-RESERVE": "200", "TASKEVAL_RATE_RESERVE": "300"}, (200, 0)),  # the input wins
    ({"INPUT_RATE-RESERVE": "", "TASKEVAL_RATE_RESERVE": "300"}, (300, 0)),
])
def test_reserves_come_from_the_inputs_else_the_steps_env(
    env: dict[str, str], reserves: tuple[int, int],
) -> None:
    inputs = ActionInputs.from_env(env)
    assert (inputs.rate_reserve, inputs.graphql_reserve) == reserves


def test_defaults_when_the_runner_passes_empty_inputs() -> None:
    inputs = ActionInputs.from_env({"INPUT_COMMENT": "", "INPUT_FAIL-UNDER": ""})
    assert (inputs.comment, inputs.ai, inputs.fail_under, inputs.result_path) == (
        True, "auto", 0, "taskeval-result.json")
    assert inputs.pull_request is None and inputs.config_path is None


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("INPUT_AI", "maybe", "'ai' must be auto, on or off"),
        ("INPUT_FAIL-UNDER", "101", "'fail-under' must be an integer 0..100"),
        ("INPUT_FAIL-UNDER", "-1", "'fail-under' must be an integer 0..100"),
        ("INPUT_FAIL-UNDER", "7.5", "'fail-under' must be an integer 0..100"),
        ("INPUT_COMMENT", "sometimes", "'comment' must be true or false"),
        ("INPUT_PULL-REQUEST", "abc", "'pull-request' must be a pull request number"),
        ("INPUT_PULL-REQUEST", "0", "'pull-request' must be a pull request number"),
        ("INPUT_OPENAI-BASE-URL", "models.example", "'openai-base-url' must be an http(s) URL"),
        ("INPUT_RATE-RESERVE", "lots", "input 'rate-reserve' must be a whole number of requests"),
        ("INPUT_GRAPHQL-RESERVE", "-5", "input 'graphql-reserve' must be a whole number of points"),
        ("TASKEVAL_RATE_RESERVE", "1e3", "TASKEVAL_RATE_RESERVE must be a whole number of requests"),
    ],
)
def test_bad_inputs_name_the_input(name: str, value: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        ActionInputs.from_env({name: value})
