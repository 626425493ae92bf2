"""The /evaluate command rules, once for the Action and the bot (taskeval.command)."""

from __future__ import annotations

import pytest

from taskeval.command import (
    ACCEPTED_REACTION,
    ALLOWED_PERMISSIONS,
    REFUSED_REACTION,
    answer,
    is_bot,
    is_command,
    not_a_request,
)
from taskeval.contract import COMMENT_MARKER


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/evaluate", True),
        ("  /evaluate  ", True),
        ("  /evaluate  \n", True),
        ("/evaluate now please", True),
        (" /evaluate now", True),
        ("/Evaluate", True),
        ("/EVALUATE", True),
        ("/evaluate\nsecond line", True),
        ("\n\n/evaluate", True),  # leading blank lines are trimmed
        ("  \n /evaluate", True),
        ("    /evaluate", True),  # an indented first line still counts: "first line, trimmed"
        ("/evaluated", False),
        ("/evaluate-all", False),
        ("please /evaluate", False),
        ("x /evaluate", False),
        ("first line\n/evaluate", False),  # only the first line counts
        ("> /evaluate", False),  # quoting the docs
        ("`/evaluate`", False),
        ("```\n/evaluate\n```", False),
        ("<!-- /evaluate -->", False),
        ("<details>\n/evaluate\n</details>", False),
        ("\u200b/evaluate", False),  # a zero-width space is not whitespace here
        ("", False),
        ("\t\n", False),
        (None, False),
        (42, False),
    ],
)
def test_the_command_is_the_first_word_of_the_first_line(body: object, expected: bool) -> None:
    assert is_command(body) is expected


@pytest.mark.parametrize(
    ("login", "account_type", "expected"),
    [
        ("renovate[bot]", "Bot", True),
        ("some-app[bot]", "User", True),  # a [bot] login is a bot whatever its type
        ("ci-robot", "Bot", True),
        ("mona", "User", False),
        ("mona", None, False),
        (None, None, False),
        (42, "User", False),
    ],
)
def test_bot_accounts(login: object, account_type: object, expected: bool) -> None:
    assert is_bot(login, account_type) is expected


@pytest.mark.parametrize(
    ("body", "login", "account_type", "reason"),
    [
        ("/evaluate", "mona", "User", None),
        ("/evaluate please", "mona", None, None),
        # taskeval's own comment first: it is written by a bot and carries no command anyway.
        (f"{COMMENT_MARKER}\n/evaluate", "mona", "User",
         "comment is taskeval's own evaluation comment"),
        (f"  {COMMENT_MARKER}\nscores", "taskeval[bot]", "Bot",
         "comment is taskeval's own evaluation comment"),
        ("/evaluate", "taskeval[bot]", "Bot", "comment is written by a bot account (taskeval[bot])"),
        ("/evaluate", "renovate[bot]", "User", "comment is written by a bot account (renovate[bot])"),
        ("/evaluate", "ci-runner", "Bot", "comment is written by a bot account (ci-runner)"),
        ("LGTM", "mona", "User", "comment does not start with /evaluate"),
        ("LGTM\n/evaluate", "mona", "User", "comment does not start with /evaluate"),
        (None, "mona", "User", "comment does not start with /evaluate"),
        ("/evaluate", "", "User", "comment has no author"),
        ("/evaluate", None, None, "comment has no author"),
    ],
)
def test_which_comment_is_a_request(body: object, login: object, account_type: object,
                                    reason: str | None) -> None:
    assert not_a_request(body, login, account_type) == reason


def test_without_a_marker_our_own_comment_is_judged_like_any_other() -> None:
    body = f"{COMMENT_MARKER}\n/evaluate"
    assert not_a_request(body, "mona", "User", marker="") == "comment does not start with /evaluate"


@pytest.mark.parametrize(
    ("permission", "accepted", "reaction"),
    [
        ("admin", True, "eyes"),
        ("maintain", True, "eyes"),
        ("write", True, "eyes"),
        ("triage", False, "confused"),
        ("read", False, "confused"),
        ("none", False, "confused"),
        ("custom-role", False, "confused"),
    ],
)
def test_who_may_ask_and_how_they_are_answered(permission: str, accepted: bool,
                                               reaction: str) -> None:
    reply = answer("mona", permission, "octo-org/widgets")
    assert reply.accepted is accepted and reply.reaction == reaction
    assert f"@mona has '{permission}'" in reply.reason
    if not accepted:
        assert reply.reason == (
            "/evaluate by @mona ignored: it needs write, maintain or admin permission on "
            f"octo-org/widgets, and @mona has '{permission}'"
        )


def test_the_reactions_are_github_reactions() -> None:
    assert (ACCEPTED_REACTION, REFUSED_REACTION) == ("eyes", "confused")
    assert {"admin", "maintain", "write"} == ALLOWED_PERMISSIONS
