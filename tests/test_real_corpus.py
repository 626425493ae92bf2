"""The replay of real agent PRs (AIDev-pop, see taskeval/corpus) and a fixed sample of 200 of
them run through the real pipeline.

The dataset is not part of the repository. Its folder comes from ``TASKEVAL_CORPUS_DIR`` or
``<checkout>/../shared/data/aidev-pop-v1``; without it the data tests skip, saying so, unless
``TASKEVAL_REQUIRE_CORPUS=1`` (set by ``.ci/run``) makes that a failure. The replay's own shape
tests use a tiny synthetic corpus written here and always run.

The sample: per agent folder, the 40 PR ids with the smallest ``sha256("aidev-sample:<id>")``
(ids only here, never data), i.e. a stable pseudo-random sample that needs no seed file.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from github import Github

from taskeval.corpus import aidev
from taskeval.corpus import replay as replay_module
from taskeval.corpus.aidev import AGENT_FOLDERS, FOLDER_AGENT, Corpus, PullRecord, load
from taskeval.corpus.evaluate import agent_id, as_json, client, evaluate, is_partial
from taskeval.corpus.replay import NO_SHA, serving
from taskeval.signals.hygiene import detect_text_issues

ROOT = Path(__file__).resolve().parents[1]
REQUIRE_ENV = "TASKEVAL_REQUIRE_CORPUS"

SAMPLE: dict[str, tuple[int, ...]] = {
    "Claude_Code": (
        2882576893, 2888099084, 2889835337, 2892364501, 2903936265, 2909640593,
        2915198291, 2916677326, 2922676503, 2974498229, 2974598623, 2986072834,
        2986431376, 2990012909, 3047699666, 3054252195, 3057825906, 3070114059,
        3070149818, 3088611576, 3090065215, 3115760621, 3118662815, 3119417980,
        3124189482, 3124293906, 3124372773, 3132093324, 3132378621, 3136804156,
        3138027382, 3138117853, 3146561196, 3147721605, 3150229181, 3150393125,
        3154339119, 3154517662, 3154699305, 3159212731,
    ),
    "Copilot": (
        3079241115, 3079570774, 3079799506, 3081821271, 3083058582, 3084490358,
        3084707450, 3085012827, 3087587876, 3089142164, 3092400652, 3092893314,
        3095413885, 3095439815, 3098751534, 3101113699, 3122218876, 3123500242,
        3125710825, 3129996920, 3131184648, 3132383081, 3134692524, 3134927763,
        3138364477, 3141308092, 3145676814, 3148005105, 3150510293, 3154921173,
        3155084033, 3157821559, 3158136553, 3160397616, 3160865707, 3161387601,
        3161407157, 3161413967, 3164627288, 3166287915,
    ),
    "Cursor": (
        3105305807, 3113874849, 3117811205, 3121322997, 3131238821, 3131698049,
        3131760803, 3132195957, 3132222532, 3132238407, 3132733770, 3133836979,
        3133979452, 3134575697, 3134576040, 3135305868, 3137765636, 3138324128,
        3138534395, 3139065611, 3139071787, 3139478652, 3141668471, 3143424792,
        3144503030, 3148367585, 3149341709, 3150351692, 3152472726, 3161226190,
        3161958337, 3164279377, 3164641128, 3164861006, 3165205251, 3165225343,
        3165441797, 3165684483, 3165818046, 3165874296,
    ),
    "Devin": (
        2769964943, 2775336826, 2802453203, 2840996945, 2844229241, 2848696493,
        2883065848, 2886124960, 2889057480, 2893236471, 2901546716, 2909209524,
        2911062935, 2916429274, 2922609367, 2941651609, 2952650167, 2971145458,
        2981078081, 2982382313, 2982400275, 2988023874, 2989023598, 2989093783,
        3030073254, 3061360197, 3070079353, 3071302729, 3101320702, 3102548800,
        3110295867, 3119640633, 3119664607, 3125979959, 3128149830, 3130420967,
        3141952773, 3155121796, 3161908700, 3165110240,
    ),
    "OpenAI_Codex": (
        3071674928, 3071839438, 3072236629, 3075711443, 3077756705, 3084595474,
        3085512294, 3085814797, 3087027952, 3087515831, 3091928471, 3097092324,
        3098357525, 3098866021, 3098935454, 3099154315, 3099378945, 3105930698,
        3111640319, 3115176482, 3117003775, 3118031001, 3122404357, 3122404431,
        3127179145, 3127925920, 3128323175, 3131117949, 3135348301, 3135851024,
        3137587352, 3143651082, 3147075784, 3147231131, 3148044268, 3148261838,
        3148328836, 3151050095, 3152972344, 3162416395,
    ),
}
PER_AGENT = 40
# Sample PRs whose texts really do hold leakage or chat boilerplate (read by hand); none so far.
TRUE_HYGIENE_FINDINGS: frozenset[int] = frozenset()


def sample_key(pr_id: int) -> str:
    return hashlib.sha256(f"aidev-sample:{pr_id}".encode()).hexdigest()


def _data_dir() -> Path:
    path = aidev.default_data_dir(ROOT)
    if not aidev.is_corpus_dir(path):
        message = (f"AIDev-pop corpus not found at {path} (set TASKEVAL_CORPUS_DIR to the "
                   "aidev-pop-v1 folder); the real-PR tests need it")
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{message}, and {REQUIRE_ENV}=1 makes them mandatory", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def corpus(sample_corpus: Corpus) -> Corpus:
    return sample_corpus


@pytest.fixture(scope="module")
def results(
    sample_results: dict[int, tuple[PullRecord, dict[str, Any] | BaseException]],
) -> dict[int, tuple[PullRecord, dict[str, Any] | BaseException]]:
    """The sample evaluated once per run (tests/conftest.py)."""
    return sample_results


def _ok(results: dict[int, tuple[PullRecord, Any]]) -> list[tuple[PullRecord, dict[str, Any]]]:
    return [(pr, r) for pr, r in results.values() if isinstance(r, dict)]


# ------------------------------------------------------------------------------- the sample


def test_the_sample_is_the_listed_ids_and_they_are_all_in_the_data(corpus: Corpus) -> None:
    by_agent = corpus.by_agent()
    for folder in AGENT_FOLDERS:
        assert len(SAMPLE[folder]) == PER_AGENT
        assert sorted(p.id for p in by_agent[folder]) == sorted(SAMPLE[folder]), folder


def test_the_sample_is_the_smallest_hashes_per_agent() -> None:
    """Re-derive the sample from the full data: the rule above, not a hand pick."""
    full = load(_data_dir())
    for folder, prs in full.by_agent().items():
        chosen = sorted(p.id for p in sorted(prs, key=lambda p: sample_key(p.id))[:PER_AGENT])
        assert chosen == sorted(SAMPLE[folder]), folder


def test_no_sample_pr_crashes(results: dict[int, tuple[PullRecord, Any]]) -> None:
    crashes = [f"{pr.agent} {pr.ref}: {type(r).__name__}: {r}" for pr, r in results.values()
               if not isinstance(r, dict)]
    assert not crashes, "\n".join(crashes)
    assert len(results) == PER_AGENT * len(AGENT_FOLDERS)


def test_every_result_says_its_evidence_is_partial(
    results: dict[int, tuple[PullRecord, Any]],
) -> None:
    for pr, result in _ok(results):
        assert is_partial(result), pr.ref
        audit = next(g for g in result["evidence"]["groups"] if g["source"] == "runAudit")
        gaps = {i["id"].removeprefix("audit:unavailable-") for i in audit["items"]
                if i["id"].startswith("audit:unavailable-")}
        assert {"check_runs", "workflow_runs", "files", "review_comments"} <= gaps, pr.ref
        if pr.agent in ("Devin", "OpenAI_Codex"):
            assert "issue_comments" in gaps, pr.ref
        else:
            assert "issue_comments" not in gaps, pr.ref
        assert ("timeline" in gaps) == (pr.agent == "Devin"), pr.ref  # no timelines for Devin
        ci = next(s for s in result["signals"] if s["id"] == "outcome.ci_head")
        assert ci["status"] == "inconclusive", pr.ref  # unknown CI, never "no CI ran"


def test_results_carry_what_the_data_holds(results: dict[int, tuple[PullRecord, Any]]) -> None:
    for pr, result in _ok(results):
        assert result["repository"] == pr.repository
        assert result["pullRequest"]["number"] == pr.number
        assert result["pullRequest"]["merged"] == pr.merged
        assert result["headSha"] == (pr.commits[-1].sha if pr.commits else NO_SHA)
        commits = next(g for g in result["evidence"]["groups"] if g["source"] == "commits")
        assert commits["total"] == len(pr.commits), pr.ref
        reviews = next(g for g in result["evidence"]["groups"] if g["source"] == "reviews")
        assert reviews["total"] >= min(len(pr.reviews), 1), pr.ref


def test_attribution_names_the_folder_agent(results: dict[int, tuple[PullRecord, Any]]) -> None:
    ok = _ok(results)
    assert all("agent" in r for _, r in ok), "every result names its agent"
    wrong = [f"{pr.ref}: {agent_id(r)} (folder {pr.agent})" for pr, r in ok
             if agent_id(r) not in (pr.agent_id, "human")]
    assert not wrong, "misattributed:\n" + "\n".join(wrong)
    for pr, r in ok:
        if pr.agent in ("Copilot", "Devin"):  # the agent's own account opened the PR
            assert agent_id(r) == pr.agent_id, pr.ref
            assert r["agent"]["confidence"] == "certain", pr.ref


def test_no_leakage_or_boilerplate_found_in_agents_standard_texts(
    results: dict[int, tuple[PullRecord, Any]],
) -> None:
    flagged = []
    for pr, result in _ok(results):
        hygiene = next(s for s in result["signals"] if s["id"] == "agent.text_hygiene")
        if hygiene["score"] != 100 and pr.id not in TRUE_HYGIENE_FINDINGS:
            flagged.append(f"{pr.agent} {pr.ref}: {hygiene['reason']}")
    assert not flagged, "\n".join(flagged)


def test_detectors_find_no_leakage_in_the_sample_texts(corpus: Corpus) -> None:
    """The detector itself, on every description and commit message of the sample."""
    found = []
    for pr in corpus.prs:
        for text in [f"{pr.title}\n\n{pr.body}", *(c.message for c in pr.commits)]:
            for f in detect_text_issues(text):
                if f.kind in ("leakage", "boilerplate") and pr.id not in TRUE_HYGIENE_FINDINGS:
                    found.append(f"{pr.agent} {pr.ref}: {f.describe()}")
    assert not found, "\n".join(found)


def test_the_cli_evaluates_through_the_replay(corpus: Corpus, tmp_path: Path) -> None:
    """The real command in a subprocess, pointed at the replay by GITHUB_API_URL."""
    picks = [corpus.by_agent()[folder][0] for folder in ("Copilot", "Devin", "OpenAI_Codex")]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "OPENAI_", "TASKEVAL_"))}
    with serving(corpus) as replay:
        env["GITHUB_API_URL"] = replay.url
        for pr in picks:
            out = tmp_path / f"{pr.file_stem}.json"
            done = subprocess.run(
                [sys.executable, "-m", "taskeval", "evaluate", pr.ref, "--no-ai",
                 "--output", str(out)],
                env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path,
            )
            assert done.returncode == 0, done.stderr
            result = json.loads(out.read_text())
            assert result["repository"] == pr.repository
            assert is_partial(result)
            assert "Partial evidence" in done.stderr
            assert "taskeval:evaluation" in done.stdout


# ------------------------------------------------------------- replay shape (synthetic data)


def _write(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)


PRS = ["id", "number", "title", "user", "user_id", "state", "created_at", "closed_at",
       "merged_at", "repo_url", "html_url", "body"]
COMMITS = ["pr_id", "sha", "author", "committer", "message"]
REVIEWS = ["pr_id", "id", "user", "state", "submitted_at", "body"]
COMMENTS = ["pr_id", "id", "user", "created_at", "body"]
TIMELINE = ["pr_id", "event", "created_at", "actor", "commit_id", "assignee", "label", "message"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five folders, made-up PRs: a Copilot PR with 3 commits, a timeline and comments; a Devin
    PR (no comments or timeline tables); a Codex PR that lists no commits."""
    root = tmp_path_factory.mktemp("aidev")
    for folder in AGENT_FOLDERS:
        _write(root / folder / "prs.csv", PRS, [])
        _write(root / folder / "pr_commits.csv", COMMITS, [])
        _write(root / folder / "pr_reviews.csv", REVIEWS, [])
    _write(root / "Copilot" / "prs.csv", PRS, [[
        11, 7, "Add a retry to the fetcher", "Copilot", 1, "closed", "2025-05-01T10:00:00Z",
        "2025-05-02T10:00:00Z", "2025-05-02T10:00:00Z", "https://api.github.com/repos/acme/tool",
        "https://github.com/acme/tool/pull/7", "Fixes #3.\n\nAdds a bounded retry.",
    ]])
    _write(root / "Copilot" / "pr_commits.csv", COMMITS, [
        [11, "a" * 40, "Copilot", "Copilot", "Initial plan"],
        [11, "b" * 40, "Copilot", "Copilot", "Add retry"],
        [11, "c" * 40, "", "web-flow", "Merge branch main"],
    ])
    _write(root / "Copilot" / "pr_reviews.csv", REVIEWS, [
        [11, 501, "maint", "APPROVED", "2025-05-02T09:00:00Z", "ok"]])
    _write(root / "Copilot" / "pr_comments.csv", COMMENTS, [
        [11, 601, "maint", "2025-05-01T11:00:00Z", "@copilot also log the attempt"]])
    _write(root / "Copilot" / "pr_timelines.csv", TIMELINE, [
        [11, "assigned", "2025-05-01T09:59:00Z", "maint", "", "Copilot", "", ""],
        [11, "assigned", "2025-05-01T09:59:01Z", "maint", "", "maint", "", ""],
        [11, "committed", "", "", "a" * 40, "", "", "Initial plan"],
        [11, "labeled", "2025-05-01T12:00:00Z", "maint", "", "", "bug", ""],
        [11, "merged", "2025-05-02T10:00:00Z", "maint", "d" * 40, "", "", ""],
    ])
    _write(root / "Devin" / "prs.csv", PRS, [[
        21, 40, "Fix typo", "devin-ai-integration[bot]", 2, "open", "2025-03-01T00:00:00Z", "",
        "", "https://api.github.com/repos/acme/tool", "https://github.com/acme/tool/pull/40", "",
    ]])
    _write(root / "Devin" / "pr_commits.csv", COMMITS, [
        [21, "e" * 40, "devin-ai-integration[bot]", "devin-ai-integration[bot]", "Fix typo"]])
    _write(root / "OpenAI_Codex" / "prs.csv", PRS, [[
        31, 9, "Tidy", "alice", 3, "open", "2025-03-01T00:00:00Z", "", "",
        "https://api.github.com/repos/other/lib", "https://github.com/other/lib/pull/9", "x",
    ]])
    _write(root / "OpenAI_Codex" / "pr_timelines.csv", TIMELINE, [])
    return root


