"""One detector for text that should never ship in a PR: prompt leakage, chat boilerplate and
unfilled PR-template text.

It is the single place these patterns live: the ``agent.text_hygiene`` and
``process.template_filled`` signals score its findings, and an evaluation whose people wrote an
instruction aimed at the AI judge (:data:`JUDGE_AIMED`) leaves the judge out
(``taskeval.signals.injection``). Hand-written because no library knows
GitHub PR templates or the chat-model tells below; each rule is a plain regex, and the table tests
in tests/test_signals.py hold positive and negative examples for every one.

Text inside fenced code blocks and inline code is ignored unless ``include_code`` is set: a PR
that *discusses* ``<|im_start|>`` is not leaking it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from typing import Final, Literal

from taskeval.evidence.vocabulary import blank_code, fold, in_windows
from taskeval.memo import by_identity
from taskeval.regex import Pattern

FindingKind = Literal["leakage", "boilerplate", "template"]
ALL_KINDS: Final[frozenset[FindingKind]] = frozenset({"leakage", "boilerplate", "template"})
MATCH_LIMIT: Final = 80


@dataclass(frozen=True, order=True)
class Finding:
    line: int  # 1-based line of the scanned text
    kind: FindingKind
    rule: str
    match: str  # the offending text, at most MATCH_LIMIT characters

    def describe(self) -> str:
        return f'{self.rule} ("{self.match}")'


_RULE_SOURCES: Final[tuple[tuple[FindingKind, str, str], ...]] = (
    ("leakage", "ai-disclaimer",
     r"\bas an ai(?: language| coding)? (?:model|assistant)\b|\bas a large language model\b"),
    ("leakage", "instruction-override",
     r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?"
     r"(?:previous|prior|above|earlier|preceding)\s+(?:instructions|prompts?|directions|rules)\b"),
    ("leakage", "chat-template-token",
     r"<\|(?:im_start|im_end|im_sep|endoftext|system|user|assistant|eot_id|start_header_id|"
     r"end_header_id)\|>|\[/?INST\]|<</?SYS>>"),
    ("leakage", "system-prompt-echo",
     r"^[ \t]*(?:#+[ \t]*)?system(?: prompt| message)?[ \t]*:|<system(?:-reminder)?>|"
     r"\byou are (?:chatgpt|claude|copilot|gemini)\b|"
     r"\byou are an? (?:helpful|harmless|honest|large language|ai)\b[^.\n]{0,40}"
     r"\b(?:assistant|model|agent)\b|"
     r"\bmy (?:system )?(?:prompt|instructions) (?:says?|tells?|is|are)\b"),
    ("leakage", "tool-call-markup",
     r"</?(?:function_calls|tool_call|tool_use|tool_result|thinking)>"),
    ("leakage", "knowledge-cutoff",
     r"\b(?:my|as of my) (?:last )?(?:knowledge|training)(?: data)? "
     r"(?:cutoff|cut-off|update)\b|"
     r"\bI (?:don't|do not|cannot|can't) (?:browse|access) the internet\b"),
    ("leakage", "refusal",
     r"\bI(?:'m| am) (?:sorry|afraid),? but (?:as an ai|I (?:can't|cannot|am unable to))"),
    # Injection attempts aimed at an AI grader (the judge reads PR text as evidence).
    ("leakage", "role-prefix", r"^[ \t]*assistant[ \t]*:"),
    ("leakage", "grader-address",
     r"\b(?:note|message|hint|psa)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:(?:ai|llm)"
     r"(?:\s+(?:reviewer|grader|judge|evaluator|scorer|model))?|grader|evaluator|scorer)s?\b|"
     r"\b(?:give|score|rate|grade|award)\s+(?:it|this(?:\s+(?:pr|pull request|change))?|"
     r"every(?:\s+category)?|all(?:\s+categories)?|each category)\s+(?:a\s+)?(?:100(?![ \t]*(?:%|(?:"
     r"ms|s|sec|seconds?|min|minutes?|px|[kmg]b|requests?|retries|times|items|lines|chars)\b))|10/10|"
     r"full marks|a perfect score|the (?:maximum|highest) score)\b|\baiScore\W{0,3}100\b"),
    ("leakage", "jailbreak-roleplay",
     r"\byou are (?:now )?DAN\b|\bdo anything now\b|\ba judge without rules\b|"
     r"\b(?:act as|pretend (?:to be|you are)|you are now)\s+(?:an?\s+)?(?:unrestricted|"
     r"unfiltered|jailbroken|uncensored)\b"),
    ("leakage", "system-heading-override",
     r"^[ \t]*#{1,6}[ \t]*(?:system[ \t]+(?:prompt|message|instructions?)[ \t]+override|"
     r"(?:override|new)[ \t]+(?:the[ \t]+)?system[ \t]+(?:prompt|instructions?|rules))\b"),
    ("leakage", "fake-evidence",
     r'\{\s*"id"\s*:\s*"(?:pr|issue|commit|check|run|review|review-comment|comment|file|'
     r'timeline|log|audit):|<<<\s*(?:END|BEGIN)\b[^>\n]{0,80}>>>'),
    ("boilerplate", "chat-closing",
     r"\bI hope (?:this|that) helps\b|\blet me know if (?:you (?:need|have|want|would like)|"
     r"there(?:'s| is))\b|\bfeel free to (?:ask|reach out|let me know)\b|\bhappy coding\b"),
    ("boilerplate", "chat-opening",
     r"^[ \t]*(?:certainly|sure|absolutely|of course)[!,.][ \t]+(?:here|I(?:'ve| have| will|'ll))\b|"
     r"\bgreat question\b|^[ \t]*here(?:'s| is) (?:the|an?|your) (?:updated|revised|corrected|"
     r"modified|complete) (?:code|version|implementation|file)\b"),
    # "TODO: add timeline activities" is a note of remaining work, not an unfilled template: the
    # rule wants the template's own object (the description, this section).
    ("template", "todo-fill",
     r"\bTODO:?\s*(?:fill(?:\s+(?:in|me|this|out))?\b|(?:add|write|describe|complete)\s+"
     r"(?:a\s+|the\s+|your\s+)?(?:description|summary|details|this(?:\s+section)?|me|here)\b)|"
     r"\blorem ipsum\b"),
    # A placeholder is a phrase: "[add]" is a commit-subject tag and "[your-domain]" a URL part.
    ("template", "placeholder-token",
     r"\[(?:insert|add|describe|your|enter)\s[^\]\n]{1,60}\](?!\()|"
     r"#\s*\((?:issue|issue number|ticket)\)|#(?:x{3,}|n{3,})\b"),
)
# The leakage rules whose findings address a model that reads the text: they tell it what to do,
# claim to be its instructions or its own turn, or forge the evidence format. When the people
# of a PR wrote one, the evaluation leaves the AI judge out (taskeval.signals.injection). The
# others (a disclaimer, a refusal, a knowledge cutoff, chat-template tokens, thinking tags) show
# a model's own output shipped unreviewed; they cost hygiene points, not the judge.
JUDGE_AIMED: Final[frozenset[str]] = frozenset({
    "instruction-override", "system-prompt-echo", "tool-call-markup", "role-prefix", "grader-address",
    "jailbreak-roleplay", "system-heading-override", "fake-evidence"})


def aimed_at_judge(finding: Finding) -> bool:
    """Whether ``finding`` is an instruction aimed at the AI judge (:data:`JUDGE_AIMED`); of the
    tool-call markup, a thinking tag is a model's own output, not a forged tool call."""
    if finding.kind != "leakage" or finding.rule not in JUDGE_AIMED:
        return False
    return not (finding.rule == "tool-call-markup" and "thinking" in finding.match.lower())


