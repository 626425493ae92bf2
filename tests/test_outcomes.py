"""Outcomes read from stored results: who sent the work back is decided by the same rule, under
the same settings, as the signals that scored the PR."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taskeval import outcomes as oc
from taskeval.config import LoadedConfig, Settings, load_config
from taskeval.evidence import build_bundle
from taskeval.pipeline import Options, score_bundle
from taskeval.raw import RawUser
from taskeval.signals import context

from . import builders as b

OPTIONS = Options(ai="off", env={}, evaluated_at="2026-03-03T00:00:00Z")


def _sent_back_by(login: str, account_type: str = "User") -> Any:
    """The baseline merged Copilot PR, sent back once by ``login`` and approved by alice."""
    return b.merged_agent_pr(reviews=[
        b.review(7000, RawUser(login=login, type=account_type), "CHANGES_REQUESTED", 50,
                 body="Please rework this."),
        b.review(7001, b.ALICE, "APPROVED", 90, commit_id=b.HEAD),
    ])


def _stored(raw: Any, config: str | None) -> dict[str, Any]:
    loaded = load_config(config, None) if config else LoadedConfig(Settings(), "defaults")
    return json.loads(score_bundle(build_bundle(raw), loaded, OPTIONS).to_json())


def _changes_requested(result: dict[str, Any]) -> bool:
    found = [r for r in oc.from_result(result) if r.outcome == "changes_requested"]
    assert len(found) == 1
    return found[0].value


ROBOT = "patterns:\n  bot_logins: [my-ci-robot]\n"
AGENT_LOGIN = "patterns:\n  agent_logins: [helper-agent]\n"
AGENT_RULE = "agents:\n  - id: house-agent\n    name: House agent\n    logins: [house-agent-dev]\n"

# (the reviewer who requested changes, their account type, the repository's config,
#  does the stored result show a person sending the work back)
CASES = [
    ("bob", "User", None, True),
    ("my-ci-robot", "User", None, True),  # not configured: a person as far as anyone knows
    ("my-ci-robot", "User", ROBOT, False),  # the team listed it as a bot
    ("My-CI-Robot", "User", ROBOT, False),  # logins compare case-insensitively
    ("bob", "User", ROBOT, True),  # listing one robot leaves people alone
    ("renovate[bot]", "Bot", None, False),
    ("some-app", "Bot", None, False),  # GitHub says it is a bot
    ("lint-helper[bot]", "User", None, False),
    ("helper-agent", "User", AGENT_LOGIN, False),  # a configured agent account
    ("house-agent-dev", "User", AGENT_RULE, False),  # an account of an agent the repo added
    ("devin-ai-integration", "User", None, False),  # an account of the built-in agent table
    ("Copilot", "Bot", None, False),  # the PR's own agent (and author)
]


@pytest.mark.parametrize(("login", "account_type", "config", "human"), CASES)
def test_a_change_request_counts_only_when_a_person_made_it(
        login: str, account_type: str, config: str | None, human: bool) -> None:
    result = _stored(_sent_back_by(login, account_type), config)
    assert _changes_requested(result) is human
    # The signals that scored this very result saw the same reviewer the same way.
    settings = load_config(config, None).settings if config else Settings()
    ctx = context.Ctx(build_bundle(_sent_back_by(login, account_type)), settings)
    assert any(r.id == 7000 for r in ctx.human_reviews) is human


KEEP, NO_CONFIG, NO_SETTINGS = "as stored", "no config", "no settings"


@pytest.mark.parametrize(("stored", "human"), [
    (KEEP, False),  # stored with bot_logins: [my-ci-robot]
    ({"patterns": {"bot_logins": ["someone-else"]}}, True),  # edited: another robot
    (NO_CONFIG, True),  # the defaults, which do not know this team's robot
    (NO_SETTINGS, True),
    ({"patterns": {"bot_logins": 5}}, True),  # does not validate: the defaults
    ({"patterns": {"bot_logins": ["my-ci-robot"]}, "nonsense": 1}, True),  # neither does this
    ("not a mapping", True),
])
def test_the_stored_config_decides_and_a_broken_one_falls_back_to_the_defaults(
        stored: Any, human: bool) -> None:
    result = _stored(_sent_back_by("my-ci-robot"), ROBOT)
    if stored == NO_CONFIG:
        del result["config"]
    elif stored == NO_SETTINGS:
        del result["config"]["settings"]
    elif stored != KEEP:
        result["config"]["settings"] = stored
    assert _changes_requested(result) is human


def test_from_facts_takes_the_settings_and_defaults_without_them() -> None:
    facts = build_bundle(_sent_back_by("my-ci-robot")).model_dump(mode="json", by_alias=True)["facts"]
    robot = load_config(ROBOT, None).settings
    assert {r.outcome: r.value for r in oc.from_facts(b.REPO, facts)}["changes_requested"]
    assert not {r.outcome: r.value for r in oc.from_facts(b.REPO, facts, settings=robot)}[
        "changes_requested"]
