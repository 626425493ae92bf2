"""Linked issues' labels, the third source of a PR's task type: which issues collection reads,
how each transport reads them (the same answer, byte for byte, from both), how a failure is
recorded, and how the labels reach the task type of a result and of its re-score."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from github import Github

from taskeval.config import LoadedConfig, Settings
from taskeval.evidence import build_bundle
from taskeval.evidence.vocabulary import MAX_LINKED_ISSUE_READS, issues_to_read
from taskeval.github import collect, make_client
from taskeval.github import collection as collection_module
from taskeval.github.graphql.queries import issues_query
from taskeval.models import EvidenceBundle
from taskeval.pipeline import Options, evaluate_pull_request, rescore, score_bundle
from taskeval.raw import RawLinkedIssue
from tests import builders, fakegraphql
from tests.fakegithub import FAKE_TOKEN, FakeGitHub, Fault
from tests.fakegraphql import validation_errors

REPO = "octo-org/widgets"
NUMBER = 482


def client(fake: FakeGitHub) -> Github:
    return make_client(FAKE_TOKEN, base_url=fake.url, retries=0, backoff_factor=0, max_wait=5)


@pytest.fixture(autouse=True)
def _fresh_run() -> Iterator[None]:
    collection_module._REST_ONLY.clear()
    yield
    collection_module._REST_ONLY.clear()


# --------------------------------------------------------------------- which issues are read


@pytest.mark.parametrize(("text", "expected"), [
    ("Fixes #12", [12]),
    ("See #3 and #4. Closes #9", [9, 3, 4]),  # closing links first, then mentions by number
    ("Fixes #1, fixes #2, fixes #3, fixes #4, fixes #5", [1, 2, 3]),  # at most three
    ("Fixes other-org/lib#7 and #8", [8]),  # another repository's issue is not read
    (f"Fixes {REPO}#6", [6]),  # the own repository named in full is the same repository
    (f"Follow-up to #{NUMBER}; fixes #5", [5]),  # never the PR itself
    ("No links here", []),
    ("`#12` in code is not a link", []),
])
def test_which_linked_issues_are_read(text: str, expected: list[int]) -> None:
    assert issues_to_read("Handle empty input", text, NUMBER, REPO) == expected
    assert MAX_LINKED_ISSUE_READS == 3


def test_the_linked_issue_query_is_valid_against_github_s_schema() -> None:
    assert validation_errors(issues_query([12, 13, 14])) == []


# --------------------------------------------------------- the reads, through both transports

Setup = Callable[[FakeGitHub], None]


def _pr(body: str, **kwargs: object) -> Setup:
    def setup(fake: FakeGitHub) -> None:
        fake.add_pr(REPO, NUMBER, body=body, labels=(), title="Handle empty input", **kwargs)  # type: ignore[arg-type]
    return setup


def _then(*steps: Setup) -> Setup:
    def setup(fake: FakeGitHub) -> None:
        for step in steps:
            step(fake)
    return setup


def _issue(number: int, *labels: str) -> Setup:
    return lambda fake: fake.add_issue(REPO, number, labels=labels) and None


def _fault(number: int, fault: Fault) -> Setup:
    def setup(fake: FakeGitHub) -> None:
        fake.inject(f"/repos/{REPO}/issues/{number}", fault, exact=True, times=99)
    return setup


CASES: dict[str, tuple[Setup, list[tuple[int, list[str], bool]], tuple[int | None, list[str]] | None, int]] = {
    # name: (setup, linked issues read (number, labels, is a PR), the gap (status, what it says)
    # or None, REST requests for linked issues)
    "one closing link, labelled": (
        _then(_issue(12, "bug", "good first issue"), _pr("Fixes #12.")),
        [(12, ["bug", "good first issue"], False)], None, 1),
    "no link: nothing extra": (_pr("Handles empty input."), [], None, 0),
    "an issue without labels": (_then(_issue(12), _pr("Fixes #12.")), [(12, [], False)], None, 1),
    "404: the issue does not exist": (
        _pr("Fixes #12.", linked_issues=False), [], (404, ["linked issue #12", "404: Not Found"]), 1),
    "cap: five closing links, three read": (
        _pr("Fixes #1, fixes #2, fixes #3, fixes #4 and fixes #5."),
        [(1, ["bug"], False), (2, ["bug"], False), (3, ["bug"], False)], None, 3),
    "cross-repository link ignored": (
        _pr("Fixes other-org/lib#7; see #8."), [(8, ["bug"], False)], None, 1),
    "a linked 'issue' that is a PR": (
        _then(lambda f: f.add_pr(REPO, 7, labels=["documentation"], body="Docs.") and None,
              _pr("Supersedes #7.")),
        [(7, ["documentation"], True)], None, 1),
    "one of two missing": (
        _then(_issue(3, "enhancement"), _pr("Closes #3 and #4.", linked_issues=False)),
        [(3, ["enhancement"], False)], (404, ["linked issue #4", "404: Not Found"]), 2),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_linked_issues_are_read_alike_through_both_transports(
    case: tuple[Setup, list[tuple[int, list[str], bool]], tuple[int | None, list[str]] | None, int],
) -> None:
    setup, expected, gap, reads = case
    fake = FakeGitHub()
    setup(fake)
    with fake.mock():
        rest = collect(client(fake), REPO, NUMBER, api="rest")
        fake.reset_log()
        graphql = collect(client(fake), REPO, NUMBER, api="graphql")
    for raw in (rest, graphql):
        assert [(i.number, i.labels, i.is_pull) for i in raw.linked_issues] == expected
        gaps = [i for i in raw.issues if i.resource == "linked_issues"]
        if gap is None:
            assert gaps == [] and raw.issues == []
        else:
            assert [g.status for g in gaps] == [gap[0]]
            assert all(part in gaps[0].message for part in gap[1])
    assert rest.issues == graphql.issues
    # REST: one GET /issues/{n} per linked issue beside the PR's own issue object; GraphQL: one
    # query for all of them, and none without a link.
    assert rest.requests == 12 + reads
    assert graphql.graphql_queries == 1 + (1 if reads else 0)
    assert build_bundle(rest).model_dump_json() == build_bundle(graphql).model_dump_json()


@pytest.mark.parametrize(("fault", "status", "hint"), [
    (Fault.forbidden(), 403, "`issues: read`"),
    (Fault.not_found(), 404, None),
    (Fault(410, {"message": "This issue was deleted", "status": "410"}), 410, None),
    (Fault(200, ["not", "an", "issue"]), None, "unreadable"),
], ids=["403", "404", "410", "malformed"])
def test_an_unreadable_linked_issue_is_a_gap_never_a_crash(
    fault: Fault, status: int | None, hint: str | None
) -> None:
    fake = FakeGitHub()
    fake.add_issue(REPO, 12, labels=["bug"])
    fake.add_pr(REPO, NUMBER, body="Fixes #12.")
    _fault(12, fault)(fake)
    with fake.mock():
        raw = collect(client(fake), REPO, NUMBER, api="rest")
    assert raw.linked_issues == []
    assert [(i.resource, i.status) for i in raw.issues] == [("linked_issues", status)]
    assert hint is None or hint in raw.issues[0].message
    bundle = build_bundle(raw)
    assert bundle.facts.unavailable == ["linked_issues"] and bundle.facts.linked_issues == []
    item = next(i for g in bundle.groups for i in g.items if i.id == "issue:12")
    assert "labels" not in item.facts  # only an issue that was read carries its labels


def test_a_forbidden_linked_issue_over_graphql_is_the_same_gap_as_rest() -> None:
    """REST answers 403; GraphQL answers FORBIDDEN on the issue's alias: one gap, alike."""
    fake = FakeGitHub()
    fake.add_pr(REPO, NUMBER, body="Fixes #12.")
    shown = fake.issue_object

    def refusing(repo: str, number: int) -> dict[str, Any] | None:
        if number == 12:
            raise fakegraphql.Refused("Resource not accessible by integration")
        return shown(repo, number)

    fake.issue_object = refusing  # type: ignore[method-assign]
    fake.inject(f"/repos/{REPO}/issues/12", Fault.forbidden(), exact=True, times=9)
    with fake.mock():
        rest = collect(client(fake), REPO, NUMBER, api="rest")
        graphql = collect(client(fake), REPO, NUMBER, api="graphql")
    assert [(i.resource, i.status) for i in rest.issues] == [("linked_issues", 403)]
    assert "`issues: read`" in rest.issues[0].message
    assert rest.issues == graphql.issues
    assert build_bundle(rest).model_dump_json() == build_bundle(graphql).model_dump_json()


