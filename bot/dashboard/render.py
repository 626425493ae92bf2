"""The stored PR comment as HTML, safely.

Decision: the bot extra depends on ``cmarkgfm`` (GitHub's own cmark-gfm, a small compiled wheel),
so the dashboard shows the comment the way GitHub shows it: tables, links, emphasis. It runs in
its default safe mode: raw HTML in the markdown is dropped (``<!-- raw HTML omitted -->``) and
``javascript:``/``data:`` links are emptied, so text an author put in a PR title or body cannot
become markup here. The page's Content-Security-Policy forbids scripts on top of that. Without
cmarkgfm (a core-only install) the markdown is shown escaped, as preformatted text.
"""

from __future__ import annotations

from markupsafe import Markup, escape


def comment_html(markdown: str) -> tuple[Markup, str]:
    """(HTML, which renderer made it)."""
    try:
        import cmarkgfm  # type: ignore[import-untyped]
    except ImportError:
        return Markup('<pre class="comment-raw">{}</pre>').format(escape(markdown)), "plain text"
    html = str(cmarkgfm.github_flavored_markdown_to_html(markdown))  # safe mode: no raw HTML
    return Markup(html), "cmark-gfm (safe mode)"
