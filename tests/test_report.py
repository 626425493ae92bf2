"""The PR comment: what a reader sees, and what a PR author must not be able to do with it."""

from __future__ import annotations

import re

import pytest

from taskeval.config import LoadedConfig, Settings
from taskeval.models import JudgeInfo
from taskeval.pipeline import Options, score_bundle
from taskeval.report import GITHUB_COMMENT_LIMIT, MARKER, render_comment, safe_inline
from tests import builders


def result_for(raw, **changes):
    bundle = builders.bundle(raw)
    result = score_bundle(
        bundle, LoadedConfig(Settings(), "defaults"), Options(ai="off", env={}, evaluated_at="2025-01-01T00:00:00Z")
    )
    return result.model_copy(update=changes) if changes else result


def test_comment_layout() -> None:
    text = render_comment(result_for(builders.fail_then_fix()))
    assert text.startswith(MARKER + "\n")
    assert text.count(MARKER) == 1
    for heading in (
        "| Category | Score | Band | Deterministic | AI (advisory) | Weight |",
        "<details><summary>All signals</summary>",
        "taskeval scorer",
    ):
        assert heading in text
    for title in ("Agent performance", "Task outcome quality", "Process compliance"):
        assert title in text


@pytest.mark.parametrize(
    ("hostile", "must_not_contain"),
    [
        (f"{MARKER} fake", MARKER),
        ("ping @octo-org/security and @alice", "@octo-org"),
        ("ping @octo-org/security and @alice", "@alice"),
        ("[click me](https://evil.example/steal)", "](https://evil.example"),
        ("<img src=x onerror=alert(1)>", "<img"),
        ("<details open><summary>hidden</summary>", "<details open>"),
        ("line one\n\n## Fake heading\n| a | b |", "\n## Fake heading"),
        ("`code` breaks out", "`code`"),
    ],
)
def test_pr_controlled_text_is_inert(hostile: str, must_not_contain: str) -> None:
    base = result_for(builders.merged_agent_pr())
    pr = base.pull_request.model_copy(update={"title": hostile, "author": hostile})
    text = render_comment(base.model_copy(update={"pull_request": pr, "warnings": [hostile]}))
    assert text.count(MARKER) == 1 and text.startswith(MARKER)
    # Inside code spans markdown, HTML and mentions are inert; everything else must be escaped.
    rendered = re.sub(r"`[^`\n]*`", "", text.removeprefix(MARKER))
    assert must_not_contain not in rendered


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a|b", "a\\|b"),
        ("x\x00y\u202ez", "xyz"),
        ("  many   spaces \n", "many spaces"),
        ("", ""),
    ],
)
def test_safe_inline(raw: str, expected: str) -> None:
    assert safe_inline(raw) == expected


def test_comment_stays_under_github_limit_on_huge_input() -> None:
    base = result_for(builders.many_commits())
    signals = [
        s.model_copy(update={"reason": "x" * 5000, "evidence": [f"commit:{i:07x}" for i in range(400)]})
        for s in base.signals
    ] * 30
    huge = base.model_copy(update={"signals": signals, "warnings": ["w" * 10_000] * 500})
    text = render_comment(huge)
    assert len(text) < GITHUB_COMMENT_LIMIT
    assert text.startswith(MARKER)


def test_ai_rationale_is_shown_as_advisory_with_links() -> None:
    base = result_for(builders.fail_then_fix())
    cited = [i.id for g in base.evidence.groups for i in g.items if i.url][:2]
    cats = [
        c.model_copy(
            update={
                "ai_score": 70,
                "ai_rationale": "CI recovered after one red push.",
                "ai_evidence": cited,
                "ai_note": None,
            }
        )
        for c in base.category_scores
    ]
    text = render_comment(
        base.model_copy(update={"category_scores": cats, "judge": JudgeInfo(status="ok", model="gpt-4o-mini")})
    )
    assert "advisory" in text and "`gpt-4o-mini`" in text
    assert "CI recovered after one red push." in text
    assert f"[`{cited[0]}`](<" in text


def test_ai_off_is_said_once() -> None:
    text = render_comment(result_for(builders.merged_agent_pr()))
    assert text.count("No AI scores:") == 1


def test_inconclusive_signals_are_listed_not_scored() -> None:
    result = result_for(builders.no_ci())
    inconclusive = [s for s in result.signals if s.status == "inconclusive"]
    assert inconclusive, "a PR without CI must have inconclusive CI signals"
    text = render_comment(result)
    assert "Inconclusive (no data, left out of the means)" in text
    for s in inconclusive:
        assert s.contribution == 0


def _with_agent(**fields):
    from taskeval.models import AgentAttribution

    base = result_for(builders.merged_agent_pr())
    agent = AgentAttribution(**{"id": "claude-code", "name": "Claude Code", "operator": "alice",
                                "confidence": "likely", "evidence": ["pr:482"], "reason": "footer",
                                **fields})
    return render_comment(base.model_copy(update={"agent": agent}))


