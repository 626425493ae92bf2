"""The agent page's cycle times, costs to people and merge-rate denominators, and the comparison
view: every number recomputed here from ``taskeval export``'s rows of the same real store
(SQLite, and PostgreSQL with DATABASE_URL_POSTGRES), for several filters."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import random
import statistics
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import Engine, insert, select

from dashboard import queries, teamwork
from dashboard.queries import Filters
from taskeval.store import migrations
from taskeval.store.db import drop_schema, evaluations, init_schema, make_engine, write
from taskeval.store.export import STORED, csv_chunks, rows
from taskeval.store.results import record_from_result
from tests.dashboard_store import Stored, fill

pytest_plugins = ["tests.bot.fixtures"]
pytestmark = pytest.mark.usefixtures("fresh_dashboard_cache")


@pytest.fixture
def stored(engine: Engine) -> Stored:
    return fill(engine, 400, full_results=True, seed=5)


@pytest.fixture
def client(engine: Engine, stored: Stored) -> FlaskClient:
    from dashboard.core import DashboardConfig, install

    app = Flask("teamwork-test")
    install(app, DashboardConfig(engine=engine, open_access=True))
    return app.test_client()


def export_rows(engine: Engine) -> list[dict[str, str]]:
    """The store as ``taskeval export --format csv`` writes it, read back as a spreadsheet would."""
    return list(csv.DictReader(io.StringIO("".join(csv_chunks(rows(engine))))))


def csv_table(client: FlaskClient, path: str, table: str) -> list[dict[str, str]]:
    sep = "&" if "?" in path else "?"
    resp = client.get(f"{path}{sep}format=csv&table={table}")
    assert resp.status_code == 200, resp.data[:300]
    return list(csv.DictReader(io.StringIO(resp.get_data(as_text=True))))


def pick(export: list[dict[str, str]], agent: str, **match: str) -> list[dict[str, str]]:
    return [r for r in export if r["agent_id"] == agent and all(r[k] == v for k, v in match.items())]


CASES = [  # (agent, page filters, export columns that must match)
    ("copilot", {}, {}),
    ("codex", {"repo": "octo-org/gadgets"}, {"repository": "octo-org/gadgets"}),
    ("copilot", {"task_type": "feature"}, {"task_type": "feature"}),
    ("claude-code", {"author": "alice"}, {"author": "alice"}),
]


def _query(filters: dict[str, str]) -> str:
    return "&".join(f"{k}={v}" for k, v in filters.items())


@pytest.mark.parametrize(("agent", "filters", "match"), CASES)
def test_cycle_times_equal_the_export(client: FlaskClient, engine: Engine, agent: str,
                                      filters: dict[str, str], match: dict[str, str]) -> None:
    mine = pick(export_rows(engine), agent, **match)
    page = {r["figure"]: r for r in csv_table(client, f"/dashboard/agent/{agent}?{_query(filters)}", "cycle")}
    columns = {"first_response": "first_human_response_hours", "agent_turns": "agent_hours",
               "waiting_for_people": "people_hours", "time_to_merge": "time_to_merge_hours",
               "draft": "draft_hours"}
    for figure, column in columns.items():
        values = sorted(float(r[column]) for r in mine if r[column] != "" and (figure != "draft"
                                                                              or float(r[column]) > 0))
        row = page[figure]
        assert int(row["prs"]) == len(values), figure
        if len(values) >= 2:
            # statistics.quantiles' "inclusive" method is PERCENTILE.INC
            q = statistics.quantiles(values, n=10, method="inclusive")
            assert float(row["medianHours"]) == pytest.approx(statistics.median(values), abs=0.006)
            assert float(row["p90Hours"]) == pytest.approx(q[8], abs=0.006)
            assert float(row["medianLow"]) <= float(row["medianHours"]) <= float(row["medianHigh"])
            assert float(row["p90Low"]) <= float(row["p90Hours"]) <= float(row["p90High"])
    merged = [r for r in mine if r["state"] == "merged"]
    trend = csv_table(client, f"/dashboard/agent/{agent}?{_query(filters)}", "merge_trend")
    assert sum(int(t["prs"]) for t in trend) <= len(merged)


@pytest.mark.parametrize(("agent", "filters", "match"), CASES)
def test_costs_and_denominators_equal_the_export(client: FlaskClient, engine: Engine, agent: str,
                                                 filters: dict[str, str], match: dict[str, str]) -> None:
    mine = pick(export_rows(engine), agent, **match)
    path = f"/dashboard/agent/{agent}?{_query(filters)}"
    merged = [r for r in mine if r["state"] == "merged"]
    closed = [r for r in mine if r["state"] == "closed" and r["draft"] != "true"]
    drafts = [r for r in mine if r["state"] == "closed" and r["draft"] == "true"]
    decisions = {r["key"]: int(r["count"]) for r in csv_table(client, path, "decisions")}
    assert decisions == {"merged": len(merged), "closed": len(closed), "decided": len(merged) + len(closed),
                         "closed_drafts": len(drafts), "open": sum(r["state"] == "open" for r in mine)}
    rescue = {r["rescue"]: r for r in csv_table(client, path, "rescue")}
    for cls in teamwork.RESCUE_CLASSES:
        assert int(rescue[cls]["prs"]) == sum(r["rescue_class"] == cls for r in merged)
        assert int(rescue[cls]["of"]) == len(merged)
    closure = {r["closure"]: r for r in csv_table(client, path, "closure")}
    assert int(closure["agent_failure"]["prs"]) == sum(r["closure_class"] == "agent_failure" for r in closed)
    assert int(closure["project"]["prs"]) == sum(r["closure_class"] in teamwork.PROJECT_REASONS for r in closed)
    per_pr = {r["figure"]: r for r in csv_table(client, path, "per_pr")}
    for key, column, prs in (("people_commits", "commits_by_people", merged), ("rounds", "rounds", merged),
                             ("people_comments", "comments_by_people", mine)):
        values = [int(r[column]) for r in prs if r[column] != ""]
        assert int(per_pr[key]["prs"]) == len(values), key
        assert float(per_pr[key]["mean"]) == pytest.approx(statistics.fmean(values), abs=1e-4), key
        assert float(per_pr[key]["low"]) <= float(per_pr[key]["mean"]) <= float(per_pr[key]["high"])
    assert any(r["comments_by_people"] not in ("", "0") for r in mine)  # the store has people's comments
    text = client.get(path).get_data(as_text=True)
    assert f'id="merge-rate-decided">{len(merged) + len(closed)}<' in text
    taken = sum(r["rescue_class"] == "taken_over" for r in merged)
    failures = sum(r["closure_class"] == "agent_failure" for r in closed)
    sentence = text.split('id="detail-sentence">', 1)[1].split("<", 1)[0]
    if len(merged) < 10:
        assert "Too few merged" in sentence
    else:
        assert f"1 in {round(len(merged) / taken)} merged" in sentence or "%" in sentence.split(";")[0]
    if len(closed) < 10:
        assert "too few rejections" in sentence
    else:
        assert f"{100 * failures / len(closed):.0f} % of its rejections were its own failures" in sentence


def _comment(author: str | None, bot: bool = False) -> dict[str, Any]:
    return {"id": 1, "author": author, "authorIsBot": bot, "kind": "issue", "bodyExcerpt": ""}


@pytest.mark.parametrize(("comments", "roles", "expected"), [
    ([_comment("op"), _comment("rev"), _comment("someone")], {"op": "operator", "rev": "reviewer"}, 3),
    ([_comment("agent[bot]", True), _comment("agent"), _comment("ci-runner")],
     {"agent": "agent", "ci-runner": "ci"}, 0),  # the agent, a flagged bot, CI: no person's comment
    ([_comment("renovate", False), _comment(None)], {"renovate": "bot"}, 0),  # a bot by role; no author
    ([], {}, 0),
])
def test_comments_by_people_follow_the_turns_roles(comments: list[dict[str, Any]], roles: dict[str, str],
                                                   expected: int) -> None:
    from taskeval.store.export import comments_by_people

    result = {"turns": {"roles": roles, "agentHours": 0}, "evidence": {"facts": {"comments": comments}}}
    assert comments_by_people(result) == expected
    assert comments_by_people({"evidence": {"facts": {"comments": comments}}}) is None  # no turns: unknown


@pytest.mark.parametrize(("merged", "taken", "closed", "failures", "expected"), [
    (40, 10, 20, 12, "1 in 4 merged Copilot PRs needed a person to push commits; 60 % of its rejections"),
    (40, 0, 20, 0, "No merged Copilot PR of 40 needed a person to push commits; 0 %"),
    (40, 30, 5, 5, "75 % merged Copilot PRs needed a person to push commits; too few rejections (5)"),
    (9, 9, 30, 3, "Too few merged Copilot PRs (9) to say how often"),
])
def test_the_sentence_is_computed(merged: int, taken: int, closed: int, failures: int, expected: str) -> None:
    c = teamwork.Costs(merged=merged, closed=closed,
                       rescue={"clean": merged - taken, "taken_over": taken},
                       closure={"agent_failure": failures, "stale": closed - failures})
    assert teamwork.sentence("Copilot", c).startswith(expected)


def _percentiles(found: list[float]) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of a list of equally likely values, as the interval's
    definition takes them: the smallest value at which the share at or below reaches the level."""
    found = sorted(found)
    return tuple(next(v for i, v in enumerate(found) if (i + 1) / len(found) >= level - 1e-12
                      and (i + 1 == len(found) or found[i + 1] != v))
                 for level in (0.025, 0.975))  # type: ignore[return-value]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_bootstrap_intervals_are_the_bootstraps_exact_distribution(n: int) -> None:
    """Every one of the n^n equally likely resamples enumerated: a quantile that is one order
    statistic gets exactly the percentile interval of its bootstrap distribution; one between two
    order statistics gets the same interpolation of theirs (docs/bot.md)."""
    values = [float(i * i + i % 2) for i in range(n)]
    resamples = [sorted(values[i] for i in picks) for picks in itertools.product(range(n), repeat=n)]
    for q in (0.0, 0.25, 0.5, 0.9, 1.0):
        h = (n - 1) * q
        k = math.floor(h)
        got = teamwork.bootstrap_quantile(values, q)
        low, high = _percentiles([r[k] for r in resamples])
        if h > k and k + 1 < n:
            nlow, nhigh = _percentiles([r[k + 1] for r in resamples])
            low, high = low + (h - k) * (nlow - low), high + (h - k) * (nhigh - high)
        assert got == (pytest.approx(low), pytest.approx(high)), (n, q)