@pytest.fixture(scope="module")
def tiny_corpus(tiny_dir: Path) -> Corpus:
    corpus = load(tiny_dir)
    assert len(corpus) == 3
    return corpus


@pytest.fixture(scope="module")
def tiny(tiny_corpus: Corpus) -> Iterator[str]:
    with serving(tiny_corpus) as replay:
        yield replay.url


def test_replay_serves_the_pr_as_github_does(tiny: str) -> None:
    pr = requests.get(f"{tiny}/repos/ACME/Tool/pulls/7", timeout=5).json()
    assert pr["number"] == 7 and pr["merged"] and pr["state"] == "closed"
    assert pr["user"] == {"login": "Copilot", "type": "Bot", "html_url": "https://github.com/Copilot"}
    assert pr["head"]["sha"] == "c" * 40 and pr["commits"] == 3
    assert pr["merged_by"]["login"] == "maint" and pr["merge_commit_sha"] == "d" * 40
    assert [a["login"] for a in pr["assignees"]] == ["Copilot", "maint"]
    assert [label["name"] for label in pr["labels"]] == ["bug"]
    assert pr["head"]["ref"] == "" and pr["base"]["ref"] == ""  # not in the data
    devin = requests.get(f"{tiny}/repos/acme/tool/pulls/40", timeout=5).json()
    assert devin["user"]["type"] == "Bot" and "assignees" not in devin


