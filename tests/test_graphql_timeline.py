"""The PR's timeline over GraphQL: the same events as REST's ``/issues/{n}/timeline``, keyed
by GitHub's global node id, and REST's timeline read only where GraphQL lacks the facts.

The fake GitHub serves ``timelineItems`` from the REST timeline of the same fixture
(tests/fakegraphql_timeline.py), typed as GitHub's schema says each REST event is, so the
collector's reading of every type is checked against GitHub's own names; both transports must
give the same collection and the same bundle, byte for byte."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskeval.agent_table import BUILTIN_RULES
from taskeval.evidence import build_bundle
from taskeval.github import collect
from taskeval.github.collection import MAX_TIMELINE_EVENTS
from taskeval.github.graphql.queries import TIMELINE_LIMIT, TIMELINE_TYPES
from taskeval.github.graphql.timeline import AGENT_ACCOUNTS, rest_event
from taskeval.raw import RawCollection
from tests.fakegithub import BASE_TIME, FakeGitHub
from tests.fakegraphql import schema
from tests.fakegraphql_timeline import types_by_event
from tests.test_graphql import REPO, _assert_same, _both, _fresh_run, client

__all__ = ["_fresh_run"]  # the autouse fixture: each test is its own run

HUMAN = "alice"


def _rest_timeline_reads(fake: FakeGitHub) -> int:
    return fake.counts()["issues.timeline"]


def _graphql_only(fake: FakeGitHub, number: int) -> tuple[RawCollection, RawCollection]:
    """Both transports' collections; the GraphQL one read no REST timeline."""
    with fake.mock():
        rest = collect(client(fake), REPO, number, api="rest")
        fake.reset_log()
        graphql = collect(client(fake), REPO, number, api="graphql")
    assert _rest_timeline_reads(fake) == 0, "GraphQL's timeline sufficed"
    return rest, graphql


# --------------------------------------------------------------------------- GitHub's types


def test_every_timeline_type_of_githubs_schema_is_read_as_the_rest_event_it_names() -> None:
    """The union's types but the viewer's "last seen" marker, each read as the REST event that
    GitHub's schema (its item-type enum) or REST documentation names."""
    union = {t.name for t in schema().get_type("PullRequestTimelineItems").types}  # type: ignore[union-attr]
    assert set(TIMELINE_TYPES) == union - {"PullRequestRevisionMarker"}
    named = {kind: event for event, (kind, _) in types_by_event(schema()).items()}
    assert {kind: rest_event(kind) for kind in TIMELINE_TYPES} == {k: named[k] for k in TIMELINE_TYPES}
    assert TIMELINE_LIMIT == MAX_TIMELINE_EVENTS, "GraphQL keeps as many events as REST"


def test_the_accounts_whose_prs_read_the_rest_timeline_and_why() -> None:
    """GitHub's Copilot agent records its sessions (``copilot_work_started``,
    ``copilot_work_finished``, ``copilot_work_finished_failure``) on REST's timeline only:
    GraphQL's timeline has no type for them. It is the one built-in agent whose rule names
    such work events, so its accounts, in every spelling REST and GraphQL give them, are the
    ones whose PRs read REST's timeline."""
    events = set(types_by_event(schema()))
    assert "labeled" in events and not {e for e in events if "_work_" in e}
    assert [rule.id for rule in BUILTIN_RULES if rule.work_events] == ["copilot"]
    assert {"copilot", "copilot-swe-agent[bot]", "copilot-swe-agent"} == AGENT_ACCOUNTS


# ------------------------------------------------------------------------ parity, no REST


