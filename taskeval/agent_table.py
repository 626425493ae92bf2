"""The built-in agent table: which agents attribution knows, how each is recognised, who ran it,
and what it writes by design. How attribution uses each field: :mod:`taskeval.agents`.

Data only, importing nothing of taskeval: the config validates ``agents:`` entries against the
built-in ids, and attribution reads the config, so while the table lived in taskeval/agents.py
the two imported each other. ``taskeval.agents`` re-exports both names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

OperatorSource = Literal["author", "assignee", "reviewer", "requested-by", "co-author", "work-started"]


@dataclass(frozen=True)
class AgentRule:
    """One agent: how to recognise its PRs, who ran it, and what it writes by design.

    Logins and App slugs compare case-insensitively; every other entry is a regular expression
    (case-insensitive, multi-line: ``^``/``$`` match at line ends). The table's own run on Python's
    ``re``; those a repository's config gives run on RE2 (taskeval/regex.py), in linear time.
    """

    id: str
    name: str
    logins: tuple[str, ...] = ()  # the agent's own accounts: PR author, commit author/committer
    apps: tuple[str, ...] = ()  # GitHub App slugs seen as performed_via_github_app
    branch_prefixes: tuple[str, ...] = ()  # head branch names start with one of these
    co_authors: tuple[str, ...] = ()  # regexes over Co-authored-by values ("Name <email>")
    text_marks: tuple[str, ...] = ()  # regexes over the PR description and commit messages
    operator: tuple[OperatorSource, ...] = ("author",)
    work_events: tuple[str, ...] = ()  # timeline events whose actor is the operator ("work-started")
    standard_texts: tuple[str, ...] = ()  # text it writes by design; never leakage/boilerplate
    standard_commits: tuple[str, ...] = ()  # commit subjects it writes by design


# The built-in table. Each entry's comment says where the marks were seen.
BUILTIN_RULES: Final[tuple[AgentRule, ...]] = (
    AgentRule(
        # AIDev-pop: all 1,405 Copilot PRs are authored by "Copilot" (type Bot); the agent assigns
        # the person who gave it the issue, requests their review and co-authors them on commits.
        id="copilot", name="GitHub Copilot",
        logins=("Copilot", "copilot-swe-agent[bot]", "copilot-swe-agent"),
        apps=("copilot-swe-agent",),
        branch_prefixes=("copilot/",),
        # "Copilot started work on behalf of alice": the timeline names the person it worked for.
        operator=("assignee", "work-started", "reviewer", "co-author"),
        work_events=("copilot_work_started",),
        standard_texts=(
            # The tips block it appends (between its own HTML-comment markers) and its one-liners.
            r"<!-- START COPILOT CODING AGENT TIPS -->(?s:.*?)(?:<!-- END COPILOT CODING AGENT TIPS -->|\Z)",
            r"^.{0,4}You can make Copilot smarter by setting up custom instructions.*$",
            r"^.{0,4}Share your feedback on Copilot coding agent.*$",
            r"^Thanks for (?:assigning this issue to me|asking me to work on this)\..*$",
            # The firewall warning: a quoted [!WARNING] block listing the hosts it could not reach.
            r"^> \[!WARNING\][ \t]*\n(?:>[ \t]*\n)?> <details>[ \t]*\n"
            r"> <summary>Firewall rules blocked me[^\n]*(?:\n>[^\n]*)*",
            # The issue it was given, quoted verbatim: the human's words, not the agent's.
            r"^Original issue description:[ \t]*\n(?:[ \t]*\n)?(?:>[^\n]*(?:\n|\Z))+",
            r"<details>\s*<summary>\s*Original prompt\s*</summary>(?s:.*?)(?:</details>|\Z)",
        ),
        standard_commits=(r"^Initial plan(?: for issue)?$",),
    ),
    AgentRule(
        # AIDev-pop: authored by the person who ran it; 47 % of PRs end with the task link, the
        # rest carry only the "codex/" branch, which the corpus does not hold.
        id="codex", name="OpenAI Codex",
        logins=("chatgpt-codex-connector[bot]", "openai-codex[bot]"),
        apps=("chatgpt-codex-connector",),
        branch_prefixes=("codex/",),
        text_marks=(r"https://chatgpt\.com/codex/tasks/task_\w+",),
        operator=("author",),
        standard_texts=(r"^-{3,}[ \t]*\n+https://chatgpt\.com/codex/tasks/task_\w+[ \t]*$",
                        r"https://chatgpt\.com/codex/tasks/task_\w+"),
    ),
    AgentRule(
        # AIDev-pop: "🤖 Generated with [Claude Code](https://claude.ai/code)" footer and the
        # "Co-Authored-By: Claude <noreply@anthropic.com>" trailer, in descriptions and commits.
        id="claude-code", name="Claude Code",
        logins=("claude[bot]",),
        apps=("claude",),
        branch_prefixes=("claude/",),
        co_authors=(r"^claude\b[^<]*<[^>]*@anthropic\.com>", r"^claude\s*$",
                    r"^claude[- ](?:code|sonnet|opus|haiku)\b"),
        text_marks=(r"Generated with \[?Claude Code\b", r"https://claude\.ai/code\b"),
        operator=("author",),
        standard_texts=(r"^.{0,4}Generated with \[?Claude Code\]?(?:\(https://claude\.ai/code\))?.*$",
                        r"^Co-Authored-By:[ \t]*Claude\b.*$"),
    ),
    AgentRule(
        # AIDev-pop: all 2,509 Devin PRs are authored by "devin-ai-integration[bot]"; 97 % link
        # the session ("Link to Devin run") and most name the requester ("Requested by").
        id="devin", name="Devin",
        logins=("devin-ai-integration[bot]", "devin-ai-integration"),
        apps=("devin-ai-integration",),
        branch_prefixes=("devin/",),
        text_marks=(r"https://app\.devin\.ai/sessions/[0-9a-f]+",),
        operator=("requested-by", "assignee", "co-author"),
        standard_texts=(
            r"^(?:#+[ \t]*)?Link to Devin run:?[ \t]*\n?[ \t]*https://app\.devin\.ai/sessions/\S*.*$",
            r"https://app\.devin\.ai/sessions/[0-9a-f]+",
            r"^(?:#+[ \t]*)?\**Requested by:?\**:?[ \t]*(?:\n[ \t]*)?.*$",
        ),
    ),
    AgentRule(
        # AIDev-pop: Cursor's background agent commits as "cursoragent" (cursoragent@cursor.com)
        # in 135 of 137 PRs; the PR is opened from the user's account.
        id="cursor", name="Cursor",
        logins=("cursoragent", "cursor[bot]"),
        apps=("cursor",),
        branch_prefixes=("cursor/",),
        co_authors=(r"cursoragent@cursor\.com", r"^Cursor Agent\b"),
        text_marks=(r"cursor\.com/background-agent\?", r"cursor\.com/agents\?"),
        operator=("author",),
        standard_texts=(r"<a href=\"https://(?:www\.)?cursor\.com/(?:background-agent|agents)\?[^\n]*",),
    ),
    AgentRule(
        # Google's Jules (docs): PRs by google-labs-jules[bot], task links on jules.google.com.
        id="jules", name="Jules",
        logins=("google-labs-jules[bot]", "google-labs-jules"),
        apps=("google-labs-jules",),
        text_marks=(r"https://jules\.google\.com/task/\w+",),
        operator=("assignee", "reviewer", "co-author"),
        standard_texts=(r"https://jules\.google\.com/task/\w+",),
    ),
    AgentRule(
        # Amazon Q Developer agent (docs): acts through the amazon-q-developer App.
        id="amazon-q", name="Amazon Q Developer",
        logins=("amazon-q-developer[bot]", "amazon-q-developer"),
        apps=("amazon-q-developer",),
        operator=("assignee", "reviewer", "co-author"),
    ),
    AgentRule(
        # Gemini CLI / Gemini Code Assist agent (docs). Its review-suggestion co-author trailers
        # are left out: accepting a reviewer's suggestion does not make the PR the agent's.
        id="gemini", name="Gemini",
        logins=("gemini-cli[bot]", "google-gemini-cli[bot]"),
        apps=("gemini-cli", "google-gemini-cli"),
        branch_prefixes=("gemini/",),
        text_marks=(r"Generated with \[?Gemini CLI\b", r"Generated by \[?Gemini CLI\b"),
        operator=("assignee", "reviewer", "author", "co-author"),
        standard_texts=(r"^.{0,4}Generated (?:with|by) \[?Gemini CLI\b.*$",),
    ),
    AgentRule(
        # OpenHands resolver (docs): account openhands-agent, branches openhands-fix-issue-N.
        id="openhands", name="OpenHands",
        logins=("openhands-agent", "openhands-ai[bot]", "openhands[bot]"),
        apps=("openhands-ai",),
        branch_prefixes=("openhands-fix-issue-", "openhands/"),
        co_authors=(r"openhands@all-hands\.dev",),
        operator=("assignee", "reviewer", "author", "co-author"),
    ),
    AgentRule(
        # Sweep (docs): PRs by sweep-ai[bot] from "sweep/" branches.
        id="sweep", name="Sweep",
        logins=("sweep-ai[bot]", "sweep-ai"),
        apps=("sweep-ai",),
        branch_prefixes=("sweep/",),
        operator=("assignee", "reviewer", "co-author"),
    ),
)

# What attribution answers for a PR no agent marks (taskeval.agents); no agents entry may use them.
HUMAN_ID: Final = "human"
UNKNOWN_BOT_ID: Final = "unknown-bot"
# Keys the dashboard and the leaderboard give rows of their own: not an agent's id either.
RESERVED_IDS: Final = frozenset({HUMAN_ID, UNKNOWN_BOT_ID, "no-agent", "unattributed"})
# The names taskeval gives: every built-in agent's, and those of the answers above. They are
# taskeval's, never a repository's to give (taskeval.config refuses an agents entry that renames
# a built-in agent or takes one of these names for its own).
FIXED_NAMES: Final[dict[str, str]] = {
    **{rule.id: rule.name for rule in BUILTIN_RULES}, HUMAN_ID: "Human", UNKNOWN_BOT_ID: "Unknown bot"}
TAKEN_NAMES: Final = frozenset(" ".join(n.casefold().split()) for n in (*FIXED_NAMES.values(), "No agent found"))


def agent_name(agent_id: str | None, stored: str | None, *, own_pr: bool) -> str | None:
    """The name to show for an agent: a built-in agent's (and human's, unknown-bot's) own name,
    whatever a stored result says; a repository's own agent by the name its config gives, on its
    own PRs only (``own_pr``: a page or row of one PR), and by its id where PRs of several
    repositories meet (the leaderboard, the dashboard's rows and filters), since another
    repository may give the same id another name."""
    if agent_id is None:
        return stored
    fixed = FIXED_NAMES.get(agent_id)
    if fixed is not None:
        return fixed
    return (stored or agent_id) if own_pr else agent_id
