"""Reasons count things with correct number agreement: one helper, table-tested."""

from __future__ import annotations

import pytest

from taskeval.signals.wording import agree, all_of, names, none_of, noun, plural, sentence, share, times


@pytest.mark.parametrize(("phrase", "expected"), [
    (plural(0, "check"), "0 checks"),
    (plural(1, "check"), "1 check"),
    (plural(2, "check"), "2 checks"),
    (plural(2.5, "check"), "2.5 checks"),
    (plural(3.0, "check"), "3 checks"),
    (plural(1, "person", "people"), "1 person"),
    (plural(4, "person", "people"), "4 people"),
    (noun(1, "commit"), "commit"),
    (noun(0, "commit"), "commits"),
    (f"{share(1, 150, 'commit')} {agree(1, 'was', 'were')} red", "1 of 150 commits was red"),
    (f"{share(2, 150, 'commit')} {agree(2, 'was', 'were')} red", "2 of 150 commits were red"),
    (f"{share(0, 1, 'commit')} {agree(0, 'was', 'were')} red", "0 of 1 commit were red"),
    (f"{sentence(all_of(1, 'check'))} {agree(1, 'passes', 'pass')}", "The only check passes"),
    (f"{sentence(all_of(2, 'check'))} {agree(2, 'passes', 'pass')}", "Both checks pass"),
    (f"{sentence(all_of(5, 'check'))} {agree(5, 'passes', 'pass')}", "All 5 checks pass"),
    (f"{sentence(all_of(1, 'claim'))} {agree(1, 'matches', 'match')}", "The only claim matches"),
    (f"{sentence(none_of(1, 'commit'))} {agree(1, 'was not', 'was')} red", "The only commit was not red"),
    (f"{sentence(none_of(2, 'commit'))} {agree(2, 'was not', 'was')} red", "Neither of the 2 commits was red"),
    (f"{sentence(none_of(7, 'commit'))} {agree(7, 'was not', 'was')} red", "None of the 7 commits was red"),
    (times(1), "once"),
    (times(2), "twice"),
    (times(3), "3 times"),
    (names([]), ""),
    (names(["a"]), "a"),
    (names(["a", "b"]), "a and b"),
    (names(["a", "b", "c"]), "a, b and c"),
    (names(["a", "b", "c", "d", "e"]), "a, b, c and 2 more"),
    (sentence("the only check"), "The only check"),
    (sentence(""), ""),
])
def test_phrase(phrase: str, expected: str) -> None:
    assert phrase == expected


BAD_WORDING = ["All 1 ", "1 of 1 commits", "1 checks", "1 commits were", "The claim \"", "Every CI failure (",
               "1 test lines", "1 doc lines", " 1 lines", "requested changes 1 time"]


def test_no_signal_reason_in_the_test_scenarios_has_the_old_agreement_errors() -> None:
    """Every signal over every builder scenario: none of the phrases a user reported."""
    from taskeval.config import Settings
    from taskeval.evidence import build_bundle
    from taskeval.signals import compute_signals

    from . import builders as b

    scenarios = [b.merged_agent_pr, b.red_ci_at_merge, b.no_ci, b.fail_then_fix, b.flaky_rerun,
                 b.unresolved_change_request, b.leakage_in_body, b.unfilled_template,
                 b.checks_unreadable,
                 lambda: b.merged_agent_pr(commits=[b.commit("c3", "feat: retries", 10)],
                                           check_runs=[b.check(9001, "CI", b.HEAD, start=62)],
                                           files=[b.file("src/app/cli.py", 1), b.file("docs/x.md", 1)])]
    for make in scenarios:
        for s in compute_signals(build_bundle(make()), Settings()):
            for bad in BAD_WORDING:
                assert bad not in s.reason, (s.id, s.reason)


@pytest.mark.parametrize(("text", "limit", "shown"), [
    ('Add Retry button to the "Couldn\'t load tokens" callout', 80,
     '“Add Retry button to the "Couldn\'t load tokens" callout”'),
    ("Add detection for when sh is actually bash to enable shell integration", 40,
     "“Add detection for when sh is actually…”"),
    ("short", 60, "“short”"),
])
def test_quoted_words_are_shown_as_written_and_cut_at_a_word(text: str, limit: int, shown: str) -> None:
    from taskeval.signals.wording import quoted

    assert quoted(text, limit) == shown


@pytest.mark.parametrize(("hours", "short", "said"), [
    (0.47, False, "28 minutes"), (0.47, True, "28 min"), (1 / 60, False, "1 minute"),
    (5.6, False, "5.6 hours"), (5.6, True, "5.6 h"), (134.7, False, "5.6 days"), (134.7, True, "5.6 days"),
])
def test_durations_are_said_in_the_unit_a_person_would_use(hours: float, short: bool, said: str) -> None:
    from taskeval.signals.wording import duration

    assert duration(hours, short) == said