def test_bootstrap_intervals_match_resampling_and_cover_the_quantile() -> None:
    """At a realistic n the exact interval is what 2,000 resamples give, to within their noise."""
    rng = random.Random(7)
    values = sorted(round(rng.lognormvariate(2.0, 1.2), 2) for _ in range(1500))
    for q in (0.5, 0.9):
        low, high = teamwork.bootstrap_quantile(values, q) or (math.nan, math.nan)
        resampled = sorted(teamwork.quantile(sorted(rng.choices(values, k=len(values))), q) or 0.0
                           for _ in range(2000))
        width = high - low
        assert low <= teamwork.quantile(values, q) <= high
        assert resampled[50] == pytest.approx(low, abs=0.1 * width)
        assert resampled[1949] == pytest.approx(high, abs=0.1 * width)
    assert teamwork.bootstrap_quantile([1.0], 0.5) is None
    assert teamwork.bootstrap_quantile([3.0, 3.0, 3.0], 0.9) == (3.0, 3.0)


@pytest.mark.parametrize("path", ["/dashboard/agent/copilot", "/dashboard/author/alice?task_type=fix"])
def test_each_tables_csv_carries_what_the_page_shows(client: FlaskClient, path: str) -> None:
    """A CSV reads only what its own table shows; each one still equals that table in the page's
    JSON (the PR list's CSV: every PR, the page's first), and a table the page lacks is a 404."""
    sep = "&" if "?" in path else "?"
    page = json.loads(client.get(f"{path}{sep}format=json").data)
    assert {"groups", "signals", "distribution", "prs", "cycle", "merge_trend", "decisions", "rescue",
            "per_pr", "closure", "after_merge"} <= set(page)
    for name, records in page.items():
        got = csv_table(client, path, name)
        if name == "prs":  # the page shows 50 PRs, the CSV is the export of them all
            assert len(got) >= len(records) and len(records) == min(50, len(got))
            got = got[:len(records)]
        assert [list(r) for r in got] == [list(r) for r in records], name  # the same columns
        assert [[("" if v is None else str(v).lower() if isinstance(v, bool) else str(v)) for v in r.values()]
                for r in records] == [list(r.values()) for r in got], name
    assert csv_table(client, path, "groups") == list(csv.DictReader(io.StringIO(
        client.get(f"{path}{sep}format=csv").get_data(as_text=True))))  # the first table by default
    assert client.get(f"{path}{sep}format=csv&table=nope").status_code == 404


