"""The dashboard over real agent PRs: a store filled from the AIDev-pop replay (as ``taskeval
backfill`` stores results), read in headless Chromium. Each view's numbers on screen are checked
against the export of the same store: the agent page's PRs, decided PRs and time to merge, and the
comparison of two agents' merge-rate difference against its CSV.

The store holds the 40 sample PRs of each of the five agents (``tests/test_real_corpus.py``'s
fixed sample), evaluated once per run through the replay over HTTP with the AI off (the
``sample_results`` fixture of tests/conftest.py, which the real-PR tests read too). Without the corpus the
tests skip and say so (``TASKEVAL_REQUIRE_CORPUS=1`` makes them fail); without Chromium likewise
(``TASKEVAL_REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from taskeval.corpus.aidev import FOLDER_AGENT
from taskeval.store.db import init_schema, make_engine, write
from taskeval.store.export import rows
from taskeval.store.results import record_from_result, store_evaluation
from tests.test_dashboard_browser import Served, _csv, _fresh_cache, _need_browser, driver, shot  # noqa: F401
from tests.test_real_corpus import PER_AGENT  # the whole fixed sample: enough decided PRs per agent


@pytest.fixture(scope="module")
def replay_store(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> str:
    _need_browser()  # before the sample is evaluated: without a browser there is nothing to do
    evaluated = request.getfixturevalue("sample_results")  # the same run's 200 results
    results = []
    for pr, result in evaluated.values():
        assert isinstance(result, dict), f"{pr.ref}: {result!r}"
        results.append(result)
    url = f"sqlite:///{tmp_path_factory.mktemp('replay-dash') / 'taskeval.db'}"
    engine = make_engine(url)
    init_schema(engine)
    with write(engine) as conn:
        for result in results:
            store_evaluation(conn, {**record_from_result(result), "stored_at": time.time()})
    engine.dispose()
    assert len(results) == 5 * PER_AGENT
    return url


@pytest.fixture(scope="module")
def site(replay_store: str) -> Iterator[str]:
    from dashboard.cli import create_local_app

    served = Served(create_local_app(replay_store, bind_host="127.0.0.1", env={}))
    yield served.url
    served.close()


def _exported(url: str) -> list[dict[str, Any]]:
    engine = make_engine(url)
    try:
        return list(rows(engine))
    finally:
        engine.dispose()


def test_every_agent_of_the_replay_has_its_prs_on_the_overview(
        driver: Any, site: str, replay_store: str) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    export = _exported(replay_store)
    found = {r["agent_id"] for r in export}
    # Attribution names each folder's agent, or a person where the PR shows no agent's mark.
    assert found <= {*FOLDER_AGENT.values(), "human"} and {"copilot", "devin"} <= found
    expected = found & set(FOLDER_AGENT.values())
    driver.get(f"{site}/dashboard/")
    links = {a.get_attribute("href").rstrip("/").rsplit("/", 1)[-1]
             for a in driver.find_elements(By.CSS_SELECTOR, 'table[data-table="groups"] td[data-col="agent"] a')}
    assert expected <= links
    for agent in sorted(expected):
        driver.get(f"{site}/dashboard/agent/{agent}")
        mine = [r for r in export if r["agent_id"] == agent]
        assert driver.find_element(By.ID, "detail-prs").text == str(len(mine))
        decided = sum(r["state"] == "merged" or (r["state"] == "closed" and not r["draft"]) for r in mine)
        assert driver.find_element(By.ID, "merge-rate-decided").text == str(decided)
        cycle = {r["figure"]: r for r in _csv(f"{site}/dashboard/agent/{agent}?format=csv&table=cycle")}
        merged = [r["time_to_merge_hours"] for r in mine if r["time_to_merge_hours"] is not None]
        assert int(cycle["time_to_merge"]["prs"]) == len(merged)
        # The agent's and the people's hours rest only on PRs whose timeline was read.
        read = [r for r in mine if r["turns_partial"] is False and r["agent_hours"] is not None]
        assert int(cycle["agent_turns"]["prs"]) == len(read)
    shot(driver, "replay-agent")


def test_the_comparison_of_two_replay_agents_equals_its_csv(driver: Any, site: str) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    driver.get(f"{site}/dashboard/compare?a=devin&b=copilot")
    table = _csv(f"{site}/dashboard/compare?a=devin&b=copilot&format=csv&table=compare")
    first = driver.find_element(By.CSS_SELECTOR, 'table[data-table="compare"] td[data-col="merge_rateDiff"]')
    assert table[0]["merge_rateDiff"] != ""
    assert first.text.split("%")[0].lstrip("+").strip() == f"{100 * float(table[0]['merge_rateDiff']):.1f}"
    shot(driver, "replay-compare")


def test_the_task_type_matrix_of_the_replay_equals_the_export(
        driver: Any, site: str, replay_store: str) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    export = _exported(replay_store)
    driver.get(f"{site}/dashboard/tasks")
    table = {r["agent"]: r for r in _csv(f"{site}/dashboard/tasks?format=csv&table=tasks")}
    for row in driver.find_elements(By.CSS_SELECTOR, 'table[data-table="tasks"] tbody tr'):
        link = row.find_elements(By.CSS_SELECTOR, 'td[data-col="agent"] a')
        if not link:
            continue  # the no-agent row
        agent = link[0].get_attribute("href").split("/agent/", 1)[1].split("?", 1)[0]
        for kind in ("feature", "fix", "docs"):
            mine = [r for r in export if r["agent_id"] == agent and (r["task_type"] or "unknown") == kind]
            cell = row.find_elements(By.CSS_SELECTOR, f'td[data-col="{kind}Prs"]')
            if cell:
                shown = cell[0].text.split(" PR", 1)[0]
                assert shown == (str(len(mine)) if mine else "—"), (agent, kind, cell[0].text)
                assert int(table[agent][f"{kind}Prs"]) == len(mine)
    shot(driver, "replay-tasks")