# ----------------------------------------------------------------------------------- the bundle


def test_the_labels_go_on_the_issue_item_and_in_the_facts() -> None:
    fake = FakeGitHub()
    fake.add_issue(REPO, 12, labels=["enhancement", "bug"])
    fake.add_pr(REPO, NUMBER, body="Fixes #12. See other-org/lib#3 and #40.", linked_issues=False)
    with fake.mock():
        raw = collect(client(fake), REPO, NUMBER, api="rest")
    bundle = build_bundle(raw)
    items = {i.id: i for g in bundle.groups for i in g.items}
    assert items["issue:12"].facts["labels"] == "bug, enhancement"
    assert "labels" not in items["issue:40"].facts  # 404: not read
    assert "labels" not in items["issue:other-org/lib#3"].facts  # another repository: not read
    assert [(e.number, e.labels, e.is_pull) for e in bundle.facts.linked_issues] == [
        (12, ["bug", "enhancement"], False)]
    form = bundle.json_form()["facts"]
    assert form["linkedIssues"] == [{"number": 12, "labels": ["bug", "enhancement"]}]


def test_a_bundle_stored_before_linked_issues_loads_and_hashes_as_before() -> None:
    raw = builders.merged_agent_pr()
    assert raw.linked_issues == []
    bundle = build_bundle(raw)
    form = bundle.json_form()
    assert "linkedIssues" not in form["facts"]  # left out while empty: the old canonical form
    again = EvidenceBundle.model_validate(form)
    assert again.facts.linked_issues == [] and again.hash() == bundle.hash()


