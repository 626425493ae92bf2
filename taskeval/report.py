"""The PR comment and step summary, rendered from a stored result alone.

Every string that a PR author controls (titles, rationales quoting PR text, signal reasons that
name files or commits) goes through :func:`safe_inline`: it cannot forge the marker, open HTML,
ping people or teams, or make a link (an address in it is shown as text). The only links are
taskeval's own, to the evidence GitHub reported. The whole comment is kept under GitHub's
65,536-character limit by dropping detail in a fixed order, never by cutting markdown mid-table.
"""

from __future__ import annotations

import re

from taskeval.contract import COMMENT_MARKER, PROVISIONAL_BELOW, is_provisional
from taskeval.contract import overall_coverage as weighted_coverage
from taskeval.models import CategoryScore, EvaluationResult, Signal, Turns
from taskeval.signals.wording import duration

MARKER = COMMENT_MARKER
GITHUB_COMMENT_LIMIT = 65_536
# Headroom for multi-byte characters and GitHub's own accounting.
COMMENT_BUDGET = 60_000

CATEGORY_TITLES = {
    "agentPerformance": "Agent performance",
    "taskOutcomeQuality": "Task outcome quality",
    "processCompliance": "Process compliance",
}
BAND_ICONS = {
    "failing": "🔴",
    "weak": "🟠",
    "acceptable": "🟡",
    "strong": "🟢",
    "excellent": "🟢",
}

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~>])")
# GitHub turns bare addresses into links (GFM's extended autolinks: "http://", "https://",
# "ftp://", "www." and e-mail addresses, also as "mailto:" and "xmpp:"), and "@name" into a
# mention. A word joiner after "://", after "www" and after every "@" keeps the text readable
# but leaves nothing to link or to notify: no link in the comment comes from untrusted text.
_LINKABLE = re.compile(r"(?<=:)(?=//)|(?i:www)(?=\.)|@")
_UNSAFE_URL = re.compile(r"[\s<>`]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def safe_inline(text: str | None, limit: int = 300) -> str:
    """One line of untrusted text made inert: no HTML, no markdown, no mentions, no links, bounded."""
    if not text:
        return ""
    flat = _CONTROL.sub("", " ".join(str(text).split()))
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    flat = _MD_SPECIAL.sub(r"\\\1", flat)
    return _LINKABLE.sub(lambda m: f"{m.group(0)}\u2060", flat)


def safe_code(text: str | None, limit: int = 80) -> str:
    """Untrusted text for inside a code span: markdown is inert there, so only a backtick (which
    would close the span), line breaks and invisible characters need handling."""
    flat = _CONTROL.sub("", " ".join(str(text or "").split())).replace("`", "'").replace("<!--", "<!-\u2060-")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _link_map(result: EvaluationResult) -> dict[str, str]:
    return {
        item.id: item.url
        for group in result.evidence.groups
        for item in group.items
        if item.url and item.url.startswith(("https://", "http://"))
    }


def _cite(ids: list[str], links: dict[str, str], most: int = 4, *, table: bool = False) -> str:
    parts = []
    for evidence_id in ids[:most]:
        label = safe_code(evidence_id)
        if table:  # GFM splits cells on "|" before it sees code spans; "\|" survives as "|"
            label = label.replace("|", "\\|")
        url = links.get(evidence_id)
        parts.append(f"[`{label}`](<{url}>)" if url and not _UNSAFE_URL.search(url) else f"`{label}`")
    if len(ids) > most:
        parts.append(f"+{len(ids) - most} more")
    return ", ".join(parts)


def _score_cell(score: int | None) -> str:
    return "—" if score is None else str(score)


def provisional(c: CategoryScore) -> bool:
    """Whether a category's band rests on too little of its weight to be taken as final."""
    return is_provisional(c.coverage)


def overall_coverage(result: EvaluationResult) -> float | None:
    """The share of the overall's weight that rests on data (taskeval.contract.overall_coverage)."""
    return weighted_coverage({c.category: c.coverage for c in result.category_scores})


def overall_provisional(result: EvaluationResult) -> bool:
    """Whether the overall rests on less than PROVISIONAL_BELOW of its weight: its band may move."""
    return is_provisional(overall_coverage(result))


# Why a closed, unmerged PR ended, as the headline says it before any number: the score of a PR
# the project closed for its own reasons grades the outcome, not the agent.
CLOSURE_WORDS = {
    "superseded": "superseded by other work",
    "duplicate": "a duplicate",
    "stale": "left to go stale",
    "declined": "declined by the project",
    "agent_failure": "the agent's failure",
    "withdrawn": "withdrawn by its author",
    "unknown": "why is not known",
}
PROJECT_REASONS = ("superseded", "duplicate", "stale", "declined")


def closure_words(result: EvaluationResult) -> str | None:
    """"closed unmerged: superseded by other work (the project's reason, not counted against the
    agent)", or None for a PR that is not closed unmerged."""
    c = result.closure
    if c is None:
        return None
    if c.counts_against_agent:
        whose = "counted against the agent"
    elif c.class_ in PROJECT_REASONS:
        whose = "the project's reason, not counted against the agent"
    else:
        whose = "not counted against the agent"
    return f"closed unmerged: {CLOSURE_WORDS.get(c.class_, c.class_)} ({whose})"


def headline(result: EvaluationResult) -> str:
    """The comment's first line (and the Action's summary's): the overall and its band, marked
    provisional when it rests on too little; a closed PR says why it ended first."""
    score = (f"{result.overall_score}/100 — {BAND_ICONS[result.overall_band]} {result.overall_band}"
             + (" (provisional)" if overall_provisional(result) else ""))
    ended = closure_words(result)
    return f"taskeval: {ended} — scored {score}" if ended else f"taskeval: {score}"


def coverage_text(c: CategoryScore) -> str:
    """"from 1 of 6 signals (20 % of its weight)": how sure the score is."""
    if c.signals_total is None or c.coverage is None:
        return "—"
    return (f"from {c.signals_conclusive} of {c.signals_total} signals "
            f"({round(c.coverage * 100)} % of its weight)")


def _category_rows(result: EvaluationResult) -> list[str]:
    rows = [
        "| Category | Score | Band | Deterministic | AI (advisory) | Weight | Based on |",
        "|---|---:|---|---:|---:|---:|---|",
    ]
    for c in result.category_scores:
        title = CATEGORY_TITLES[c.category] + ("" if c.conclusive else " (inconclusive)")
        band = f"{BAND_ICONS[c.band]} {c.band}" + (" (provisional)" if provisional(c) else "")
        rows.append(
            f"| {title} | **{c.final_score}** | {band} | "
            f"{c.deterministic_score} | {_score_cell(c.ai_score)} | {c.weight:.2f} | {coverage_text(c)} |"
        )
    if any(provisional(c) for c in result.category_scores):
        rows += ["", f"*Provisional: less than {round(PROVISIONAL_BELOW * 100)} % of the category's "
                     "signal weight had data, so its band may move when more evidence is seen.*"]
    return rows


def _overall_note(result: EvaluationResult) -> list[str]:
    coverage = overall_coverage(result)
    if coverage is None or not is_provisional(coverage):
        return []
    return [f"*Provisional overall: only {round(coverage * 100)} % of the overall's signal weight had data "
            f"(under {round(PROVISIONAL_BELOW * 100)} %), so its band may move when more evidence is seen.*",
            ""]


def turns_line(turns: Turns | None) -> str:
    """Whose time the PR's life was: the agent's turns against the wait for people."""
    if turns is None:
        return ""
    parts = [f"the agent's turns {duration(turns.agent_hours, short=True)}",
             f"waiting for people {duration(turns.people_hours, short=True)}"]
    if turns.draft_hours:
        parts.append(f"in draft {duration(turns.draft_hours, short=True)}")
    if turns.first_human_response_hours is not None:
        parts.append(f"first human response after {duration(turns.first_human_response_hours, short=True)}")
    if turns.rounds:
        parts.append(f"sent back {turns.rounds} time{'s' if turns.rounds != 1 else ''}")
    tail = " (timeline not read: drafts and agent sessions unknown)" if turns.partial else ""
    return "**Time:** " + "; ".join(parts) + tail + "."


def ending_line(result: EvaluationResult, links: dict[str, str]) -> str:
    """Why the PR ended (closure) or whether its merge needed a rescue."""
    if result.closure is not None:
        c = result.closure
        blame = ("counted against the agent" if c.counts_against_agent else
                 "not counted against the agent")
        cite = _cite(c.evidence, links, 3)
        return (f"**Why it ended:** `{c.class_}` ({blame}) — {safe_inline(c.reason, 300)}"
                + (f" — {cite}" if cite else ""))
    if result.rescue is not None:
        r = result.rescue
        cite = _cite(r.evidence, links, 3)
        apart = (" (who wrote some commits is unknown: neither clean nor a rescue, counted apart)"
                 if r.class_ == "unknown" else "")
        return (f"**Merge:** `{r.class_}`{apart} — {safe_inline(r.reason, 300)}" + (f" — {cite}" if cite else ""))
    return ""


def _strongest(signals: list[Signal], most: int) -> tuple[list[Signal], list[Signal]]:
    """The signals that moved scores most: lowest-scoring concerns and highest-scoring strengths."""
    ok = [s for s in signals if s.status == "ok" and s.score is not None and s.weight > 0]
    concerns = sorted(
        (s for s in ok if (s.score or 0) < 60),
        key=lambda s: ((s.score or 0) - 100) * s.weight,
    )
    strengths = sorted(
        (s for s in ok if (s.score or 0) >= 80), key=lambda s: -(s.score or 0) * s.weight
    )
    return concerns[:most], strengths[:most]


def _reason_line(s: Signal, links: dict[str, str]) -> str:
    cite = _cite(s.evidence, links, 3)
    return f"- **{safe_inline(s.name, 80)}** ({s.score}/100): {safe_inline(s.reason)}" + (
        f" — {cite}" if cite else ""
    )


def _signal_table(signals: list[Signal], links: dict[str, str], cite_most: int) -> list[str]:
    rows = [
        "| Category | Signal | Value | Score | Weight | Points | Reason | Evidence |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for s in signals:
        value = "—" if s.value is None else f"{s.value:g}"
        score = "inconclusive" if s.status == "inconclusive" else _score_cell(s.score)
        rows.append(
            f"| {CATEGORY_TITLES[s.category]} | {safe_inline(s.name, 60)} | {value} | {score} | "
            f"{s.weight:g} | {s.contribution:.1f} | {safe_inline(s.reason, 200)} | "
            f"{_cite(s.evidence, links, cite_most, table=True)} |"
        )
    return rows


def _ai_section(cats: list[CategoryScore], links: dict[str, str], limit: int) -> list[str]:
    notes = {c.ai_note for c in cats}
    if all(c.ai_score is None for c in cats) and len(notes) == 1 and None not in notes:
        return [f"- No AI scores: {safe_inline(notes.pop(), 300)}. Finals are the deterministic scores."]
    lines = []
    for c in cats:
        title = CATEGORY_TITLES[c.category]
        if c.ai_score is not None and c.ai_rationale:
            cite = _cite(c.ai_evidence, links, 5)
            lines.append(f"- **{title}** ({c.ai_score}/100): {safe_inline(c.ai_rationale, limit)}"
                         + (f" — {cite}" if cite else ""))
        elif c.ai_note:
            lines.append(f"- **{title}**: no AI score — {safe_inline(c.ai_note, 200)}")
    return lines


_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


def agent_line(result: EvaluationResult) -> str:
    """"by Claude Code, run by @alice": who did the work. The operator is shown as a mention
    that cannot notify anyone (a word joiner follows the "@"), so the comment pings nobody."""
    agent = result.agent
    if agent is None:
        return ""
    if agent.id in ("human", "unknown-bot"):
        return ""
    text = f"by {safe_inline(agent.name, 60)}"
    if agent.operator:
        who = agent.operator
        shown = f"@\u2060{who}" if _LOGIN.match(who) else safe_inline(who, 60)
        text += f", run by {shown}"
    if agent.confidence == "likely":
        text += " (likely, from its marks)"
    return text


def _render(result: EvaluationResult, detail: int) -> str:
    """``detail`` 3 = everything; each step down drops the bulkiest optional part."""
    links = _link_map(result)
    pr = result.pull_request
    agent = agent_line(result)
    out = [
        MARKER,
        f"## {headline(result)}",
        "",
        f"Evaluation of #{pr.number} *{safe_inline(pr.title, 120)}* "
        + (agent or f"by `{safe_code(pr.author, 60)}`")
        + f" at `{result.head_sha[:7]}` "
        f"({'merged' if pr.merged else 'not merged'}; trigger: {safe_inline(result.trigger, 40)}).",
        "",
        *_overall_note(result),
        *_category_rows(result),
        "",
    ]
    ending, time = ending_line(result, links), turns_line(result.turns)
    if ending or time:
        out += [line for line in (ending, time) if line] + [""]
    if result.warnings:
        out.append("> [!WARNING]")
        out.extend(f"> {safe_inline(w, 400)}" for w in result.warnings[:10])
        if len(result.warnings) > 10:
            out.append(f"> …and {len(result.warnings) - 10} more (see the JSON result).")
        out.append("")
    concerns, strengths = _strongest(result.signals, 5 if detail >= 1 else 3)
    if concerns:
        out += ["### What pulled the score down", *[_reason_line(s, links) for s in concerns], ""]
    if strengths:
        out += ["### What went well", *[_reason_line(s, links) for s in strengths], ""]
    inconclusive = [s for s in result.signals if s.status == "inconclusive"]
    if inconclusive:
        names = ", ".join(safe_inline(s.name, 60) for s in inconclusive)
        out += [f"*Inconclusive (no data, left out of the means):* {names}", ""]
    ai = _ai_section(result.category_scores, links, 600 if detail >= 2 else 200)
    if ai:
        model = f" `{safe_code(result.judge.model, 60)}`" if result.judge.model else ""
        cached = " (cached)" if result.judge.cached else ""
        out += [f"### AI judge{model}{cached} — advisory, at most 30 % of each category", *ai, ""]
    if detail >= 1:
        table = _signal_table(result.signals, links, 3 if detail >= 3 else 1)
        out += ["<details><summary>All signals</summary>", "", *table, "", "</details>", ""]
    out.append(
        f"<sub>taskeval scorer {safe_code(result.scorer_version, 40)} · schema "
        f"{safe_code(result.schema_version, 10)} · bundle `{result.bundle_hash[:12]}` · "
        f"config: `{safe_code(result.config.source, 80)}` · judge: {safe_code(result.judge.status, 20)}. "
        "Deterministic scoring is the authority; the AI share is advisory.</sub>"
    )
    return "\n".join(out) + "\n"


def render_comment(result: EvaluationResult) -> str:
    """The PR comment (also the step summary). Always under GitHub's comment limit."""
    for detail in (3, 2, 1, 0):
        text = _render(result, detail)
        if len(text) <= COMMENT_BUDGET:
            return text
    return text[: COMMENT_BUDGET - 40].rsplit("\n", 1)[0] + "\n\n*(comment shortened)*\n"
