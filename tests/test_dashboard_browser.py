"""The dashboard as a person sees it: real headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium, no JavaScript needed by the pages.

Each test loads a view, reads the numbers on screen and checks them against the store; the filters
are used through the form; sign-in goes through GitHub's OAuth redirect (a fake GitHub on
127.0.0.1). Screenshots are saved under ``test-artifacts/dashboard/`` (``TASKEVAL_ARTIFACTS`` moves
it). Without Chromium the tests skip and say so; with ``TASKEVAL_REQUIRE_BROWSER=1`` (CI) they fail.
"""

from __future__ import annotations

import os
import re
import statistics
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from werkzeug.serving import make_server

from taskeval.store.db import init_schema, make_engine
from tests.dashboard_store import Stored, fill
from tests.fake_github_oauth import FakeGitHubOAuth

CHROMIUM = os.environ.get("TASKEVAL_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("TASKEVAL_CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = Path(os.environ.get("TASKEVAL_ARTIFACTS") or Path(__file__).resolve().parents[1] / "test-artifacts")
SHOTS = ARTIFACTS / "dashboard"
REBOUND = "rebound.attacker.test"


def _need_browser() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    if missing:
        message = (f"no headless browser ({', '.join(missing)} missing; apt-get install chromium "
                   "chromium-driver): the dashboard browser tests did NOT run")
        if os.environ.get("TASKEVAL_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " and TASKEVAL_REQUIRE_BROWSER=1 requires them")
        pytest.skip(message)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    _need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1440,1000", "--disable-extensions", "--no-first-run",
                # A name of another site resolving to 127.0.0.1, as DNS rebinding makes it.
                f"--host-resolver-rules=MAP {REBOUND} 127.0.0.1"):
        options.add_argument(arg)
    browser = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    browser.set_page_load_timeout(30)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield browser
    browser.quit()


class Served:
    def __init__(self, app: Any) -> None:
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    from dashboard import queries

    queries.clear_cache()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Stored]:
    _need_browser()
    url = f"sqlite:///{tmp_path_factory.mktemp('dash') / 'taskeval.db'}"
    engine = make_engine(url)
    init_schema(engine)
    stored = fill(engine, 120, full_results=True, seed=5)
    record_every_outcome(engine, stored)
    engine.dispose()
    return url, stored


def record_every_outcome(engine: Any, stored: Stored) -> None:
    """Outcomes as ``taskeval outcomes --write-store`` and a team's own file leave them: every
    kind, spelled "Rejected" by one source and "rejected" by the other."""
    from sqlalchemy import insert

    from taskeval.outcomes import OUTCOMES
    from taskeval.store.db import outcomes

    rows = [{"repo": r["repo"], "number": r["number"], "outcome": kind.capitalize() if (i + j) % 2 else kind,
             "value": (i + j) % 5 == 0, "evidence": "[]", "detail": "", "source": "derived",
             "observed_at": None, "recorded_at": 0.0}
            for i, r in enumerate(stored.latest()) for j, kind in enumerate(OUTCOMES)]
    with engine.begin() as conn:
        conn.execute(insert(outcomes), rows)


@pytest.fixture(scope="module")
def site(store: tuple[str, Stored]) -> Iterator[str]:
    """``taskeval dashboard`` on loopback over the store."""
    from dashboard.cli import create_local_app

    served = Served(create_local_app(store[0], bind_host="127.0.0.1", env={}))
    yield served.url
    served.close()


def cells(driver: Any, table: str, col: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, f'table[data-table="{table}"] td[data-col="{col}"]')]


def navigate(driver: Any, element: Any, arrived: Callable[[str], bool]) -> str:
    """Click a link or button and wait for the browser to land where it leads: a click returns
    before the next page loads, so reading the URL at once races the navigation."""
    from selenium.webdriver.support.ui import WebDriverWait

    element.click()
    WebDriverWait(driver, 15).until(lambda d: arrived(d.current_url))
    return str(driver.current_url)


