"""What people and agents say in a PR, read as the turns and the closure need it.

Each table is a list of (kind, pattern) pairs matched case-insensitively on the rendered prose
only (no code, no HTML comments, no quoted lines), so a reviewer quoting the agent, or code that
happens to hold a phrase, is not read as what the reviewer said. Every table is kept narrow on
purpose: a phrase read wrongly moves blame to someone who did not earn it. The tables are tested
case by case in tests/test_turns.py (each kind with a hit, a miss and a negated or quoted form).
"""

from __future__ import annotations

import functools
import re
from typing import Final

from taskeval.evidence.vocabulary import fold

from .hygiene import visible_text

_QUOTE_LINE: Final = re.compile(r"^[ \t]*>.*$", re.MULTILINE)
# An inline quotation of someone else's words ("…" or “…”), at most a sentence long.
_INLINE_QUOTE: Final = re.compile(r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”")
# A negation just before a phrase ("not a breaking change", "no wrong approach here").
_NEGATION: Final = re.compile(
    r"(?i)\b(?:no|not|n't|never|without|nothing|non|hardly|isn't|aren't|wasn't|don't|doesn't)"
    r"\W+(?:\w+\W+){0,2}$")


@functools.lru_cache(maxsize=4096)
def prose(text: str) -> str:
    """The words a person wrote, as a reader sees them: no code, no comments, no quotations."""
    plain = visible_text(text or "")
    if ">" in plain:
        plain = _QUOTE_LINE.sub("", plain)
    if '"' in plain or "“" in plain:
        plain = _INLINE_QUOTE.sub(" ", plain)
    return plain


def _found(pattern: re.Pattern[str], text: str, negatable: bool) -> bool:
    for match in pattern.finditer(text):
        if not negatable or not _NEGATION.search(text[max(0, match.start() - 40):match.start()]):
            return True
    return False


def kinds(table: tuple[tuple[str, re.Pattern[str], bool], ...], text: str) -> list[str]:
    """The kinds of ``table`` (kind, pattern, negatable) whose pattern the prose of ``text``
    holds, in table order; a negatable kind does not count when a negation stands just before."""
    words = prose(text)
    if not words.strip():
        return []
    return [kind for kind, pattern, negatable in table if _found(pattern, words, negatable)]


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# --------------------------------------------------------------------------- verdicts on the work

# A person's verdict that the work itself is wrong (beyond agent.objections' requests for a fix).
# These decide the closure class ``agent_failure`` and count in agent.objections.
VERDICTS: Final[tuple[tuple[str, re.Pattern[str], bool], ...]] = (
    ("says it breaks compatibility", _p(r"\bbreaking\s+(?:change|changes|api|behaviou?r)\b|"
                                        r"\bbreaks\s+(?:backwards?\s+)?compat"), True),
    ("calls the approach wrong", _p(
        r"\b(?:wrong|bad|incorrect|flawed|misguided)\s+(?:approach|direction|fix|solution|way|place|"
        r"layer|abstraction)\b|\bnot\s+the\s+(?:right|correct|proper)\s+(?:approach|way|fix|"
        r"solution|place|direction)\b|\bthis\s+is\s+not\s+(?:how|what)\s+(?:we|i)\s+(?:want|asked|"
        r"meant|need)"), False),
    ("says it does not do the task", _p(
        r"\b(?:does\s*n[o']?t|doesn't|did\s*n[o']?t|didn't)\s+(?:actually\s+)?(?:fix|solve|address|"
        r"resolve|implement|do)\s+(?:the|this|that|anything|what)\b|\bnot\s+what\s+(?:i|we)\s+"
        r"(?:asked|wanted|meant|need)|\bmakes?\s+no\s+sense\b|\b(?:rubbish|garbage|nonsense|"
        r"useless|hallucinat\w*)\b|\boff\s+(?:the\s+)?(?:track|rails)\b|\bgone\s+wild\b|"
        r"\bburn(?:ed|t)?\s+(?:it\s+)?with\s+fire\b"), True),
    ("says it is broken", _p(
        r"\b(?:this|that|it|the\s+(?:change|code|fix|pr|implementation))\s+(?:is|was|looks|seems)\s+"
        r"(?:completely\s+|totally\s+|still\s+)?(?:broken|wrong|incorrect|buggy|invalid)\b|"
        r"\bthat\s+broke\b|\bdefinitely\s+(?:wrong|incorrect)\b|\bthe\s+error\s+is\s+still\b"), True),
    ("asks to scrap it", _p(
        r"\bkill\s+(?:the|this)\s+experiment\b|\b(?:scrap|abandon|throw\s+away)\s+(?:this|it|the\s+"
        r"(?:pr|change|experiment))\b"), True),
)


def verdicts(text: str) -> list[str]:
    """The kinds of verdict on the work that a comment makes."""
    return kinds(VERDICTS, text)


_THUMBS_DOWN: Final = re.compile(r"^\s*(?:👎|:-1:|:thumbsdown:|-1)\s*$")


def thumbs_down(text: str) -> bool:
    """A reply that is only a 👎 (GitHub's reactions themselves are not collected)."""
    return bool(_THUMBS_DOWN.match(prose(text)))


# --------------------------------------------------------------------------- objections

# Phrases with which a person says the work is wrong or sends it back for a fix. Matched on the
# rendered prose only (no code, no quoted lines), case-insensitively. Kept narrow on purpose: a
# false "objection" costs the agent points it did not lose.
OBJECTION_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("asks for a fix", re.compile(
        r"(?i)\b(?:please|pls|plz|can you|could you|you need to|you should)\s+(?:also\s+)?"
        r"(?:fix|correct|revert|undo|redo|address|resolve|repair)\b")),
    ("says it does not work", re.compile(
        r"(?i)\b(?:does\s*n[o']?t|doesn't|do\s+not|don't|did\s*n[o']?t|didn't|is\s*n[o']?t|isn't|"
        r"still\s+not|not)\s+(?:work(?:s|ing)?|compile|build|run|pass|fix(?:ed)?\s+(?:it|the|this)|"
        r"solve|address|what\s+(?:i|we)\s+(?:asked|wanted|meant))\b")),
    ("says it is wrong", re.compile(
        r"(?i)\b(?:this|that|it|these|the\s+(?:change|code|fix|implementation|approach|test|tests|"
        r"logic))\s+(?:is|are|was|were|looks|seems|still)\s+(?:still\s+)?(?:wrong|incorrect|broken|"
        r"buggy|invalid|not\s+(?:right|correct))\b|\bthat'?s\s+(?:wrong|incorrect|not\s+right)\b")),
    ("says it breaks something", re.compile(
        r"(?i)\b(?:this|that|it|the\s+change)\s+(?:breaks|broke|has\s+broken|will\s+break)\b")),
    ("reports failures", re.compile(
        r"(?i)\b(?:the\s+)?(?:tests?|build|ci|checks?|pipeline|lint(?:er)?)\s+(?:are\s+|is\s+)?"
        r"(?:still\s+)?(?:fail(?:s|ing|ed)?|broken|red)\b|\b(?:compil(?:e|ation)|syntax|type)\s+"
        r"errors?\b|\bstill\s+(?:fail(?:s|ing)?|broken|wrong)\b|\b(?:failing|broken)\s+(?:tests?|build|ci|"
        r"checks?)\b")),
)