def _every_event(fake: FakeGitHub, number: int = 31) -> int:
    """A human's PR whose timeline holds one event of each kind the fixture can make."""
    pr = fake.add_pr(REPO, number, author=HUMAN, commits=4, reviews=[
        {"user": "octocat", "state": "CHANGES_REQUESTED", "body": "Tests?"},
        {"user": "hubot", "state": "DISMISSED", "body": ""},
        {"user": "octocat", "state": "PENDING", "body": "draft"},
        {"user": "copilot-pull-request-reviewer[bot]", "state": "COMMENTED", "body": "Summary"},
        {"user": "octocat", "state": "APPROVED", "body": "Thanks"}],
        review_comments=[{"user": "octocat", "body": "why?", "path": "src/a.py"},
                         {"user": HUMAN, "body": "because", "path": "src/a.py"}])
    at = BASE_TIME + timedelta(hours=1)
    for i, (event, extra) in enumerate([
        ("labeled", {"label": {"name": "area/parser"}}),
        ("unlabeled", {"label": {"name": "bug"}}),
        ("assigned", {"assignee": fake.user("renovate[bot]")}),
        ("unassigned", {"assignee": fake.user("octocat")}),
        ("review_requested", {}), ("mentioned", {}), ("subscribed", {}), ("renamed", {}),
        ("convert_to_draft", {}), ("ready_for_review", {}), ("deployed", {}),
        ("head_ref_force_pushed", {"commit_id": pr.head_sha}),
        ("referenced", {"commit_id": "a" * 40}),
        ("closed", {"commit_id": "b" * 40}), ("reopened", {}),
        ("cross-referenced", {"id": None, "node_id": None, "source": {"type": "issue", "issue": {
            "number": 77, "state": "closed", "title": "Redo the parser",
            "user": fake.user("Copilot"), "created_at": "2025-03-05T10:00:00Z",
            "pull_request": {"merged_at": "2025-03-06T10:00:00Z"},
            "repository": {"full_name": REPO}}}}),
        ("cross-referenced", {"id": None, "node_id": None, "source": {"type": "issue", "issue": {
            "number": 5, "state": "open", "title": "Parser crash", "user": fake.user("renovate[bot]"),
            "created_at": "2025-03-01T10:00:00Z",
            "repository_url": "https://api.github.com/repos/other-org/lib"}}}),
        ("line-commented", {"id": None, "node_id": None, "created_at": None,
                            "comments": [fake.repos[REPO].pulls[number].review_comments[0]]}),
        ("commit-commented", {"id": None, "node_id": None, "created_at": None,
                              "commit_id": pr.head_sha, "comments": []}),
        ("comment_deleted", {}), ("auto_squash_enabled", {}), ("base_ref_changed", {}),
    ]):
        data = fake.add_timeline_event(REPO, number, event, actor="octocat" if i % 2 else "hubot",
                                       at=at + timedelta(minutes=i), **extra)
        if event.endswith("-commented"):
            data["actor"] = None  # GitHub's grouped comments name their authors only
    return number


def test_a_humans_pr_reads_every_kind_of_event_from_graphql_as_rest_lists_it() -> None:
    fake = FakeGitHub()
    number = _every_event(fake)
    rest, graphql = _graphql_only(fake, number)
    _assert_same(rest, graphql)
    assert rest.timeline is not None
    kinds = [e.event for e in rest.timeline]
    assert {"committed", "reviewed", "commented", "cross-referenced", "line-commented",
            "commit-commented", "merged", "labeled"} <= set(kinds)
    assert kinds.count("reviewed") == 4, "the pending review is not an event"
    by_kind = {e.event: e for e in graphql.timeline or []}
    assert by_kind["line-commented"].actor is not None and by_kind["line-commented"].actor.login == "octocat"
    assert by_kind["closed"].commit_id == "b" * 40
    # A merged PR's issue is "closed" to REST; REST's timeline names the Copilot agent "Copilot".
    cross = [e for e in graphql.timeline or [] if e.event == "cross-referenced"]
    assert [(e.source_state, e.source_author, e.source_is_pull) for e in cross] == [
        ("closed", "Copilot", True), ("open", "renovate[bot]", False)]


def test_timeline_evidence_ids_are_node_ids_or_what_both_transports_share() -> None:
    fake = FakeGitHub()
    number = _every_event(fake)
    rest, graphql = _graphql_only(fake, number)
    entries = build_bundle(graphql).facts.timeline or []
    assert [e.id for e in entries] == [e.id for e in build_bundle(rest).facts.timeline or []]
    ids = {e.event: e.id for e in entries}
    served = {e["event"]: e for e in fake.repos[REPO].pulls[number].events}
    assert ids["labeled"] == f"event:{served['labeled']['node_id']}"
    assert {e.id for e in entries if e.event == "committed"} == {
        f"event:committed-{c.sha[:7]}" for c in rest.commits}
    assert [e.id for e in entries if e.event == "cross-referenced"] == [
        f"event:cross-referenced-{REPO}#77-20250304101500",
        "event:cross-referenced-other-org/lib#5-20250304101600"]
    assert ids["line-commented"].startswith("event:line-commented-")
    assert all(not e.id.removeprefix("event:").isdigit() for e in entries), "no REST event ids"


