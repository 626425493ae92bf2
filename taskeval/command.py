"""The ``/evaluate`` command: which PR comment asks for an evaluation, who may ask, and how the
asker is answered. Pure rules shared by the Action and the bot; each adapter reads its own
payload, looks the commenter's permission up on GitHub and adds the reaction.

1. Only a new comment on a pull request can be a command (the adapters check the event).
2. taskeval's own comment (it starts with the comment marker) is never a command, nor is any
   comment by a bot account (``type: Bot`` or a ``[bot]`` login), so no App can trigger another.
3. The command is the first word of the first non-blank line, trimmed, in any case:
   ``/evaluate`` or ``/evaluate please``, not ``please /evaluate`` nor a quoted ``> /evaluate``.
4. Only people who could have merged the PR anyway may ask: ``write``, ``maintain`` or ``admin``
   permission on the repository (the author association is not enough). The request is answered
   with 👀 (``eyes``) when accepted and 😕 (``confused``) when refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from taskeval.contract import COMMENT_MARKER

COMMAND: Final = "/evaluate"
# Who may ask for an evaluation with a comment: people who could have merged the PR anyway.
ALLOWED_PERMISSIONS: Final = frozenset({"admin", "maintain", "write"})
ACCEPTED_REACTION: Final = "eyes"
REFUSED_REACTION: Final = "confused"


def is_command(body: object) -> bool:
    """True when the comment's first line, trimmed, starts with the word ``/evaluate`` (any case)."""
    text = body.strip() if isinstance(body, str) else ""
    if not text:
        return False
    words = text.splitlines()[0].split()
    return bool(words) and words[0].lower() == COMMAND


def is_bot(login: object, account_type: object) -> bool:
    """A GitHub App or other bot account (``type: Bot`` or a ``[bot]`` login)."""
    return account_type == "Bot" or (isinstance(login, str) and login.endswith("[bot]"))


def not_a_request(
    body: object, login: object, account_type: object, *, marker: str = COMMENT_MARKER
) -> str | None:
    """Why a new PR comment is not an ``/evaluate`` request, or None when it is one (whose
    author's permission is still to be checked). ``marker`` is taskeval's comment marker."""
    text = body if isinstance(body, str) else ""
    if marker and text.lstrip().startswith(marker):
        return "comment is taskeval's own evaluation comment"
    if is_bot(login, account_type):
        return f"comment is written by a bot account ({login})"
    if not is_command(text):
        return f"comment does not start with {COMMAND}"
    if not isinstance(login, str) or not login:
        return "comment has no author"
    return None


@dataclass(frozen=True)
class Answer:
    """How an ``/evaluate`` request is answered once its author's permission is known."""

    accepted: bool
    reaction: str
    reason: str


def answer(login: str, permission: str, repository: str) -> Answer:
    """Accept ``write``/``maintain``/``admin`` with 👀; refuse anyone else with 😕 and say why."""
    if permission in ALLOWED_PERMISSIONS:
        return Answer(True, ACCEPTED_REACTION,
                      f"{COMMAND} by @{login} accepted: @{login} has '{permission}' on {repository}")
    return Answer(False, REFUSED_REACTION,
                  f"{COMMAND} by @{login} ignored: it needs write, maintain or admin permission "
                  f"on {repository}, and @{login} has '{permission}'")