# Words every match of each kind holds (one of each pattern's required word groups above): a
# comment whose case fold has none of them cannot make that objection, and its pattern is not
# searched (tests/test_rescore_fast_paths.py checks them on every example).
_OBJECTION_NEEDLES: Final[dict[str, tuple[str, ...]]] = {
    "asks for a fix": ("fix", "correct", "revert", "undo", "redo", "address", "resolve", "repair"),
    "says it does not work": ("work", "compile", "build", "run", "pass", "fix", "solve", "address",
                              "what"),
    "says it is wrong": ("wrong", "correct", "broken", "buggy", "invalid", "right"),
    "says it breaks something": ("break", "broke"),
    "reports failures": ("fail", "broken", "red", "error", "still"),
}


def objections(text: str) -> list[str]:
    """The kinds of objection a person's comment makes ("asks for a fix", ...), in table order."""
    # The needles are plain words, and hiding code, comments and quoted lines only blanks or
    # drops text without joining any, so a word of the prose is one of the comment as written:
    # the kinds whose words the comment lacks are left out before the prose is made.
    low = fold(text or "")
    kinds = [(kind, pattern) for kind, pattern in OBJECTION_PATTERNS
             if not (needles := _OBJECTION_NEEDLES.get(kind)) or any(n in low for n in needles)]
    if not kinds:
        return verdicts(text) + (["gives a thumbs-down"] if thumbs_down(text) else [])
    prose = visible_text(text or "")
    if ">" in prose:
        prose = _QUOTE_LINE.sub("", prose)
    found = [kind for kind, pattern in kinds if pattern.search(prose)]
    return found + [k for k in verdicts(text) if k not in found] + (
        ["gives a thumbs-down"] if thumbs_down(text) else [])


