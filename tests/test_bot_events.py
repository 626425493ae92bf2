"""The receiver's rules: which delivery means what (pure, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.jobs import events
from tests.bot.helpers import payload

HEAD = "6dcb09b5b57875f334f61aebed695e2e4193db5e"


@pytest.mark.parametrize(
    ("event", "fixture", "expected"),
    [
        ("ping", "ping", events.Pong()),
        ("pull_request", "pull_request.closed.merged",
         events.Evaluate("octo-org/widgets", 42, HEAD, 5234567, "pull_request")),
        ("pull_request", "pull_request.closed.unmerged",
         events.Ignore("pull request closed without merging")),
        ("pull_request", "pull_request.opened",
         events.Ignore("pull_request action 'opened' is not evaluated (only merged closes)")),
        ("issue_comment", "issue_comment.created.evaluate",
         events.Command("octo-org/widgets", 42, 1780000001, "octocat", 5234567)),
        ("issue_comment", "issue_comment.created.chatter",
         events.Ignore("comment does not start with /evaluate")),
        ("issue_comment", "issue_comment.created.bot",
         events.Ignore("comment is written by a bot account (dependabot[bot])")),
        ("issue_comment", "issue_comment.created.on_issue",
         events.Ignore("comment is on an issue, not a pull request")),
        ("issue_comment", "issue_comment.edited.evaluate",
         events.Ignore("issue_comment action 'edited' is not a new command")),
        ("push", "push", events.Ignore("event 'push' is not handled")),
        ("installation", "installation.created",
         events.InstallationChange(5234567, "installation.created", "octo-org",
                                   ("octo-org/widgets",), ())),
        ("installation_repositories", "installation_repositories.added",
         events.InstallationChange(5234567, "installation_repositories.added", "octo-org",
                                   ("octo-org/gadgets",), ())),
    ],
)
def test_documented_payloads_map_to_decisions(event: str, fixture: str,
                                              expected: events.Decision) -> None:
    assert events.decide(event, payload(fixture)) == expected


def _comment(body: str, login: str = "octocat", typ: str = "User") -> dict[str, Any]:
    data = payload("issue_comment.created.evaluate")
    data["comment"]["body"] = body
    data["comment"]["user"].update(login=login, type=typ)
    return data


@pytest.mark.parametrize(
    ("body", "login", "typ", "accepted"),
    [
        ("/evaluate", "octocat", "User", True),
        ("please /evaluate", "octocat", "User", False),
        ("/evaluate", "ci-runner", "Bot", False),
        ("<!-- taskeval:evaluation -->\n/evaluate", "octocat", "User", False),  # our comment
    ],
)
def test_evaluate_command_rules_come_from_the_core(body: str, login: str, typ: str,
                                                   accepted: bool) -> None:
    """Wiring only: the rules themselves are table-tested in tests/test_command.py."""
    decision = events.decide("issue_comment", _comment(body, login, typ))
    assert isinstance(decision, events.Command) is accepted
    if not accepted:
        assert isinstance(decision, events.Ignore) and decision.reason


@pytest.mark.parametrize(
    ("event", "mutate", "field"),
    [
        ("pull_request", lambda p: p["pull_request"].pop("head"), "pull_request.head"),
        ("pull_request", lambda p: p["pull_request"]["head"].update(sha="not-a-sha"),
         "pull_request.head.sha"),
        ("pull_request", lambda p: p.pop("repository"), "repository"),
        ("pull_request", lambda p: p["pull_request"].update(number="forty-two"),
         "pull_request.number"),
        ("issue_comment", lambda p: p["comment"].pop("user"), "comment.user"),
        ("issue_comment", lambda p: p["repository"].update(full_name="no-slash"),
         "repository.full_name"),
        ("installation", lambda p: p.pop("installation"), "installation"),
    ],
)
def test_malformed_payloads_name_the_field(event: str, mutate: Any, field: str) -> None:
    name = {"pull_request": "pull_request.closed.merged",
            "issue_comment": "issue_comment.created.evaluate",
            "installation": "installation.created"}[event]
    data = payload(name)
    mutate(data)
    with pytest.raises(events.PayloadError, match=field.replace(".", r"\.")):
        events.decide(event, data)


def test_installation_deleted_records_the_removed_repositories() -> None:
    data = payload("installation.created")
    data["action"] = "deleted"
    decision = events.decide("installation", data)
    assert decision == events.InstallationChange(5234567, "installation.deleted", "octo-org", (),
                                                 ("octo-org/widgets",))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (payload("pull_request.closed.merged"), {"repo": "octo-org/widgets", "pr": 42}),
        (payload("issue_comment.created.evaluate"), {"repo": "octo-org/widgets", "pr": 42}),
        (payload("push"), {"repo": "octo-org/widgets"}),
        ({"repository": "weird", "issue": {"number": "7"}}, {}),
    ],
)
def test_correlation_fields_for_log_lines(data: dict[str, Any], expected: dict[str, Any]) -> None:
    assert events.correlation(data) == expected