def test_comparison_equals_the_export_and_says_too_few(client: FlaskClient, engine: Engine) -> None:
    export = export_rows(engine)
    table = csv_table(client, "/dashboard/compare?a=copilot&b=codex", "compare")
    overall = table[0]
    assert (overall["kind"], overall["stratum"]) == ("overall", "all PRs")

    def rate(agent: str) -> float:
        mine = pick(export, agent)
        merged = sum(r["state"] == "merged" for r in mine)
        closed = sum(r["state"] == "closed" and r["draft"] != "true" for r in mine)
        return merged / (merged + closed)

    assert float(overall["merge_rateDiff"]) == pytest.approx(rate("copilot") - rate("codex"), abs=1e-4)
    assert float(overall["merge_rateLow"]) < float(overall["merge_rateDiff"]) < float(overall["merge_rateHigh"])
    ap = {a: statistics.fmean(int(r["agent_performance_final"]) for r in pick(export, a)) for a in ("copilot", "codex")}
    assert float(overall["mean_agentPerformanceDiff"]) == pytest.approx(ap["copilot"] - ap["codex"], abs=1e-4)
    kinds = {(r["kind"], r["stratum"]) for r in table}
    shared = {r["task_type"] for r in pick(export, "copilot")} & {r["task_type"] for r in pick(export, "codex")}
    assert {s for k, s in kinds if k == "task type"} == shared
    small = [r for r in table if min(int(r["merge_rateAPrs"]), int(r["merge_rateBPrs"])) < 10]
    assert small and all(r["merge_rateDiff"] == "" for r in small)
    assert "too few PRs" in client.get("/dashboard/compare?a=copilot&b=codex").get_data(as_text=True)