def test_comment_header_names_agent_and_operator_without_pinging() -> None:
    text = _with_agent()
    header = next(line for line in text.splitlines() if line.startswith("Evaluation of"))
    assert "by Claude Code, run by @\u2060alice (likely, from its marks)" in header
    assert not re.search(r"@(?=[A-Za-z0-9])", text)  # no live mention anywhere
    certain = _with_agent(id="copilot", name="GitHub Copilot", operator="bob", confidence="certain")
    assert "by GitHub Copilot, run by @\u2060bob at" in certain


@pytest.mark.parametrize("operator", ["Dana Smith (dana@example.com)", "@team/x [link](http://e)",
                                      f"{MARKER}", "<b>x</b>"])
def test_comment_header_operator_from_pr_text_is_inert(operator: str) -> None:
    text = _with_agent(id="devin", name="Devin", operator=operator, confidence="certain")
    assert text.count(MARKER) == 1
    rendered = re.sub(r"`[^`\n]*`", "", text.removeprefix(MARKER))
    assert not re.search(r"@(?=[A-Za-z0-9])", rendered) and "<b>" not in rendered
    assert "](http" not in rendered


def test_comment_header_for_human_and_stored_results_without_agent() -> None:
    base = result_for(builders.merged_agent_pr())
    assert "by `Copilot`" in render_comment(base.model_copy(update={"agent": None}))
    text = _with_agent(id="human", name="Human", operator="alice")
    assert "by `Copilot`" in text  # no agent: the author, as before


# --- the headline: provisional overall, why a closed PR ended -----------------------------------

def _with_coverage(result, shares):  # type: ignore[no-untyped-def]
    cats = [c.model_copy(update={"coverage": share}) for c, share in zip(result.category_scores, shares, strict=True)]
    return result.model_copy(update={"category_scores": cats})


@pytest.mark.parametrize(("shares", "provisional"), [
    ((1.0, 1.0, 1.0), False),
    ((0.2, 0.2, 0.2), True),
    ((0.55, 0.45, 0.5), True),  # 49 % of the overall's weight: only taskOutcomeQuality is provisional itself
    ((0.4, 0.6, 0.5), False),  # 51.5 %: agentPerformance is provisional, the overall is not
    ((0.5, 0.5, 0.5), False),  # at the threshold: not under it
    ((None, None, None), False),  # a result stored before coverage: nothing to say
])
def test_the_headline_is_provisional_when_the_overall_rests_on_too_little(
        shares: tuple[float | None, ...], provisional: bool) -> None:
    result = _with_coverage(result_for(builders.merged_agent_pr()), shares)
    lines = render_comment(result).splitlines()
    band = f"{result.overall_score}/100 — "
    assert lines[1].startswith(f"## taskeval: {band}")
    assert lines[1].endswith(" (provisional)") is provisional
    note = [line for line in lines if line.startswith("*Provisional overall:")]
    assert bool(note) is provisional
    if provisional:
        weighted = round(sum(w * s for w, s in zip((0.30, 0.45, 0.25), shares, strict=True)) * 100)  # type: ignore[operator]
        assert note[0].startswith(f"*Provisional overall: only {weighted} % of the overall's signal weight had data")


@pytest.mark.parametrize(("closure_class", "against", "words"), [
    ("superseded", False, "superseded by other work (the project's reason, not counted against the agent)"),
    ("duplicate", False, "a duplicate (the project's reason, not counted against the agent)"),
    ("stale", False, "left to go stale (the project's reason, not counted against the agent)"),
    ("declined", False, "declined by the project (the project's reason, not counted against the agent)"),
    ("agent_failure", True, "the agent's failure (counted against the agent)"),
    ("withdrawn", False, "withdrawn by its author (not counted against the agent)"),
    ("unknown", False, "why is not known (not counted against the agent)"),
])
def test_a_closed_pr_says_why_it_ended_before_its_score(closure_class: str, against: bool, words: str) -> None:
    from taskeval.models import Closure

    merged = result_for(builders.merged_agent_pr())
    closed = merged.model_copy(update={
        "pull_request": merged.pull_request.model_copy(update={"merged": False}), "rescue": None,
        "closure": Closure.model_validate({"class": closure_class, "countsAgainstAgent": against,
                                           "reason": "closed for a reason"})})
    first = render_comment(closed).splitlines()[1]
    score = f"{closed.overall_score}/100 — "
    assert first.startswith(f"## taskeval: closed unmerged: {words} — scored {score}")
    assert first.index(words) < first.index(score)
    # a merged PR's headline is its score alone
    assert render_comment(merged).splitlines()[1].startswith(f"## taskeval: {merged.overall_score}/100 — ")