def test_replay_pages_with_link_headers(tiny: str) -> None:
    first = requests.get(f"{tiny}/repos/acme/tool/pulls/7/commits?per_page=2", timeout=5)
    assert [c["sha"][0] for c in first.json()] == ["a", "b"]
    assert first.links["next"]["url"].endswith("page=2") and "last" in first.links
    second = requests.get(first.links["next"]["url"], timeout=5)
    assert [c["sha"][0] for c in second.json()] == ["c"] and "next" not in second.links
    commit = second.json()[0]
    assert commit["author"] is None and commit["committer"]["login"] == "web-flow"
    assert commit["commit"] == {"message": "Merge branch main"}


def test_replay_serves_timeline_comments_reviews_and_linked_issue(tiny: str) -> None:
    events = requests.get(f"{tiny}/repos/acme/tool/issues/7/timeline", timeout=5).json()
    assert [e["event"] for e in events] == ["assigned", "assigned", "committed", "labeled",
                                            "merged"]
    assert events[0]["assignee"]["login"] == "Copilot" and events[0]["actor"]["login"] == "maint"
    assert events[2] == {"event": "committed", "sha": "a" * 40, "message": "Initial plan"}
    assert events[3]["label"] == {"name": "bug"}
    comments = requests.get(f"{tiny}/repos/acme/tool/issues/7/comments", timeout=5).json()
    assert comments[0]["user"]["login"] == "maint" and comments[0]["id"] == 601
    reviews = requests.get(f"{tiny}/repos/acme/tool/pulls/7/reviews", timeout=5).json()
    assert reviews[0]["state"] == "APPROVED" and reviews[0]["submitted_at"]
    as_issue = requests.get(f"{tiny}/repos/acme/tool/issues/7", timeout=5).json()
    assert as_issue["pull_request"]["html_url"].endswith("/pull/7")
    assert as_issue["number"] == 7 and as_issue["performed_via_github_app"] is None  # not in the data