def test_a_typical_humans_pr_costs_one_query_and_two_rest_reads() -> None:
    """The issue object (its App, its assignees with Bots) and the workflow runs: nothing else
    over REST, the timeline included."""
    fake = FakeGitHub()
    fake.add_pr(REPO, 482, author=HUMAN, commits=10, body="Handles empty input.", reviews=[
        {"user": "octocat", "state": "COMMENTED", "body": f"note {i}"} for i in range(10)],
        issue_comments=[{"user": "octocat", "body": f"comment {i}"} for i in range(10)],
        review_comments=[{"user": "octocat", "body": f"line {i}", "path": "src/a.py"}
                         for i in range(10)])
    with fake.mock():
        raw = collect(client(fake), REPO, 482, api="graphql")
    assert raw.timeline is not None and len(raw.timeline) > 30
    assert (raw.graphql_queries, raw.graphql_points) == (1, 1)
    assert fake.counts() == {"graphql": 1, "issues.get": 1, "actions.runs": 1}


def test_a_timeline_past_githubs_cap_is_cut_alike() -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 40, author=HUMAN, commits=2)
    for i in range(MAX_TIMELINE_EVENTS + 5):
        fake.add_timeline_event(REPO, 40, "subscribed", at=BASE_TIME + timedelta(seconds=i))
    rest, graphql = _graphql_only(fake, 40)
    _assert_same(rest, graphql)
    assert graphql.timeline is not None and len(graphql.timeline) == MAX_TIMELINE_EVENTS
    assert [i.message for i in graphql.issues if i.resource == "timeline"] == [
        f"more than {MAX_TIMELINE_EVENTS} timeline events matched; the first "
        f"{MAX_TIMELINE_EVENTS} were kept"]
    assert graphql.graphql_queries == 1 + 9 + 1  # the first page, nine more, the linked issue


# ------------------------------------------------------------------- where REST is read


def _copilot_author(fake: FakeGitHub) -> int:
    fake.add_pr(REPO, 50, author="Copilot")
    fake.add_timeline_event(REPO, 50, "copilot_work_started", actor="octocat")
    return 50


def _copilot_assigned(fake: FakeGitHub) -> int:
    pr = fake.add_pr(REPO, 51, author=HUMAN)
    pr.data["assignees"] = [fake.user("Copilot")]  # a Bot: only REST's issue object lists it
    fake.add_timeline_event(REPO, 51, "copilot_work_started", actor=HUMAN)
    fake.add_timeline_event(REPO, 51, "copilot_work_finished_failure", actor=HUMAN)
    return 51


def _copilot_acted(fake: FakeGitHub) -> int:
    """Copilot was assigned once and is no longer: its event is on the timeline GraphQL reads."""
    fake.add_pr(REPO, 52, author=HUMAN)
    fake.add_timeline_event(REPO, 52, "assigned", actor=HUMAN, assignee=fake.user("Copilot"))
    fake.add_timeline_event(REPO, 52, "copilot_work_started", actor=HUMAN)
    fake.add_timeline_event(REPO, 52, "unassigned", actor=HUMAN, assignee=fake.user("Copilot"))
    return 52


def _unknown_source(fake: FakeGitHub) -> int:
    """A cross-reference whose source the fixture does not hold (as the corpus keeps them):
    GraphQL answers that item with an error, and REST's timeline is read."""
    fake.add_pr(REPO, 53, author=HUMAN)
    fake.add_timeline_event(REPO, 53, "cross-referenced", actor=HUMAN, id=None, node_id=None)
    return 53


@pytest.mark.parametrize(("build", "rest_read"), [
    (_copilot_author, True), (_copilot_assigned, True), (_copilot_acted, True),
    (_unknown_source, True), (lambda f: _every_event(f, 54), False),
], ids=["copilot-author", "copilot-assigned", "copilot-once-assigned", "item-error", "human"])
def test_rest_timeline_is_read_only_where_graphql_lacks_the_facts(build: Any, rest_read: bool) -> None:
    fake = FakeGitHub()
    number = build(fake)
    with fake.mock():
        rest = collect(client(fake), REPO, number, api="rest")
        fake.reset_log()
        graphql = collect(client(fake), REPO, number, api="graphql")
    assert (_rest_timeline_reads(fake) > 0) == rest_read
    _assert_same(rest, graphql)
    assert rest.timeline and {e.event for e in rest.timeline} & {"copilot_work_started",
                                                                "cross-referenced", "committed"}


# ------------------------------------------------------------------------ generated PRs

