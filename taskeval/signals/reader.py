"""The one reader of people's words: one comment, review, notice or description to one verdict.

:func:`read` takes a unit of text with what it is (``kind``), who wrote it (``role``) and where it
stands in the PR's life (``position``) and gives a :class:`Reading`: one of the verdict classes of
the labelling guide (docs/labelling.md, "People's words: one verdict per comment"), the words that
weighed most, and for ``relayed`` the person whose request or verdict the agent passes on.
Everything in taskeval that reads what people wrote goes through it: the closure and the rescue
class (:mod:`.closure`), the turn model's hand-backs (:mod:`.turns`), ``agent.objections``, the
review rounds and the agent's own failure reports (:mod:`.rework`).

Two parts, both pure and deterministic:

* :data:`RULES`, one table of narrow phrases per class, in the guide's tie-break order. A phrase
  is matched case-insensitively on the prose only (no code, no HTML comments, no quoted lines or
  quotations), and most do not count right after a negation ("not a breaking change").
* a linear model (``reader_model.json`` beside this module, made by
  ``benchmarks/train_reader.py`` from the *train* side of the held-out split only) over the
  prose's words and word pairs, the unit's kind, role, position and review state, and the rules'
  hits. Its weights are plain numbers summed in Python: no numerical library at scoring time.

How they combine (chosen on the fitting side, train and heldout-dev repositories, cross-validated
by repository, docs/validity.md#held-out-by-repository): a deciding rule gives its class (the
relay, the agent's own failure report, a bot's CI failure report, the project's reasons, requests
and approvals); a
person's phrase that calls the work wrong ("doesn't work", "wrong approach") only proposes
``work_wrong``, which it becomes when the model holds it at least 0.5 likely; where no rule
decides, the model gives ``work_wrong`` only at 0.85 or more, and otherwise the likeliest of
change_request, approval and neutral (neutral when ``work_wrong`` was the likeliest but short of
its threshold: 0.85; 0.9 for a person who is not the operator; never for a bot). Phrases tuned
on a few repositories called too much wrong on others; the model, fitted on 4,099 labelled units of the
train and heldout-dev repositories, weighs the same phrase with the words around it. Every reading
also carries how likely the model holds ``work_wrong`` (``wrong``), which the closure weighs where
nothing else says why a PR ended.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Final, Literal

from .hygiene import visible_text

Verdict = Literal["relayed", "work_wrong", "elsewhere", "trial", "not_wanted", "inactivity",
                  "change_request", "approval", "neutral"]
# The guide's classes in its tie-break order: when several fit, the first wins.
VERDICTS: Final[tuple[Verdict, ...]] = (
    "relayed", "work_wrong", "elsewhere", "trial", "not_wanted", "inactivity", "change_request",
    "approval", "neutral")
# What the reader is told a unit is. ``inline`` is a line comment of a review (read as a review's
# words: the labelled data has none of its own); ``title`` and ``label`` are the PR's title and a
# label's name, read for the few classes a title or label can state (trial, not_wanted, elsewhere,
# inactivity).
Kind = Literal["comment", "review", "inline", "body", "title", "label"]
# Who wrote it, as the turn model's roles (taskeval.models.Role) name them; ``reviewer`` and
# ``person`` read alike.
Position = Literal["last3", "earlier", "after", "open"]

# The verdicts that send the work back to the agent (a verdict on it, or a request to change it).
SENDS_BACK: Final = frozenset({"work_wrong", "change_request"})
# The verdicts that say the PR ended for the project's reasons.
PROJECT: Final = frozenset({"elsewhere", "trial", "not_wanted", "inactivity"})


@dataclass(frozen=True, slots=True)
class Reading:
    """What one unit says: its verdict, the words that weighed most (at most three, as written
    in the prose, or the model's features when no phrase decided), for ``relayed`` the person
    relayed (a login without the ``@``, when the notice names one) and the verdict of what is
    relayed, and whether it asks the PR's side to act (a request, a verdict, a question or a
    mention of the agent): what hands the turn back."""

    verdict: Verdict
    words: tuple[str, ...] = ()
    person: str | None = None
    relays: Verdict | None = None
    asks: bool = False
    rule: str | None = None  # the phrase rule that decided, None when the model did
    # How likely the model holds it that the unit calls the work wrong (0 without a model): a
    # weaker sign than the verdict; benchmarks/train_reader.py cv reports how well it ranks them.
    wrong: float = 0.0


# --------------------------------------------------------------------------- prose

_QUOTE_LINE: Final = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
_INLINE_QUOTE: Final = re.compile(r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”")
_NEGATION: Final = re.compile(
    r"(?i)\b(?:no|not|n't|never|without|nothing|non|hardly|isn't|aren't|wasn't|don't|doesn't)"
    r"\W+(?:\w+\W+){0,2}$")
_HTML_TAG: Final = re.compile(r"<[^>\n]{1,200}>")


@functools.lru_cache(maxsize=4096)
def prose(text: str) -> str:
    """The words a person wrote, as a reader sees them: no code, no HTML comments or tags, no
    quoted lines and no inline quotations of someone else."""
    plain = visible_text(text or "")
    if ">" in plain:
        plain = _QUOTE_LINE.sub("", plain)
        plain = _HTML_TAG.sub(" ", plain)
    if '"' in plain or "“" in plain:
        plain = _INLINE_QUOTE.sub(" ", plain)
    return plain


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | flags)


@dataclass(frozen=True, slots=True)
class Rule:
    """One phrase of :data:`RULES`: the verdict it gives, its name, its pattern, whether a
    negation just before it cancels it, and which roles' words it reads (empty: anyone's)."""

    verdict: Verdict
    name: str
    pattern: re.Pattern[str]
    negatable: bool = True
    roles: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset({"comment", "review", "inline"})
    decides: bool = True  # False: the model weighs its hit, but the hit alone gives no verdict


_AGENT = frozenset({"agent"})
_NOT_AGENT = frozenset({"operator", "reviewer", "person", "bot", "ci"})
_PEOPLE = frozenset({"operator", "reviewer", "person"})
_ANY_TEXT = frozenset({"comment", "review", "inline", "body"})
_TEXT_AND_TITLE = frozenset({"comment", "review", "inline", "body", "title"})
_LABEL = frozenset({"label"})
_TEXTS = frozenset({"comment", "review", "inline"})
_HANDLE = r"@([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}[A-Za-z0-9])?(?:\[bot\])?)"
# Another PR, by number or link (the link bounded, so a chain of links reads in linear time); with a
# commit's SHA, any work named elsewhere ("fixed in 1a2b3c4" is not said by itself: it may be the
# agent's own fix commit).
_PR_LINK = r"(?:#\d+|https?://\S{1,200}?/pull/\d+)"
_PR_REF = r"(?:" + _PR_LINK + r"|[0-9a-f]{7,40}\b)"
# Where a sentence starts, and what may stand before its first word (bounded: a long run of
# punctuation reads in linear time). Needs ``re.MULTILINE``.
_SENTENCE_START = r"(?:^|(?<=[.!?:;\n]))[^\w\n]{0,4}"

# A report that checks, tests or the build fail ("the build is failing", "3 failed", "Quality Gate
# failed"); not a check's name ("Check Broken URLs"), nor failures on main or unrelated ones.
_CI_FAILED: Final = _p(
    r"\b(?:the\s+)?(?:tests?|build|ci|pipeline|lint(?:er|ing)?|compilation)\s+(?:are\s+|is\s+|has\s+|have\s+)?"
    r"(?:still\s+)?(?:fail(?:s|ing|ed)?|broken|red)\b(?!\s+(?:on\s+main|unrelated|for\s+unrelated))|"
    r"\b(?:the\s+)?checks?\s+(?:are\s+|is\s+|has\s+|have\s+)?(?:still\s+)?(?:fail(?:s|ing|ed)?|red)\b"
    r"(?!\s+(?:on\s+main|unrelated|for\s+unrelated))|\bci\s+failed\b|\b(?:a|one|\d+)\s+tests?\s+"
    r"(?:triggered\s+by\s+this\s+pr\s+)?failed\b|\bhas\s+\d+\s+failures?\b|\b\d+\s+failed\b|"
    r"\bstatus\W+failed\b|\bquality\s+gate\s+failed\b|\bdoes\s*n[o']?t\s+(?:pass|run)\s+(?:ci|lint|the\s+tests)")

# What a verdict is passed on: the work itself, named with any determiner ("the fix", "this
# approach", "your change", "these new tests"), as people name it.
_WORK: Final = (r"(?:the|this|that|these|those|your|its)\s+(?:\w+\s+)?(?:changes?|code|fix(?:es)?|pr|"
                r"pull\s+request|implementation|solution|approach|patch|result|output|refactor(?:ing)?|"
                r"update|version|commits?|tests?)")

# One table, in the guide's tie-break order. Kept narrow on purpose: the model weighs the rest.
RULES: Final[tuple[Rule, ...]] = (
    # --- relayed: the agent passes on a person's request or verdict (the agent's words only).
    Rule("relayed", "closes as a person asked", _p(
        r"\b(?:as|was)\s+(?:requested|asked|instructed|directed)\s+by\s+" + _HANDLE + r"|\bper\s+"
        + _HANDLE + r"(?:'s)?\s+(?:request|instructions?|review|feedback|comment)|\bas\s+" + _HANDLE
        + r"\s+(?:said|asked|requested|suggested|decided|pointed\s+out|noted)"), False, _AGENT),
    # --- work_wrong: the agent reporting its own failure.
    Rule("work_wrong", "the agent reports it could not do the work", _p(
        r"\b(?:I|we)\s+(?:was|were|am|are)\s+(?:not\s+able|unable)\s+to\b|\bI\s+(?:could\s*n[o']?t|"
        r"couldn't|can't|cannot|was\s+not\s+able\s+to)\s+(?:get|make|run|fix|complete|finish|"
        r"reproduce|build|resolve|implement|find\s+a\s+way)\b|\b(?:ran\s+out\s+of\s+time|gave\s+up|"
        r"giving\s+up)\b|\b(?:hit|encountered|ran\s+into)\s+an?\s+(?:unexpected\s+)?error\s+while\s+"
        r"(?:trying\s+to\s+)?(?:work|use|set)|\bhad\s+to\s+close\s+this\s+(?:pr|pull\s+request)\b"),
        False, _AGENT, _ANY_TEXT),
    # --- work_wrong: anyone's verdict that the work is wrong, broken or useless.
    Rule("work_wrong", "calls the approach wrong", _p(
        r"\b(?:wrong|bad|incorrect|flawed|misguided|hacky|terrible|awful|horrible|invalid|poor)\s+(?:approach|"
        r"direction|fix|solution|way|place|layer|abstraction|implementation)\b|\bnot\s+(?:the\s+|a\s+)?"
        r"(?:right|correct|proper|good|valid)\s+(?:approach|way|fix|solution|place|direction|implementation)\b|\bthis\s+is\s+not\s+"
        r"(?:how|what)\s+(?:we|i)\s+(?:want|asked|meant|need)|\bpatchwork\b|\b(?:on\s+the\s+wrong|off)\s+track\b|"
        r"\b(?:still\s+)?not\s+there\s+yet\b|\bstill\s+not\s+there\b|\bnot\s+what\s+(?:we|i)\s+(?:want|wanted)\b|"
        r"\b(?:way\s+)?overkill\b|\b(?:does\s*n[o']?t|don't|do\s+not)\s+look\s+right\b"), False, _NOT_AGENT,
        decides=False),
    Rule("work_wrong", "says it does not work or fix the problem", _p(
        r"\b(?:does\s*n[o']?t|doesn't|did\s*n[o']?t|didn't|does\s+not|did\s+not|still\s+(?:does\s*n[o']?t|"
        r"doesn't))\s+(?:actually\s+|really\s+|seem\s+to\s+)?(?:work|fix|solve|address|resolve|"
        r"implement|compile|build|pass)\b(?!\s+(?:on|for|with|if|when|yet)\b)|"
        r"\bnot\s+what\s+(?:i|we|the\s+issue)\s+(?:asked|wanted|meant|need|requested)|"
        r"\bthe\s+(?:same\s+)?(?:error|issue|problem|bug|crash)\s+(?:is\s+|was\s+)?still\s+(?:there|"
        r"present|happening|occurs|occurring|shows|showing|reproduces)\b|"
        r"\bstill\s+(?:not\s+working|broken|failing|fails|getting\s+the\s+(?:same\s+)?error|"
        r"seeing\s+the\s+(?:same\s+)?(?:error|issue|problem))\b|\bno\s+changes\s+in\s+(?:the\s+)?files\b|"
        r"\b(?:fails|failed)\s+to\s+(?:build|compile)\b|\bdid\s*n[o']?t\s+(?:even\s+)?(?:build|compile)\b|"
        r"\bdid\s*n[o']?t\s+commit\s+the\s+changes\b"),
        True, _NOT_AGENT, decides=False),
    Rule("work_wrong", "calls it broken, wrong or useless", _p(
        r"\b(?:this|that|it|" + _WORK + r")\s+(?:is|are|was|were|looks?|seems?)\s+(?:completely\s+|"
        r"totally\s+|still\s+|just\s+|simply\s+|really\s+|pretty\s+|quite\s+)?(?:broken|wrong|incorrect|"
        r"buggy|invalid|useless|terrible|awful|horrible|bad|garbage|nonsense|nonsensical|pointless|"
        r"unacceptable|incomplete|unnecessary|a\s+(?:hack|kludge|mess)|worse|not\s+(?:useful|valid|correct|"
        r"ok(?:ay)?|right|good|acceptable))\b|"
        r"^\W*(?:completely\s+|totally\s+|all\s+|just\s+)?(?:wrong|incorrect|not\s+correct|broken)\W*$|"
        r"\b(?:i|we)\s+do\s*n[o']?t\s+think\s+(?:this|that|it)\s+is\s+(?:right|correct|the\s+right\s+\w+)\b|"
        r"\b(?:too|overly|needlessly|unnecessarily)\s+(?:complex|convoluted)\b|\bover-?engineer\w*|"
        r"\bmisunderst(?:ood|ands?)\s+(?:the|my|our|what)\b|\b(?:going|leading)\s+nowhere\b|"
        r"\bnot\s+working\s+out\b|\bmakes?\s+(?:it|things|this|everything)\s+worse\b|\bworse\s+than\s+before\b|"
        r"\b(?:removed|deleted|disabled|skipped|commented\s+out)\s+(?:the\s+)?(?:failing\s+)?(?:tests?|checks?|"
        r"assertions?)\s+(?:instead|to\s+make)\b|\b(?:removed|deleted|dropped)\s+the\s+\w+\s+instead\s+of\s+"
        r"fixing\b|"
        r"^\s*not\s+useful\b|\b(?:rubbish|nonsense|hallucinat\w*)\b|\bmakes?\s+no\s+sense\b|"
        r"\bburn(?:ed|t)?\s+(?:it\s+)?with\s+fire\b|\btoo\s+complicated\b|\bno\s+benefit\b|"
        r"\b(?:do\s*n[o']?t|can\s*n[o']?t|cannot|do\s+not)\s+see\s+(?:any|the|much)\s+(?:benefit|point|value)\b|"
        r"\bgam(?:ed|ing)\s+the\s+tests?\b|\bignor(?:ed|es|ing)\s+(?:the|my)\s+instructions?\b|"
        r"\b(?:i|we)\s+doubt\s+(?:this|it|that)\s+is\s+(?:a\s+)?(?:correct|right)|"
        r"\bnot\s+at\s+all\s+ok"), True, _NOT_AGENT, decides=False),
    Rule("work_wrong", "gives a thumbs-down", re.compile(
        r"(?i)^\s*(?:👎|:-1:|:thumbsdown:|-1|no+|nope|nö|nein)\s*[.!]*\s*$"), False, _NOT_AGENT, decides=False),
    Rule("work_wrong", "the agent's title says it failed", _p(r"^\s*\[failed\]"), False, _AGENT,
         frozenset({"title"})),
    Rule("work_wrong", "says it breaks something", _p(
        r"\b(?:this|that|it|you|the\s+change|your\s+change)\s+(?:breaks|broke|have\s+broken|has\s+broken|"
        r"will\s+break)\b|"
        r"\bbreaking\s+(?:change|changes|api|behaviou?r)\b|\bbreaks\s+(?:backwards?\s+)?compat"),
        True, _NOT_AGENT, decides=False),
    # A person's report that it regressed or crashes (an AI reviewer's bug report is a request).
    Rule("work_wrong", "says it regresses or crashes", _p(
        r"\b(?:introduces?|introduced|causes?|caused)\s+(?:a\s+|several\s+|new\s+)*regressions?\b|"
        r"\b(?:it|this|that|the\s+(?:app|build|server|program|cli))\s+(?:now\s+|still\s+)?crash(?:es|ed)\b"),
        True, _PEOPLE, decides=False),
    # A report that CI or tests fail: a bot's decides; a person's only proposes (people mostly
    # phrase it as a request to fix them, which the model weighs).
    Rule("work_wrong", "reports failing CI or tests", _CI_FAILED, True, frozenset({"bot", "ci"})),
    Rule("work_wrong", "says CI or tests fail", _CI_FAILED, True, _PEOPLE, decides=False),
    # --- elsewhere: the work is done or carried on somewhere else.
    Rule("elsewhere", "says it was done elsewhere", _p(
        r"\b(?:superseded|replaced|continued|carried\s+(?:on|over)|redone|followed\s+up|moved|"
        r"re-?submitted|re-?created)\s+(?:by|in|at|as|with|to|into|over\s+(?:at|in))\s+(?:" + _PR_REF
        + r"|a\s+(?:new|separate|different|another)\s+(?:pr|pull\s+request|branch))|"
        r"\bin\s+favou?r\s+of\s+(?:(?:the\s+)?(?:pr|pull\s+request)\s+|"
        r"[-:]\s*)?" + _PR_REF + r"|\bin\s+favou?r\s+of\s+(?:a|an|another|the\s+other)\s+(?:\w+\s+){0,2}(?:pr|"
        r"pull\s+request)\b|\breplac(?:ed|ing)\s+(?:by|with)\s+" + _PR_LINK + r"|"
        + _PR_LINK + r"\s+(?:already\s+)?(?:fixed|fixes|resolved|resolves|addressed|addresses|"
        r"covers|implemented|implements)\s+(?:this|it)\b|"
        r"\bmerged\s+(?:via|in|as\s+part\s+of|with|through|into)\s+" + _PR_REF
        + r"|\bcherry-?pick(?:ed)?\b|\bsupersed(?:ed|es|ing)\b|\bsee\s+" + _PR_REF + r"\s+instead\b|"
        r"\bclosing\s+(?:this\s+)?(?:for|in\s+favou?r\s+of)\s+#\d+|\bas\s+#\d+\s+(?:is|was|has\s+been)"
        r"\s+(?:now\s+)?merged\b|\bsame\s+as\s+" + _PR_REF + r"|\b(?:this|it|that|already)\s+(?:was\s+|is\s+|"
        r"has\s+been\s+|got\s+)?(?:already\s+)?(?:fixed|done|addressed|resolved|implemented|solved|added|"
        r"handled|merged)\s+(?:in|by|via|with)\s+" + _PR_REF + r"|\bi\s+(?:added|fixed|did|implemented)\s+"
        r"(?:this|it)\s+(?:\w+\s+)?in\s+(?:" + _PR_REF + r"|\S+-v?\d)|"
        r"(?<!\bbe\s)(?<!\bget\s)\b(?:done|fixed|handled|addressed|implemented|solved|resolved)\s+(?:already\s+)?in\s+(?:another|a\s+"
        r"(?:different|separate|new)|an\s+other|the\s+other)\s+(?:pr|pull\s+request|branch|commit)\b|"
        r"\b(?:another|a\s+(?:different|separate))\s+(?:pr|pull\s+request)\s+(?:already\s+)?(?:handles|"
        r"covers|fixes|does|addresses|solves|implements)\s+(?:this|it|that)\b|\bmerged\s+(?:a|another)\s+"
        r"(?:different|separate|other)?\s*(?:fix|pr|pull\s+request|change)\s+for\s+(?:this|it)\b|"
        r"^\W*(?:just\s+)?(?:fixed|fixing|done|resolved|addressed)\s+(?:in|by|via|with)\s+" + _PR_LINK),
        False, _PEOPLE | _AGENT, _TEXTS),
    Rule("elsewhere", "says it is a duplicate or already done", _p(
        r"\b(?:a|is|as|closing\s+as|marked\s+as)\s+duplicate\b|\bduplicate\s+(?:of|pr|pull)\b|"
        r"\bduplicates\s+#\d|\balready\s+(?:been\s+)?(?:fixed|done|addressed|implemented|merged|"
        r"resolved|handled|covered|in\s+(?:main|master|place)|up[-\s]to[-\s]date|supported|has|have|had|"
        r"contains?|includes?|exists?|present)\b|"
        r"\b(?:fixed|resolved)\s+on\s+(?:the\s+)?\w+\s+side\b|\b(?:already\s+)?had\s+its\s+needs\s+met\b"),
        True, _PEOPLE | _AGENT, _ANY_TEXT),
    Rule("elsewhere", "a label says duplicate", _p(r"\bduplicate\b"), False, frozenset(), _LABEL),
    # --- trial: a test, demo, proof of concept, or opened by mistake.
    Rule("trial", "says it was a test or a demo", _p(
        r"\bjust\s+(?:a\s+)?test(?:ing)?\b|\b(?:a|another)\s+test\s+of\s+(?:the\s+)?(?:copilot|agent|devin|codex|"
        r"cursor|claude)|\btesting\s+(?:out\s+)?(?:(?:the\s+)?copilot|the\s+agent|devin|codex|cursor|claude|"
        r"the\s+(?:bot|tool|integration|workflow))\b|\b(?:created|opened|made)\s+(?:this\s+)?as\s+a\s+"
        r"test\b|\bthis\s+(?:was|is)\s+(?:a|just\s+a)\s+(?:test|demo|trial)\b|\b(?:a\s+)?test\s+pr\b|"
        r"\bproof\s+of\s+concept\b|\bpoc\b|\bnot\s+(?:meant\s+)?for\s+merg(?:e|ing)\b|"
        r"\b(?:for|as\s+a)\s+verification\s+purposes?\b|\bdo\s*n[o']?t\s+merge\b|\bdnm\b|"
        r"\bexperiment(?:al|ing)?\s+(?:pr|with)\b|\b(?:this|it)\s+(?:was|is)\s+(?:just\s+|only\s+)?an?\s+"
        r"(?:experiment|demo|trial\s+run|test\s+run)\b|\bdemo\s+(?:pr|only)\b|\bnot\s+(?:meant|intended)\s+"
        r"to\s+be\s+merged\b|\b(?:only|just)\s+to\s+(?:see|check|try)\s+(?:what|how|if|whether)\s+(?:the\s+)?"
        r"(?:agent|copilot|devin|codex|cursor|claude|bot|tool|it)\b"),
        False, frozenset(), _ANY_TEXT),
    Rule("trial", "says it was opened by mistake", _p(
        r"\b(?:opened|created|pushed|made|pointed|triggered|started|assigned|kicked\s+off)\s+(?:\w+\s+){0,3}"
        r"(?:by\s+mistake|in\s+error|accidentally|against\s+the\s+wrong)\b|\baccidentally\s+(?:triggered|"
        r"assigned|opened|created|started)\b|\bwrong\s+(?:repo|repository|fork|base\s+branch)\b|"
        r"\bshould\s+have\s+been\s+(?:pointed|opened|made)\s+(?:at|against|in|on)\s+(?:my|our|the)\s+"
        r"fork\b|\bnot\s+the\s+correct\s+(?:codebase|repository|repo)\b|\bforgot\s+to\s+remove\s+"
        r"upstream\b"), False, frozenset(), _ANY_TEXT),
    Rule("trial", "a title says it is a trial", _p(
        r"\bdo\s*n[o']?t\s+merge\b|\bdnm\b|^\s*\[?(?:test|testing|experiment|demo|poc)\b\]?\s*[:\-\]]|"
        r"\btest(?:ing)?\s+(?:pr|only|copilot|the\s+agent|devin|codex)\b|^\s*test\s*$"),
        False, frozenset(), frozenset({"title"})),
    Rule("trial", "a label says experiment", _p(r"\bexperiment|\bpoc\b|\bdemo\b"), False,
         frozenset(), _LABEL),
    # --- not_wanted: the idea is not wanted, whatever the implementation.
    # Said of the PR or the work ("this is not needed", "the change is obsolete"), or as a sentence
    # of its own ("Not needed anymore."); not of a part of it ("the lint.json change is not needed,
    # remove it" asks for a change: on the fitting side most unanchored hits were requests).
    Rule("not_wanted", "says it is not wanted or needed", _p(
        _SENTENCE_START + r"(?:not|no\s+longer)\s+(?:needed|necessary|wanted|planned|relevant|required|"
        r"applicable)\b|\b(?:this|it|that|" + _WORK + r"|the\s+(?:feature|idea))\s+(?:is|are|was|were|"
        r"seems?|has\s+become|became)\s*(?:n[o']?t|\s+not|\s+no\s+longer)\s+(?:really\s+|actually\s+|"
        r"even\s+)?(?:needed|necessary|planned|wanted|desired|required|relevant|applicable|a\s+priority)\b|"
        r"\bnot\s+(?:something\s+we|the\s+direction|going\s+to\s+(?:merge|accept|take))\b|"
        r"\bwon'?t\s+(?:fix|merge|accept|be\s+merg)|\bout\s+of\s+scope\b|\bdecided\s+(?:not|against)\b|"
        + _SENTENCE_START + r"(?:obsolete|outdated|moot)\b|\b(?:this|it|that|" + _WORK + r")\s+(?:is|are|"
        r"was|were|seems?|has\s+become|became)\s+(?:now\s+|already\s+)?(?:moot|obsolete|outdated)\b|"
        r"\bnot\s+worth\b|\b(?:we|i)\s+do\s*n[o']?t\s+(?:want|need)\s+(?:this|that)(?:\s+(?:pr|change|"
        r"feature|anymore|any\s+more))?\s*(?:[.!,;]|$)|"
        r"\blet'?s\s+not\s+merge\b|\b(?:is|was)\s+(?:intentional|by\s+design|intended\s+behaviou?r)\b|"
        r"\b(?:was|is)\s*n[o']?t\s+(?:a|actually\s+a)\s+bug\b|\bnot\s+a\s+bug\b|\bhold\s+off\b|"
        r"\bclosing\s+(?:this\s+)?for\s+now\b|\bnot\s+(?:stable|ready)\s+yet\b|\bdropped\s+\w+\s+in\s+"
        r"favou?r\s+of\b", re.MULTILINE), False, _NOT_AGENT, _ANY_TEXT),
    Rule("not_wanted", "a label says it was declined", _p(
        r"\bwon'?t\s*fix\b|\bwontfix\b|\binvalid\b|\bnot\s+planned\b|\bdeclined\b|\brejected\b|"
        r"\bout\s+of\s+scope\b"), False, frozenset(), _LABEL),
    # --- inactivity: closing, or warning of closing, for inactivity.
    Rule("inactivity", "says it went stale", _p(
        r"\b(?:marked|closing|closed|labell?ed)\s+(?:\w+\s+)?as\s+stale\b|\b(?:is|has\s+(?:been|become)|"
        r"went|gone)\s+stale\b|\bdue\s+to\s+(?:lack\s+of\s+)?(?:recent\s+)?(?:inactivity|activity)\b|"
        r"\bhas\s*n[o']?t\s+had\s+(?:any\s+)?(?:recent\s+)?activity\b|\bno\s+(?:recent\s+)?activity\s+"
        r"(?:in|for|since)\b|\bclose\s+this\s+(?:pr|pull\s+"
        r"request)\s+unless\s+you\s+respond\b|\bclosing\s+due\s+to\s+(?:lack\s+of\s+)?(?:response|activity)|"
        r"\bno\s+(?:response|reply|answer|activity|update)s?\s+(?:in|for|since)\s+(?:a|an|over|more|\d+)\b"),
        False, _NOT_AGENT, _TEXTS),
    Rule("inactivity", "a label says stale", _p(r"\bstale\b|\binactive\b|\babandoned\b|\blifecycle/rotten\b"),
         False, frozenset(), _LABEL),
    # --- change_request: asks for a specific change without condemning the work.
    Rule("change_request", "asks for a change", _p(
        r"\b(?:please|pls|plz|can\s+you|could\s+you|would\s+you|will\s+you|you\s+(?:should|need\s+to|"
        r"must)|make\s+sure|don'?t\s+forget)\s+(?:also\s+|just\s+|try\s+to\s+|now\s+)?(?:fix|correct|"
        r"revert|undo|redo|address|resolve|add|remove|rename|use|change|update|move|rebase|delete|"
        r"replace|keep|drop|split|extract|refactor|handle|document|include|make|create|implement|"
        r"check|run|ensure|reset|discard|copy|avoid|apply|restore|clean|simplify|put|write|try)\b|"
        r"\bactionable\s+comments\s+posted:\s*[1-9]|^\W*nit(?:pick)?\s*[:(]"), False, _NOT_AGENT),
    Rule("change_request", "instructs", re.compile(
        r"(?im)^[ \t]*(?:[-*\d.)]+[ \t]+)?(?:@\S+[ \t,]+)?(?:add|remove|rename|use|change|update|fix|"
        r"move|revert|rebase|delete|replace|avoid|keep|drop|split|extract|refactor|handle|document|"
        r"undo|address|resolve|implement|reset|discard|don't|do\s+not)\b"), False, _PEOPLE),
    # --- approval.
    Rule("approval", "approves", _p(
        r"\blgtm\b|\blooks\s+(?:good|great|fine)(?:\s+to\s+me)?\b|\bship\s+it\b|\bgood\s+job\b|"
        r"\bwell\s+done\b|\bapprov(?:ed|ing)\b|\bnice\s+work\b|"
        r"\bgreat\s+work\b|\bawesome\b|\bthanks?(?:\s+you)?\b.{0,40}\bmerg"), True, _PEOPLE),
)

# Roles whose words the rules read as people's (a bot's words count for the failure and
# project classes; an agent's only for its own notices).
_QUESTION: Final = re.compile(r"\?(?:\s|$)")


def _hit(rule: Rule, words: str) -> str | None:
    for match in rule.pattern.finditer(words):
        if not rule.negatable or not _NEGATION.search(words[max(0, match.start() - 40):match.start()]):
            return match.group(0)
    return None


def rule_hits(text: str, kind: str = "comment", role: str = "person") -> list[tuple[Rule, str]]:
    """Every rule of :data:`RULES` that ``text`` (of that kind, by that role) holds, in table
    order, with the words it matched."""
    words = text if kind in ("title", "label") else prose(text)
    if not words.strip():
        return []
    out = []
    for rule in RULES:
        if kind not in rule.kinds or (rule.roles and role not in rule.roles):
            continue
        found = _hit(rule, words)
        if found is not None:
            out.append((rule, found.strip()))
    return out


# --------------------------------------------------------------------------- the agent's test reports

# The agent's own report of a check it ran failing. Codex writes its test runs as
# "- `cmd` *(fails: reason)*"; most such reasons on real PRs are the agent's sandbox (a missing
# tool or network), which says the work was not verified, not that it is broken. This is a parse
# of a report's shape, not a reading of anyone's verdict (that is :func:`read`).
FAILED_CHECK: Final = re.compile(
    r"(?i)\((?:fails?|failed|failing)\b[^)\n]{0,200}\)|\b(?:tests?|build|lint(?:ing)?|checks?|"
    r"type-?check(?:ing)?|compilation)\s+(?:still\s+)?(?:fail(?:s|ed)?|are\s+failing|is\s+failing|"
    r"did\s*n[o']?t\s+pass)\b|❌")
_SANDBOX: Final = re.compile(
    r"(?i)not\s+(?:found|installed|available)|no\s+module|missing|network|offline|internet|"
    r"connect|resolve|download|proxy|permission|timed?\s*out|timeout|keyboardinterrupt|"
    r"enotfound|eai_again|registry|sandbox|environment|unreachable|no\s+such\s+file|"
    r"cannot\s+find|could\s+not\s+find|not\s+recogni[sz]ed|requires?\b|dependenc")


def failing_checks(text: str) -> tuple[int, int]:
    """(failing checks the agent reports, of them ones its sandbox could not run) in its text."""
    # Codex quotes the error inside the parentheses, which prose() would cut as a quotation, so
    # text with code in it is read as written.
    words = prose(text) if "`" not in (text or "") else (text or "")
    failing = [m.group(0) for m in FAILED_CHECK.finditer(words)]
    return len(failing), sum(1 for m in failing if _SANDBOX.search(m))


# --------------------------------------------------------------------------- the model


_TOKEN: Final = re.compile(r"[a-z][a-z0-9']+|[0-9]+|[^\sa-z0-9]", re.IGNORECASE)
_FEATURE_CAP: Final = 400  # tokens of a unit the model reads (the first ones: verdicts come early)


def features(text: str, kind: str, role: str, position: str, state: str | None,
             hits: list[tuple[Rule, str]]) -> list[str]:
    """The model's features of one unit: its words and word pairs (lower case, first
    :data:`_FEATURE_CAP`), what it is, who wrote it, where, the review state, and the rules' hits."""
    words = text if kind in ("title", "label") else prose(text)
    tokens = [t.lower() for t in _TOKEN.findall(words)[:_FEATURE_CAP]]
    tokens = [t for t in tokens if t.isalnum() or t in ("?", "!", "👍", "👎", "❌", "✅", "🚀")]
    out = [f"w:{t}" for t in tokens]
    out += [f"b:{a}_{b}" for a, b in itertools.pairwise(tokens)]
    role = "person" if role == "reviewer" else role
    kind = "review" if kind == "inline" else kind
    out += [f"kind:{kind}", f"role:{role}", f"pos:{position}", f"state:{state or 'none'}",
            f"kindrole:{kind}_{role}"]
    if not tokens:
        out.append("empty")
    if _QUESTION.search(words):
        out.append("question")
    out += [f"rule:{rule.verdict}" for rule, _ in hits]
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Model:
    """A linear model over :func:`features`: per class a bias and weights (multinomial logistic
    regression), and the classes it may answer (the others it weighs but leaves to the rules)."""

    version: str
    classes: tuple[str, ...]
    bias: dict[str, float]
    weights: dict[str, dict[str, float]]  # feature -> class -> weight
    decides: frozenset[str]  # the classes the model may give
    # A class given only when its probability reaches this (the others: the likeliest of them);
    # ``"class@role"`` sets it for one role's words (above 1: never from the model for them).
    thresholds: dict[str, float] = field(default_factory=dict)
    # A class given when a phrase rule that weighs but does not decide found it and the model
    # holds it at least this likely: the phrase proposes, the model confirms.
    confirms: dict[str, float] = field(default_factory=dict)

    @staticmethod
    def chances(scores: dict[str, float]) -> dict[str, float]:
        """Each class's probability (softmax over every class)."""
        top = max(scores.values())
        exp = {cls: math.exp(s - top) for cls, s in scores.items()}
        total = sum(exp.values())
        return {cls: e / total for cls, e in exp.items()}

    @functools.cached_property
    def held(self) -> frozenset[str]:
        """The classes with a threshold (for any role)."""
        return frozenset(k.split("@")[0] for k in self.thresholds)

    def threshold(self, cls: str, role: str) -> float | None:
        """How likely ``cls`` must be for the model to give it for ``role``'s words (None: as
        likely as any other class)."""
        return self.thresholds.get(f"{cls}@{role}", self.thresholds.get(cls))

    def sure(self, chance: dict[str, float], role: str) -> list[str]:
        """The thresholded classes whose probability (:meth:`chances`) reaches their threshold
        for ``role``."""
        return [cls for cls in sorted(self.held)
                if cls in self.decides and chance[cls] >= (self.threshold(cls, role) or 0.0)]

    def choose(self, chance: dict[str, float], role: str = "person") -> str:
        """The class the model gives for the probabilities ``chance``: a thresholded class that
        reaches its threshold, else the likeliest other class it decides."""
        sure = self.sure(chance, role)
        if sure:
            return sure[0]
        if max(chance, key=lambda c: (chance[c], c)) in self.held and "neutral" in self.decides:
            return "neutral"  # likeliest, but not sure enough: no verdict rather than the runner-up's
        return min((-p, c) for c, p in chance.items() if c in self.decides and c not in self.held)[1]

    def scores(self, feats: list[str]) -> dict[str, float]:
        total = dict(self.bias)
        for f in feats:
            row = self.weights.get(f)
            if row:
                for cls, w in row.items():
                    total[cls] += w
        return total

    def top_words(self, feats: list[str], cls: str, most: int = 3) -> tuple[str, ...]:
        """The features that pushed most towards ``cls``, as words ("w:broken" -> "broken")."""
        weighed = sorted(((row[cls], f) for f in feats if (row := self.weights.get(f)) and
                          row.get(cls, 0.0) > 0 and f.startswith(("w:", "b:")) and len(f) > 4),
                         key=lambda t: (not t[1].startswith("b:"), -t[0], t[1]))  # word pairs say more
        return tuple(f[2:].replace("_", " ") for _, f in weighed[:most])