@pytest.mark.parametrize("path", [
    "/repos/acme/tool/commits/" + "c" * 40 + "/check-runs",
    "/repos/acme/tool/commits/" + "c" * 40 + "/status",
    "/repos/acme/tool/actions/runs",
    "/repos/acme/tool/pulls/7/files",
    "/repos/acme/tool/pulls/7/comments",
    "/repos/acme/tool/issues/40/comments",  # Devin: no comments table
    "/repos/acme/tool/issues/40/timeline",  # Devin: no timeline table
    "/repos/other/lib/pulls/9/commits",  # the data lists no commit for this PR
])
def test_what_the_data_lacks_is_refused_never_an_empty_list(tiny: str, path: str) -> None:
    answer = requests.get(f"{tiny}{path}", timeout=5)
    assert answer.status_code == 403
    body = answer.json()
    assert body["message"].startswith("Not available in the AIDev-pop replay")
    assert body["documentation_url"].startswith("https://docs.github.com/")


def test_an_empty_table_is_an_empty_list_and_unknown_things_are_404(tiny: str) -> None:
    codex = requests.get(f"{tiny}/repos/other/lib/issues/9/timeline", timeout=5)
    assert codex.status_code == 200 and codex.json() == []  # the table exists; no events
    assert requests.get(f"{tiny}/repos/other/lib/pulls/9", timeout=5).json()["head"]["sha"] \
        == NO_SHA
    for path in ("/repos/acme/tool/pulls/8", "/repos/nobody/none", "/repos/acme/tool/issues/99",
                 "/repos/acme/tool/contents/.github/taskeval.yml", "/nowhere"):
        answer = requests.get(f"{tiny}{path}", timeout=5)
        assert answer.status_code == 404, path
        assert answer.json()["message"] == "Not Found"
    write = requests.post(f"{tiny}/repos/acme/tool/issues/7/comments", json={"body": "x"},
                          timeout=5)
    assert write.status_code == 403 and "read-only" in write.json()["message"]


