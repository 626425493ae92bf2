"""Rules between config fields hold whichever of the fields a file sets, and an invalid file never
blocks an evaluation: generated configs (every threshold, in range and out of it, alone or
together) load, and a bundle scores with each of them.
"""

from __future__ import annotations

import math
import os
from functools import cache
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic.fields import FieldInfo

from taskeval.config import CROSS_FIELD_RULES, Settings, Thresholds, parse_config
from taskeval.models import EvidenceBundle
from taskeval.pipeline import Options, score_bundle
from tests import builders

SOURCE = "repo:.github/taskeval.yml"
EXAMPLES = 2000 if os.environ.get("TASKEVAL_SLOW") == "1" else 150
# Numbers are drawn around every threshold's bounds and then kept only where valid for the field
# (``good``) or only where not (``bad``): for the narrow ranges most draws are filtered out by design,
# and on a loaded machine Hypothesis's filter health check then failed the run by chance.
FAST = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def _bounds(info: FieldInfo) -> list[float]:
    """The numbers a field's constraints name (ge, gt, le, lt)."""
    found = []
    for item in info.metadata:
        for name in ("ge", "gt", "le", "lt"):
            value = getattr(item, name, None)
            if value is not None:
                found.append(float(value))
    return found


def _as_loaded(name: str, value: Any) -> Any:
    """``value`` as the threshold ``name`` holds it when valid on its own (no rule between fields
    consulted); raises ``ValueError`` when it is not."""
    model = Thresholds.model_construct()
    Thresholds.__pydantic_validator__.validate_assignment(model, name, value)
    return getattr(model, name)


def _valid(name: str, value: Any) -> bool:
    try:
        _as_loaded(name, value)
    except ValueError:
        return False
    return True


def _numbers(name: str) -> st.SearchStrategy[Any]:
    """Numbers for one threshold: around its own bounds and default, and across the range of the
    other thresholds' defaults, so any two may cross."""
    info = Thresholds.model_fields[name]
    anchors = sorted({*_bounds(info), *(float(f.default) for f in Thresholds.model_fields.values())})
    near = st.sampled_from(anchors).flatmap(
        lambda a: st.sampled_from([a, a - 1, a + 1, a / 2, a * 2, a * 10]))
    number = st.one_of(near, st.integers(-10, 10**6), st.floats(-1e9, 1e12),
                       st.floats(allow_nan=True, allow_infinity=True))
    if info.annotation is int:
        number = number.map(lambda v: int(v) if math.isfinite(v) and v == int(v) else v)
    return number


NAMES = list(Thresholds.model_fields)
good = st.fixed_dictionaries({}, optional={n: _numbers(n).filter(lambda v, n=n: _valid(n, v)) for n in NAMES})
# One value of the wrong kind or out of its range, beside valid ones.
bad = st.tuples(good, st.sampled_from(NAMES).flatmap(
    lambda n: st.tuples(st.just(n), _numbers(n).filter(lambda v: not _valid(n, v))
                        | st.none() | st.text(max_size=4) | st.booleans()))).map(
    lambda pair: {**pair[0], pair[1][0]: pair[1][1]})
thresholds = st.one_of(good, good, good, bad)
documents = st.fixed_dictionaries({"thresholds": thresholds}, optional={
    "ai": st.booleans(),
    "signal_weights": st.dictionaries(st.sampled_from(["process.change_size", "agent.text_hygiene"]),
                                      st.floats(0, 10), max_size=2),
})


@cache
def _bundles() -> tuple[EvidenceBundle, ...]:
    """A small PR and one far past every size threshold's default."""
    big = [builders.file(f"src/module_{n}.py", 900, 300) for n in range(8)]
    return builders.bundle(builders.red_ci_at_merge()), builders.bundle(builders.merged_agent_pr(files=big))


@FAST
@given(documents)
def test_any_config_loads_and_every_bundle_scores_with_it(doc: dict[str, Any]) -> None:
    """An invalid file never blocks an evaluation, and no loaded config breaks a rule between
    fields: a rule broken by the file is reported naming the field, its fields take their
    defaults, and what else the file sets still applies."""
    loaded = parse_config(yaml.safe_dump(doc), SOURCE)
    t = loaded.settings.thresholds
    for rule in CROSS_FIELD_RULES:
        assert rule.holds(t.model_dump()), (rule.fields, loaded.errors)
    options = Options(ai="off", trigger="rescore", evaluated_at="2026-03-02T11:00:00Z")
    for bundle in _bundles():
        result = score_bundle(bundle, loaded, options)
        assert {c.category for c in result.category_scores} == {
            "agentPerformance", "taskOutcomeQuality", "processCompliance"}
        assert [w for w in result.warnings if "Config problem" in w] == [
            f"Config problem, evaluated with defaults: {e}" for e in loaded.errors]

    given_thresholds: dict[str, Any] = doc["thresholds"]
    if not all(_valid(k, v) for k, v in given_thresholds.items()):
        return  # reported as a bad value; nothing of the file applies
    effective = {**Thresholds().model_dump(), **given_thresholds}
    broken = [r for r in CROSS_FIELD_RULES if not r.holds(effective)]
    for rule in broken:
        assert any(e.startswith(f"{SOURCE}: thresholds.{rule.fields[-1]}: {rule.problem}")
                   for e in loaded.errors), loaded.errors
        for name in rule.fields:
            assert getattr(t, name) == Thresholds.model_fields[name].default
    kept = {k: v for k, v in given_thresholds.items() if not any(k in r.fields for r in broken)}
    for name, value in kept.items():
        assert getattr(t, name) == _as_loaded(name, value)
    if not broken:
        assert loaded.errors == []


@pytest.mark.parametrize(
    ("thresholds", "kept"),
    [
        pytest.param({"comfortable_change_lines": 1000}, {}, id="one-key-meets-the-other's-default"),
        pytest.param({"comfortable_change_lines": 5000, "hygiene_half_life": 3.0},
                     {"hygiene_half_life": 3.0}, id="the-rest-of-the-file-applies"),
        pytest.param({"max_change_lines": 150}, {}, id="the-other-key-alone"),
        pytest.param({"comfortable_change_lines": 500, "max_change_lines": 400}, {}, id="both-given"),
    ],
)
def test_a_threshold_that_breaks_a_pair_is_reported_and_the_pair_takes_its_defaults(
    thresholds: dict[str, Any], kept: dict[str, Any],
) -> None:
    loaded = parse_config(yaml.safe_dump({"thresholds": thresholds}), SOURCE)
    [error] = loaded.errors
    assert error.startswith(f"{SOURCE}: thresholds.max_change_lines: must be greater than "
                            "comfortable_change_lines")
    assert loaded.settings == Settings(thresholds=Thresholds(**kept))
    big = _bundles()[1]
    result = score_bundle(big, loaded, Options(ai="off"))
    size = next(s for s in result.signals if s.id == "process.change_size")
    assert size.status == "ok" and size.score is not None
