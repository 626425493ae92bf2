"""Stored JSON read, hashed and written fast, with the standard library's bytes and values.

Every stored ``bundleHash`` and every result file a team keeps was made by ``json`` and pydantic;
the fast paths of re-scoring (orjson, a float rounding without Decimal, the bundle serialised
once) must give those same bytes, values and errors, or a re-score would report "file edited?"
on a good file, or write a different result.
"""

from __future__ import annotations

import json
import math
import random
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from taskeval import canonical, contract
from taskeval.config import LoadedConfig, Settings
from taskeval.models import EvidenceBundle
from taskeval.pipeline import BundleFileError, Options, rescore, rescore_file, result_bytes, score_bundle
from tests import spread

ROOT = Path(__file__).resolve().parent.parent
OPTIONS = Options(ai="off", env={})

ODD_VALUES: list[tuple[str, Any]] = [
    ("small floats", {"a": [1e-5, 5.1e-05, 4.2e-9, 1e-4, 0.00012, -3e-7]}),
    ("big and exact floats", {"a": [1e16, 1.5e16, 1e21, 123456789012345.6, 2.0**53, -0.0, 0.0]}),
    ("non-finite floats", {"a": float("nan"), "b": float("inf"), "c": -float("inf")}),
    ("integers around 64 bits", {"a": [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30]}),
    ("keys beyond the basic plane sort by code point", {"\U0001f600": 1, "\uffff": 2, "é": 3, "Z": 4, "a": 5}),
    ("control characters and quotes", {"s": "".join(chr(c) for c in range(0, 40)) + "\\\"\u2028\u2029\x7f"}),
    ("nesting", {"b": [{"d": 1, "c": [None, True, False]}], "a": {}}),
]


def _plain(value: Any) -> bool:
    if isinstance(value, float):
        return canonical.plain_float(value)
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return True


@pytest.mark.parametrize("data", [v for _, v in ODD_VALUES], ids=[n for n, _ in ODD_VALUES])
def test_canonical_form_is_the_standard_librarys_for_any_data(data: Any) -> None:
    assert canonical.dumps_canonical(data, plain_floats=_plain(data)) == canonical.reference_canonical(data)


def test_canonical_form_of_a_lone_surrogate_fails_as_it_always_did() -> None:
    with pytest.raises(UnicodeEncodeError):
        canonical.reference_canonical({"a": "\ud800"})
    with pytest.raises(UnicodeEncodeError):
        canonical.dumps_canonical({"a": "\ud800"}, plain_floats=True)


def test_the_float_check_is_what_keeps_the_canonical_form_exact() -> None:
    """Without it orjson would write 1e-5 and NaN differently: the check is not decoration."""
    assert canonical.dumps_canonical([1e-5], plain_floats=True) != canonical.reference_canonical([1e-5])
    assert canonical.dumps_canonical([math.nan], plain_floats=True) != canonical.reference_canonical([math.nan])


FILES: list[tuple[str, bytes]] = [
    ("plain", b'{"a": [1, 2.5, "x", null, true]}'),
    ("duplicate keys: the last wins", b'{"a": 1, "a": 2}'),
    ("NaN and Infinity literals", b'{"a": NaN, "b": Infinity, "c": -Infinity}'),
    ("integers beyond 64 bits stay integers", b'{"a": 123456789012345678901234567890, "b": -99999999999999999999}'),
    ("19-digit integers below the 64-bit minimum stay integers", b'{"a": -9223372036854775809}'),
    ("the largest unsigned 64-bit integer", b'{"a": 18446744073709551615, "b": -9223372036854775808}'),
    ("a float too big for a double", b'{"a": 1e400}'),
    ("CRLF line ends", b'{\r\n "a": 1\r\n}\r\n'),
    ("a byte order mark", b'\xef\xbb\xbf{"a": 1}'),
    ("bad UTF-8", b'{"a": "\xff"}'),
    ("an error after CRLF lines is reported where json reports it", b'{\r\n\r\n "a": tru}'),
    ("a raw carriage return inside a string", b'{"a": "x\ry"}'),
    ("a lone surrogate escape", b'{"a": "\\ud800"}'),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000),
    ("not JSON", b"hello"),
    ("empty", b""),
]


def _outcome(read: Any, raw: bytes) -> tuple[str, Any]:
    try:
        value = read(raw)
    except Exception as exc:  # the exact type and message are what the user sees
        return "error", (type(exc).__name__, str(exc))
    return "value", repr(value)  # repr: tells 1 from 1.0 and keeps NaN comparable


@pytest.mark.parametrize("raw", [r for _, r in FILES], ids=[n for n, _ in FILES])
def test_reading_a_file_gives_the_standard_librarys_values_and_errors(raw: bytes) -> None:
    assert _outcome(canonical.loads, raw) == _outcome(canonical.reference_loads, raw)


def _rounding_cases() -> list[float]:
    rng = random.Random(3)
    cases = [0.0, 0.5, 1.5, 2.5, 80.5, 99.5, 100.0, 0.49999999999999994, 0.5000000000000001,
             2.0**52 - 0.5, 2.0**52, 2.0**53, 5e-324, 49.99999999999999, 50.00000000000001]
    cases += [n + 0.5 for n in range(0, 200)]
    cases += [rng.uniform(0, 100) for _ in range(20_000)]
    cases += [round(rng.uniform(0, 100), rng.randint(0, 6)) for _ in range(20_000)]
    cases += [math.nextafter(n + 0.5, d) for n in range(100) for d in (0.0, 1e9)]
    return cases