MODEL_FILE: Final = "reader_model.json"


@functools.lru_cache(maxsize=1)
def model() -> Model | None:
    """The packaged model (None when the package holds none: the rules alone read then)."""
    try:
        text = resources.files(__package__).joinpath(MODEL_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None
    return model_from(json.loads(text))


def model_from(data: dict[str, Any]) -> Model:
    classes = tuple(data["classes"])
    weights: dict[str, dict[str, float]] = {}
    for feat, row in data["weights"].items():
        weights[feat] = {cls: float(w) for cls, w in zip(classes, row, strict=True) if w}
    return Model(str(data["version"]), classes, dict(zip(classes, map(float, data["bias"]), strict=True)),
                 weights, frozenset(data["decides"]),
                 {str(k): float(v) for k, v in (data.get("thresholds") or {}).items()},
                 {str(k): float(v) for k, v in (data.get("confirms") or {}).items()})


# --------------------------------------------------------------------------- reading


def read(text: str, kind: str = "comment", role: str = "person", position: str = "earlier",
         state: str | None = None, *, handles: tuple[str, ...] = (),
         reader: Model | Literal["packaged"] | None = "packaged") -> Reading:
    """One unit's verdict (see the module docstring). ``state`` is a review's state
    (``APPROVED``, ``CHANGES_REQUESTED``, ``COMMENTED``, ...); ``handles`` the agent's
    @-handles (lower case, no ``@``), whose mention asks the agent to act. ``reader``: the model
    to weigh with (``"packaged"``: the package's; ``None``: the rules alone)."""
    if reader == "packaged":
        return _read_packaged(text or "", kind, role, position, state, handles)
    return _read(text or "", kind, role, position, state, handles, reader)


@functools.lru_cache(maxsize=8192)
def _read_packaged(text: str, kind: str, role: str, position: str, state: str | None,
                   handles: tuple[str, ...]) -> Reading:
    return _read(text, kind, role, position, state, handles, model())


def _read(text: str, kind: str, role: str, position: str, state: str | None, handles: tuple[str, ...],
          fitted: Model | None) -> Reading:
    hits = rule_hits(text, kind, role)
    words = text if kind in ("title", "label") else prose(text)
    mentions = bool(handles) and any(f"@{h}" in words.lower() for h in handles)
    asked = bool(_QUESTION.search(words)) or mentions
    # Without a model the phrases that otherwise only propose decide too (the rules alone).
    found = _by_rules(hits, kind, role, state, every=fitted is None or kind in ("title", "label"))
    if found is not None and found.verdict == "relayed":
        # What is relayed is the person's, read as a person's words.
        inner = _by_rules([h for h in rule_hits(text, kind, "person") if h[0].verdict != "relayed"],
                          kind, "person", state, every=True)
        return Reading("relayed", found.words + (inner.words[:1] if inner else ()), found.person,
                       inner.verdict if inner else "neutral", True, found.rule)
    wrong = 0.0
    if fitted is not None and kind not in ("title", "label"):
        feats = features(text, kind, role, position, state, hits)
        chance = fitted.chances(fitted.scores(feats))
        wrong = round(chance.get("work_wrong", 0.0), 6)
        proposed = [(r, w) for r, w in hits if not r.decides and r.verdict in fitted.confirms]
        if proposed and (found is None or VERDICTS.index(proposed[0][0].verdict) < VERDICTS.index(found.verdict)):
            first = proposed[0][0]
            if chance[first.verdict] >= fitted.confirms[first.verdict]:
                said = tuple(dict.fromkeys(w for r, w in hits if r.verdict == first.verdict))[:3]
                found = Reading(first.verdict, said, rule=first.name)
        sure = fitted.sure(chance, _as_role(role))
        if found is not None and found.rule == "review state" and sure and \
                VERDICTS.index(sure[0]) < VERDICTS.index(found.verdict):
            found = None  # "changes requested" with words the model is sure call the work wrong
        if found is None:
            cls = fitted.choose(chance, _as_role(role))
            verdict: Verdict = _as_verdict(cls)
            rule = next((r for r, _ in hits if r.verdict == verdict), None)
            said = tuple(dict.fromkeys(w for r, w in hits if r.verdict == verdict))[:3]
            found = Reading(verdict, said or fitted.top_words(feats, cls), rule=rule.name if rule else None)
    if found is None:
        found = Reading("neutral")
    return Reading(found.verdict, found.words, found.person, found.relays,
                   found.verdict in SENDS_BACK or asked, found.rule, wrong)


def _as_role(role: str) -> str:
    """The role as the model knows it (a reviewer's words read as a person's)."""
    return "person" if role == "reviewer" else role


def _as_verdict(name: str) -> Verdict:
    for v in VERDICTS:
        if v == name:
            return v
    return "neutral"


def _by_rules(hits: list[tuple[Rule, str]], kind: str, role: str, state: str | None,
              every: bool = False) -> Reading | None:
    """The rules' verdict: the first deciding hit (``every``: any hit) in tie-break order, with the
    review state for a review with no decisive words (CHANGES_REQUESTED asks for a change,
    APPROVED approves)."""
    hits = [h for h in hits if every or h[0].decides]
    if hits:
        rule, words = hits[0]
        if rule.verdict == "relayed":
            return Reading("relayed", (words,), _person(words), rule=rule.name)
        if rule.verdict in ("approval",) and state == "CHANGES_REQUESTED":
            return Reading("change_request", ("changes requested",), rule="review state")
        return Reading(rule.verdict, tuple(dict.fromkeys(w for r, w in hits if r.verdict == rule.verdict))[:3],
                       rule=rule.name)
    if kind in ("review", "inline") and role != "agent":
        if state == "CHANGES_REQUESTED":
            return Reading("change_request", ("changes requested",), rule="review state")
        if state == "APPROVED":
            return Reading("approval", ("approved",), rule="review state")
    return None


_HANDLE_IN: Final = re.compile(_HANDLE)


def _person(words: str) -> str | None:
    found = _HANDLE_IN.search(words)
    return found.group(1) if found else None
