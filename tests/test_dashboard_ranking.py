"""How the overview ranks: only where the 95 % intervals separate, ties sharing a rank, the
intervals shown within the 0–100 scale, and PRs with no agent found kept out, in a row of their own."""

from __future__ import annotations

import pytest

from dashboard import queries
from dashboard.queries import Group, Mean, mean_ci


def group(key: str, mean: float, low: float | None, high: float | None, n: int = 30) -> Group:
    return Group(key=key, name=key, count=n, overall=Mean(mean, low, high), categories={},
                 bands={}, merged=0, closed=0, open=0)


@pytest.mark.parametrize(("rows", "ranks"), [
    # three separated: 1, 2, 3
    ([("a", 80, 78, 82), ("b", 70, 68, 72), ("c", 60, 58, 62)], {"a": "1", "b": "2", "c": "3"}),
    # a and b overlap: both 1; c lies below both: 3 (two rows are above it)
    ([("a", 80, 75, 85), ("b", 77, 72, 82), ("c", 60, 55, 65)], {"a": "=1", "b": "=1", "c": "3"}),
    # a chain: a overlaps b, b overlaps c, a is above c
    ([("a", 80, 76, 84), ("b", 75, 71, 79), ("c", 70, 66, 74)], {"a": "=1", "b": "=1", "c": "2"}),
    # all overlap: one shared rank
    ([("a", 70, 50, 90), ("b", 65, 45, 85)], {"a": "=1", "b": "=1"}),
])
def test_ranks_only_where_intervals_separate(rows: list[tuple[str, float, float, float]],
                                             ranks: dict[str, str]) -> None:
    ordered = queries.rank([group(*r) for r in rows])
    shown = {g.key: (("=" if g.tied else "") + str(g.rank)) for g in ordered}
    assert shown == ranks
    assert [g.key for g in ordered] == sorted(ranks, key=lambda k: (int(ranks[k].lstrip("=")),
                                                                     -dict((r[0], r[1]) for r in rows)[k]))


def test_small_samples_and_no_agent_are_shown_last_and_never_ranked() -> None:
    rows = [group(queries.NO_AGENT, 95, 93, 97, n=500), group("tiny", 99, 90, 100, n=4),
            group("b", 70, 68, 72), group("a", 80, 78, 82)]
    ordered = queries.rank(rows)
    assert [g.key for g in ordered] == ["a", "b", "tiny", queries.NO_AGENT]
    assert [g.rank for g in ordered] == [1, 2, None, None]


def test_the_interval_of_a_few_spread_scores_stays_on_the_scale() -> None:
    scores = [0, 0, 0, 0, 50]  # mean 10, sd 22.4: mean ± t·s/√n runs from -17.8 to 37.8
    m = mean_ci(len(scores), sum(scores), sum(s * s for s in scores))
    assert m.mean == 10.0 and m.low == 0.0 and m.high == pytest.approx(37.8, abs=0.05)
    from dashboard.views.common import _mean_cell

    cell = str(_mean_cell(m))
    assert ">10.0<" in cell and ">0–38<" in cell and "±" not in cell and "-17" not in cell


@pytest.mark.parametrize(("agent_id", "row"), [
    ("human", queries.NO_AGENT), ("unknown-bot", queries.NO_AGENT), (None, queries.NO_AGENT),
    ("codex", "codex"), ("copilot", "copilot"),
])
def test_which_prs_count_as_no_agent_found(agent_id: str | None, row: str) -> None:
    assert queries.group_key(agent_id, "agent") == row
    assert queries.group_key("human", "author") == "human"  # authors are people: all ranked


def test_a_group_alone_gets_no_rank() -> None:
    """"Rank 1" of one says nothing: a lone rankable group (an agent's own page, a filter down to
    one agent) is not ranked; beside a small sample it is still alone."""
    assert [g.rank for g in queries.rank([group("a", 80, 78, 82)])] == [None]
    assert [g.rank for g in queries.rank([group("a", 80, 78, 82), group("tiny", 99, 90, 100, n=4)])] == [None, None]
    assert [g.rank for g in queries.rank([group("a", 80, 78, 82), group("b", 70, 68, 72)])] == [1, 2]