def test_the_pipeline_over_the_synthetic_replay(tiny: str) -> None:
    corpus_prs = {("acme/tool", 7): "Copilot", ("acme/tool", 40): "Devin", ("other/lib", 9): "x"}
    gh = client(tiny)
    for (repo, number), _ in corpus_prs.items():
        record = PullRecord(agent="Copilot", id=0, number=number, title="", user="", user_id=None,
                            state="open", created_at="", closed_at=None, merged_at=None,
                            repository=repo, html_url="", body="")
        result = as_json(evaluate(gh, record))
        assert is_partial(result)


# --------------------------------------------------------- GraphQL over the same facts


def _same_through_both(gh: Github, pr: PullRecord) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both transports' results for one PR, ``evaluatedAt`` aside (the bundle, its hash, the
    scores and the warnings are what must match)."""
    rest = as_json(evaluate(gh, pr, "rest"))
    graphql = as_json(evaluate(gh, pr, "graphql"))
    for result in (rest, graphql):
        result.pop("evaluatedAt")
    return rest, graphql


def _record(repo: str, number: int) -> PullRecord:
    return PullRecord(agent="Copilot", id=0, number=number, title="", user="", user_id=None,
                      state="open", created_at="", closed_at=None, merged_at=None,
                      repository=repo, html_url="", body="")


GRAPHQL_PR = ("query { rateLimit { cost remaining } repository(owner: \"acme\", name: \"tool\") "
              "{ pullRequest(number: 7) { title author { __typename login } "
              "commits(first: 5) { totalCount nodes { commit { oid author { email user "
              "{ login } } } } } files(first: 5) { totalCount } } } }")


def test_the_replay_answers_graphql_over_the_same_facts(tiny: str) -> None:
    answer = requests.post(f"{tiny}/graphql", json={"query": GRAPHQL_PR}, timeout=30)
    assert answer.status_code == 200
    body = answer.json()
    pull = body["data"]["repository"]["pullRequest"]
    assert pull["title"] == "Add a retry to the fetcher"
    # GraphQL names GitHub's Copilot agent by its App; a bot's commit links by its address.
    assert pull["author"] == {"__typename": "Bot", "login": "copilot-swe-agent"}
    commits = pull["commits"]["nodes"]
    assert pull["commits"]["totalCount"] == 3 and commits[0]["commit"]["oid"] == "a" * 40
    assert commits[0]["commit"]["author"]["email"].endswith("+Copilot@users.noreply.github.com")
    assert commits[0]["commit"]["author"]["user"] is None  # a Bot is never a GitActor's user
    # What the data lacks: FORBIDDEN beside the partial data, REST's 403 message.
    assert pull["files"] is None
    assert body["errors"] == [{
        "type": "FORBIDDEN", "path": ["repository", "pullRequest", "files"],
        "locations": body["errors"][0]["locations"],
        "message": "Not available in the AIDev-pop replay: the dataset holds no changed files"}]
    assert body["data"]["rateLimit"]["cost"] == 1
    invalid = requests.post(f"{tiny}/graphql", json={"query": "{ viewer { runAttempt } }"},
                            timeout=30).json()
    assert "runAttempt" in invalid["errors"][0]["message"]  # GitHub's schema, validated


def test_the_synthetic_replay_gives_the_same_result_through_both_transports(tiny: str) -> None:
    gh = client(tiny)
    for repo, number in (("acme/tool", 7), ("acme/tool", 40), ("other/lib", 9)):
        rest, graphql = _same_through_both(gh, _record(repo, number))
        assert graphql == rest, f"{repo}#{number}"
        assert is_partial(graphql) and not any("GraphQL" in w for w in graphql["warnings"])


def test_without_graphql_the_replay_answers_404_and_evaluation_falls_back(
        tiny_corpus: Corpus) -> None:
    with serving(tiny_corpus, graphql=False) as replay:
        assert not replay.graphql
        answer = requests.post(f"{replay.url}/graphql", json={"query": GRAPHQL_PR}, timeout=5)
        assert answer.status_code == 404 and answer.json()["message"] == "Not Found"
        gh = client(replay.url)
        fallen = as_json(evaluate(gh, _record("acme/tool", 7), "graphql"))
        rest = as_json(evaluate(gh, _record("acme/tool", 7), "rest"))
    assert fallen["warnings"][0].startswith("GraphQL was not available (404")
    assert fallen["warnings"][1:] == rest["warnings"]
    assert fallen["bundleHash"] == rest["bundleHash"]


def test_outside_the_source_tree_the_replay_serves_rest_only(
        tiny_corpus: Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed package has neither tests/fakegraphql.py nor GitHub's schema."""
    monkeypatch.setattr(replay_module, "_SOURCE_ROOT", tmp_path)
    assert replay_module.graphql_engine() is None
    assert not replay_module.Replay(tiny_corpus).graphql
    with pytest.raises(RuntimeError, match="graphql-core"):
        replay_module.Replay(tiny_corpus, graphql=True)