PEOPLE = ("octocat", "alice", "hubot", "renovate[bot]", "github-actions[bot]")
EVENTS = ("labeled", "unlabeled", "assigned", "unassigned", "review_requested", "mentioned",
          "subscribed", "renamed", "convert_to_draft", "ready_for_review", "deployed",
          "head_ref_force_pushed", "head_ref_deleted", "referenced", "closed", "reopened",
          "cross-referenced", "comment_deleted", "milestoned", "locked", "added_to_merge_queue",
          "copilot_work_started")


@st.composite
def timelines(draw: st.DrawFn) -> list[tuple[str, str, int, dict[str, Any]]]:
    out = []
    for event in draw(st.lists(st.sampled_from(EVENTS), max_size=12)):
        extra: dict[str, Any] = {}
        if event in ("labeled", "unlabeled"):
            extra["label"] = {"name": draw(st.sampled_from(("bug", "area/ci", "wontfix")))}
        if event in ("assigned", "unassigned"):
            extra["assignee"] = draw(st.sampled_from((*PEOPLE, "Copilot")))
        if event in ("head_ref_force_pushed", "referenced", "closed"):
            extra["commit_id"] = draw(st.none() | st.just("c" * 40))
        if event == "cross-referenced":
            extra.update(id=None, node_id=None, source={"type": "issue", "issue": {
                "number": draw(st.integers(1, 500)), "state": draw(st.sampled_from(("open", "closed"))),
                "title": "t", "user": draw(st.sampled_from((*PEOPLE, "Copilot"))),
                "created_at": "2025-03-05T10:00:00Z", "repository": {"full_name": REPO},
                **({"pull_request": {"merged_at": None}} if draw(st.booleans()) else {})}})
        out.append((event, draw(st.sampled_from(PEOPLE)), draw(st.integers(0, 600)), extra))
    return out


@settings(max_examples=400 if os.environ.get("TASKEVAL_SLOW") == "1" else 30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(author=st.sampled_from(("alice", "octocat", "Copilot", "devin-ai-integration[bot]")),
       events=timelines(), commits=st.integers(1, 6))
def test_any_generated_timeline_gives_the_same_bundle_through_both_transports(
        author: str, events: list[tuple[str, str, int, dict[str, Any]]], commits: int) -> None:
    fake = FakeGitHub()
    fake.add_pr(REPO, 482, author=author, commits=commits)
    # GitHub records the agent's sessions only on PRs it works on: authored or assigned.
    working = author == "Copilot" or any(
        e == "assigned" and x.get("assignee") == "Copilot" for e, _, _, x in events)
    for event, actor, minutes, extra in events:
        if event == "copilot_work_started" and not working:
            continue
        if "assignee" in extra:
            extra = {**extra, "assignee": fake.user(extra["assignee"])}
        if event == "cross-referenced":
            issue = extra["source"]["issue"]
            extra = {**extra, "source": {**extra["source"], "issue": {
                **issue, "user": fake.user(issue["user"])}}}
        fake.add_timeline_event(REPO, 482, event, actor=actor,
                                at=BASE_TIME + timedelta(minutes=minutes), **extra)
    with fake.mock():
        rest, graphql = _both(fake, 482)
    _assert_same(rest, graphql)


def test_a_batch_read_reads_rest_timelines_where_a_single_read_does() -> None:
    """Several PRs a query (backfill): each PR's timeline as its own collection has it, REST's
    for the same PRs (an agent's, an item GitHub answered with an error), GraphQL's for the rest."""
    from taskeval.github.client import clone
    from taskeval.github.collection import collect_read
    from taskeval.github.graphql.read import PullRead, read_pulls

    fake = FakeGitHub()
    numbers = [build(fake) for build in (_copilot_author, _copilot_assigned, _copilot_acted,
                                         _unknown_source, lambda f: _every_event(f, 54))]
    with fake.mock():
        gh = client(fake)
        single = {n: collect(gh, REPO, n, api="graphql") for n in numbers}
        own = {r.path for r in fake.log if r.route == "issues.timeline"}
        fake.reset_log()
        batch = read_pulls(clone(gh, None), REPO, numbers)
        batched = {}
        for n in numbers:
            read = batch.reads[n]
            assert isinstance(read, PullRead), read
            batched[n] = collect_read(gh, REPO, read)
    assert batch.sizes == [len(numbers)]
    assert {r.path for r in fake.log if r.route == "issues.timeline"} == own == {
        f"/repos/{REPO}/issues/{n}/timeline" for n in numbers[:4]}
    for n in numbers:
        assert build_bundle(batched[n]).model_dump_json() == build_bundle(single[n]).model_dump_json()
