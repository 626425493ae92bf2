"""What each event means to the action: evaluate, or skip with a reason a person can act on."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from action.events import decide
from action.inputs import InputError

EVENTS = Path(__file__).parent / "events"
MARKER = "<!-- taskeval:evaluation -->"

# Every event a workflow can be triggered by (docs: "Events that trigger workflows"), plus the
# webhook-only events a bot would also see. None of them may crash the decision.
DOCUMENTED_EVENTS = (
    "branch_protection_rule", "check_run", "check_suite", "create", "delete", "deployment",
    "deployment_status", "discussion", "discussion_comment", "fork", "gollum", "issue_comment",
    "issues", "label", "merge_group", "milestone", "page_build", "project", "project_card",
    "project_column", "public", "pull_request", "pull_request_review",
    "pull_request_review_comment", "pull_request_target", "push", "registry_package", "release",
    "repository_dispatch", "schedule", "status", "watch", "workflow_call", "workflow_dispatch",
    "workflow_run", "installation", "installation_repositories", "member", "membership", "meta",
    "ping", "repository", "security_advisory", "team", "team_add", "dependabot_alert",
    "code_scanning_alert", "secret_scanning_alert", "star", "sponsorship", "",
)


def load(name: str) -> dict[str, Any]:
    return json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("event", "fixture", "evaluate", "number", "commenter", "reason_has"),
    [
        ("pull_request", "pull_request.closed.merged", True, 42, None, "merged"),
        ("pull_request_target", "pull_request.closed.merged", True, 42, None, "merged"),
        ("pull_request", "pull_request.closed.unmerged", False, None, None,
         "closed without being merged"),
        ("issue_comment", "issue_comment.evaluate.maintainer", True, 42, "mona", "/evaluate"),
        # The read-only user is not refused here: permission is checked against the API later.
        ("issue_comment", "issue_comment.evaluate.readonly", True, 42, "hubot-fan", "/evaluate"),
        ("issue_comment", "issue_comment.evaluate.bot", False, None, None, "bot"),
        ("issue_comment", "issue_comment.own", False, None, None, "own evaluation comment"),
        ("issue_comment", "issue_comment.evaluate.on_issue", False, None, None,
         "not a pull request"),
        ("workflow_dispatch", "workflow_dispatch", True, 42, None, "workflow_dispatch"),
        ("push", "push", False, None, None, "push ignored"),
    ],
)
def test_fixture_events(
    event: str, fixture: str, evaluate: bool, number: int | None, commenter: str | None,
    reason_has: str,
) -> None:
    decision = decide(event, load(fixture), None, MARKER)
    assert decision.evaluate is evaluate
    assert decision.pull_number == number
    assert decision.commenter == commenter
    assert reason_has in decision.reason


def test_comment_command_carries_the_comment_id_for_the_reaction() -> None:
    decision = decide("issue_comment", load("issue_comment.evaluate.maintainer"), None, MARKER)
    assert decision.comment_id == 1904400001


@pytest.mark.parametrize("action", ["opened", "synchronize", "reopened", "edited", "labeled"])
def test_open_pull_request_activity_is_skipped(action: str) -> None:
    payload = load("pull_request.closed.merged")
    payload["action"] = action
    decision = decide("pull_request", payload, None, MARKER)
    assert not decision.evaluate
    assert f"'{action}' ignored" in decision.reason


@pytest.mark.parametrize("action", ["edited", "deleted"])
def test_edited_or_deleted_comments_are_not_commands(action: str) -> None:
    payload = load("issue_comment.evaluate.maintainer")
    payload["action"] = action
    assert not decide("issue_comment", payload, None, MARKER).evaluate


@pytest.mark.parametrize(
    ("body", "login", "reason_has"),
    [
        ("/evaluate please", "mona", None),
        ("please /evaluate", "mona", "does not start with /evaluate"),
        ("/evaluate", "renovate[bot]", "bot account"),
        ("/evaluate", "", "has no author"),
        (f"{MARKER}\n/evaluate", "mona", "own evaluation comment"),
    ],
)
def test_comment_rules_come_from_the_core(body: str, login: str, reason_has: str | None) -> None:
    """Wiring only: the rules themselves are table-tested in tests/test_command.py."""
    payload = load("issue_comment.evaluate.maintainer")
    payload["comment"]["body"] = body
    payload["comment"]["user"] = {"login": login, "type": "User"}
    decision = decide("issue_comment", payload, None, MARKER)
    assert decision.evaluate is (reason_has is None)
    if reason_has is not None:
        assert decision.reason.startswith("issue_comment on PR #42 ignored: ")
        assert reason_has in decision.reason


def test_explicit_pull_request_input_wins_for_workflow_dispatch() -> None:
    decision = decide("workflow_dispatch", load("workflow_dispatch"), 7, MARKER)
    assert decision.evaluate and decision.pull_number == 7


def test_workflow_dispatch_without_a_number_says_how_to_give_one() -> None:
    decision = decide("workflow_dispatch", {"inputs": {}, "ref": "refs/heads/main"}, None, MARKER)
    assert not decision.evaluate
    assert "pull-request" in decision.reason


def test_workflow_dispatch_with_a_typo_in_the_number_is_an_input_error() -> None:
    with pytest.raises(InputError, match="pull request number"):
        decide("workflow_dispatch", {"inputs": {"pull-request": "forty-two"}}, None, MARKER)


def test_other_events_evaluate_only_a_pr_named_explicitly() -> None:
    assert not decide("schedule", {"schedule": "0 3 * * *"}, None, MARKER).evaluate
    named = decide("schedule", {"schedule": "0 3 * * *"}, 9, MARKER)
    assert named.evaluate and named.pull_number == 9


def test_merged_flag_must_be_a_real_true() -> None:
    payload = load("pull_request.closed.merged")
    payload["pull_request"]["merged"] = "true"
    assert not decide("pull_request", payload, None, MARKER).evaluate


@pytest.mark.parametrize("event", DOCUMENTED_EVENTS)
@pytest.mark.parametrize(
    "payload",
    [
        {},
        None,
        [],
        "text",
        {"action": "created", "sender": {"login": "mona"}, "repository": {"full_name": "o/r"}},
        {"action": None, "pull_request": None, "issue": [], "comment": "x", "number": "42"},
        {"action": "closed", "pull_request": {"merged": True}, "number": -3},
    ],
    ids=["empty", "null", "list", "string", "generic", "wrong-types", "bad-number"],
)
def test_no_documented_event_shape_raises(event: str, payload: object) -> None:
    decision = decide(event, payload, None, MARKER)
    assert isinstance(decision.reason, str) and decision.reason
    assert not decision.evaluate


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(
        st.sampled_from(["action", "number", "pull_request", "issue", "comment", "merged", "user",
                         "body", "login", "type", "id", "inputs", "pull-request"])
        | st.text(max_size=8),
        children, max_size=5),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(event=st.sampled_from(DOCUMENTED_EVENTS), payload=json_values)
def test_arbitrary_json_payloads_never_crash(event: str, payload: object) -> None:
    try:
        decision = decide(event, payload, None, MARKER)
    except InputError:  # only a mistyped workflow_dispatch number may be refused
        assert event == "workflow_dispatch"
        return
    assert decision.reason
    if decision.evaluate:
        assert isinstance(decision.pull_number, int) and decision.pull_number > 0


@settings(max_examples=150, deadline=None)
@given(mutation=st.dictionaries(
    st.sampled_from(["action", "number", "pull_request", "issue", "comment"]), json_values,
    max_size=3))
def test_mutated_real_payloads_never_crash(mutation: dict[str, object]) -> None:
    for event, fixture in (("pull_request", "pull_request.closed.merged"),
                           ("issue_comment", "issue_comment.evaluate.maintainer")):
        payload = copy.deepcopy(load(fixture))
        payload.update(mutation)
        assert decide(event, payload, None, MARKER).reason