@pytest.mark.parametrize(("flags", "said"), [([], "GraphQL at http://"),
                                             (["--no-graphql"], "no GraphQL (--no-graphql)")])
def test_the_replay_says_at_start_up_whether_it_serves_graphql(
        tiny_dir: Path, flags: list[str], said: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskeval.corpus.replay", "--data", str(tiny_dir), "--port", "0",
         *flags], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        first, second = proc.stdout.readline(), proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "GITHUB_API_URL=http://" in first and second.startswith("replay: ")
    assert said in second


def test_the_replay_serves_graphql_whatever_directory_it_starts_in(
        tiny_dir: Path, tmp_path: Path) -> None:
    """The GraphQL engine (tests/fakegraphql.py and the modules it imports) is loaded from the
    source tree by path: a replay started outside it, where ``tests`` is not importable, still
    serves GraphQL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskeval.corpus.replay", "--data", str(tiny_dir), "--port", "0"],
        stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        second = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "GraphQL at http://" in second


# A fixed sample of real PRs through both transports: per agent folder the first four of the
# sample above (smallest hash), and the odd shapes the sample lacks, each the smallest-hash PR
# of its kind: no commits listed (Copilot, Devin, Codex), an open draft (Cursor, Codex), and an
# open Devin PR. Among them: Devin and Codex without comments, Devin without a timeline, closed
# unmerged and merged PRs, Copilot's own comments and its copilot-swe-agent[bot] reviews.
TRANSPORT_SHAPES: dict[str, tuple[int, ...]] = {
    "no commits": (3131184648, 2769964943, 3081557962),
    "open draft": (3153749441, 3128408008),
    "open Devin PR": (3019918047,),
    "Copilot comments and copilot-swe-agent[bot] reviews": (3145676814,),
}


@pytest.fixture(scope="module")
def transport_sample() -> Corpus:
    ids = [i for folder in AGENT_FOLDERS
           for i in sorted(SAMPLE[folder], key=sample_key)[:4]]
    ids += [i for shape in TRANSPORT_SHAPES.values() for i in shape]
    corpus = load(_data_dir(), ids=ids)
    assert sorted(p.id for p in corpus.prs) == sorted(set(ids))
    return corpus


def test_real_prs_give_the_same_bundle_through_both_transports(transport_sample: Corpus) -> None:
    prs = transport_sample.prs
    assert len(prs) >= 4 * len(AGENT_FOLDERS)
    assert {p.agent for p in prs} == set(AGENT_FOLDERS)
    assert any(not p.commits for p in prs) and any(p.timeline is None for p in prs)
    assert any(p.state == "closed" and not p.merged for p in prs) and any(p.merged for p in prs)
    differ = []
    with serving(transport_sample) as replay:
        assert replay.graphql, "the source tree's GraphQL engine is importable in the tests"
        gh = client(replay.url)
        for pr in prs:
            rest, graphql = _same_through_both(gh, pr)
            if json.dumps(graphql["evidence"]).encode() != json.dumps(rest["evidence"]).encode():
                differ.append(f"{pr.agent} {pr.ref}: the bundle")
            elif graphql != rest:
                differ.append(f"{pr.agent} {pr.ref}: " + ", ".join(
                    k for k in rest if rest[k] != graphql.get(k)))
            assert not any("GraphQL" in w for w in graphql["warnings"]), pr.ref  # no fallback
    assert not differ, "\n".join(differ)


def test_folder_labels_are_taskeval_agent_ids() -> None:
    assert set(FOLDER_AGENT) == set(AGENT_FOLDERS)
    assert FOLDER_AGENT["OpenAI_Codex"] == "codex" and FOLDER_AGENT["Claude_Code"] == "claude-code"


def test_repository_urls_map_to_owner_and_name() -> None:
    assert aidev.repository_of("https://api.github.com/repos/o-1/r.x") == "o-1/r.x"
    assert aidev.repository_of("https://github.com/o/r/") == "o/r"
    assert aidev.repository_of("not a url") is None


def test_without_the_folder_the_data_tests_say_why(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TASKEVAL_CORPUS_DIR", str(tmp_path / "missing"))
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="AIDev-pop corpus not found"):
        _data_dir()
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="mandatory"):
        _data_dir()
