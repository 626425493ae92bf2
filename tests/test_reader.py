"""The one reader of people's words (taskeval/signals/reader.py): one verdict per unit.

Short synthetic texts, written for these tests (no corpus text), one table row each: every verdict
class with a hit, what must not be read as one (negated, quoted, in code, by the wrong role), the
relayed person, the words that decided, and the hand-back a verdict makes.
"""

from __future__ import annotations

import pytest

from taskeval.signals import reader
from taskeval.signals.reader import VERDICTS, read

CASES = [
    # (text, kind, role, state, verdict)
    ("Closing this PR as requested by @maria.", "comment", "agent", None, "relayed"),
    ("As @kim said, this is no longer needed, so I am closing it.", "comment", "agent", None, "relayed"),
    ("This doesn't work: the retry never fires.", "comment", "person", None, "work_wrong"),
    ("Wrong approach, the cache belongs in the client.", "review", "person", "COMMENTED", "work_wrong"),
    ("You just gamed the tests instead of fixing the parser.", "comment", "operator", None, "work_wrong"),
    # The work named any way people name it, in the plain words of the examples.
    ("This fix is terrible.", "comment", "person", None, "work_wrong"),
    ("This approach is wrong, the cache belongs in the client.", "comment", "operator", None, "work_wrong"),
    ("Your fix is garbage.", "review", "person", "COMMENTED", "work_wrong"),
    ("This is not a valid fix.", "comment", "person", None, "work_wrong"),
    ("The error is still there after your change.", "comment", "operator", None, "work_wrong"),
    ("This introduces a breaking change for every caller.", "comment", "person", None, "work_wrong"),
    ("I was unable to get the integration tests to pass.", "comment", "agent", None, "work_wrong"),
    ("The build is failing on this branch.", "comment", "bot", None, "work_wrong"),
    ("👎", "comment", "person", None, "work_wrong"),
    ("Superseded by #4411.", "comment", "person", None, "elsewhere"),
    ("Duplicate of #87.", "comment", "person", None, "elsewhere"),
    ("This was already fixed in #902 last week.", "comment", "person", None, "elsewhere"),
    ("Just testing the agent here, please ignore.", "comment", "operator", None, "trial"),
    ("Opened against the wrong repository by mistake.", "comment", "operator", None, "trial"),
    ("POC only, not for merge.", "body", "agent", None, "trial"),
    ("This is out of scope for the project.", "comment", "person", None, "not_wanted"),
    ("We decided not to support that platform.", "review", "person", "COMMENTED", "not_wanted"),
    ("This behaviour is intentional.", "comment", "person", None, "not_wanted"),
    ("This PR has been automatically marked as stale because it has not had recent activity.",
     "comment", "bot", None, "inactivity"),
    ("Please rename the helper to parse_window.", "comment", "person", None, "change_request"),
    ("- add a test for the empty list\n- drop the debug print", "review", "person", "COMMENTED",
     "change_request"),
    ("", "review", "person", "CHANGES_REQUESTED", "change_request"),
    ("LGTM", "review", "person", "APPROVED", "approval"),
    ("Looks great, merging.", "comment", "person", None, "approval"),
    ("", "review", "person", "APPROVED", "approval"),
    ("What does the new flag do?", "comment", "person", None, "neutral"),
    ("I've addressed the feedback in 1a2b3c4.", "comment", "agent", None, "neutral"),
    ("Initial plan: read the parser, then add a test.", "body", "agent", None, "neutral"),
]


@pytest.mark.parametrize(("text", "kind", "role", "state", "verdict"), CASES,
                         ids=[f"{c[4]}:{n}" for n, c in enumerate(CASES)])
def test_one_verdict_per_unit(text: str, kind: str, role: str, state: str | None, verdict: str) -> None:
    assert read(text, kind, role, "last3", state).verdict == verdict


def test_every_class_has_a_case() -> None:
    assert {c[4] for c in CASES} == set(VERDICTS)


NOT_A_VERDICT = [
    # (text, role, why it is no verdict on the work)
    ("This is not a breaking change.", "person", "negated"),
    ("This fix isn't bad at all.", "person", "negated praise"),
    ("Is this approach right? I have not read the issue.", "person", "a question"),
    ('He wrote "this is broken" but it works now.', "person", "an inline quotation"),
    ("> this doesn't work\n\nIt does for me.", "person", "a quoted line"),
    ("```\nthe build is failing\n```", "person", "code"),
    ("This PR fixes a breaking change in the parser and adds tests.", "agent", "the agent's description"),
    ("The retry doesn't work on Windows before this fix, see the issue.", "agent", "the agent's own words"),
]


