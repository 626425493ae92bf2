"""The PR page shows the stored comment as GitHub does (alerts, ``<details>``, ``<sub>``), and
raw HTML in it, hostile or not, passes only through an allow-list."""

from __future__ import annotations

import json
import re

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, update

from dashboard import queries
from dashboard.render import comment_html
from taskeval.store.db import evaluations
from tests.dashboard_store import Stored, fill

pytest_plugins = ["tests.bot.fixtures"]


@pytest.fixture
def stored(engine: Engine) -> Stored:
    queries.clear_cache()
    return fill(engine, 12, full_results=True, seed=2)


@pytest.fixture
def local(engine: Engine, stored: Stored) -> FlaskClient:
    """The loopback ``taskeval dashboard`` app over the filled store (no sign-in)."""
    from dashboard.core import DashboardConfig, install

    app = Flask("dashboard-comment-test")
    install(app, DashboardConfig(engine=engine, open_access=True))
    return app.test_client()


@pytest.mark.parametrize(("markdown", "shown", "absent"), [
    ("> [!WARNING]\n> The CI logs could not be read.",
     ['<blockquote class="markdown-alert markdown-alert-warning">',
      '<p class="markdown-alert-title">Warning</p>', "<p>The CI logs could not be read.</p>"],
     ["[!WARNING]"]),
    ("> [!NOTE]\n>\n> Second paragraph.",
     ['markdown-alert-note', '<p class="markdown-alert-title">Note</p>', "<p>Second paragraph.</p>"],
     ["[!NOTE]"]),
    ("> [!TIP] not alone on its line", ["<blockquote>", "[!TIP] not alone"], ["markdown-alert"]),
    ("> [!CAUTION]\n> first\n> second", ['markdown-alert-caution', "<p>first<br>\nsecond</p>"], []),
    ("a line\nthe next line", ["<p>a line<br>\nthe next line</p>"], []),  # GitHub's comment breaks
    ("> plain quote", ["<blockquote>\n<p>plain quote</p>"], ["markdown-alert"]),
    ("<details><summary>All signals</summary>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n</details>",
     ["<details><summary>All signals</summary>", "<table>", "<td>1</td>"], ["raw HTML omitted"]),
    ("<sub>taskeval scorer `1.2`</sub>", ["<sub>taskeval scorer <code>1.2</code></sub>"],
     ["raw HTML omitted", "&lt;sub"]),
    ("- [x] done\n- [ ] open", ['<input type="checkbox" checked="" disabled="">'], []),
])
def test_the_comment_renders_as_github_shows_it(markdown: str, shown: list[str],
                                               absent: list[str]) -> None:
    html, renderer = comment_html(markdown)
    assert "nh3" in renderer
    for part in shown:
        assert part in html
    for part in absent:
        assert part not in html


HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    '<a href="javascript:alert(3)">a</a>',
    '<a href="JaVaScRiPt:alert(4)">b</a>',
    '<a href="  javascript:alert(5)">c</a>',
    '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCg2KTwvc2NyaXB0Pg==">d</a>',
    '<a href="vbscript:msgbox(7)">e</a>',
    "[f](javascript:alert(8))",
    "<details open ontoggle=alert(9)><summary onclick=alert(10)>s</summary>x</details>",
    '<svg onload=alert(11)><circle r="1"/></svg>',
    '<iframe src="https://evil.example/"></iframe>',
    "<style>body{display:none}</style>",
    '<form action="https://evil.example/"><input name=q><button>go</button></form>',
    '<div style="position:fixed;inset:0" class="markdown-alert">overlay</div>',
    '<object data="x.swf"></object><embed src="x.swf">',
    '<math><mtext><table><mglyph><style><img src=x onerror=alert(12)>',
    '<a href="https://ok.example/" onmouseover="alert(13)" target="_top">ok</a>',
    "<meta http-equiv=refresh content='0;url=https://evil.example/'>",
    '<base href="https://evil.example/">',
    "<!-- <script>alert(14)</script> -->",
]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_html_in_the_comment_cannot_become_markup(hostile: str) -> None:
    html, _ = comment_html(f"Before\n\n{hostile}\n\nAfter <sub>kept</sub>")
    lowered = html.lower()
    assert "<script" not in lowered and "<iframe" not in lowered and "<style" not in lowered
    assert not re.search(r"<[^>]*\son\w+\s*=", lowered)  # no event handler on any tag
    assert not re.search(r"(href|src|action|data)\s*=\s*\"?\s*(javascript|vbscript|data):", lowered)
    for tag in ("<svg", "<form", "<object", "<embed", "<math", "<meta", "<base", "<input name"):
        assert tag not in lowered
    assert "style=" not in lowered and 'class="markdown-alert"' not in lowered
    assert "target=" not in lowered
    assert "<p>Before</p>" in html  # the rest still renders
    if "</style>" in hostile or "<style>" not in hostile:  # an unclosed <style> eats what follows
        assert "<sub>kept</sub>" in html


def test_a_safe_link_keeps_its_target_and_gains_noopener() -> None:
    html, _ = comment_html('<a href="https://github.com/o/r/pull/1">PR</a> and [run](https://github.com/o/r/actions/runs/2)')
    assert '<a href="https://github.com/o/r/pull/1" rel="noopener noreferrer nofollow">PR</a>' in html
    assert 'href="https://github.com/o/r/actions/runs/2"' in html


def test_the_pr_page_renders_the_stored_comments_alert_details_and_small_print(
    local: FlaskClient, engine: Engine, stored: Stored
) -> None:
    row = stored.latest()[0]
    data = json.loads(row["result_json"])
    data["warnings"] = ["GitHub answered 403 for the check runs <img src=x onerror=alert(1)>"]
    with engine.begin() as conn:
        conn.execute(update(evaluations).where(evaluations.c.id == row["id"])
                     .values(result_json=json.dumps(data)))
    owner, name = row["repo"].split("/")
    text = local.get(f"/dashboard/pr/{owner}/{name}/{row['number']}").get_data(as_text=True)
    comment = text[text.index('id="comment"'):]
    assert '<blockquote class="markdown-alert markdown-alert-warning">' in comment
    assert "[!WARNING]" not in comment and "raw HTML omitted" not in comment
    assert "<details><summary>All signals</summary>" in comment and "<sub>taskeval scorer" in comment
    assert not re.search(r"<[^>]*\sonerror", comment)  # the warning's text is shown, inert