def shot(driver: Any, name: str) -> Path:
    path = SHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 1000
    return path


def test_overview_shows_the_stores_numbers(driver: Any, site: str, store: tuple[str, Stored]) -> None:
    from selenium.webdriver.common.by import By

    stored = store[1]
    driver.get(f"{site}/dashboard/")
    assert driver.title.startswith("Overview")
    names = cells(driver, "groups", "agent")
    prs = cells(driver, "groups", "prs")
    means = [t.split()[0] for t in cells(driver, "groups", "overallMean")]
    by_name: dict[str, list[int]] = {}
    for r in stored.latest():
        name = "No agent found" if r["agent_id"] in ("human", "unknown-bot") else r["agent_name"]
        by_name.setdefault(name, []).append(r["overall_score"])
    shown = {re.sub(r"\s+(small sample|not ranked)$", "", n.strip()): (int(p), m)
             for n, p, m in zip(names, prs, means, strict=True)}
    assert set(shown) == set(by_name)
    for name, scores in by_name.items():
        assert shown[name] == (len(scores), f"{statistics.fmean(scores):.1f}")
    assert driver.find_element(By.ID, "total-prs").text == str(len(stored.latest()))
    small = driver.find_elements(By.CSS_SELECTOR, "table[data-table='groups'] tr.small")
    from dashboard.queries import SMALL_SAMPLE

    assert len(small) == sum(len(v) < SMALL_SAMPLE for k, v in by_name.items() if k != "No agent found") >= 1
    assert all("small sample" in row.text and row.text.startswith("—") for row in small)  # not ranked
    assert driver.find_elements(By.CSS_SELECTOR, "td[data-col='_trend'] svg polyline")
    assert driver.find_elements(By.CSS_SELECTOR, "td[data-col='_bands'] svg rect")
    shot(driver, "overview")


