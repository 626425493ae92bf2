"""Who wrote each commit, when GitHub links its author to no account: the git identity as evidence.

A commit's ``author`` in GitHub's API is the account GitHub matched to the commit's e-mail; when
the e-mail belongs to no account (a work address never added to a profile, an agent's own git
identity) it is null, and what is left is the git identity: the author's and the committer's
name and e-mail, and the message's trailers. :func:`authors_of` gives every commit of a bundle an
:class:`Author` by the first rule of :data:`RULES` that decides it (docs/turns.md#who-wrote-the-
commits has the same table); a commit no rule decides stays unattributed, and the signals and the
rescue class say so instead of reading it as anyone's.

Pure: the bundle's commits, its participants and the agent table (as the settings amend it), so a
stored result re-scores offline to the same authors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from taskeval.agents import agent_of_identity, co_author_values, noreply_login, split_identity
from taskeval.evidence.vocabulary import TRUNCATION_MARKER
from taskeval.models import CommitEntry

from .context import Ctx, derived

Rule = Literal["account", "agent", "noreply", "name", "co-author", "web-editor", "unattributed"]

# rule id -> what it says; docs/turns.md lists the same table. Tried in this order.
RULES: Final[dict[Rule, str]] = {
    "account": "GitHub links the commit's author to an account: that account.",
    "agent": "The git author is an agent's identity: one of its accounts as the name or in "
             "GitHub's no-reply address, or an identity its co-author patterns describe "
             "(taskeval/agent_table.py, e.g. `Claude <noreply@anthropic.com>`).",
    "noreply": "The author's e-mail is GitHub's no-reply address of a login "
               "(`12345+login@users.noreply.github.com`, `login@users.noreply.github.com`): that login.",
    "name": "The author's git name is the login of exactly one participant of the PR, or a name "
            "the evidence pairs with exactly one participant's login (a linked commit's git name, "
            "a linked committer's, a co-author trailer's no-reply address).",
    "co-author": "The commit's `Co-authored-by` trailers (or, where the message's last paragraph "
                 "also holds other lines, its `Co-authored-by` lines) all name one identity by the rules above "
                 "(an agent's, a no-reply login, a participant's name): that one. Not the PR's "
                 "operator when its agent writes that trailer for its operator by design (Copilot, "
                 "Devin): the trailer does not say who wrote the commit.",
    "web-editor": "Committed through GitHub's web editor (committer `GitHub <noreply@github.com>`, "
                  "the account web-flow): a person's, though the evidence does not say whose.",
    "unattributed": "None of the above: who wrote the commit is unknown.",
}

WEB_FLOW: Final = "web-flow"  # the account GitHub's web editor commits as
WEB_EDITOR: Final = ("github", "noreply@github.com")  # its git identity (name, e-mail)


@dataclass(frozen=True, slots=True)
class Author:
    """Who wrote one commit, and by which rule of :data:`RULES`."""

    login: str | None  # the account, when one is known
    flagged: bool  # GitHub flags the account as a bot
    rule: Rule
    agent: bool = False  # an agent's git identity (``login``: its account, when the table names one)

    @property
    def by_git_identity(self) -> bool:
        """Attributed by its git identity: GitHub linked no account."""
        return self.rule not in ("account", "unattributed")


UNATTRIBUTED: Final = Author(None, False, "unattributed")


def _norm(name: str | None) -> str:
    return " ".join((name or "").split()).strip('"\'').casefold()


class _Evidence:
    """What the rules read of one bundle, gathered once: the participants' logins and the names
    the evidence pairs with them."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        facts, pull = ctx.facts, ctx.pull
        logins: list[str | None] = [pull.author, pull.merged_by, *pull.assignees, *pull.requested_reviewers]
        logins += [r.author for r in facts.reviews] + [m.author for m in facts.comments]
        logins += [e.actor for e in facts.timeline or []] + [e.assignee for e in facts.timeline or []]
        logins += [x for c in facts.commits for x in (c.author_login, c.committer_login)]
        operator = ctx.attribution.operator
        logins.append(operator)
        names: dict[str, set[str]] = {}
        spelled: dict[str, str] = {}  # lower-cased login -> as written (first seen)

        def pair(name: str | None, login: str | None) -> None:
            key = _norm(name)
            if key and login and login != WEB_FLOW:
                spelled.setdefault(login.lower(), login)
                names.setdefault(key, set()).add(login.lower())

        for login in logins:
            pair(login, login)
        for c in facts.commits:
            if c.author_login:
                pair(c.author_name, c.author_login)
            if c.committer_login:
                pair(c.committer_name, c.committer_login)
            for value in co_author_values(c.trailers):
                name, email = split_identity(value)
                login = noreply_login(email)
                if login:
                    pair(login, login)
                    pair(name, login)
        self.names = names
        self.spelled = spelled
        rule = ctx.agent_rule
        # The agent writes a co-author trailer for its operator by design: it names no writer.
        self.operator_trailer = (operator or "").lower() if any(
            "co-author" in r.operator for r in rule) else ""

    def by_name(self, name: str | None) -> str | None:
        found = self.names.get(_norm(name), set())
        return self.spelled[next(iter(found))] if len(found) == 1 else None

    def identity(self, name: str | None, email: str | None) -> Author | None:
        """The agent, a no-reply login or a participant's name (rules agent, noreply, name)."""
        ctx = self.ctx
        login = noreply_login(email)
        for candidate in (login, name):
            if candidate and ctx.is_agent(candidate):
                return Author(candidate, candidate.endswith("[bot]"), "agent", agent=True)
        rule = agent_of_identity(ctx.agent_rules, name, email)
        if rule is not None:
            account = rule.logins[0] if rule.logins else None
            return Author(account, bool(account and account.endswith("[bot]")), "agent", agent=True)
        if login:
            return Author(login, login.endswith("[bot]"), "noreply")
        found = self.by_name(name)
        if found:
            return Author(found, found.endswith("[bot]"), "name")
        return None

    def co_author(self, c: CommitEntry) -> Author | None:
        """The one identity every ``Co-authored-by`` trailer names, if they all name the same."""
        values = co_author_values(c.trailers) or footer_co_authors(c.message_excerpt)
        if not values:
            return None
        found: set[tuple[str | None, bool]] = set()
        first: Author | None = None
        for value in values:
            name, email = split_identity(value)
            who = self.identity(name, email)
            if who is None:
                return None  # someone the evidence cannot name wrote part of it
            if who.login and who.login.lower() == self.operator_trailer and not who.agent:
                return None
            found.add(((who.login or "").lower() or None, who.agent))
            first = first or who
        if len(found) != 1 or first is None:
            return None
        return Author(first.login, first.flagged, "co-author", agent=first.agent)