_RULES: Final[tuple[tuple[FindingKind, str, re.Pattern[str]], ...]] = tuple(
    (kind, rule, re.compile(rx, re.IGNORECASE | re.MULTILINE)) for kind, rule, rx in _RULE_SOURCES
)
# Lower-case substrings at least one of which every match of the rule contains (read off the
# rule's literal words above); a text without any skips the rule's regex, the costly part of
# re-scoring. A rule missing here always runs. tests/test_signals.py checks each rule's examples.
_NEEDLES: Final[dict[str, tuple[str, ...]]] = {
    "ai-disclaimer": ("as an ai", "as a large language model"),
    "instruction-override": ("ignore", "disregard", "forget"),
    "chat-template-token": ("<|", "inst]", "sys>>"),
    "system-prompt-echo": ("system", "you are ", "my prompt", "my instructions"),
    "tool-call-markup": ("function_calls>", "tool_", "thinking>"),
    "knowledge-cutoff": ("knowledge", "training", "the internet"),
    "refusal": ("sorry", "afraid"),
    "role-prefix": ("assistant",),
    "grader-address": ("note", "message", "hint", "psa", "100", "10/10", "full marks",
                       "perfect score", "maximum score", "highest score"),
    "jailbreak-roleplay": ("you are ", "do anything now", "a judge without rules", "unrestricted",
                           "unfiltered", "jailbroken", "uncensored"),
    "system-heading-override": ("system",),
    "fake-evidence": ('"id"', "<<<"),
    "chat-closing": ("i hope ", "let me know if ", "feel free to ", "happy coding"),
    "chat-opening": ("certainly!", "certainly,", "certainly.", "sure!", "sure,", "sure.",
                     "absolutely!", "absolutely,", "absolutely.", "of course!", "of course,",
                     "of course.", "great question", "here's ", "here is "),
    "todo-fill": ("todo", "lorem ipsum"),
    "placeholder-token": ("[insert", "[add", "[describe", "[your", "[enter", "(issue", "(ticket)",
                          "#xxx", "#nnn"),
}
# A second, finer check for rules whose needles are common words ("note", "message"): patterns of
# which every match of the rule holds one in the case fold. Each starts with a plain word, which
# ``re`` finds as fast as ``str.find``, so they cost far less than the rule's case-insensitive
# branches tried at every word. Read off the rule above, like the needles.
_RULE_GATES: Final[dict[str, tuple[re.Pattern[str], ...]]] = {
    "grader-address": tuple(re.compile(x) for x in (
        *(rf"{word}\s+(?:to|for)\s" for word in ("note", "message", "hint", "psa")),
        "100", "10/10", "full marks", "perfect score", "maximum score", "highest score")),
}
_USE_NEEDLES = True  # False: every rule on every text (the tests compare both ways)