@pytest.mark.parametrize(("text", "role", "why"), NOT_A_VERDICT, ids=[c[2] for c in NOT_A_VERDICT])
def test_what_is_not_a_verdict_on_the_work(text: str, role: str, why: str) -> None:
    assert read(text, "comment", role, "last3").verdict != "work_wrong", why


def test_a_relay_names_the_person_and_what_it_relays() -> None:
    found = read("Closing this PR as requested by @maria: it is no longer needed.", "comment", "agent", "last3")
    assert (found.verdict, found.person, found.relays) == ("relayed", "maria", "not_wanted")
    # A person quoting someone else gives their own verdict: not a relay.
    assert read("As @kim said, wrong approach.", "comment", "person", "last3").verdict == "work_wrong"


@pytest.mark.parametrize(("text", "words"), [
    ("Honestly this doesn't work at all.", "doesn't work"),
    ("Closing in favour of #12.", "favour of #12"),
])
def test_each_verdict_names_the_words_that_decided(text: str, words: str) -> None:
    found = read(text, "comment", "person", "last3")
    assert any(words in w for w in found.words), found


@pytest.mark.parametrize(("text", "handles", "asks"), [
    ("Can you add a test?", (), True),
    ("please rename it", (), True),
    ("@copilot the docs need the new flag", ("copilot",), True),
    ("This doesn't work.", (), True),
    ("Thanks!", (), False),
    ("LGTM", (), False),
    ("> can you add a test?\nDone, thanks.", (), False),
])
def test_what_hands_the_turn_back(text: str, handles: tuple[str, ...], asks: bool) -> None:
    assert read(text, "comment", "person", "earlier", handles=handles).asks is asks


def test_the_model_is_packaged_and_read_without_numerical_libraries() -> None:
    fitted = reader.model()
    assert fitted is not None and fitted.version.startswith("reader-")
    assert set(fitted.decides) <= set(VERDICTS)
    assert fitted.thresholds["work_wrong"] >= 0.8  # a verdict on the work only when the model is sure


# A toy model: one word pushes towards work_wrong, one towards approval.
TOY = reader.model_from({
    "version": "toy", "classes": ["work_wrong", "change_request", "approval", "neutral"],
    "bias": [0, 0, 0, 0],
    "weights": {"w:awful": [4, 0, 0, 0], "w:meh": [1.6, 0, 0.9, 0], "w:good": [0, 0, 3, 0]},
    "decides": ["work_wrong", "change_request", "approval", "neutral"],
    "thresholds": {"work_wrong": 0.85}, "confirms": {"work_wrong": 0.5}})


@pytest.mark.parametrize(("text", "verdict", "why"), [
    ("awful", "work_wrong", "the model is sure enough (p 0.95)"),
    ("meh", "neutral", "likeliest but unsure: no verdict, not the runner-up approval"),
    ("good", "approval", "another class is given as the likeliest"),
    ("this doesn't work, meh", "work_wrong", "a phrase proposes it and the model confirms (p >= 0.5)"),
    ("this doesn't work, good", "approval", "a phrase proposes it but the model does not confirm it"),
])
def test_a_verdict_on_the_work_needs_the_model_sure_or_a_phrase_it_confirms(text: str, verdict: str,
                                                                            why: str) -> None:
    found = read(text, "comment", "person", "last3", reader=TOY)
    assert found.verdict == verdict, why
    assert 0.0 < found.wrong < 1.0


@pytest.mark.parametrize(("role", "verdict"), [
    ("operator", "work_wrong"),  # p 0.95 reaches the operator's 0.85
    ("person", "neutral"),  # a person's words need 0.97 here
    ("reviewer", "neutral"),  # a reviewer reads as a person
    ("bot", "neutral"),  # a bot's words never get the verdict from the model
])
def test_how_sure_the_model_must_be_depends_on_whose_words(role: str, verdict: str) -> None:
    per_role = reader.Model(TOY.version, TOY.classes, TOY.bias, TOY.weights, TOY.decides,
                            {"work_wrong": 0.85, "work_wrong@person": 0.97, "work_wrong@bot": 1.01},
                            TOY.confirms)
    assert read("awful", "comment", role, "last3", reader=per_role).verdict == verdict


def test_without_a_model_the_phrases_decide_alone() -> None:
    assert read("this doesn't work", "comment", "person", "last3", reader=None).verdict == "work_wrong"


@pytest.mark.parametrize(("title", "verdict"), [
    ("[DO NOT MERGE] trying the agent", "trial"), ("Test PR", "trial"),
    ("Add retry with backoff", "neutral"), ("Fix the test runner", "neutral"),
])
def test_titles(title: str, verdict: str) -> None:
    assert read(title, "title", "agent").verdict == verdict