_CO_AUTHOR_LINE: Final = re.compile(r"^[ \t]*Co-authored-by:[ \t]*(\S[^\n]*?)[ \t]*$",
                                    re.IGNORECASE | re.MULTILINE)


def footer_co_authors(excerpt: str) -> list[str]:
    """``Co-authored-by`` lines of a message's last paragraph that also holds other lines, which
    the trailer parser (whole trailer paragraphs only, as git reads them) leaves out: Claude
    Code's footer puts its "Generated with" line right above its co-author line. Read from the
    stored excerpt of the message body, so only when the excerpt was not cut before its end."""
    if not excerpt or excerpt.endswith(TRUNCATION_MARKER):
        return []
    last = re.split(r"\n\s*\n", excerpt.strip())[-1]
    return [m.group(1) for m in _CO_AUTHOR_LINE.finditer(last)]


def _web_editor(c: CommitEntry) -> bool:
    return c.committer_login == WEB_FLOW or (
        (_norm(c.committer_name), (c.committer_email or "").lower()) == WEB_EDITOR)


def _attribute(evidence: _Evidence, c: CommitEntry) -> Author:
    """The first rule of :data:`RULES` that decides who wrote ``c``."""
    if c.author_login:
        return Author(c.author_login, c.author_is_bot, "account")
    found = evidence.identity(c.author_name, c.author_email)
    if found is not None:
        return found
    trailer = evidence.co_author(c)
    if trailer is not None:
        return trailer
    if _web_editor(c):
        return Author(None, False, "web-editor")
    return UNATTRIBUTED


@derived
def authors_of(ctx: Ctx) -> dict[str, Author]:
    """sha -> who wrote the commit, for every commit of the bundle; once per context."""
    commits = ctx.facts.commits
    if all(c.author_login for c in commits):  # nearly every bundle: nothing to read
        return {c.sha: Author(c.author_login, c.author_is_bot, "account") for c in commits}
    evidence = _Evidence(ctx)
    return {c.sha: _attribute(evidence, c) for c in commits}


# How each rule reads in a reason ("2 by a no-reply address").
_BY: Final[dict[Rule, str]] = {
    "agent": "the agent's git identity", "noreply": "a no-reply address", "name": "a participant's name",
    "co-author": "a co-author trailer", "web-editor": "the web editor",
}


def how(authors: Iterable[Author]) -> str:
    """"2 by a no-reply address, 1 by the web editor": how commits without an account were
    attributed, in :data:`RULES` order."""
    counts: dict[Rule, int] = {}
    for a in authors:
        counts[a.rule] = counts.get(a.rule, 0) + 1
    return ", ".join(f"{counts[r]} by {_BY[r]}" for r in RULES if r in counts and r in _BY)


def writers(authors: Iterable[Author]) -> list[str]:
    """The writers' logins, sorted; "a person (web editor)" for one the evidence does not name."""
    return sorted({a.login or "a person (web editor)" for a in authors})