def within_one_line(pattern: re.Pattern[str]) -> bool:
    """Whether every match of ``pattern`` lies within one line and reads nothing after it (no
    lookahead, no ``\\Z``), read off the parsed pattern: whatever it does not know counts as
    no. Such a rule needs searching only on the lines holding one of its needles."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    def class_has_newline(items: list[tuple[object, object]]) -> bool | None:
        hit = False
        for op, arg in items:
            if op is c.LITERAL:
                hit |= arg == 10
            elif op is c.RANGE:
                hit |= arg[0] <= 10 <= arg[1]  # type: ignore[index]
            elif op is c.CATEGORY:
                hit |= arg not in (c.CATEGORY_NOT_SPACE, c.CATEGORY_WORD, c.CATEGORY_DIGIT)
            elif op is not c.NEGATE:
                return None  # unknown
        return hit != (bool(items) and items[0][0] is c.NEGATE)

    def local(parsed: object) -> bool:
        for op, arg in parsed:  # type: ignore[attr-defined]
            if op is c.LITERAL:
                ok = arg != 10
            elif op is c.NOT_LITERAL:
                ok = arg == 10
            elif op is c.ANY:
                ok = not pattern.flags & re.DOTALL
            elif op is c.IN:
                ok = class_has_newline(arg) is False
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                ok = local(arg[2])
            elif op is c.SUBPATTERN:
                ok = local(arg[3])
            elif op is c.BRANCH:
                ok = all(local(branch) for branch in arg[1])
            elif op is c.ASSERT or op is c.ASSERT_NOT:
                ok = arg[0] == -1 and local(arg[1])  # a lookbehind, within the line
            elif op is c.AT:
                ok = arg in (c.AT_BEGINNING, c.AT_BEGINNING_LINE, c.AT_BEGINNING_STRING,
                             c.AT_BOUNDARY, c.AT_NON_BOUNDARY, c.AT_END_LINE) or (
                    arg is c.AT_END and bool(pattern.flags & re.MULTILINE))
            else:
                ok = False
            if not ok:
                return False
        return True

    try:
        return local(_parser.parse(pattern.pattern, pattern.flags))
    except Exception:  # an unreadable pattern: assume the worst
        return False


# Rules whose matches lie within one line (see ``within_one_line``).
_ONE_LINE: Final[frozenset[str]] = frozenset(
    rule for _, rule, pattern in _RULES if within_one_line(pattern))


@dataclass(frozen=True)
class _Plan:
    """What a scan for some kinds of finding runs: their rules in table order and the needles
    that let a text skip them (worked out once per set of kinds, not once per text)."""

    rules: tuple[tuple[FindingKind, str, re.Pattern[str]], ...]
    prose_needles: tuple[tuple[str, str], ...]  # (needle, rule), looked for in the prose
    rendered_needles: tuple[tuple[str, str], ...]  # template rules': in the rendered text
    guarded: bool  # every rule has needles, so a text holding none has no rule to run


_PLANS: dict[frozenset[FindingKind], _Plan] = {}


def _plan(kinds: frozenset[FindingKind]) -> _Plan:
    plan = _PLANS.get(kinds)
    if plan is None:
        rules = tuple(r for r in _RULES if r[0] in kinds)
        plan = _PLANS[kinds] = _Plan(
            rules,
            tuple((n, rule) for kind, rule, _ in rules if kind != "template" for n in _NEEDLES.get(rule, ())),
            tuple((n, rule) for kind, rule, _ in rules if kind == "template"
                  for n in _NEEDLES.get(rule, ())),
            all(rule in _NEEDLES for _, rule, _ in rules),
        )
    return plan


# Template instructions: a finding on a plain line; on a heading only when its section is empty.
# The describe/explain form is an instruction only in the imperative (at the start of a line, or
# after "please"/"briefly"): "Added documentation to explain the change" is a report.
_INSTRUCTION: Final = re.compile(
    r"(?:^[^\w\n]*|\b(?:please|briefly|clearly)\s+)(?:describe|explain|summari[sz]e) "
    r"(?:your|the|what) (?:changes?|pr|pull request|problem|motivation)\b|"
    r"\bplease (?:describe|include|provide|explain|add) (?:a |the )?(?:summary|"
    r"description|details?|changes|context)\b|\bwhat does this (?:pr|pull request) do\?",
    re.IGNORECASE,
)
# False: every line searched for instructions, headings and task items (the tests compare).
_FAST_LINES = True
# Words every instruction contains, one per alternative above (none holds a space, which blanking
# a comment can create): only a line holding one can hold an instruction, and a text without any
# needs no search at all (the pattern tries every position of a long body).
_INSTRUCTION_NEEDLES: Final = ("describe", "explain", "summari", "please", "do?")


def _may_instruct(low: str) -> bool:
    """Whether a text whose case fold is ``low`` may hold template instruction text."""
    return not _FAST_LINES or any(needle in low for needle in _INSTRUCTION_NEEDLES)

_HEADING: Final = re.compile(r"^\s{0,3}#{1,6}\s")
# Comments such as "<!-- taskeval:evaluation -->", "<!-- branch-stack -->" or
# "<!-- START AGENT TIPS -->" (one token, or upper-case words) are machine markers, not placeholders.
_MACHINE_MARKER: Final = re.compile(
    r"<!--\s*(?:[\w.-]+(?::[\w.-]+)+|[a-z0-9]+(?:[-_.][a-z0-9]+)+|[A-Z0-9]+(?:[ _-][A-Z0-9]+)+)\s*-->"
)
# A template comment that allows the section to stay empty.
_MAY_STAY_EMPTY: Final = re.compile(r"(?i)\bleave (?:it |this )?(?:blank|empty)\b|\boptional\b")
# Blockquoted lines ("> ..."): someone else's words (the issue an agent quotes, a GitHub alert).
_QUOTED_LINE: Final = re.compile(r"^[ \t]{0,3}>.*$", re.MULTILINE)
# Double-quoted speech on one line ('The dialog reads: "... feel free to ask ..."') is quoted UI
# copy or someone else's words, not the author chatting; chat rules skip it.
_QUOTED_SPEECH: Final = re.compile(r'"[^"\n]{1,400}"|“[^”\n]{1,400}”')
# A checklist item of a template is generic: short ("Tests added", "Bugfix") or a first-person
# pledge ("I have updated the documentation"); other items are the author's own plan or test plan,
# which an unchecked box does not make a template.
_GENERIC_ITEM_WORDS: Final = 4
_PLEDGE: Final = re.compile(r"(?i)^(?:\*\*)?I(?: have|'ve| am|'m| agree| confirm)\b")
_TASK_ITEM: Final = re.compile(
    r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+\[([ xX])\][ \t]+\S", re.MULTILINE
)
_TASK_ITEM_PREFIX: Final = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+\[[ xX]\][ \t]+")


def _blank(text: str) -> str:
    """Same length, same newlines, no content: line numbers survive the removal."""
    return "\n".join(" " * len(line) for line in text.split("\n"))


def html_comments(text: str) -> list[tuple[int, int]]:
    """(start, end) of each HTML comment; an unclosed one runs to the end, as GitHub renders
    it. ``str.find`` instead of a lazy regex keeps this linear on hostile input."""
    spans = []
    pos = 0
    while (start := text.find("<!--", pos)) != -1:
        close = text.find("-->", start + 4)
        end = len(text) if close == -1 else close + 3
        spans.append((start, end))
        pos = end
    return spans


@lru_cache(maxsize=1024)
def blank_quotes(text: str) -> str:
    """``text`` with blockquoted lines blanked (same length and newlines): quoted text is not
    the author's own claim, template or chat (cached: the claims and task-reference signals read
    the same PR text)."""
    if ">" not in text:
        return text
    return _QUOTED_LINE.sub(lambda m: _blank(m.group(0)), text)


def blank_comments(text: str) -> str:
    parts, pos = [], 0
    for start, end in html_comments(text):
        parts += [text[pos:start], _blank(text[start:end])]
        pos = end
    return "".join([*parts, text[pos:]])


@lru_cache(maxsize=1024)
def visible_text(text: str) -> str:
    """What a reader of the rendered PR sees as prose: no HTML comments, no code (cached: the
    claims, task-list and description signals all read the PR body)."""
    return _blank_comments(_blank_code(text.replace("\r\n", "\n")))


def prose_length(text: str) -> int:
    """Characters of written description: no HTML comments, headings or runs of whitespace."""
    plain = blank_comments(text.replace("\r\n", "\n"))
    if not _FAST_LINES:
        kept = [line for line in plain.split("\n") if not _HEADING.match(line)]
        return len(" ".join(" ".join(kept).split()))
    # Only a line holding a "#" can be a heading: those lines are tested and left out, the rest
    # keep their newlines, so the words are those of the kept lines.
    parts, pos = [], 0
    at = plain.find("#")
    while at != -1:
        start = plain.rfind("\n", 0, at) + 1
        end = plain.find("\n", at)
        end = len(plain) if end == -1 else end
        if _HEADING.match(plain[start:end]):
            parts.append(plain[pos:start])
            pos = end
        at = plain.find("#", end)
    parts.append(plain[pos:])
    return len(" ".join("".join(parts).split()))


def task_items(text: str) -> list[bool]:
    """Checked state of each markdown task-list item outside code and comments."""
    shown = visible_text(text)
    if _FAST_LINES and "[ ]" not in shown and "[x]" not in shown and "[X]" not in shown:
        return []  # every item holds one of them
    return [m.group(1) != " " for m in _TASK_ITEM.finditer(shown)]


class _Lines:
    """Offset -> 1-based line number by bisection, so many findings stay cheap. The line starts
    are found on the first lookup: most texts have no finding and never need them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] | None = None

    def of(self, pos: int) -> int:
        if self.starts is None:
            self.starts = [0, *accumulate(len(line) + 1 for line in self.text.split("\n")[:-1])]
        return bisect_right(self.starts, pos)


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MATCH_LIMIT else flat[: MATCH_LIMIT - 1] + "…"