def test_two_periods_of_one_agent(client: FlaskClient, engine: Engine) -> None:
    table = csv_table(client, "/dashboard/compare?agent=copilot&a_until=2025-04-30&b_since=2025-05-01",
                      "compare")
    a = queries.day_start("2025-05-01")
    f = Filters(agent="copilot")
    with engine.connect() as conn:
        first = teamwork.costs(conn, Filters(agent="copilot", until=a))
        both = teamwork.costs(conn, f)
    assert int(table[0]["merge_rateAPrs"]) == first.decided
    assert int(table[0]["merge_rateBPrs"]) == both.decided - first.decided


def test_upgrade_from_0007_fills_the_columns_from_result_json(db_url: str) -> None:
    engine = make_engine(db_url)
    drop_schema(engine)
    with write(engine) as conn:
        migrations.upgrade(conn, "0007")
    result = json.loads((Path(__file__).resolve().parents[1] / "examples" / "agent-pr-482.result.json").read_text())
    row = {k: v for k, v in record_from_result(result).items() if k not in set(STORED.values())}
    older: dict[str, Any] = json.loads(json.dumps(result))
    for key in ("turns", "rescue", "taskType"):
        older.pop(key, None)
    with engine.begin() as conn:
        conn.execute(insert(evaluations).values(**row, stored_at=0.0, is_latest=True))
        conn.execute(insert(evaluations).values(**{**row, "number": 483, "result_json": json.dumps(older)},
                                                stored_at=0.0, is_latest=True))
        conn.execute(insert(evaluations).values(**{**row, "number": 484, "result_json": "not json"},
                                                stored_at=0.0, is_latest=True))
    assert "0008" in init_schema(engine)
    with engine.connect() as conn:
        got = {r.number: r for r in conn.execute(select(evaluations))}
    new = got[482]
    assert (new.task_type, new.rescue_class, new.people_commits, new.rounds) == ("fix", "feedback_loop", 0, 2)
    assert (new.agent_hours, new.first_response_hours, new.draft_at_end, new.merge_hours) == (0.26, 0.32, False, 1.15)
    # stored before turns and task types: the type is computed from its evidence, as the export does
    assert (got[483].task_type, got[483].agent_hours, got[483].rescue_class) == ("fix", None, None)
    assert got[484].task_type is None
    assert record_from_result(result)["merge_hours"] == new.merge_hours  # written like the backfill
    engine.dispose()