def test_filters_through_the_form_stay_in_the_url(driver: Any, site: str, store: tuple[str, Stored]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    stored = store[1]
    driver.get(f"{site}/dashboard/")
    Select(driver.find_element(By.ID, "f-repo")).select_by_value("octo-org/gadgets")
    Select(driver.find_element(By.ID, "f-band")).select_by_value("acceptable")
    url = navigate(driver, driver.find_element(By.ID, "f-apply"), lambda u: "repo=" in u)
    query = parse_qs(urlsplit(url).query)
    assert query["repo"] == ["octo-org/gadgets"] and query["band"] == ["acceptable"]
    want = [r for r in stored.latest() if r["repo"] == "octo-org/gadgets" and r["overall_band"] == "acceptable"]
    assert driver.find_element(By.ID, "total-prs").text == str(len(want))
    counts = Counter(r["agent_name"] for r in want)
    shown = {n.replace(" small sample", "").strip(): int(p)
             for n, p in zip(cells(driver, "groups", "agent"), cells(driver, "groups", "prs"), strict=True)}
    assert shown == dict(counts)
    # the shared URL reproduces the view; the author toggle keeps the filters
    driver.get(driver.current_url)
    assert driver.find_element(By.ID, "total-prs").text == str(len(want))
    url = navigate(driver, driver.find_element(By.ID, "by-author"), lambda u: "by=author" in u)
    query = parse_qs(urlsplit(url).query)
    assert query["by"] == ["author"] and query["repo"] == ["octo-org/gadgets"]
    authors = Counter(r["author"] for r in want)
    assert {a.replace(" small sample", ""): int(p) for a, p in
            zip(cells(driver, "groups", "author"), cells(driver, "groups", "prs"), strict=True)} == dict(authors)
    shot(driver, "overview-filtered-by-author")


def test_agent_page(driver: Any, site: str, store: tuple[str, Stored]) -> None:
    from selenium.webdriver.common.by import By

    stored = store[1]
    driver.get(f"{site}/dashboard/")
    url = navigate(driver, driver.find_element(By.LINK_TEXT, "Claude Code"), lambda u: "/agent/" in u)
    assert urlsplit(url).path == "/dashboard/agent/claude-code"
    rows = [r for r in stored.latest() if r["agent_id"] == "claude-code"]
    assert driver.find_element(By.ID, "detail-prs").text == str(len(rows))
    assert driver.find_element(By.ID, "detail-mean").text == f"{statistics.fmean(r['overall_score'] for r in rows):.1f}"
    dist = [int(n) for n in cells(driver, "distribution", "prs")]
    assert sum(dist) == len(rows)
    assert driver.find_elements(By.CSS_SELECTOR, "figure svg.histogram rect")
    assert driver.find_elements(By.CSS_SELECTOR, 'table[data-table="signals"] td[data-col="examples"] a')
    listed = cells(driver, "prs", "pr")
    assert len(listed) == min(50, len(rows))
    shot(driver, "agent")


def _csv(url: str) -> list[dict[str, str]]:
    import csv
    import io
    import urllib.request

    with urllib.request.urlopen(url, timeout=15) as resp:
        return list(csv.DictReader(io.StringIO(resp.read().decode())))


def test_agent_costs_and_the_comparison_equal_the_csv(driver: Any, site: str, store: tuple[str, Stored]) -> None:
    """The agent page's sentence, merge rate and time to merge, then the comparison reached from
    it through the form: each number on screen is the one in the CSV of the same view, and the
    merge rate's denominator is the export's decided PRs."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from taskeval.store.export import rows

    engine = make_engine(store[0])
    export = [r for r in rows(engine) if r["agent_id"] == "copilot"]
    engine.dispose()
    driver.get(f"{site}/dashboard/agent/copilot")
    decided = sum(r["state"] == "merged" or (r["state"] == "closed" and not r["draft"]) for r in export)
    assert driver.find_element(By.ID, "merge-rate-decided").text == str(decided)
    sentence = driver.find_element(By.ID, "detail-sentence").text
    assert "merged GitHub Copilot PRs" in sentence or "Too few merged GitHub Copilot PRs" in sentence
    cycle = {r["figure"]: r for r in _csv(f"{site}/dashboard/agent/copilot?format=csv&table=cycle")}
    shown = driver.find_element(By.CSS_SELECTOR, 'table[data-table="cycle"] tr:nth-child(4) td[data-col="medianHours"]')
    assert shown.text.split()[0] == f"{float(cycle['time_to_merge']['medianHours']):.1f}"
    assert driver.find_elements(By.CSS_SELECTOR, "figure svg.trend polyline")
    driver.execute_script("document.getElementById('merge-rate').scrollIntoView()")
    shot(driver, "agent-costs")
    navigate(driver, driver.find_element(By.ID, "compare-link"), lambda u: "/compare" in u)
    Select(driver.find_element(By.ID, "f-b")).select_by_value("codex")
    url = navigate(driver, driver.find_element(By.ID, "f-apply"), lambda u: "b=codex" in u)
    query = parse_qs(urlsplit(url).query)
    assert query["a"] == ["copilot"] and query["b"] == ["codex"]
    table = _csv(f"{url}&format=csv&table=compare")
    first = driver.find_element(By.CSS_SELECTOR, 'table[data-table="compare"] td[data-col="merge_rateDiff"]')
    assert first.text.split("%")[0].lstrip("+").strip() == f"{100 * float(table[0]['merge_rateDiff']):.1f}"
    assert "too few PRs" in driver.find_element(By.ID, "table-compare").text  # the small strata say so
    shot(driver, "compare")


def test_one_merge_rate_on_every_page_with_its_denominator(driver: Any, site: str) -> None:
    """One definition: merged of the PRs that reached a decision. The overview's row, the agent
    page's own row and its merge-rate line show the same figure, each saying what it rests on;
    the CSV carries it with its denominator, and merged-of-all-PRs only apart, under its own name."""
    from selenium.webdriver.common.by import By

    driver.get(f"{site}/dashboard/")
    header = driver.find_element(By.CSS_SELECTOR, "table[data-table='groups'] th[data-col='mergeRate']")
    assert header.text == "Merge rate" and "reached a decision" in header.get_attribute("title")
    assert not driver.find_elements(By.CSS_SELECTOR, "table[data-table='groups'] th[data-col='mergedShare']")
    shown = {}
    for agent in ("copilot", "codex"):
        link = driver.find_element(By.CSS_SELECTOR, f"table[data-table='groups'] a[href^='/dashboard/agent/{agent}']")
        row = link.find_element(By.XPATH, "./ancestor::tr")
        shown[agent] = row.find_element(By.CSS_SELECTOR, "td[data-col='mergeRate']").text.split("\n")
    for agent, (rate, rests) in shown.items():
        driver.get(f"{site}/dashboard/agent/{agent}")
        decided = driver.find_element(By.ID, "merge-rate-decided").text
        assert driver.find_element(By.ID, "merge-rate-value").text == rate
        assert rests.endswith(f"of {decided} decided"), rests
        own = driver.find_element(By.CSS_SELECTOR, "table[data-table='groups'] td[data-col='mergeRate']").text
        assert own.split("\n") == [rate, rests]
    rows = {r["agent"]: r for r in _csv(f"{site}/dashboard/?format=csv")}
    for agent in shown:
        assert rows[agent]["mergeRate"] and rows[agent]["decided"] and rows[agent]["mergedShare"]


def _means_shown(driver: Any) -> dict[str, tuple[str, str]]:
    """Agent -> (the overall mean as shown, the PRs it rests on as said under it)."""
    from selenium.webdriver.common.by import By

    out = {}
    for row in driver.find_elements(By.CSS_SELECTOR, 'table[data-table="groups"] tbody tr'):
        link = row.find_element(By.CSS_SELECTOR, 'td[data-col="agent"] a').get_attribute("href")
        cell = row.find_element(By.CSS_SELECTOR, 'td[data-col="overallMean"]')
        rests = cell.find_element(By.CSS_SELECTOR, "span.rests").text
        out[urlsplit(link).path.rsplit("/", 1)[-1]] = (cell.text.split()[0], rests)
    return out


def test_the_provisional_switch_moves_the_means_as_the_csv_does(driver: Any, site: str) -> None:
    """Flip the switch on the overview: the means and what they rest on change, and each one on
    screen is the CSV's of the same view, both ways; the agent page keeps the switch."""
    from selenium.webdriver.common.by import By

    driver.get(f"{site}/dashboard/")
    counted = _means_shown(driver)
    assert driver.find_element(By.ID, "provisional-state").text == "counted"
    url = navigate(driver, driver.find_element(By.ID, "provisional-exclude"), lambda u: "provisional=exclude" in u)
    left = _means_shown(driver)
    assert driver.find_element(By.ID, "provisional-state").text == "left out"
    assert set(left) == set(counted) and any(left[k][0] != counted[k][0] for k in left)
    for shown, page in ((counted, f"{site}/dashboard/?format=csv&table=groups"),
                        (left, f"{url}&format=csv&table=groups")):
        table = {r["agent"]: r for r in _csv(page)}
        for key, (mean, rests) in shown.items():
            r = table[key]
            assert abs(float(mean) - float(r["overallMean"])) <= 0.0501, key  # one decimal of the CSV's two
            n, v = int(r["overallRestsOn"]), int(r["overallProvisional"])
            said = (f"{n} PRs, {v} provisional" if shown is counted
                    else f"{n} PRs, {v} provisional left out" if v else f"{n} PRs")
            assert rests == said, key
    assert any("left out" in rests for _m, rests in left.values())
    shot(driver, "provisional-left-out")
    agent = next(k for k in left if k != "no-agent")
    link = driver.find_element(By.CSS_SELECTOR, f'table[data-table="groups"] a[href*="/agent/{agent}"]')
    assert "provisional=exclude" in navigate(driver, link, lambda u: f"/agent/{agent}" in u)
    assert driver.find_element(By.ID, "provisional-state").text == "left out"
    assert driver.find_element(By.ID, "detail-rests").text == left[agent][1]
    navigate(driver, driver.find_element(By.ID, "provisional-include"), lambda u: "provisional" not in u)
    assert driver.find_element(By.ID, "detail-rests").text == counted[agent][1]


def test_pr_page(driver: Any, site: str, store: tuple[str, Stored]) -> None:
    from selenium.webdriver.common.by import By

    stored = store[1]
    twice = next(r for r in stored.latest() if sum(x["number"] == r["number"] for x in stored.rows) == 2)
    owner, name = twice["repo"].split("/")
    driver.get(f"{site}/dashboard/pr/{owner}/{name}/{twice['number']}")
    assert driver.find_element(By.ID, "pr-overall").text == str(twice["overall_score"])
    assert len(cells(driver, "history", "id")) == 2
    heading = driver.find_element(By.CSS_SELECTOR, "#comment .markdown h2").text
    assert heading.startswith("taskeval: ") and f" {twice['overall_score']}/100 " in f"{heading} "
    assert driver.find_elements(By.CSS_SELECTOR, "#comment .markdown table")
    assert driver.find_elements(By.CSS_SELECTOR, "#evidence a[href^='https://github.com/']")
    link = driver.find_element(By.ID, "download-json").get_attribute("href")
    assert link.endswith(f"/dashboard/evaluation/{twice['id']}.json")
    shot(driver, "pr")


def test_a_provisional_overall_is_marked_where_a_pr_is_shown(driver: Any, site: str, store: tuple[str, Stored]) -> None:
    """The overall rests on less than the contract's threshold of its signal weight: the PR page's
    summary and its history table say "provisional" beside the band, as the comment's headline
    does; a PR whose overall rests on enough says nothing."""
    from selenium.webdriver.common.by import By

    from taskeval.contract import PROVISIONAL_BELOW

    latest = store[1].latest()
    thin = next(r for r in latest if r["overall_coverage"] is not None and r["overall_coverage"] < PROVISIONAL_BELOW)
    sure = next(r for r in latest if r["overall_coverage"] is not None and r["overall_coverage"] >= PROVISIONAL_BELOW)
    for row, marked in ((thin, True), (sure, False)):
        owner, name = row["repo"].split("/")
        driver.get(f"{site}/dashboard/pr/{owner}/{name}/{row['number']}")
        tags = driver.find_elements(By.ID, "pr-overall-provisional")
        assert bool(tags) is marked and (not marked or tags[0].text == "provisional")
        heading = driver.find_element(By.CSS_SELECTOR, "#comment .markdown h2").text
        assert heading.endswith("(provisional)") is marked
        newest = "table[data-table='history'] tbody tr:first-child td[data-col='band'] .tag.provisional"
        assert bool(driver.find_elements(By.CSS_SELECTOR, newest)) is marked
    shot(driver, "provisional-overall")


def test_a_rebound_name_cannot_read_the_local_dashboard(driver: Any, site: str, store: tuple[str, Stored]) -> None:
    """DNS rebinding: a page of another site whose name now resolves to 127.0.0.1 is same-origin
    with whatever that name serves; the open local dashboard answers it 421, not the data."""
    from selenium.webdriver.common.by import By

    port = urlsplit(site).port
    driver.get(f"http://{REBOUND}:{port}/dashboard/?format=csv")
    assert "answers only at localhost" in driver.find_element(By.TAG_NAME, "body").text
    driver.get(f"http://{REBOUND}:{port}/dashboard/")
    assert not driver.find_elements(By.ID, "total-prs")
    assert "answers only at localhost" in driver.page_source
    for host in ("localhost", "127.0.0.1"):  # the loopback names still open it
        driver.get(f"http://{host}:{port}/dashboard/")
        assert driver.find_element(By.ID, "total-prs").text == str(len(store[1].latest()))


def test_sign_in_with_github_in_the_browser(driver: Any, store: tuple[str, Stored]) -> None:
    from selenium.webdriver.common.by import By

    from bot.app import create_app
    from bot.settings import BotSettings
    from tests.bot.helpers import SECRET

    url, stored = store
    fake = FakeGitHubOAuth()
    fake.users["alice"] = ["octo-org/widgets", "octo-org/docs"]
    fake.next_login = "alice"
    with fake.serve():
        env = {"GITHUB_WEBHOOK_SECRET": SECRET, "DATABASE_URL": url, "GITHUB_TOKEN": "ghp_" + "x" * 36,
               "GITHUB_CLIENT_ID": fake.client_id, "GITHUB_CLIENT_SECRET": fake.client_secret,
               "GITHUB_API_URL": fake.api_url, "GITHUB_WEB_URL": fake.web_url,
               "TASKEVAL_SESSION_SECRET": "browser-session-secret-0123456789"}
        app = create_app(BotSettings.from_env(env))
        served = Served(app)
        try:
            driver.delete_all_cookies()
            driver.get(f"{served.url}/dashboard/?band=strong")
            # dashboard -> /dashboard/login -> GitHub authorize -> callback -> the page asked for
            assert "GET /login/oauth/authorize" in fake.log
            assert "POST /login/oauth/access_token" in fake.log
            parts = urlsplit(driver.current_url)
            assert (parts.path, parse_qs(parts.query)) == ("/dashboard/", {"band": ["strong"]})
            assert driver.find_element(By.ID, "login").text == "alice"
            want = [r for r in stored.latest() if r["repo"] in ("octo-org/widgets", "octo-org/docs")
                    and r["overall_band"] == "strong"]
            assert driver.find_element(By.ID, "total-prs").text == str(len(want))
            options = [o.get_attribute("value") for o in
                       driver.find_elements(By.CSS_SELECTOR, "#f-repo option") if o.get_attribute("value")]
            assert options == ["octo-org/docs", "octo-org/widgets"]
            assert "secret-org" not in driver.page_source
            shot(driver, "signed-in")
            url = navigate(driver, driver.find_element(By.ID, "sign-out"), lambda u: "signed-out" in u)
            assert urlsplit(url).path == "/dashboard/signed-out"
            driver.get(f"{served.url}/dashboard/")
            assert fake.log.count("GET /login/oauth/authorize") == 2  # signed out: asked again
        finally:
            served.close()
            app.extensions["taskeval"].engine.dispose()


def _overflow(driver: Any) -> dict[str, Any]:
    """What sticks out of the window horizontally: the page, any table's scroll box, any chart."""
    return dict(driver.execute_script("""
        const right = window.innerWidth;
        const out = {page: Math.max(0, document.documentElement.scrollWidth - right), tables: [], charts: []};
        for (const box of document.querySelectorAll('.scroll')) {
            if (box.scrollWidth > box.clientWidth) out.tables.push(box.parentElement.id);
        }
        for (const svg of document.querySelectorAll('main svg')) {
            const r = svg.getBoundingClientRect();
            if (r.right > right || r.left < 0) out.charts.push(svg.getAttribute('class'));
        }
        return out;"""))


@pytest.mark.parametrize("width", [1400, 1600])
def test_nothing_overflows_a_laptop_window(driver: Any, site: str, store: tuple[str, Stored],
                                           width: int) -> None:
    from selenium.webdriver.common.by import By

    stored = store[1]
    twice = stored.latest()[0]
    owner, name = twice["repo"].split("/")
    driver.set_window_size(width, 1000)
    try:
        assert driver.execute_script("return window.innerWidth") <= width
        for path in ("/dashboard/", "/dashboard/?by=author", "/dashboard/agent/codex",
                     "/dashboard/compare?a=copilot&b=codex",
                     "/dashboard/agent/no-agent", f"/dashboard/pr/{owner}/{name}/{twice['number']}"):
            driver.get(f"{site}{path}")
            assert _overflow(driver) == {"page": 0, "tables": [], "charts": []}, path
        driver.get(f"{site}/dashboard/")
        trend = driver.find_elements(By.CSS_SELECTOR, "table[data-table='groups'] td[data-col='_trend'] svg")
        assert trend and all(t.rect["x"] + t.rect["width"] <= width for t in trend)
        shot(driver, f"overview-{width}")
    finally:
        driver.set_window_size(1440, 1000)


def test_one_column_per_outcome_with_its_definition(driver: Any, site: str) -> None:
    from selenium.webdriver.common.by import By

    from taskeval.outcomes import OUTCOMES

    driver.get(f"{site}/dashboard/")
    headers = driver.find_elements(By.CSS_SELECTOR, "th[data-col^='outcome.']")
    keys = [h.get_attribute("data-col").removeprefix("outcome.") for h in headers]
    assert sorted(keys) == sorted(OUTCOMES)  # each once, "Rejected" and "rejected" folded
    titles = [h.text for h in headers]
    assert titles.count("Rejected") == 1 and "rejected" not in titles
    for header, key in zip(headers, keys, strict=True):
        assert OUTCOMES[key].split(" (")[0] in header.get_attribute("title")
    rejected = driver.find_element(By.CSS_SELECTOR, "table[data-table='groups'] th[data-col='outcome.rejected']")
    assert "closed without merging" in rejected.get_attribute("title")


def test_intervals_stay_on_the_scale_and_no_agent_is_not_ranked(driver: Any, site: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{site}/dashboard/")
    assert "±" not in driver.find_element(By.TAG_NAME, "main").text
    for ci in driver.find_elements(By.CSS_SELECTOR, "table[data-table='groups'] .ci"):
        low, high = (float(x) for x in ci.text.split("–"))
        assert 0 <= low <= high <= 100
    rows = driver.find_elements(By.CSS_SELECTOR, "table[data-table='groups'] tbody tr")
    last = rows[-1]
    assert "No agent found" in last.text and "no-agent" in last.get_attribute("class")
    assert last.find_element(By.CSS_SELECTOR, "td[data-col='rank']").text == "—"
    ranks = [r.find_element(By.CSS_SELECTOR, "td[data-col='rank']").text for r in rows]
    shown = [int(x.lstrip("=")) for x in ranks if x != "—"]
    assert shown == sorted(shown) and shown[0] == 1
    for x in ranks:  # a shared rank is marked on every row that shares it
        if x != "—":
            assert x.startswith("=") == (sum(y.lstrip("=") == x.lstrip("=") for y in ranks) > 1)


def test_pr_page_shows_the_comment_as_github_does(driver: Any, site: str, store: tuple[str, Stored]) -> None:
    import json

    from selenium.webdriver.common.by import By
    from sqlalchemy import update

    from dashboard import queries
    from taskeval.store.db import evaluations, make_engine

    url, stored = store
    row = stored.latest()[-1]
    data = json.loads(row["result_json"])
    data["warnings"] = ["GitHub answered 403 for the check runs; CI signals are inconclusive"]
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(update(evaluations).where(evaluations.c.id == row["id"])
                     .values(result_json=json.dumps(data)))
    engine.dispose()
    queries.clear_cache()
    owner, name = row["repo"].split("/")
    driver.get(f"{site}/dashboard/pr/{owner}/{name}/{row['number']}")
    comment = driver.find_element(By.CSS_SELECTOR, "#comment .markdown")
    alert = comment.find_element(By.CSS_SELECTOR, "blockquote.markdown-alert-warning")
    assert alert.find_element(By.CSS_SELECTOR, ".markdown-alert-title").text == "Warning"
    assert "GitHub answered 403" in alert.text and "[!WARNING]" not in comment.text
    details = comment.find_element(By.TAG_NAME, "details")
    summary = details.find_element(By.TAG_NAME, "summary")
    assert summary.text == "All signals"
    inner = details.find_element(By.TAG_NAME, "table")
    assert not inner.is_displayed()  # collapsed, as on GitHub
    summary.click()
    assert inner.is_displayed()
    assert "taskeval scorer" in comment.find_element(By.TAG_NAME, "sub").text
    assert "raw HTML omitted" not in driver.page_source
    shot(driver, "pr-comment")
