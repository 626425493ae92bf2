"""Outcomes, validate and calibrate: the rules as tables, the statistics against known answers,
and the three commands end to end against a directory of results and a bot store (SQLite)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from taskeval import cli
from taskeval import outcomes as oc
from taskeval.config import LoadedConfig, Settings
from taskeval.evidence import build_bundle
from taskeval.github.etags import shared_cache
from taskeval.models import TimelineEntry
from taskeval.pipeline import Options, score_bundle
from taskeval.raw import RawCollection
from taskeval.validity import Row, analyse, auc, bootstrap_auc, read_results

from . import builders as b

pytest.importorskip("numpy")
pytest.importorskip("matplotlib")


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize(("scores", "bad", "expected"), [
    ([90, 80, 30, 20], [False, False, True, True], 1.0),
    ([30, 20, 90, 80], [False, False, True, True], 0.0),
    ([50, 50, 50, 50], [False, True, False, True], 0.5),
    ([90, 50, 50, 10], [False, False, True, True], 0.875),
    ([90, 80], [False, False], None),
])
def test_auc_is_the_chance_a_good_pr_outscores_a_bad_one(scores, bad, expected) -> None:
    assert auc(scores, bad) == expected


def test_bootstrap_interval_brackets_the_auc_and_is_reproducible() -> None:
    rng = random.Random(3)
    bad = [rng.random() < 0.3 for _ in range(400)]
    scores = [max(0, min(100, int(rng.gauss(50 if x else 70, 15)))) for x in bad]
    point = auc(scores, bad)
    low, high = bootstrap_auc(scores, bad, 300) or (0, 0)
    assert point is not None and low < point < high and 0.6 < point < 0.95
    assert bootstrap_auc(scores, bad, 300) == (low, high)
    assert bootstrap_auc(scores, [False] * 400, 50) is None


# --------------------------------------------------------------------------- outcome rules


def _facts(raw: RawCollection, timeline: list[TimelineEntry] | None = None) -> dict[str, Any]:
    bundle = build_bundle(raw)
    bundle.facts.timeline = timeline
    return bundle.model_dump(mode="json", by_alias=True)["facts"]


def _event(name: str, n: int) -> TimelineEntry:
    return TimelineEntry(id=f"event:{n}", event=name, actor="Copilot",
                         created_at=f"2026-03-02T1{n}:00:00Z")


def _kinds(records: list[oc.OutcomeRecord]) -> dict[str, bool]:
    return {r.outcome: r.value for r in records}


@pytest.mark.parametrize(("raw", "timeline", "expected"), [
    (b.merged_agent_pr(), None, {"rejected": False, "changes_requested": False}),
    (b.merged_agent_pr(merged=False, state="closed"), [],
     {"rejected": True, "changes_requested": False, "force_pushed": False, "reopened": False}),
    (b.merged_agent_pr(merged=False, state="open"), None, {"changes_requested": False}),
    (b.unresolved_change_request(), [_event("head_ref_force_pushed", 1), _event("reopened", 2)],
     {"rejected": False, "changes_requested": True, "force_pushed": True, "reopened": True}),
    (b.merged_agent_pr(), [_event("copilot_work_started", 1),
                           _event("copilot_work_finished_failure", 2)],
     {"rejected": False, "changes_requested": False, "force_pushed": False, "reopened": False,
      "agent_failure": True}),
])
def test_outcomes_from_a_bundles_own_facts(raw, timeline, expected) -> None:
    assert _kinds(oc.from_facts(b.REPO, _facts(raw, timeline))) == expected


def test_composite_is_true_when_any_part_is_and_unknown_without_a_closed_pr() -> None:
    merged = oc.from_facts(b.REPO, _facts(b.unresolved_change_request()))
    composite = [r for r in oc.with_composite(merged) if r.outcome == "agent_failed"]
    assert [(r.value, r.detail) for r in composite] == [(True, "changes_requested")]
    still_open = oc.from_facts(b.REPO, _facts(b.merged_agent_pr(merged=False, state="open")))
    assert not [r for r in oc.with_composite(still_open) if r.outcome == "agent_failed"]


def _pull(n: int, title: str, merged_at: str | None, body: str = "", sha: str | None = None,
          base: str = "main") -> oc.PullSummary:
    return oc.PullSummary(n, title, body, merged_at, merged_at or "2026-03-01T00:00:00Z",
                          sha or f"{n:040d}", base, f"https://github.com/acme/widgets/pull/{n}")


HISTORY = [
    _pull(10, "Add retries", "2026-03-01T00:00:00Z", "Fixes #3"),
    _pull(11, "Tidy docs", "2026-03-01T01:00:00Z"),
    _pull(12, 'Revert "Add retries"', "2026-03-02T00:00:00Z", "Reverts acme/widgets#10"),
    _pull(13, "Fix crash from #11 in the docs build", "2026-03-05T00:00:00Z"),
    _pull(14, "Experiment", None),
    _pull(15, "Speed up", "2026-03-01T02:00:00Z", sha="abc1234" + "0" * 33),
    _pull(16, "Fix regression after #15", "2026-04-30T00:00:00Z"),  # outside the 14-day window
    _pull(17, "Into a release branch", "2026-03-01T03:00:00Z", base="release"),
]
COMMITS = [oc.CommitSummary("f" * 40, 'Revert "Speed up"\n\nThis reverts commit abc1234.',
                            "2026-03-03T00:00:00Z", "https://github.com/acme/widgets/commit/fff")]


def test_history_rules_revert_follow_up_reopened_and_rejected() -> None:
    reopened = {3: ("2026-03-04T00:00:00Z", "https://api.github.com/issues/events/9")}
    records = oc.detect("acme/widgets", HISTORY, COMMITS,
                        lambda n, after: reopened.get(n) if reopened.get(n, ("",))[0] > after
                        else None, default_branch="main")
    got = {(r.number, r.outcome): r.value for r in records}
    assert got[(10, "reverted")] and got[(10, "reopened_task")] and not got[(10, "follow_up_fix")]
    assert got[(11, "follow_up_fix")] and not got[(11, "reverted")]
    assert got[(14, "rejected")] and not got[(10, "rejected")]
    assert got[(15, "reverted")] and not got[(15, "follow_up_fix")]  # #16 is past the window
    assert not any(number == 17 for number, _ in got)  # not the default branch
    reverted = next(r for r in records if (r.number, r.outcome) == (10, "reverted"))
    assert reverted.evidence == ["https://github.com/acme/widgets/pull/12"]


def test_scan_history_stays_within_the_request_budget() -> None:
    calls: list[str] = []
    pulls = [{"number": n, "title": f"PR {n}", "body": "", "merged_at": "2026-03-01T00:00:00Z",
              "closed_at": "2026-03-01T00:00:00Z", "merge_commit_sha": f"{n:040d}",
              "base": {"ref": "main"}, "html_url": f"u/{n}", "updated_at": "2026-03-02T00:00:00Z"}
             for n in range(100)]

    def get(path: str, params: dict[str, Any]) -> Any:
        calls.append(path)
        if path.endswith("/pulls"):
            return pulls if params["page"] == 1 else []
        return {"default_branch": "main"} if path.count("/") == 2 else []

    records, notes = oc.scan_history(get, "acme/widgets", max_requests=2)
    assert len(calls) == 2 and any("budget" in n for n in notes)
    assert {r.outcome for r in records} == {"rejected", "reverted", "follow_up_fix"}


def test_bot_events_record_rejections_and_reverts() -> None:
    repo = {"full_name": "acme/widgets", "default_branch": "main"}
    closed = {"action": "closed", "repository": repo, "pull_request": {
        "number": 7, "title": "x", "body": "", "merged_at": None, "closed_at": "2026-03-01T00:00:00Z",
        "base": {"ref": "main"}, "html_url": "u/7"}}
    assert _kinds(oc.from_pull_request_event(closed)) == {"rejected": True}
    revert = {"action": "closed", "repository": repo, "pull_request": {
        "number": 8, "title": 'Revert "x"', "body": "Reverts acme/widgets#5",
        "merged_at": "2026-03-02T00:00:00Z", "closed_at": "2026-03-02T00:00:00Z",
        "base": {"ref": "main"}, "html_url": "u/8"}}
    assert [(r.number, r.outcome, r.value) for r in oc.from_pull_request_event(revert)] == [
        (8, "rejected", False), (5, "reverted", True)]
    push = {"ref": "refs/heads/main", "repository": repo, "commits": [
        {"id": "f" * 40, "message": "Revert\n\nThis reverts commit abc1234.", "url": "c/f"}]}
    found = oc.from_push_event(push, lambda sha: 5 if sha.startswith("abc1234") else None)
    assert [(r.number, r.outcome, r.value) for r in found] == [(5, "reverted", True)]
    assert oc.from_push_event({**push, "ref": "refs/heads/dev"}, lambda sha: 5) == []


def test_outcome_records_round_trip_as_json_lines(tmp_path: Path) -> None:
    records = oc.from_facts(b.REPO, _facts(b.unresolved_change_request(), []))
    path = tmp_path / "o.jsonl"
    assert oc.write_jsonl(path, records) == len(records)
    assert oc.read_jsonl(path) == records
    path.write_text('{"repository": "a/b", "pullRequest": 1, "outcome": "rejected", "value": "no"}\n')
    with pytest.raises(ValueError, match=r'o\.jsonl:1: .*value must be true or false, got "no"'):
        oc.read_jsonl(path)


@pytest.mark.parametrize(("label", "problem"), [
    ("wrong approach", None),  # a team's own label, as its triage writes it
    ("Rejected", None),  # compared as written: not the built-in `rejected`
    ("flaky-tests/ci", None),
    ("", "is empty"),
    (" padded", "starts or ends with space"),
    ("x" * 33, "at most 32 printable characters"),
    ("two\nlines", "at most 32 printable characters"),
    (7, "an outcome label is text, got 7"),
])
def test_outcome_labels_may_be_the_teams_own(label: object, problem: str | None, tmp_path: Path) -> None:
    path = tmp_path / "o.jsonl"
    path.write_text(json.dumps({"repository": "a/b", "pullRequest": 1, "outcome": label, "value": True}) + "\n")
    if problem is None:
        assert [r.outcome for r in oc.read_jsonl(path)] == [label]
    else:
        with pytest.raises(ValueError, match=re.escape(problem)):
            oc.read_jsonl(path)


# --------------------------------------------------------------------------- end to end


def _result(raw: RawCollection, timeline: list[TimelineEntry] | None = None) -> dict[str, Any]:
    bundle = build_bundle(raw)
    bundle.facts.timeline = timeline
    result = score_bundle(bundle, LoadedConfig(Settings(), "defaults"),
                          Options(ai="off", env={}, evaluated_at="2026-03-03T00:00:00Z"))
    return json.loads(result.to_json())


def corpus_of_results(n: int = 60) -> list[dict[str, Any]]:
    """PRs where people objected and the agent failed get rejected; clean ones get merged."""
    out = []
    for i in range(n):
        bad = i % 3 == 0
        words = "This doesn't work, please fix the parser." if bad else "Thanks, looks good."
        raw = b.merged_agent_pr(
            number=1000 + i, merged=not bad, state="closed",
            issue_comments=[b.issue_comment(800 + i, b.ALICE, words, 70)],
            reviews=[b.review(7000 + i, b.BOB, "CHANGES_REQUESTED" if bad and i % 2 else
                              "APPROVED", 90)])
        raw.pull.html_url = f"https://github.com/{b.REPO}/pull/{1000 + i}"
        timeline = [_event("copilot_work_started", 1)]
        if bad:
            timeline.append(_event("copilot_work_finished_failure", 2))
        out.append(_result(raw, timeline))
    return out


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    for r in corpus_of_results():
        (folder / f"pr-{r['pullRequest']['number']}.json").write_text(json.dumps(r))
    return folder


def test_rows_read_back_and_the_report_separates_what_it_should(results_dir: Path) -> None:
    rows, raws = read_results([results_dir])
    assert len(rows) == 60 and isinstance(rows[0], Row)
    records = oc.with_composite([r for raw in raws for r in oc.from_result(raw)])
    report = analyse(rows, records, rounds=200)
    assert report["outcomes"]["rejected"] == {"meaning": "closed without merging", "builtIn": True,
                                              "applicable": 60, "positives": 20}
    agent = report["categories"]["agentPerformance"]
    assert agent["auc"]["rejected"]["auc"] == 1.0
    assert agent["auc"]["rejected"]["leftOut"] == ["agent.rejection", "agent.restarts"]
    assert report["signals"]["outcome.delivery"]["auc"]["rejected"] == {"trivial": True}
    assert report["signals"]["agent.objections"]["auc"]["rejected"]["auc"] == 1.0
    assert "agent.objections" not in report["separatesNothing"]
    assert "agent.text_hygiene" in report["separatesNothing"]
    for n, row in enumerate(rows):
        row.agent = "copilot" if n % 2 else "devin"
    by_agent = analyse(rows, records, rounds=100)["agents"]
    assert sorted(by_agent) == ["copilot", "devin"] and by_agent["devin"]["prs"] == 30
    assert by_agent["devin"]["agentPerformance"]["rejected"]["auc"] == 1.0


def test_validate_outcomes_and_calibrate_commands_on_a_results_directory(
        results_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "validity"
    assert cli.main(["validate", "--results", str(results_dir), "--output-dir", str(out),
                     "--bootstrap", "100", "--baseline", str(results_dir)]) == 0
    assert {p.name for p in out.iterdir()} >= {"validity.md", "validity.json",
                                               "auc-rejected.png", "bands-agentPerformance.png"}
    md = (out / "validity.md").read_text()
    assert "## Signals that separate nothing on this data" in md and "Before and after" in md
    # "coverage" is a result's weight coverage (one PR's category): validate's share of PRs on
    # which a signal is conclusive is named apart, in the report and in the JSON
    assert "| signal | conclusive share (of PRs) |" in md and "coverage" not in md
    report = json.loads((out / "validity.json").read_text())
    assert all("conclusiveShare" in e and "coverage" not in e for e in report["signals"].values())
    assert all("conclusiveShare" in e for e in report["categories"].values())
    assert (out / "auc-rejected.png").read_bytes()[:4] == b"\x89PNG"
    jsonl = tmp_path / "o.jsonl"
    assert cli.main(["outcomes", "--results", str(results_dir), "--output", str(jsonl)]) == 0
    assert {r.outcome for r in oc.read_jsonl(jsonl)} >= {"rejected", "agent_failure"}
    capsys.readouterr()
    assert cli.main(["calibrate", "--results", str(results_dir), "--outcome", "rejected",
                     "--folds", "3"]) == 0
    snippet = capsys.readouterr().out
    # agentPerformance already separates `rejected` perfectly here: no gain, so no change.
    assert "Cross-validated AUC (3 folds" in snippet and "agent.restarts" in snippet
    assert "# No change proposed: the gain is not clear" in snippet
    assert yaml.safe_load(snippet) is None  # comments only: nothing to paste by mistake


def test_commands_against_a_bot_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sqlalchemy")
    from taskeval.store.db import init_schema, make_engine
    from taskeval.store.outcomes import read_outcomes
    from taskeval.store.results import record_from_result

    url = f"sqlite:///{tmp_path / 'taskeval.db'}"
    engine = make_engine(url)
    init_schema(engine)
    from taskeval.store.db import evaluations

    with engine.begin() as conn:
        for r in corpus_of_results(30):
            conn.execute(evaluations.insert().values(**record_from_result(r), stored_at=0.0))
    engine.dispose()
    assert cli.main(["outcomes", "--store", url, "--write-store", url]) == 0
    assert {r.outcome for r in read_outcomes(url)} >= {"rejected", "changes_requested"}
    out = tmp_path / "v"
    assert cli.main(["validate", "--store", url, "--output-dir", str(out), "--bootstrap", "50",
                     "--no-plots"]) == 0
    report = json.loads((out / "validity.json").read_text())
    assert report["prs"] == 30 and report["outcomes"]["rejected"]["positives"] == 10
    capsys.readouterr()
    assert cli.main(["calibrate", "--store", url, "--outcome", "rejected", "--folds", "2"]) == 0
    assert "against 'rejected' on 30 PRs (10 with the outcome)" in capsys.readouterr().out


def test_bot_records_outcomes_from_pull_request_and_push_deliveries(tmp_path: Path) -> None:
    pytest.importorskip("sqlalchemy")
    from bot.web import outcome_events
    from taskeval.store.db import evaluations, init_schema, make_engine
    from taskeval.store.outcomes import read_outcomes
    from taskeval.store.results import record_from_result

    engine = make_engine(f"sqlite:///{tmp_path / 'taskeval.db'}")
    init_schema(engine)
    merged = _result(b.merged_agent_pr(merge_commit_sha="abc1234" + "0" * 33))
    with engine.begin() as conn:
        conn.execute(evaluations.insert().values(**record_from_result(merged), stored_at=0.0))
    repo = {"full_name": b.REPO, "default_branch": "main"}
    closed = {"action": "closed", "repository": repo, "pull_request": {
        "number": 9, "title": "x", "body": "", "merged_at": None,
        "closed_at": "2026-03-01T00:00:00Z", "base": {"ref": "main"}, "html_url": "u/9"}}
    push = {"ref": "refs/heads/main", "repository": repo, "commits": [
        {"id": "f" * 40, "message": 'Revert "x"\n\nThis reverts commit abc1234.', "url": "c/f",
         "timestamp": "2026-03-04T00:00:00Z"}]}
    assert [r.outcome for r in outcome_events.record(engine, "pull_request", closed)] == ["rejected"]
    assert [(r.number, r.outcome) for r in outcome_events.record(engine, "push", push)] == [
        (b.NUMBER, "reverted")]
    assert outcome_events.record(engine, "issues", {}) == []
    assert outcome_events.record(engine, "push", {"ref": None}) == []  # nothing, never an error
    stored = {(r.number, r.outcome): r.value for r in read_outcomes(engine)}
    assert stored == {(9, "rejected"): True, (b.NUMBER, "reverted"): True}
    engine.dispose()


def test_outcomes_command_scans_a_repository_on_github(tmp_path: Path, monkeypatch) -> None:
    from datetime import UTC, datetime

    from tests.fakegithub import FAKE_TOKEN, FakeGitHub

    fake = FakeGitHub()
    repo = "octo-org/widgets"
    fake.add_pr(repo, 10, title="Add retries", body="Fixes #3",
                created_at=datetime(2026, 3, 1, tzinfo=UTC))
    fake.add_pr(repo, 12, title='Revert "Add retries"', body="Reverts octo-org/widgets#10",
                created_at=datetime(2026, 3, 2, tzinfo=UTC))
    fake.add_pr(repo, 14, title="Experiment", merged=False, state="closed",
                created_at=datetime(2026, 3, 3, tzinfo=UTC))
    out = tmp_path / "o.jsonl"
    monkeypatch.setenv("TASKEVAL_CACHE_DIR", str(tmp_path / "cache"))
    with fake.serve():
        monkeypatch.setenv("GITHUB_TOKEN", FAKE_TOKEN)
        monkeypatch.setenv("GITHUB_API_URL", fake.url)
        assert cli.main(["outcomes", repo, "--output", str(out), "--max-requests", "20"]) == 0
        first = {(r.number, r.outcome, r.value) for r in oc.read_jsonl(out)}
        charged = fake.rate_limit - fake.rate_remaining
        fake.reset_log()
        shared_cache().clear()  # a later run: only what the first kept on disk
        assert cli.main(["outcomes", repo, "--output", str(out), "--max-requests", "20"]) == 0
    got = {(r.number, r.outcome): r.value for r in oc.read_jsonl(out)}
    assert got[(10, "reverted")] and not got[(10, "rejected")] and got[(14, "rejected")]
    assert not got[(12, "reverted")]
    # The scan again: every read is conditional on the last run's answer, GitHub answers 304 and
    # does not charge it, and the outcomes are the same.
    statuses = [r.status for r in fake.log]
    assert statuses.count(304) >= 2 and set(statuses) <= {304, 404}  # (the fake has no events)
    assert fake.rate_limit - fake.rate_remaining == charged + statuses.count(404)
    assert {(r.number, r.outcome, r.value) for r in oc.read_jsonl(out)} == first


def test_corpus_folder_labels_every_pr_and_records_post_pr_issues(tmp_path: Path) -> None:
    from taskeval.validity_cli import _corpus

    header = ["id", "number", "state", "repo_url"]
    rows = {"Copilot": [["1", "5", "closed", "https://api.github.com/repos/acme/Tool"],
                        ["2", "6", "open", "https://api.github.com/repos/acme/tool"]],
            "Devin": [["3", "7", "closed", "https://api.github.com/repos/acme/tool"],
                      ["4", "8", "closed", "not a url"]]}
    for folder, lines in rows.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "prs.csv").write_text(
            "\n".join(",".join(line) for line in [header, *lines]) + "\n", encoding="utf-8")
    (tmp_path / "Copilot" / "post_pr_issues.csv").write_text(
        "pr_id,issue_url\n1,https://github.com/acme/tool/issues/9\n", encoding="utf-8")
    labels, records = _corpus(tmp_path)
    assert labels == {("acme/tool", 5): "copilot", ("acme/tool", 6): "copilot",
                      ("acme/tool", 7): "devin"}
    assert [(r.repository, r.number, r.outcome, r.value, r.evidence) for r in records] == [
        ("acme/Tool", 5, "post_pr_issue", True, ["https://github.com/acme/tool/issues/9"]),
        ("acme/tool", 7, "post_pr_issue", False, ["pr:7"])]


def _own_labels(results_dir: Path, tmp_path: Path) -> Path:
    """A team's triage file: its own labels, one of them a good thing and one a coin toss."""
    rows, _ = read_results([results_dir])
    lines = []
    for r in rows:
        bad = (r.number - 1000) % 3 == 0  # what corpus_of_results rejects
        for label, value in (("wrong approach", bad), ("Praised", not bad), ("coin", r.number % 2 == 0),
                             ("rare", r.number == 1000)):
            lines.append(json.dumps({"repository": r.repository, "pullRequest": r.number,
                                     "outcome": label, "value": value}))
    path = tmp_path / "triage.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_validate_names_a_teams_own_labels_and_gives_a_verdict_at_the_top(
        results_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "validity"
    assert cli.main(["validate", "--results", str(results_dir), "--outcomes",
                     str(_own_labels(results_dir, tmp_path)), "--output-dir", str(out),
                     "--bootstrap", "200"]) == 0
    report = json.loads((out / "validity.json").read_text())
    assert {"wrong approach", "Praised", "coin", "rare"} <= set(report["outcomes"])  # named as given
    assert report["outcomes"]["Praised"] == {"meaning": "your own label (from the outcome files)",
                                             "builtIn": False, "applicable": 60, "positives": 40}
    verdicts = report["verdicts"]
    assert verdicts["wrong approach"]["agentPerformance"] == "predicts"
    assert verdicts["wrong approach"]["overall"] == "predicts"
    # A category wholly below 0.5 is named, not left out of every list.
    assert verdicts["Praised"]["agentPerformance"] == "points the wrong way"
    assert verdicts["Praised"]["overall"] == "points the wrong way"
    assert verdicts["coin"]["agentPerformance"] == "no evidence either way"
    assert set(verdicts["rare"].values()) == {"too few cases"}
    assert verdicts["rejected"]["overall"] == "predicts"  # built-in kinds still there
    md = (out / "validity.md").read_text()
    assert md.index("## Verdict") < md.index("## Outcomes") < md.index("## Categories")
    top = md[md.index("## Verdict"):md.index("## Outcomes")]
    assert "| score | `rejected` |" in top and "`wrong approach` | `Praised` | `coin` | `rare` |" in top
    ap = next(line for line in top.splitlines() if line.startswith("| `agentPerformance` |"))
    cells = [c.strip() for c in ap.strip("|").split("|")]
    assert cells[-4].startswith("**predicts**: 1.000") and cells[-3].startswith("**points the wrong way**: 0.000")
    assert cells[-2].startswith("no evidence either way: 0.") and cells[-1] == "too few cases (n=60, 1 with it)"
    assert "Pointing the wrong way: overall against `Praised`; `agentPerformance` against `Praised`" in top
    assert "| `wrong approach` | your own label (from the outcome files) | 60 | 20 |" in md
    assert (out / "auc-wrong-approach.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "auc-Praised.png").is_file()


@pytest.mark.parametrize(("low", "high", "verdict"), [
    (0.55, 0.70, "predicts"),
    (0.45, 0.60, "no evidence either way"),
    (0.50, 0.60, "no evidence either way"),  # touching 0.5 is not wholly above it
    (0.30, 0.45, "points the wrong way"),
    (None, None, "no evidence either way"),  # a point estimate alone decides nothing
])
def test_the_interval_alone_decides_the_verdict(low: float | None, high: float | None, verdict: str) -> None:
    from taskeval.validity import Figure

    assert Figure(0.6, low, high, 100, 30).verdict == verdict
    assert Figure(None, None, None, 12, 3).verdict == "too few cases"


# --------------------------------------------------------------------------- calibrate


def _calibration_rows(n: int, separates: bool, seed: int = 11) -> tuple[list[Row], list[oc.OutcomeRecord]]:
    """agentPerformance as the weights leave it: a heavy signal that is noise, a light one that
    tells the outcome apart (or is noise too), a CI signal never conclusive (no CI here) and one
    that is 100 on every PR."""
    rng = random.Random(seed)
    rows, records = [], []
    for i in range(n):
        bad = rng.random() < 0.4
        telling = (rng.randint(10, 40) if bad else rng.randint(70, 100)) if separates else rng.randint(0, 100)
        signals = {"agent.idle_gaps": ("agentPerformance", True, telling, 0.5),
                   "agent.text_hygiene": ("agentPerformance", True, rng.randint(0, 100), 2.0),
                   "agent.ci_recovery": ("agentPerformance", False, None, 2.0),
                   "agent.force_pushes": ("agentPerformance", True, 100, 1.0)}
        rows.append(Row("acme/widgets", i + 1, None, {"agentPerformance": (50, True)}, signals))
        records.append(oc.OutcomeRecord("acme/widgets", i + 1, "wrong approach", bad))
    return rows, records


def test_calibrate_proposes_weights_only_when_the_held_out_gain_is_clear() -> None:
    from taskeval.calibration import calibrate, snippet

    rows, records = _calibration_rows(240, separates=True)
    clear = calibrate(rows, records, "wrong approach", "agentPerformance", folds=4)
    assert clear.clear and clear.gain_interval is not None and clear.gain_interval[0] > 0
    assert clear.auc_after is not None and clear.auc_before is not None and clear.auc_after > clear.auc_before + 0.2
    text = snippet(clear)
    assert "The gain is clear (its interval lies wholly above 0)" in text
    block = yaml.safe_load(text)["signal_weights"]
    assert block["agent.idle_gaps"] > 0.5 > block["agent.text_hygiene"]
    # What the data never showed keeps its weight: neither set to 0 nor proposed at all.
    assert set(block) == {"agent.idle_gaps", "agent.text_hygiene"}
    assert "# Never conclusive on these PRs, so never seen (weights kept): agent.ci_recovery." in text
    assert "# The same score on every PR, so nothing to weigh (weights kept): agent.force_pushes." in text

    rows, records = _calibration_rows(240, separates=False)
    unclear = calibrate(rows, records, "wrong approach", "agentPerformance", folds=4)
    assert not unclear.clear and unclear.gain_interval is not None
    assert unclear.gain_interval[0] <= 0 <= unclear.gain_interval[1]
    text = snippet(unclear)
    assert "# No change proposed: the gain is not clear" in text and yaml.safe_load(text) is None
    assert f"Held-out gain {unclear.gain:+.3f} [{unclear.gain_interval[0]:+.3f}," in text


@pytest.mark.parametrize(("kwargs", "says"), [
    ({"folds": 1}, "at least 2 folds, got 1"),
    ({"folds": 500}, "500 folds for 40 PRs"),
    ({"strength": -1.0}, "finite number >= 0, got -1.0"),
    ({"strength": float("nan")}, "finite number >= 0, got nan"),
    ({"outcome": "never recorded"}, "no 'never recorded' outcome among the records"),
])
def test_calibrate_refuses_what_it_cannot_fit(kwargs: dict[str, Any], says: str) -> None:
    from taskeval.calibration import calibrate

    rows, records = _calibration_rows(40, separates=True)
    with pytest.raises(ValueError, match=re.escape(says)):
        calibrate(rows, records, **{"outcome": "wrong approach", **kwargs})