def test_revert_and_follow_up_fix_rates_where_recorded(client: FlaskClient, engine: Engine,
                                                       stored: Stored) -> None:
    """Not recorded at first (said, with no rate); then the share of the PRs where each outcome is
    recorded, true or false, with a Wilson interval, as the outcomes store holds them."""
    from taskeval.store.db import outcomes

    path = "/dashboard/agent/copilot"
    before = {r["outcome"]: r for r in csv_table(client, path, "after_merge")}
    assert {k: (r["recorded"], r["rate"]) for k, r in before.items()} == {
        "reverted": ("0", ""), "follow_up_fix": ("0", "")}
    assert client.get(path).get_data(as_text=True).count('data-recorded="no">not recorded<') == 2
    merged = [r for r in stored.latest() if r["agent_id"] == "copilot" and r["pr_state"] == "merged"]
    marks = [{"repo": r["repo"], "number": r["number"], "outcome": "reverted", "value": i % 4 == 0,
              "evidence": "[]", "detail": "", "source": "scan", "observed_at": None, "recorded_at": 0.0}
             for i, r in enumerate(merged[:30])]
    with engine.begin() as conn:
        conn.execute(insert(outcomes), marks)
    queries.clear_cache()
    after = {r["outcome"]: r for r in csv_table(client, path, "after_merge")}
    hits = sum(m["value"] for m in marks)
    assert (int(after["reverted"]["recorded"]), int(after["reverted"]["prs"])) == (30, hits)
    assert float(after["reverted"]["rate"]) == pytest.approx(hits / 30, abs=1e-4)
    wilson = queries.wilson(hits, 30)
    assert (float(after["reverted"]["rateLow"]), float(after["reverted"]["rateHigh"])) == (
        pytest.approx(wilson.low, abs=1e-4), pytest.approx(wilson.high, abs=1e-4))
    assert after["follow_up_fix"]["recorded"] == "0"  # still none recorded: not a 0 % rate


def _cell(decided: int, merged: int, ap: list[int] | None = None) -> teamwork.Cell:
    ap = ap if ap is not None else [70] * decided
    return teamwork.Cell(n=decided, decided=decided, merged=merged, rescued_known=merged, taken_over=merged // 4,
                         ap_n=len(ap), ap_sum=float(sum(ap)), ap_sq=float(sum(x * x for x in ap)))


