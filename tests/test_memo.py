"""The identity cache behind the per-settings and per-rule-table lookups of a batch re-score."""

from __future__ import annotations

from taskeval.memo import by_identity


def test_answers_again_only_for_the_very_same_arguments() -> None:
    calls: list[tuple[object, ...]] = []

    @by_identity
    def joined(a: list[str], b: list[str]) -> str:
        calls.append((a, b))
        return "".join(a + b)

    x, y = ["a"], ["b"]
    assert joined(x, y) == joined(x, y) == "ab"
    assert len(calls) == 1
    assert joined(["a"], ["b"]) == "ab"  # equal but other objects: computed again
    assert joined(y, x) == "ba"
    assert len(calls) == 3


def test_holds_at_most_its_size_and_never_confuses_a_reused_id() -> None:
    calls: list[int] = []
    counted = by_identity(lambda value: calls.append(1) or len(value), size=2)
    kept = [[1], [1, 2], [1, 2, 3]]
    assert [counted(v) for v in kept] == [1, 2, 3]
    assert counted(kept[2]) == 3 and len(calls) == 3  # still cached after the clear at the limit
    for n in range(50):  # short-lived arguments whose ids Python reuses at once
        assert counted(list(range(n))) == n
