"""What a reader notices on the dashboard, in headless Chromium: the comparison of "all agents"
with "all agents" is not offered as one, an empty store is not blamed on the filters, the page
of the PRs where no agent was found speaks of them as such, no histogram bar spans two bands,
and a lone agent is not "rank 1" of one. (Fixtures: tests/test_dashboard_browser.py.)"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from dashboard import charts
from taskeval.contract import band
from taskeval.store.db import init_schema, make_engine
from tests.dashboard_store import Stored
from tests.test_dashboard_browser import Served, _fresh_cache, _need_browser, driver, shot, site, store  # noqa: F401


def _status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=15) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_all_agents_are_not_compared_with_all_agents(driver: Any, site: str) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    driver.get(f"{site}/dashboard/")
    driver.find_element(By.LINK_TEXT, "Compare two agents or periods ›").click()
    assert driver.find_element(By.ID, "compare-title").text == "Compare two agents or two periods"
    said = driver.find_element(By.ID, "compare-same").text
    assert said.startswith("A and B are the same PRs (all agents): choose two agents")
    assert not driver.find_elements(By.CSS_SELECTOR, "table[data-table='compare']")
    status, body = _status(f"{site}/dashboard/compare?a=codex&b=codex&format=csv")
    assert status == 400 and "A and B are the same PRs (OpenAI Codex)" in body
    driver.get(f"{site}/dashboard/compare?a=copilot&b=codex")  # two sides: the comparison
    assert driver.find_elements(By.CSS_SELECTOR, "table[data-table='compare']")


@pytest.fixture(scope="module")
def empty_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _need_browser()
    from dashboard.cli import create_local_app

    url = f"sqlite:///{tmp_path_factory.mktemp('empty') / 'taskeval.db'}"
    engine = make_engine(url)
    init_schema(engine)
    engine.dispose()
    served = Served(create_local_app(url, bind_host="127.0.0.1", env={}))
    yield served.url
    served.close()


def test_an_empty_store_is_not_blamed_on_the_filters(driver: Any, empty_site: str, site: str) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    for path in ("/dashboard/", "/dashboard/tasks"):
        driver.get(f"{empty_site}{path}")
        said = driver.find_element(By.CSS_SELECTOR, "p.empty").text
        assert said.startswith("Nothing is stored yet: taskeval backfill OWNER/REPO"), (path, said)
    driver.get(f"{site}/dashboard/?since=2099-01-01")  # a store with PRs, none in this period
    assert driver.find_element(By.CSS_SELECTOR, "p.empty").text == "Nothing matches these filters."


def test_the_no_agent_page_speaks_of_prs_where_no_agent_was_found(driver: Any, site: str) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    driver.get(f"{site}/dashboard/agent/no-agent")
    assert driver.find_element(By.ID, "detail-title").text == "PRs where no agent was found"
    assert "found no agent's mark" in driver.find_element(By.ID, "no-agent-note").text
    sentence = driver.find_element(By.ID, "detail-sentence").text
    assert "PRs where no agent was found" in sentence and "No agent found PRs" not in sentence
    assert "its own failures" not in sentence
    assert driver.find_element(By.ID, "compare-link").text == "Compare them with an agent, or with another period ›"
    shot(driver, "no-agent")


def test_no_histogram_bar_spans_two_bands(driver: Any, site: str, store: tuple[str, Stored]) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    driver.get(f"{site}/dashboard/agent/copilot")
    bars = driver.find_elements(By.CSS_SELECTOR, "svg.histogram rect")
    assert len(bars) == 20
    total = 0
    for bar in bars:
        label = bar.find_element(By.TAG_NAME, "title").get_attribute("textContent")
        low, high, n = (int(x) for x in re.fullmatch(r"(\d+)–(\d+): (\d+)", label).groups())  # type: ignore[union-attr]
        assert band(low) == band(high), label  # the whole bar is one band ...
        assert bar.get_attribute("fill") == charts.BAND_COLOURS[band(low)]  # ... and coloured as it
        total += n
    assert total == sum(r["agent_id"] == "copilot" for r in store[1].latest())
    ticks = [t.text for t in driver.find_elements(By.CSS_SELECTOR, "svg.histogram text") if t.text.isdigit()]
    assert [t for t in ticks if t in ("40", "60", "75", "90")] == ["40", "60", "75", "90"]


def test_a_lone_agent_is_not_rank_1_of_one(driver: Any, site: str) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    for path in ("/dashboard/?agent=copilot", "/dashboard/agent/copilot"):
        driver.get(f"{site}{path}")
        cells = driver.find_elements(By.CSS_SELECTOR, "table[data-table='groups'] td[data-col='rank']")
        assert [c.text for c in cells] == ["—"], path
    driver.get(f"{site}/dashboard/")  # among the others, it has a rank
    ranks = [c.text for c in driver.find_elements(By.CSS_SELECTOR, "table[data-table='groups'] td[data-col='rank']")]
    assert any(r.lstrip("=").isdigit() for r in ranks)


@pytest.fixture(scope="module")
def big_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Groups of four-digit PR counts, as a real store has (the AIDev replay: 2,509 Devin PRs), and
    one agent with a single week of PRs."""
    _need_browser()
    from sqlalchemy import update

    from dashboard.cli import create_local_app
    from taskeval.store.db import evaluations, write
    from taskeval.store.results import rebuild_rollup
    from tests.dashboard_store import fill

    url = f"sqlite:///{tmp_path_factory.mktemp('big') / 'taskeval.db'}"
    engine = make_engine(url)
    init_schema(engine)
    fill(engine, 6000, seed=23)
    with write(engine) as conn:  # Jules's four PRs all in one week
        conn.execute(update(evaluations).where(evaluations.c.agent_id == "jules").values(week="2025-03-03"))
        rebuild_rollup(conn)
    engine.dispose()
    served = Served(create_local_app(url, bind_host="127.0.0.1", env={}))
    yield served.url
    served.close()


