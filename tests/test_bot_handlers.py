"""Job handlers against a tiny recording fake of the core (no HTTP, no database)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.jobs import events
from bot.jobs.handlers import Evaluated, GitHubContext, handle_command, handle_evaluate
from bot.jobs.queue import Job
from taskeval.store.results import comment_signature

HEAD = "6dcb09b5b57875f334f61aebed695e2e4193db5e"


class Refused(Exception):
    """Stands in for the core's AuthError: a permanent publishing failure."""


@dataclass
class FakeCore:
    permissions: dict[str, str] = field(default_factory=dict)
    react_error: Exception | None = None
    publish_error: Exception | None = None
    permission_error: Exception | None = None
    previous: tuple[str, str] | None = None
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def permission(self, ctx: GitHubContext, repo: str, login: str) -> str:
        self.calls.append(("permission", repo, login))
        if self.permission_error:
            raise self.permission_error
        return self.permissions.get(login, "none")

    def react(self, ctx: GitHubContext, repo: str, comment_id: int, content: str) -> None:
        self.calls.append(("react", repo, comment_id, content))
        if self.react_error:
            raise self.react_error

    def head_sha(self, ctx: GitHubContext, repo: str, number: int) -> str:
        self.calls.append(("head_sha", repo, number))
        return HEAD

    def evaluate(self, ctx: GitHubContext, repo: str, number: int, trigger: str) -> Evaluated:
        self.calls.append(("evaluate", repo, number, trigger))
        names = ("agentPerformance", "taskOutcomeQuality", "processCompliance")
        result = {
            "scorerVersion": "2026.11.1", "repository": repo, "headSha": HEAD,
            "pullRequest": {"number": number, "author": "copilot-swe-agent[bot]"},
            "evaluatedAt": "2026-03-02T10:11:12Z", "trigger": trigger, "overallScore": 81,
            "overallBand": "strong", "judge": {"status": "off"},
            "categoryScores": [{"category": n, "finalScore": s}
                               for n, s in zip(names, (70, 85, 88), strict=True)],
        }
        return Evaluated(result, "<!-- taskeval:evaluation -->\n**81** strong")

    def publish(self, ctx: GitHubContext, repo: str, number: int, evaluated: Evaluated) -> str:
        self.calls.append(("publish", repo, number, evaluated.markdown.splitlines()[0],
                           ctx.own_login))
        if self.publish_error:
            raise self.publish_error
        return f"https://github.com/{repo}/pull/{number}#issuecomment-1"

    def is_permanent_publish_error(self, exc: Exception) -> bool:
        return isinstance(exc, Refused)

    def previous_comment(self, repo: str, number: int, head_sha: str) -> tuple[str, str] | None:
        self.calls.append(("previous_comment", repo, number, head_sha))
        return self.previous


CTX = GitHubContext(gh=object(), own_login="taskeval[bot]")


def job(kind: str, commenter: str | None = "octocat") -> Job:
    return Job(id=1, kind=kind, repo="octo-org/widgets", number=42,
               head_sha=HEAD if kind == "evaluate" else None, installation_id=77,
               trigger="issue_comment" if kind == "command" else "pull_request",
               comment_id=555 if kind == "command" else None, commenter=commenter,
               attempts=1, max_attempts=5)


def test_command_by_a_writer_is_accepted_with_eyes() -> None:
    core = FakeCore(permissions={"octocat": "maintain"})
    outcome = handle_command(core, CTX, job("command"))
    assert ("react", "octo-org/widgets", 555, "eyes") in core.calls
    assert outcome.follow_up == events.Evaluate("octo-org/widgets", 42, HEAD, 77,
                                                trigger="issue_comment")
    assert outcome.error is None and outcome.note.startswith("accepted")


def test_command_by_anyone_else_is_refused_with_confused() -> None:
    core = FakeCore(permissions={"octocat": "triage"})
    outcome = handle_command(core, CTX, job("command"))
    assert [c for c in core.calls if c[0] == "react"] == [
        ("react", "octo-org/widgets", 555, "confused")]
    assert outcome.follow_up is None
    assert not any(c[0] in ("evaluate", "head_sha") for c in core.calls)
    assert outcome.note.startswith("refused: /evaluate by @octocat ignored")
    assert "has 'triage'" in outcome.note


def test_a_failed_reaction_does_not_block_the_evaluation() -> None:
    core = FakeCore(permissions={"octocat": "write"}, react_error=RuntimeError("403 issues"))
    outcome = handle_command(core, CTX, job("command"))
    assert outcome.follow_up is not None
    assert outcome.error == "could not add the eyes reaction: 403 issues"


def test_a_failed_permission_check_propagates_for_a_retry() -> None:
    core = FakeCore(permission_error=ConnectionError("reset"))
    with pytest.raises(ConnectionError):
        handle_command(core, CTX, job("command"))
    assert not any(c[0] == "react" for c in core.calls)


def test_evaluate_posts_the_comment_then_hands_over_the_result() -> None:
    core = FakeCore()
    outcome = handle_evaluate(core, CTX, job("evaluate"))
    assert [c[0] for c in core.calls] == ["evaluate", "previous_comment", "publish"]
    assert core.calls[2] == ("publish", "octo-org/widgets", 42, "<!-- taskeval:evaluation -->",
                             "taskeval[bot]")
    assert outcome.evaluation is not None
    assert (outcome.evaluation["overall_score"], outcome.evaluation["task_outcome_quality"],
            outcome.evaluation["comment_url"]) == (
        81, 85, "https://github.com/octo-org/widgets/pull/42#issuecomment-1")
    assert outcome.note == ("evaluated: 81 (strong); comment "
                            "https://github.com/octo-org/widgets/pull/42#issuecomment-1")


def test_evaluate_keeps_the_result_when_commenting_is_not_permitted() -> None:
    core = FakeCore(publish_error=Refused("needs pull-requests: write"))
    outcome = handle_evaluate(core, CTX, job("evaluate"))
    assert outcome.evaluation is not None and outcome.evaluation["comment_url"] is None
    assert outcome.error == "comment not posted: needs pull-requests: write"


def test_evaluate_raises_transient_publishing_faults_for_a_retry() -> None:
    core = FakeCore(publish_error=ConnectionError("502"))
    with pytest.raises(ConnectionError):
        handle_evaluate(core, CTX, job("evaluate"))


MARKDOWN = "<!-- taskeval:evaluation -->\n**81** strong"
OLD_URL = "https://github.com/octo-org/widgets/pull/42#issuecomment-9"


@pytest.mark.parametrize(
    ("previous", "trigger", "published"),
    [
        ((comment_signature(MARKDOWN), OLD_URL), "pull_request", False),  # same content: kept
        ((comment_signature(MARKDOWN), OLD_URL), "issue_comment", True),  # asked for: re-posted
        ((comment_signature("older text"), OLD_URL), "pull_request", True),  # content changed
        (None, "pull_request", True),
    ],
)
def test_an_unchanged_comment_for_the_same_head_is_not_edited_again(
    previous: tuple[str, str] | None, trigger: str, published: bool
) -> None:
    core = FakeCore(previous=previous)
    ev_job = Job(**{**job("evaluate").__dict__, "trigger": trigger})
    outcome = handle_evaluate(core, CTX, ev_job)
    assert any(c[0] == "publish" for c in core.calls) is published
    assert outcome.evaluation is not None
    assert outcome.evaluation["comment_signature"] == comment_signature(MARKDOWN)
    if not published:
        assert outcome.evaluation["comment_url"] == OLD_URL
        assert "comment unchanged" in outcome.note
