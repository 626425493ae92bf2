"""The stored PR comment as HTML, the way GitHub shows it, safely.

The comment is rendered with ``cmarkgfm`` (GitHub's own cmark-gfm) with raw HTML kept, as GitHub
keeps it, and newlines as line breaks, as GitHub's comments show them, then cleaned with ``nh3``
(the Rust ``ammonia`` sanitiser) against an allow-list close to GitHub's: ``<details>``/
``<summary>``, ``<sub>``/``<sup>``, tables, task-list boxes, links with ``http``/``https``/
``mailto`` (or relative) targets. Everything else goes: ``<script>``,
``<style>``, ``<iframe>``, forms, every ``on…`` handler, ``style`` and ``class`` attributes,
``javascript:``/``data:``/``vbscript:`` URLs. GitHub's alerts (``> [!NOTE]``, ``[!TIP]``,
``[!IMPORTANT]``, ``[!WARNING]``, ``[!CAUTION]`` as the first line of a quote) are then marked up
as GitHub does, on the cleaned HTML, so the only classes in the output are the ones added here.
The page's Content-Security-Policy forbids scripts on top of that. Without cmarkgfm or nh3 (a
core-only install) the markdown is shown escaped, as preformatted text.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

TAGS = frozenset({
    "a", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1",
    "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "input", "ins", "kbd", "li", "ol", "p", "pre",
    "q", "s", "samp", "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody", "td",
    "tfoot", "th", "thead", "tr", "tt", "ul", "var",
})
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "input": {"type", "checked", "disabled"},  # task-list boxes
    "details": {"open"},
    "ol": {"start"},
    "td": {"align", "colspan", "rowspan"},
    "th": {"align", "colspan", "rowspan"},
    "*": {"title"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
ALERTS = {"NOTE": "Note", "TIP": "Tip", "IMPORTANT": "Important", "WARNING": "Warning",
          "CAUTION": "Caution"}
# A quote whose first paragraph starts with the marker on a line of its own (GitHub's rule).
_ALERT = re.compile(r"<blockquote>\s*<p>\[!(" + "|".join(ALERTS) + r")\]\s*(?:</p>|<br>\s*|\n)")


def sanitise(html: str) -> str:
    """Only the allow-listed tags, attributes and URL schemes of ``html``."""
    import nh3

    return str(nh3.clean(
        html, tags=set(TAGS), attributes={k: set(v) for k, v in ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES), link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    ))


def _alert(match: re.Match[str]) -> str:
    kind = match.group(1)
    title = f'<p class="markdown-alert-title">{ALERTS[kind]}</p>'
    closed = match.group(0).rstrip().endswith("</p>")
    return (f'<blockquote class="markdown-alert markdown-alert-{kind.lower()}">\n{title}\n'
            + ("" if closed else "<p>"))


def alerts(html: str) -> str:
    """GitHub's alert blocks on sanitised HTML (which holds no class attribute of its own)."""
    return _ALERT.sub(_alert, html)


def comment_html(markdown: str) -> tuple[Markup, str]:
    """(HTML, which renderer made it)."""
    try:
        import cmarkgfm  # type: ignore[import-untyped]
        import nh3  # noqa: F401
        from cmarkgfm.cmark import Options  # type: ignore[import-untyped]
    except ImportError:
        return Markup('<pre class="comment-raw">{}</pre>').format(escape(markdown)), "plain text"
    # Raw HTML kept (then allow-listed); a newline is a line break, as in GitHub's comments.
    options = Options.CMARK_OPT_UNSAFE | Options.CMARK_OPT_HARDBREAKS
    raw = str(cmarkgfm.github_flavored_markdown_to_html(markdown, options=options))
    return Markup(alerts(sanitise(raw))), "cmark-gfm, sanitised as GitHub does (nh3)"