def test_the_overview_fits_1400_px_with_four_digit_counts(driver: Any, big_site: str) -> None:  # noqa: F811
    """The documented width: with counts like "2509 PRs, 2509 provisional" under every mean the
    table used to be 1,456 px wide in a 1,345 px box, the weekly trend scrolled out of sight."""
    from selenium.webdriver.common.by import By

    driver.set_window_size(1400, 1000)
    try:
        for path in ("/dashboard/", "/dashboard/?by=author", "/dashboard/?provisional=exclude"):
            driver.get(f"{big_site}{path}")
            box = driver.execute_script(
                "const b = document.querySelector('#table-groups .scroll');"
                "return [b.scrollWidth, b.clientWidth, document.documentElement.scrollWidth, window.innerWidth];")
            assert box[0] <= box[1] and box[2] <= box[3], (path, box)
            for cell in driver.find_elements(By.CSS_SELECTOR, "table[data-table='groups'] td[data-col='_trend']"):
                charts_in = cell.find_elements(By.TAG_NAME, "svg")
                if charts_in:  # a line, wholly on screen
                    assert charts_in[0].find_elements(By.TAG_NAME, "polyline"), path
                    assert charts_in[0].rect["x"] + charts_in[0].rect["width"] <= box[3], path
                else:  # no line to draw: it says why instead of an empty cell
                    assert cell.text in ("one week only", "no dated PRs"), (path, cell.text)
            rests = driver.find_element(By.CSS_SELECTOR, "table[data-table='groups'] td[data-col='overallMean'] .rests")
            assert re.fullmatch(r"\d+ PRs, \d+ provisional( left out)?|\d+ PRs", rests.text), rests.text  # one line
            if "by=author" not in path:
                assert re.match(r"\d{4} PRs", rests.text), rests.text
        driver.get(f"{big_site}/dashboard/")
        jules = driver.find_element(By.CSS_SELECTOR, "table[data-table='groups'] a[href^='/dashboard/agent/jules']")
        trend = jules.find_element(By.XPATH, "./ancestor::tr").find_element(By.CSS_SELECTOR, "td[data-col='_trend']")
        assert trend.text == "one week only"
        shot(driver, "overview-four-digit-counts")
    finally:
        driver.set_window_size(1440, 1000)