# --------------------------------------------------------------------------- requests

# A person asking the PR's side to do something: what hands the turn to the agent. "Thanks" and
# "LGTM" do not; a question or an instruction does.
REQUESTS: Final[tuple[tuple[str, re.Pattern[str], bool], ...]] = (
    ("asks", _p(r"\b(?:please|pls|plz|can\s+you|could\s+you|would\s+you|will\s+you|you\s+(?:should|"
                r"need\s+to|must)|we\s+(?:should|need\s+to)|let'?s|make\s+sure|don'?t\s+forget|"
                r"instead\s+of|rather\s+than|why\s+(?:did|do|does|is|are|not))\b"), False),
    ("instructs", re.compile(
        r"(?im)^[ \t]*(?:[-*][ \t]+)?(?:@\S+[ \t]+)?(?:add|remove|rename|use|change|update|fix|move|revert|"
        r"rebase|delete|replace|avoid|keep|drop|split|extract|refactor|handle|document|test|try|"
        r"undo|address|resolve|implement)\b"), False),
    ("asks a question", re.compile(r"\?(?:\s|$)"), False),
)


def asks(text: str, agent_handles: tuple[str, ...] = ()) -> bool:
    """Whether a comment asks the PR's side to act (a request, an instruction, a question or a
    mention of the agent's account)."""
    words = prose(text)
    if not words.strip():
        return False
    low = words.lower()
    if any(f"@{h}" in low for h in agent_handles):
        return True
    return any(_found(pattern, words, negatable) for _, pattern, negatable in REQUESTS)


# --------------------------------------------------------------------------- admissions

# The agent's own words that a check fails or that it could not finish. Codex writes its test
# runs as "- `cmd` *(fails: reason)*"; most such reasons on real PRs are the agent's sandbox (a
# missing tool or network), which says the work was not verified, not that it is broken.
FAILED_CHECK: Final = re.compile(
    r"(?i)\((?:fails?|failed|failing)\b[^)\n]{0,200}\)|\b(?:tests?|build|lint(?:ing)?|checks?|"
    r"type-?check(?:ing)?|compilation)\s+(?:still\s+)?(?:fail(?:s|ed)?|are\s+failing|is\s+failing|"
    r"did\s*n[o']?t\s+pass)\b|❌")
_SANDBOX: Final = re.compile(
    r"(?i)not\s+(?:found|installed|available)|no\s+module|missing|network|offline|internet|"
    r"connect|resolve|download|proxy|permission|timed?\s*out|timeout|keyboardinterrupt|"
    r"enotfound|eai_again|registry|sandbox|environment|unreachable|no\s+such\s+file|"
    r"cannot\s+find|could\s+not\s+find|not\s+recogni[sz]ed|requires?\b|dependenc")
GAVE_UP: Final = re.compile(
    r"(?i)\b(?:I|we)\s+(?:was|were|am|are)\s+(?:not\s+able|unable)\s+to\b|\bI\s+(?:could\s*n[o']?t|"
    r"couldn't|can't|cannot)\s+(?:get|make|run|fix|complete|finish|reproduce|build|resolve|"
    r"implement)\b|\b(?:ran\s+out\s+of\s+time|gave\s+up|giving\s+up)\b|\b(?:hit|encountered|ran\s+into)"
    r"\s+an?\s+(?:unexpected\s+)?error\s+while\s+(?:trying\s+to\s+)?work")


def admissions(text: str) -> tuple[int, int, bool]:
    """(failing checks the agent reports, of them ones its sandbox could not run, whether it
    says it could not finish) in text the agent wrote."""
    # Codex writes "- `cmd` *(fails: Cannot find module "x")*": the report quotes the error inside
    # the parentheses, which prose() would cut as a quotation, so text with code in it is read
    # as written (measured: reading it as prose changes agentPerformance on the labelled set).
    words = prose(text) if "`" not in (text or "") else (text or "")
    failing = [m.group(0) for m in FAILED_CHECK.finditer(words)]
    sandbox = sum(1 for m in failing if _SANDBOX.search(m))
    return len(failing), sandbox, bool(GAVE_UP.search(prose(text)))