def test_rounding_without_decimal_gives_decimals_answer() -> None:
    for value in _rounding_cases():
        expected = int(Decimal(str(value)).quantize(Decimal(1), rounding=ROUND_HALF_UP))
        assert contract.round_half_up(value) == expected, value


@pytest.mark.parametrize("value", [-0.5, -1.5, math.nan, math.inf, 1e300])
def test_rounding_outside_the_fast_range_still_goes_through_decimal(value: float) -> None:
    contract.FAST_ROUNDING, fast = False, contract.FAST_ROUNDING
    try:
        expected = _outcome(contract.round_half_up, value)  # type: ignore[arg-type]
    finally:
        contract.FAST_ROUNDING = fast
    assert _outcome(contract.round_half_up, value) == expected  # type: ignore[arg-type]


def test_result_text_with_the_evidence_serialised_once_is_pydantics_text() -> None:
    loaded = LoadedConfig(Settings(), "defaults")
    for bundle in spread.bundles(40, seed=23):
        result = score_bundle(bundle, loaded, OPTIONS)
        evidence = bundle.json_form()
        assert result_bytes(result, evidence).decode() == result.to_json()
        assert result_bytes(result, evidence, indent=False).decode() == result.model_dump_json(by_alias=True)


def _with_facts(facts: dict[str, Any]) -> EvidenceBundle:
    bundle = spread.example()
    bundle.groups[1].items[0].facts.update(facts)
    return bundle


@pytest.mark.parametrize("facts", [
    {"tiny": 1e-5}, {"nan": math.nan}, {"inf": math.inf}, {"huge": 10**30}, {"big": 1e16},
    {"text": "\u2028 ✅ \x00"},
], ids=["tiny float", "NaN", "infinity", "huge integer", "big float", "odd text"])
def test_bundle_hash_and_result_text_stay_exact_with_odd_facts(
    facts: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = _with_facts(facts)
    fast_hash = bundle.hash()
    as_rescored = Options(ai="off", env={}, trigger="rescore", evaluated_at="2026-01-01T00:00:00Z")
    result = score_bundle(bundle, LoadedConfig(Settings(), "defaults"), as_rescored)
    fast_text = result_bytes(result, bundle.json_form()).decode()
    monkeypatch.setattr(canonical, "FAST", False)
    assert fast_hash == bundle.hash()
    assert fast_hash == __import__("hashlib").sha256(canonical.reference_canonical(
        bundle.model_dump(mode="json", by_alias=True))).hexdigest()
    assert fast_text == result.to_json()
    # And a stored result with such facts re-scores to itself, on both paths.
    path = tmp_path / "r.json"
    path.write_text(result.to_json(), encoding="utf-8")
    slow = rescore(path, OPTIONS).json()
    monkeypatch.undo()
    assert rescore(path, OPTIONS).json() == slow == result.to_json()


def test_results_stored_with_different_configs_keep_their_own_config(tmp_path: Path) -> None:
    """Configs are validated once per distinct config; two that only NaN and null tell apart, or
    that differ anywhere, must not share one."""
    bundle = spread.example()
    stored = json.loads(score_bundle(bundle, LoadedConfig(Settings(), "defaults"), OPTIONS).to_json())
    texts = []
    for n, weight in enumerate([None, 2.0, 3.0, None]):
        data = json.loads(json.dumps(stored))
        if weight is not None:
            data["config"]["settings"]["signal_weights"] = {"agent.ci_recovery": weight}
        if n == 3:
            data["config"]["source"] = "file:other.yml"
        path = tmp_path / f"r{n}.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        texts.append(json.loads(rescore(path, OPTIONS).json()))
    weights = [next(s["weight"] for s in t["signals"] if s["id"] == "agent.ci_recovery") for t in texts]
    assert weights == [2.0, 2.0, 3.0, 2.0]
    assert [t["config"]["source"] for t in texts] == ["defaults", "defaults", "defaults", "file:other.yml"]
    bad = json.loads(json.dumps(stored))
    bad["config"]["settings"]["thresholds"] = {"red_push_half_life": "NaN-ish"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(BundleFileError, match="config"):
        rescore_file(path, OPTIONS)


def test_a_config_file_edited_between_runs_is_read_again(tmp_path: Path) -> None:
    bundle_path = tmp_path / "b.json"
    bundle_path.write_text(spread.EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    config = tmp_path / "taskeval.yml"
    weights = []
    for weight in (2, 5, 7):
        config.write_text(f"signal_weights:\n  agent.ci_recovery: {weight}\n" + "#" * weight, encoding="utf-8")
        result = rescore_file(bundle_path, Options(ai="off", env={}, config_path=config))
        weights.append(next(s.weight for s in result.signals if s.id == "agent.ci_recovery"))
    assert weights == [2.0, 5.0, 7.0]


def test_a_stored_config_with_huge_integers_is_reported_or_rescored_not_a_crash(tmp_path: Path) -> None:
    stored = json.loads(score_bundle(spread.example(), LoadedConfig(Settings(), "defaults"), OPTIONS).to_json())
    path = tmp_path / "r.json"
    stored["config"] = 10**400
    path.write_text(json.dumps(stored), encoding="utf-8")
    with pytest.raises(BundleFileError, match=r"invalid result: config"):
        rescore_file(path, OPTIONS)
    stored["config"] = {"source": "defaults", "hash": "x", "settings": {"version": 10**30}}
    path.write_text(json.dumps(stored), encoding="utf-8")
    text = rescore(path, OPTIONS).json()  # orjson cannot write the integer: pydantic does
    assert json.loads(text)["config"]["settings"]["version"] == 10**30
    assert text == rescore_file(path, OPTIONS).to_json()