# ------------------------------------------------------------------------ the task type


def _fix_by_issue(fake: FakeGitHub) -> None:
    """A PR whose title and labels say nothing, whose linked issue is labelled bug."""
    fake.add_issue(REPO, 12, labels=["bug", "help wanted"])
    fake.add_pr(REPO, NUMBER, title="Handle empty input in parse_widget", labels=(),
                body="Fixes #12. Empty input now returns an empty widget.")


@pytest.mark.parametrize("api", ["rest", "graphql"])
def test_a_pr_typed_by_its_linked_issue_s_label(api: str) -> None:
    fake = FakeGitHub()
    _fix_by_issue(fake)
    with fake.mock():
        result = evaluate_pull_request(client(fake), REPO, NUMBER, Options(ai="off", env={}, api=api)).result  # type: ignore[arg-type]
    task = result.task_type
    assert task is not None
    assert (task.type, task.source, task.matched) == ("fix", "issue-label", ["bug"])
    assert task.evidence == [f"pr:{NUMBER}", "issue:12"]
    assert "linked issue" in task.reason
    assert set(task.evidence) <= result.evidence.evidence_ids()  # every ID it cites is citable


def test_the_pr_s_own_labels_still_come_first() -> None:
    fake = FakeGitHub()
    fake.add_issue(REPO, 12, labels=["bug"])
    fake.add_pr(REPO, NUMBER, title="Handle empty input", labels=["documentation"], body="Fixes #12.")
    with fake.mock():
        result = evaluate_pull_request(client(fake), REPO, NUMBER, Options(ai="off", env={})).result
    assert result.task_type is not None
    assert (result.task_type.type, result.task_type.source) == ("docs", "label")


@pytest.mark.parametrize("trust", [True, False])
def test_a_re_score_of_the_stored_result_gives_the_same_task_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trust: bool
) -> None:
    """Offline, from the stored bundle alone: the fast path (every signal kept) and the full one."""
    monkeypatch.setattr("taskeval.pipeline.TRUST_STORED", trust)
    fake = FakeGitHub()
    _fix_by_issue(fake)
    with fake.mock():
        first = evaluate_pull_request(client(fake), REPO, NUMBER, Options(ai="off", env={})).result
    path = tmp_path / "result.json"
    path.write_text(first.to_json(), encoding="utf-8")
    again = rescore(path, Options(ai="off", env={}))
    stored = json.loads(first.to_json())
    out = json.loads(again.json())
    assert out["taskType"] == stored["taskType"]
    assert out["taskType"]["source"] == "issue-label"
    assert out["bundleHash"] == stored["bundleHash"]
    # The bundle re-scored directly types it the same way too.
    bundle = EvidenceBundle.model_validate(stored["evidence"])
    direct = score_bundle(bundle, LoadedConfig(Settings(), "defaults"), Options(ai="off", env={}))
    assert direct.task_type == first.task_type


def test_linked_issue_labels_are_read_only_from_the_evidence() -> None:
    """The task type reads the bundle's facts: a linked issue in the text that collection did
    not read (no labels in the bundle) types nothing."""
    raw = builders.merged_agent_pr(title="Handle empty input", labels=[])
    raw.pull.body = "Fixes #12."
    plain = score_bundle(build_bundle(raw), LoadedConfig(Settings(), "defaults"), Options(ai="off", env={}))
    assert plain.task_type is not None and plain.task_type.type == "unknown"
    raw.linked_issues = [RawLinkedIssue(number=12, labels=["Type: Bug"])]
    typed = score_bundle(build_bundle(raw), LoadedConfig(Settings(), "defaults"), Options(ai="off", env={}))
    assert typed.task_type is not None
    assert (typed.task_type.type, typed.task_type.matched) == ("fix", ["Type: Bug"])