# --------------------------------------------------------------------------- why a PR was closed

CLOSING_REASONS: Final[tuple[tuple[str, re.Pattern[str], bool], ...]] = (
    ("superseded", _p(
        r"\b(?:superseded|replaced|continued|carried\s+(?:on|over)|redone|followed\s+up|moved|"
        r"re-?opened|re-?submitted|re-?created)\s+(?:by|in|at|as|with|to|into|over\s+(?:at|in))\s+"
        r"(?:#\d+|https://\S+/pull/\d+|[0-9a-f]{7,40}\b|a\s+(?:new|separate|different)\s+pr)|"
        r"\bin\s+favou?r\s+of\s+(?:#\d+|https://\S+/pull/\d+|[0-9a-f]{7,40}\b|\w+)|\bmerged\s+"
        r"(?:via|in|as\s+part\s+of|with|through|into)\s+(?:#\d+|https://\S+/pull/\d+|[0-9a-f]{7,40}\b)|"
        r"\bcherry-?pick(?:ed)?\b|\bsupersed(?:ed|es|ing)\b|\b(?:opened|created|made)\s+(?:a\s+new\s+"
        r"(?:pr|one)|#\d+)|\bsee\s+#\d+\s+instead\b|\bclosing\s+for\s+#\d+"), True),
    ("duplicate", _p(
        r"\bduplicat(?:e|es|ed)\b|\balready\s+(?:been\s+)?(?:fixed|done|addressed|implemented|merged|"
        r"resolved|handled|covered|exists?|in\s+(?:main|master|place)|present|there|up[-\s]to[-\s]date|"
        r"using|uses|in\s+use|supported|configured|included|contains|includes)\b|\b(?:fixed|done|addressed|"
        r"resolved|implemented|solved)\s+(?:in|by|via|with)\s+(?:#\d+|https://\S+/pull/\d+)|\bnothing\s+"
        r"(?:to\s+(?:change|do|fix)|needs?\s+(?:to\s+)?chang)|\bno\s+changes?\s+(?:are\s+|were\s+)?"
        r"(?:needed|required|necessary)"), True),
    ("declined", _p(
        r"\bnot\s+(?:needed|necessary|planned|wanted|desired|a\s+priority|something\s+we|the\s+"
        r"direction|going\s+to\s+(?:merge|accept|take|do))\b|\bwon'?t\s+(?:fix|merge|accept|do|be\s+"
        r"merg)|\bout\s+of\s+scope\b|\bno\s+longer\s+(?:needed|relevant|necessary|applicable|"
        r"required)\b|\bdecided\s+(?:not|against|to\s+go|to\s+keep)\b|\bdo\s*n[o']?t\s+merge\b|"
        r"\bjust\s+(?:a\s+)?test(?:ing)?\b|\btesting\s+(?:copilot|the\s+agent|devin|codex|cursor|"
        r"claude)\b|\bexperiment(?:al|ing)?\b|\bmoot\b|\bnot\s+(?:worth|useful)\b|\bwe\s+(?:prefer|"
        r"would\s+rather)\b|\bdon'?t\s+(?:want|need)\s+(?:this|that|it)\b"), True),
    ("stale", _p(r"\bstale\b|\binactiv(?:e|ity)\b|\bno\s+(?:recent\s+)?activity\b|\babandoned\b"),
     True),
)

# Labels that say why a PR was closed, by class (matched on the label name, case-insensitively).
CLOSING_LABELS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("duplicate", _p(r"^duplicate$|\bduplicate\b")),
    ("stale", _p(r"\bstale\b|\binactive\b|\babandoned\b|\blifecycle/rotten\b")),
    ("declined", _p(r"\bwon'?t\s*fix\b|\bwontfix\b|\binvalid\b|\bnot\s+planned\b|\bdo\s*not\s*merge\b|"
                    r"\bexperiment|\bdeclined\b|\brejected\b|\bout\s+of\s+scope\b")),
)

# A title that says the PR was never meant to land.
TRIAL_TITLE: Final = _p(r"\bdo\s*n[o']?t\s+merge\b|\bdnm\b|^\s*\[?(?:test|testing|experiment|"
                        r"draft\s+test|wip\s+test)\b|\btest(?:ing)?\s+(?:pr|only|sdk\s+agent|"
                        r"copilot|the\s+agent)\b")


def closing_reasons(text: str) -> list[str]:
    return kinds(CLOSING_REASONS, text)