def _sections(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line indexes of each heading-delimited section, heading line included."""
    starts = [0] + [i for i, line in enumerate(lines) if i > 0 and _HEADING.match(line)]
    return [(s, (starts[n + 1] - 1) if n + 1 < len(starts) else len(lines) - 1)
            for n, s in enumerate(starts)]


def _template_findings(prose: str, own: str, low: str | None = None) -> list[Finding]:
    """Placeholders left as is: template comments and instruction headings over empty sections,
    instruction text in prose, task lists whose every box is unchecked. ``own`` is ``prose``
    without blockquotes: a quote fills a section, but its words are not the author's. ``low``:
    ``fold(prose)``, when the caller has it."""
    instructs = _may_instruct(fold(prose) if low is None else low)
    # Each finding below needs an HTML comment, instruction text or a task-list item; without
    # any of them (most texts) there is nothing to find. The two patterns cannot span a line, so
    # one search over the text answers for every line.
    if "<!--" not in prose and not _has_task_item(prose) \
            and not (instructs and _INSTRUCTION.search(prose)):
        return []
    out: list[Finding] = []
    no_comments = blank_comments(prose)
    raw_lines = own.split("\n")
    filled = no_comments.split("\n")
    blanked = blank_comments(own)
    lines = blanked.split("\n")
    sections = _sections(lines)
    section_starts = [first for first, _ in sections]
    where = _Lines(prose)
    first_comment: dict[int, tuple[int, str]] = {}  # section index -> (line, comment)
    for start, end in html_comments(prose):
        comment = prose[start:end]
        if not _MACHINE_MARKER.fullmatch(comment):
            at = where.of(start)
            first_comment.setdefault(bisect_right(section_starts, at - 1) - 1, (at, comment))
    for index, (first, last) in enumerate(sections):
        heading = _HEADING.match(lines[first]) is not None
        body = filled[first + 1 : last + 1] if heading else filled[first : last + 1]
        if any(line.strip() for line in body) or (heading and _has_subsection(sections, index, lines)):
            continue
        if index in first_comment:
            at, comment = first_comment[index]
            if not _MAY_STAY_EMPTY.search(comment):
                out.append(Finding(at, "template", "html-placeholder", _clip(comment)))
        if heading and _INSTRUCTION.search(raw_lines[first]):
            out.append(Finding(first + 1, "template", "instruction-text", _clip(raw_lines[first])))
    # Only a line holding one of the instruction words can hold an instruction.
    candidates = (_lines_holding(blanked, _INSTRUCTION_NEEDLES) if instructs else []) \
        if _FAST_LINES else range(len(lines))
    for n in candidates:
        line = lines[n]
        match = _INSTRUCTION.search(line)
        if match and not _HEADING.match(line):
            out.append(Finding(n + 1, "template", "instruction-text", _clip(match.group(0))))
    # Sections holding a template comment: a checklist there is the template's own.
    scaffolded = set(first_comment)
    run: list[tuple[int, bool]] = []
    for n, line in enumerate([*lines, "end"]):
        item = _TASK_ITEM.match(line)
        if item:
            run.append((n, item.group(1) != " "))
        elif line.strip():
            if len(run) >= 2 and not any(checked for _, checked in run) and (
                bisect_right(section_starts, run[0][0]) - 1 in scaffolded
                or all(_is_generic_item(lines[i]) for i, _ in run)
            ):
                out.append(Finding(run[0][0] + 1, "template", "unchecked-checklist",
                                   _clip(f"{len(run)} unchecked items: {lines[run[0][0]]}")))
            run = []
    return out


def _has_task_item(text: str) -> bool:
    """``_TASK_ITEM.search(text)``, skipped when no "[ ]", "[x]" or "[X]" (which every item
    holds) is in the text: the pattern starts at every line of a long body."""
    return ("[ ]" in text or "[x]" in text or "[X]" in text or not _FAST_LINES) \
        and _TASK_ITEM.search(text) is not None


def _lines_holding(text: str, needles: tuple[str, ...]) -> list[int]:
    """0-based indexes, in order, of the lines of ``text`` whose case fold holds a needle."""
    low = fold(text)
    if len(low) != len(text):
        return list(range(text.count("\n") + 1))
    found: set[int] = set()
    for needle in needles:
        at, line, counted = low.find(needle), 0, 0
        while at != -1:
            line += text.count("\n", counted, at)  # from the last one counted: linear
            counted = at
            found.add(line)
            end = text.find("\n", at)
            at = -1 if end == -1 else low.find(needle, end)
    return sorted(found)


def _heading_level(line: str) -> int:
    return len(line.strip().split(" ", 1)[0])


def _has_subsection(sections: list[tuple[int, int]], index: int, lines: list[str]) -> bool:
    """Whether the next section is a deeper heading (its content fills this one)."""
    if index + 1 >= len(sections):
        return False
    first, nxt = sections[index][0], sections[index + 1][0]
    return _heading_level(lines[nxt]) > _heading_level(lines[first])


def _is_generic_item(line: str) -> bool:
    text = _TASK_ITEM_PREFIX.sub("", line)
    return len(text.split()) <= _GENERIC_ITEM_WORDS or _PLEDGE.match(text) is not None


def _in_lines(
    pattern: re.Pattern[str], text: str, low: str, needles: tuple[str, ...]
) -> Iterator[re.Match[str]]:
    """``pattern.finditer(text)`` for a pattern whose matches lie within one line and hold one of
    ``needles`` in ``low`` (a case fold with ``text``'s length and newlines): only the lines
    holding a needle are searched (``endpos`` at the newline reads as the newline does for
    ``\\b``, and ``^`` still sees the line start)."""
    if len(low) != len(text):
        yield from pattern.finditer(text)
        return

    def line(at: int) -> tuple[int, int]:
        end = text.find("\n", at)
        return text.rfind("\n", 0, at) + 1, len(text) if end == -1 else end

    yield from in_windows(pattern, text, low, needles, line)


@lru_cache(maxsize=1024)
def _blank_code(text: str) -> str:
    """:func:`blank_code`, skipped when there is no backtick or tilde fence to blank."""
    return blank_code(text) if "`" in text or "~~~" in text else text


def _blank_comments(text: str) -> str:
    return blank_comments(text) if "<!--" in text else text


def detect_text_issues(
    text: str | None, *, include_code: bool = False, standard: tuple[Pattern, ...] = (),
    kinds: frozenset[FindingKind] = ALL_KINDS,
) -> list[Finding]:
    """Every leakage, boilerplate and template finding in ``text``: by line, one per rule a line.

    ``standard``: texts an agent writes by design (its session link, footer, firewall notice,
    the issue it quotes; see ``standard_texts`` in taskeval/agent_table.py). They are blanked first, so
    what an agent is expected to write never counts as leakage, boilerplate or template text.
    ``kinds``: only findings of these kinds, exactly those the full scan gives for them.
    """
    if not text:
        return []
    if standard:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        live = _may_match(text, standard) if _FAST_STANDARD else standard
        if live:
            text = blank_matches(text, live)
    if not _BY_KIND:
        return [f for f in _detect(text, include_code) if f.kind in kinds]
    return list(_detect(text, include_code, True, kinds))


# A caller asking for some kinds of finding gets only the rules of those kinds run: the hygiene
# signal wants leakage and boilerplate, the template signal only template findings, and each
# would otherwise pay for the other's rules on the same text. Findings of one rule never depend
# on another rule's, so this changes nothing but the time (the tests switch it off to compare).
_BY_KIND = True


@lru_cache(maxsize=2048)
def blank_matches(text: str, patterns: tuple[Pattern, ...]) -> str:
    """``text`` with every match of ``patterns`` overwritten by a neutral letter (newlines kept,
    so the line numbers of what remains do not move; not spaces, which would leave a section
    looking empty, i.e. an unfilled template)."""
    spans = [(m.start(), m.end()) for p in patterns for m in p.finditer(text) if m.end() > m.start()]
    if not spans:
        return text
    parts, pos = [], 0
    for start, end in sorted(spans):  # overlapping spans are one span
        if end > pos:
            start = max(start, pos)
            parts += [text[pos:start], "\n".join("z" * len(line) for line in text[start:end].split("\n"))]
            pos = end
    return "".join([*parts, text[pos:]])


def _may_match(text: str, patterns: tuple[Pattern, ...]) -> tuple[Pattern, ...]:
    """The ``patterns`` whose fixed words (see ``required_text``) ``text`` holds: the others
    cannot match it, and need no search of a long body for a "^.{0,4}Generated with ..." line
    it does not have (nor a cache lookup, which hashes every pattern)."""
    low: str | None = None
    live = []
    for pattern, need in _gates(patterns):
        if need is not None:
            words, folded = need
            if folded and low is None:
                low = fold(text)
            if words not in (low if folded and low is not None else text):
                continue
        live.append(pattern)
    return tuple(live)


_FAST_STANDARD = True  # False: search every pattern (the tests compare both ways)


@by_identity  # per tuple of patterns: the agent table's, the same for every bundle
def _gates(patterns: tuple[Pattern, ...]) -> tuple[tuple[Pattern, tuple[str, bool] | None], ...]:
    """Each pattern with its fixed words (:func:`required_text`)."""
    return tuple((p, required_text(p)) for p in patterns)

@lru_cache(maxsize=4096)  # per pattern: _gates' tuples are made per agent rule and config
def required_text(pattern: Pattern) -> tuple[str, bool] | None:
    """The longest run of plain characters (4 or more) at the top level of ``pattern``, so in
    every match, and whether it is folded: under IGNORECASE it is lower-cased and ASCII only, to
    be looked for in ``fold(text)`` (see ``fold``), else looked for in the text as it is.

    Read off the parsed pattern once per pattern (the agent table's patterns, or a repository's):
    a group, repeat, class or alternative ends a run, so only characters every match holds count.
    """
    folded = bool(pattern.flags & re.IGNORECASE)
    best = ""
    try:
        items = list(re._parser.parse(pattern.pattern, pattern.flags))  # type: ignore[attr-defined]
    except Exception:  # an unreadable pattern simply gets no shortcut
        items = []
    run: list[str] = []
    for op, arg in [*items, (None, None)]:
        if op is re._constants.LITERAL and not (folded and arg >= 128):  # type: ignore[attr-defined]
            run.append(chr(arg).lower() if folded else chr(arg))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    return (best, folded) if len(best) >= 4 else None


@lru_cache(maxsize=2048)
def _detect(
    text: str, include_code: bool, prefilter: bool = True,
    kinds: frozenset[FindingKind] = ALL_KINDS,
) -> tuple[Finding, ...]:
    """Pure and cached: a PR body is read by several signals, and agents repeat their texts.
    ``prefilter=False`` runs every rule on every text (the tests compare both ways); ``kinds``
    limits the rules run (and template structure read) to findings of those kinds."""
    normal = text.replace("\r\n", "\n").replace("\r", "\n")
    prose = normal if include_code else _blank_code(normal)
    low_prose = fold(prose)
    # Leaks hidden in HTML comments or quotes still count; template and chat rules only look at
    # what renders as the author's own words (no comments, no blockquoted text).
    template = "template" in kinds
    own = blank_quotes(prose) if template else None
    rendered = _blank_comments(own) if own is not None else prose
    # A rule whose every match contains one of its needles (see _NEEDLES) cannot match a text
    # whose case fold (see ``fold``) has none.
    plan = _plan(kinds)
    rules = plan.rules
    low_rendered = low_prose
    if prefilter and _USE_NEEDLES:
        hit = {rule for needle, rule in plan.prose_needles if needle in low_prose}
        if plan.rendered_needles:
            low_rendered = low_prose if rendered is prose else fold(rendered)
            hit.update([rule for needle, rule in plan.rendered_needles if needle in low_rendered])
        if not hit and plan.guarded:
            if not template:
                return ()  # most commit messages and comments: no needle, nothing else to read
            rules = ()
        else:
            rules = tuple(r for r in rules if (r[1] in hit or r[1] not in _NEEDLES) and (
                r[1] not in _RULE_GATES or any(gate.search(
                    low_rendered if r[0] == "template" else low_prose) for gate in _RULE_GATES[r[1]])))
    if own is None:
        own = rendered = blank_quotes(prose)
    chat: str | None = None  # made when a chat rule runs: most texts have none of their needles
    where = _Lines(prose)
    found: dict[tuple[int, str], Finding] = {}
    for kind, rule, pattern in rules:
        if kind == "leakage":
            scanned = prose
        elif kind == "template":
            scanned = rendered
        else:
            if chat is None:
                quoted = '"' in own or "“" in own
                chat = _QUOTED_SPEECH.sub(lambda m: _blank(m.group(0)), own) if quoted else own
            scanned = chat
        needles = _NEEDLES.get(rule) if rule in _ONE_LINE and prefilter and _USE_NEEDLES else None
        if needles:  # only the lines holding a needle (of the fold they were looked for in)
            low = low_rendered if kind == "template" else low_prose
            matches: Iterable[re.Match[str]] = _in_lines(pattern, scanned, low, needles)
        else:
            matches = pattern.finditer(scanned)
        for match in matches:
            line = where.of(match.start())
            found.setdefault((line, rule), Finding(line, kind, rule, _clip(match.group(0))))
    if not template:
        return tuple(sorted(found.values()))
    for f in _template_findings(prose, own, low_prose):
        found.setdefault((f.line, f.rule), f)
    return tuple(sorted(found.values()))