@pytest.mark.parametrize(("label", "verdict"), [
    ("duplicate", "elsewhere"), ("wontfix", "not_wanted"), ("stale", "inactivity"),
    ("experiment", "trial"), ("enhancement", "neutral"),
])
def test_labels(label: str, verdict: str) -> None:
    assert read(label, "label", "person").verdict == verdict


# How people plainly say why a PR should end, or what they think of the work, as a reader who has
# never seen the repository would read them: the classes of the labelling guide, in plain English.
PLAIN_WORDS: dict[str, list[str]] = {
    "elsewhere": [
        "Closing in favour of #812",
        "This was fixed in #900, closing",
        "Done in another PR",
        "Superseded by the refactor in #77",
        "Duplicate of #45",
        "This has already been addressed on main",
        "We merged a different fix for this in #33",
        "Replaced by #1200",
        "Closing, the upstream release already includes this",
        "Another PR already handles this",
        "Closing in favor of PR #947, which is a cleaner version",
        "Dropping this in favor of - #12558",
        "Closing this in favour of a simpler PR",
        "Replacing by https://github.com/o/r/pull/5636",
        "The above is right; #1087 fixed this.",
    ],
    "not_wanted": [
        "We don't want this feature",
        "This is out of scope for the project",
        "Won't fix",
        "Closing: not something we plan to support",
        "The team decided against this change",
        "This is obsolete now",
        "No longer relevant",
        "Not needed anymore",
    ],
    "trial": [
        "Just testing the agent, closing",
        "This was an experiment",
        "Opened by mistake",
        "Wrong repository, sorry",
        "Demo PR, not meant to be merged",
        "POC only",
        "Testing copilot on this repo",
        "This was only to see what the agent would do",
        "Testing out the copilot agent preview.",
        "Another test of copilot-generated PRs.",
        "This might have been triggered accidentally by me.",
    ],
    "inactivity": [
        "Closing due to inactivity",
        "This PR is stale, closing",
        "Closing since there has been no activity for 30 days",
        "This pull request has been automatically marked as stale",
        "No response in a month, closing",
    ],
    "work_wrong": [
        "This breaks the build",
        "The tests are failing now",
        "This introduces a regression in the parser",
        "It crashes on startup",
        "The output is wrong",
        "You removed the feature instead of fixing it",
        "This doesn't address the issue at all",
        "The agent misunderstood the task",
        "Completely wrong.",
        "This is a hack",
        "Please stop, this is going nowhere",
        "This makes things worse",
        "This is not what the issue asked for",
        "The change is incomplete, half the items are missing",
        "You deleted the tests to make them pass",
        "this is worse than before",
        "It still fails the same way",
        "Not correct.",
        "I don't think this is right",
        "These changes are unnecessary",
        "This is way too complex for what it does",
    ],
    "change_request": [
        "Please add tests",
        "Can you rename this variable?",
        "Could you also update the docs?",
        "nit: trailing whitespace",
        "Please rebase on main",
        "@copilot please fix the lint errors",
    ],
    "approval": [
        "LGTM",
        "Looks good to me, thanks!",
        "Great work",
        "Approved",
        "Ship it",
    ],
}
PLAIN_CASES = [(text, verdict) for verdict, texts in PLAIN_WORDS.items() for text in texts]


@pytest.mark.parametrize(("text", "verdict"), PLAIN_CASES, ids=[t[:40] for t, _ in PLAIN_CASES])
def test_plain_words_are_read_as_people_mean_them(text: str, verdict: str) -> None:
    role = "bot" if "automatically" in text else "person"
    assert read(text, "comment", role, "last3").verdict == verdict


# "Not needed" or "outdated" said of a part of the work asks for a change to it; only said of the PR
# or the work, or standing as a sentence of its own, does it say the PR is not wanted. (On the
# fitting side, most of the unanchored phrase's hits were requests like these.)
ABOUT_A_PART = [
    "Please remove the lint.json change. We don't need it.",
    "go.mod file is not needed. Also the response has no id.",
    "@copilot The PR description is outdated. Update it to match the changes.",
    "Remove all calls to ConfigureApplicationParts - they are not necessary.",
    "@copilot we don't want to change upstream/git.ts. Can we boost the items instead?",
    "For all obsolete Equals APIs, please fail with a localized message instead.",
]


@pytest.mark.parametrize("text", ABOUT_A_PART, ids=[t[:40] for t in ABOUT_A_PART])
def test_a_part_not_needed_is_no_reason_to_end_the_pr(text: str) -> None:
    assert read(text, "comment", "operator", "last3").verdict != "not_wanted"
