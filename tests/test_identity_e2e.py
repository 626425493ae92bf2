"""Who wrote the commits, end to end: a PR whose commit GitHub links to no account, collected from
the fake GitHub over REST and over GraphQL, scored, stored, re-scored and commented on.

The fake serves GitHub's shapes: REST's commit with ``"author": null`` and the git identity in
``commit.author``; GraphQL's ``GitActor`` with ``user: null`` and the same name and e-mail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from taskeval.github import make_client
from taskeval.models import EvaluationResult
from taskeval.pipeline import Options, evaluate_pull_request, rescore_file
from taskeval.report import render_comment
from tests.fakegithub import FAKE_TOKEN, FakeGitHub

REPO = "octo-org/widgets"
NUMBER = 501


def _unlink(fake: FakeGitHub, name: str, email: str, *, web: bool = False) -> None:
    """The PR's second commit as GitHub lists it when its author's e-mail is on no account."""
    git = fake.repos[REPO].pulls[NUMBER].commits[1]
    when = git["commit"]["author"]["date"]
    git["author"] = None
    git["commit"]["author"] = {"name": name, "email": email, "date": when}
    git["commit"]["message"] = "Handle whitespace-only input"  # no trailer: the identity decides
    if not web:  # committed locally by the same identity, not through the web editor
        git["committer"] = None
        git["commit"]["committer"] = {"name": name, "email": email, "date": when}


CASES = {
    # (name, e-mail, through the web editor) -> (rescue class, who it names, the rule's words)
    "a maintainer's work address": (("Maya Maintainer", "maya@corp.example", False),
                                    ("unknown", None, "1 of 3 commits has no GitHub account")),
    "a reviewer's login as the git name": (("octocat", "octo@corp.example", False),
                                           ("taken_over", "octocat", "1 by a participant's name")),
    "the web editor": (("Pat Doe", "pat@corp.example", True),
                       ("taken_over", "a person (web editor)", "1 by the web editor")),
}


def _evaluate(api: str, identity: tuple[str, str, bool]) -> EvaluationResult:
    fake = FakeGitHub()
    fake.add_pr(REPO, NUMBER)
    name, email, web = identity
    _unlink(fake, name, email, web=web)
    with fake.mock():
        gh = make_client(FAKE_TOKEN, base_url=fake.url, retries=0)
        return evaluate_pull_request(gh, REPO, NUMBER, Options(
            ai="off", env={}, api=api, evaluated_at="2026-03-02T11:00:00Z")).result  # type: ignore[arg-type]


@pytest.mark.parametrize("case", CASES, ids=CASES.keys())
def test_a_commit_without_an_account_end_to_end(case: str, tmp_path: Path) -> None:
    identity, (cls, who, rule) = CASES[case]
    rest, graphql = _evaluate("rest", identity), _evaluate("graphql", identity)
    assert rest.evidence.canonical_json() == graphql.evidence.canonical_json()
    for result in (rest, graphql):
        assert result.rescue is not None and result.rescue.class_ == cls, result.rescue
        signal = next(s for s in result.signals if s.id == "agent.human_intervention")
        if cls == "unknown":
            assert result.rescue.commits_by_people is None and result.rescue.unattributed_commits == 1
            assert rule in result.rescue.reason
            assert "1 commit whose writer is unknown" in signal.reason
        else:
            assert who is not None and who in result.rescue.reason and rule in signal.reason
    # The git identity is in the bundle for the unlinked commit only, e-mail included.
    commits: list[dict[str, Any]] = rest.evidence.json_form()["facts"]["commits"]
    unlinked = [c for c in commits if c.get("authorLogin") is None]
    assert [(c["authorName"], c["authorEmail"]) for c in unlinked] == [identity[:2]]
    assert not any("authorEmail" in c for c in commits if c.get("authorLogin"))
    comment = render_comment(rest)
    assert f"**Merge:** `{cls}`" in comment
    if cls == "unknown":
        assert "(who wrote some commits is unknown: neither clean nor a rescue, counted apart)" in comment
    # Stored and re-scored offline: the same bytes (the same scorer version).
    stored = tmp_path / "result.json"
    stored.write_text(rest.to_json(), encoding="utf-8")
    again = rescore_file(stored, Options(ai="off", env={}))
    assert again.to_json() == rest.model_copy(update={"trigger": "rescore"}).to_json()