@pytest.mark.parametrize(("pairs", "raw_sign", "adjusted"), [
    # Simpson's paradox: A merges more within each task type, but is given mostly the hard ones
    # (raw: 118/220 against 178/220; within: +0.05 and +0.10, each stratum 220 PRs)
    ([(_cell(20, 18), _cell(200, 170)), (_cell(200, 100), _cell(20, 8))], -1, (0.05 * 220 + 0.10 * 220) / 440),
    # the same mix and rates: no difference
    ([(_cell(50, 40), _cell(50, 40)), (_cell(30, 10), _cell(30, 10))], 0, 0.0),
    # one stratum only one side worked in is left out of the adjustment
    ([(_cell(40, 30), _cell(40, 20)), (_cell(40, 40), _cell(0, 0, []))], 1, 0.25),
])
def test_the_task_mix_adjusted_difference(pairs: list[tuple[teamwork.Cell, teamwork.Cell]], raw_sign: int,
                                          adjusted: float) -> None:
    a, b = teamwork.Cell(), teamwork.Cell()
    for x, y in pairs:
        a.add(x)
        b.add(y)
    raw = teamwork.share_difference(a.merged, a.decided, b.merged, b.decided)
    assert raw.diff is not None
    assert (raw.diff > 1e-12) - (raw.diff < -1e-12) == raw_sign
    got = teamwork.adjusted_difference(pairs, "merge_rate")
    assert got.diff == pytest.approx(adjusted, abs=1e-12)
    assert got.strata == sum(1 for x, y in pairs if x.decided and y.decided)
    assert got.low is not None and got.high is not None and got.low <= got.diff <= got.high


def test_the_adjusted_difference_has_no_value_without_shared_strata() -> None:
    got = teamwork.adjusted_difference([(_cell(30, 20), _cell(0, 0, []))], "merge_rate")
    assert (got.diff, got.strata, got.a_n, got.b_n) == (None, 0, 0, 0) and got.too_few


def test_the_adjusted_interval_adds_the_strata_variances() -> None:
    pairs = [(_cell(100, 80), _cell(100, 60)), (_cell(300, 150), _cell(100, 40))]
    got = teamwork.adjusted_difference(pairs, "merge_rate")
    w = [200 / 600, 400 / 600]

    def var(hits: int, n: int) -> float:
        p = (hits + 1) / (n + 2)
        return p * (1 - p) / (n + 2)

    half = 1.96 * math.sqrt(w[0] ** 2 * (var(80, 100) + var(60, 100)) + w[1] ** 2 * (var(150, 300) + var(40, 100)))
    assert got.diff == pytest.approx(w[0] * 0.2 + w[1] * 0.1)
    assert (got.low, got.high) == (pytest.approx(got.diff - half), pytest.approx(got.diff + half))
    sure = teamwork.adjusted_difference([(_cell(50, 50), _cell(50, 0))], "merge_rate")
    assert sure.low is not None and sure.high is not None and sure.low < sure.diff == 1.0 < sure.high  # never certain


@pytest.mark.parametrize(("row", "stratum"), [(1, lambda r: r["task_type"] or "unknown"),
                                            (2, lambda r: (r["task_type"] or "unknown", r["repository"]))])
def test_the_comparison_shows_the_adjusted_difference_beside_the_raw_one(client: FlaskClient, engine: Engine,
                                                                          row: int, stratum: Any) -> None:
    export = export_rows(engine)
    table = csv_table(client, "/dashboard/compare?a=copilot&b=codex", "compare")
    assert [(r["kind"], r["stratum"]) for r in table[:3]] == [
        ("overall", "all PRs"), ("adjusted", teamwork.ADJUSTED_BY_TYPE), ("adjusted", teamwork.ADJUSTED_BY_CELL)]
    adjusted = table[row]
    cells: dict[Any, dict[str, list[float]]] = {}
    for r in export:
        decided = r["state"] == "merged" or (r["state"] == "closed" and r["draft"] != "true")
        if r["agent_id"] in ("copilot", "codex") and decided:
            side = cells.setdefault(stratum(r), {"copilot": [], "codex": []})
            side[r["agent_id"]].append(1.0 if r["state"] == "merged" else 0.0)
    shared = {k: v for k, v in cells.items() if v["copilot"] and v["codex"]}
    weight = sum(len(v["copilot"]) + len(v["codex"]) for v in shared.values())
    want = sum((len(v["copilot"]) + len(v["codex"])) * (statistics.fmean(v["copilot"]) - statistics.fmean(v["codex"]))
               for v in shared.values()) / weight
    assert float(adjusted["merge_rateDiff"]) == pytest.approx(want, abs=1e-4)
    assert int(adjusted["merge_rateStrata"]) == len(shared)
    assert float(adjusted["merge_rateLow"]) <= float(adjusted["merge_rateDiff"]) <= float(adjusted["merge_rateHigh"])
    assert int(adjusted["merge_rateAPrs"]) == sum(len(v["copilot"]) for v in shared.values())
    html = client.get("/dashboard/compare?a=copilot&b=codex").get_data(as_text=True)
    assert f"within {len(shared)} strata both worked in" in html


@pytest.mark.parametrize(("low", "high", "shown"), [
    (0.1, 0.3, "10 %–30 %"),
    (-0.073, -0.001, "-7 % to -0 %"),  # a dash between negatives would read as a minus
    (-0.2, 0.1, "-20 % to 10 %"),
])
def test_an_interval_with_a_negative_bound_reads_low_to_high(low: float, high: float, shown: str) -> None:
    from dashboard.views.common import _pct
    from dashboard.views.detail import _interval

    assert f'title="95 % interval">{shown}</span>' in str(_interval(low, high, _pct))


@pytest.mark.parametrize(("filters", "match"), [
    ({}, {}), ({"repo": "octo-org/gadgets"}, {"repository": "octo-org/gadgets"})])
def test_the_agent_by_task_type_matrix_equals_the_export(client: FlaskClient, engine: Engine,
                                                         filters: dict[str, str], match: dict[str, str]) -> None:
    """Each cell: the agent's PRs of that task type, the merge rate over its decided PRs and the
    mean agentPerformance, as the export of the same store gives them; a cell under 10 PRs says
    "too few PRs" and carries no rate in the CSV either."""
    export = [r for r in export_rows(engine) if all(r[k] == v for k, v in match.items())]
    page = {r["agent"]: r for r in csv_table(client, f"/dashboard/tasks?{_query(filters)}", "tasks")}
    checked = small = 0
    for agent in ("copilot", "codex", "claude-code"):
        for kind in queries.TASK_TYPES:
            mine = [r for r in export if r["agent_id"] == agent and (r["task_type"] or "unknown") == kind]
            row = page.get(agent, {})
            assert int(row.get(f"{kind}Prs") or 0) == len(mine), (agent, kind)
            if not mine:
                continue
            merged = sum(r["state"] == "merged" for r in mine)
            decided = merged + sum(r["state"] == "closed" and r["draft"] != "true" for r in mine)
            assert int(row[f"{kind}Decided"]) == decided
            if len(mine) < queries.SMALL_SAMPLE:
                assert row[f"{kind}MergeRate"] == "" and row[f"{kind}MeanAgentPerformance"] == ""
                small += 1
                continue
            assert float(row[f"{kind}MergeRate"]) == pytest.approx(merged / decided, abs=1e-4)
            scores = [float(r["agent_performance_final"]) for r in mine]
            assert float(row[f"{kind}MeanAgentPerformance"]) == pytest.approx(statistics.fmean(scores), abs=0.01)
            assert float(row[f"{kind}MergeRateLow"]) <= merged / decided <= float(row[f"{kind}MergeRateHigh"])
            checked += 1
    assert checked and small, "the store has cells with numbers and cells with too few PRs"
    text = client.get(f"/dashboard/tasks?{_query(filters)}").get_data(as_text=True)
    assert "too few PRs" in text and 'id="tasks-title"' in text
