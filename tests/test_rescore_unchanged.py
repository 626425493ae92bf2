"""A stored result whose evidence provably did not change is re-scored from what it stores.

Re-scoring a history after a change of weights keeps every stored signal; what is left is reading
the evidence back. When the evidence hashes, as read, to the stored ``bundleHash`` and its keys
come in field order, it is written out as read instead of being validated and serialised again.
Every case must give the bytes the full path gives; the cases that cannot be proved take the full
path.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import taskeval.pipeline as pipeline
from taskeval import canonical
from taskeval.config import LoadedConfig, Settings
from taskeval.models import EvidenceBundle
from taskeval.pipeline import BundleFileError, Options, rescore, score_bundle
from tests import spread

ROOT = Path(__file__).resolve().parent.parent
WEIGHTS = "signal_weights:\n  agent.ci_recovery: 3\n  outcome.claims: 0.5\n"


@pytest.fixture
def stored(tmp_path: Path) -> list[Path]:
    options = Options(ai="off", env={}, trigger="pull_request", evaluated_at="2026-01-02T00:00:00Z")
    paths = []
    for n, bundle in enumerate(spread.bundles(12, seed=11)):
        paths.append(tmp_path / f"r{n:02d}.json")
        paths[-1].write_text(score_bundle(bundle, LoadedConfig(Settings(), "defaults"), options).to_json(),
                             encoding="utf-8")
    return paths


@pytest.fixture
def weights(tmp_path: Path) -> Options:
    config = tmp_path / "taskeval.yml"
    config.write_text(WEIGHTS, encoding="utf-8")
    return Options(ai="off", env={}, config_path=config)


@pytest.fixture
def full_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path]]:
    """Every file, from now on, whose evidence the full path read ("full": validated, serialised
    and hashed) or that was validated but written out as read ("validated": a signal had to be
    measured)."""
    seen: list[tuple[str, Path]] = []
    checked, as_stored = pipeline._checked, pipeline._as_stored

    def full(path: Path, data: dict[str, Any], **kw: Any) -> pipeline.Stored:
        seen.append(("full", path))
        return checked(path, data, **kw)

    def validated(path: Path, data: dict[str, Any]) -> pipeline.Stored:
        seen.append(("validated", path))
        return as_stored(path, data)
    monkeypatch.setattr(pipeline, "_checked", full)
    monkeypatch.setattr(pipeline, "_as_stored", validated)
    return seen


def _full(path: Path, options: Options, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as m:
        m.setattr(pipeline, "TRUST_STORED", False)
        return rescore(path, options).json()


def test_results_taskeval_wrote_are_rescored_from_what_they_store(
    stored: list[Path], weights: Options, full_reads: list[tuple[str, Path]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    quick = [rescore(p, weights) for p in stored]
    assert full_reads == [], "a result taskeval wrote, after a change of weights, took the full path"
    assert all(r.kept for r in quick)
    for path, again in zip(stored, quick, strict=True):
        full = _full(path, weights, monkeypatch)
        assert again.json() == full
        assert again.json(indent=False) == json.dumps(json.loads(full), separators=(",", ":"), ensure_ascii=False)
        assert again.result.to_json() == full  # the model, made when asked for


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None] | None = None, **dump: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    if change is not None:
        change(data)
    path.write_text(json.dumps(data, ensure_ascii=False, **dump), encoding="utf-8")


def _rehash(data: dict[str, Any]) -> None:
    data["bundleHash"] = EvidenceBundle.model_validate(data["evidence"]).hash()


def _small_float(data: dict[str, Any]) -> None:
    """A fact orjson writes otherwise than the standard library (1e-05): the stored hash is over
    the standard library's text, so the hash as read by orjson does not match."""
    data["evidence"]["groups"][0]["items"][0]["facts"]["ratio"] = 1e-05
    _rehash(data)


def _one_review_reordered(data: dict[str, Any]) -> None:
    review = data["evidence"]["facts"]["reviews"][0]
    data["evidence"]["facts"]["reviews"][0] = dict(reversed(review.items()))


def _stale_threshold(data: dict[str, Any]) -> None:
    data["config"]["settings"]["thresholds"]["red_push_half_life"] = 7.0


def _no_agent(data: dict[str, Any]) -> None:
    data["agent"] = None


def _huge_integer(data: dict[str, Any]) -> None:
    data["evidence"]["groups"][0]["items"][0]["facts"]["big"] = 2**70
    _rehash(data)


# (what was done to the stored file, how it was rewritten, how its evidence is read: None as
# stored, "validated" when a signal must be measured, "full" when it is not provably unchanged)
CASES: list[tuple[str, Callable[[dict[str, Any]], None] | None, dict[str, Any], str | None]] = [
    ("rewritten as taskeval writes it", None, {"indent": 2}, None),
    ("one line, as taskeval score streams", None, {"separators": (",", ":")}, None),
    ("indented by four", None, {"indent": 4}, None),
    ("stored under another threshold", _stale_threshold, {"indent": 2}, "validated"),
    ("stored without attribution", _no_agent, {"indent": 2}, "validated"),
    ("keys sorted (jq -S)", None, {"indent": 2, "sort_keys": True}, "full"),
    ("the keys of one review reordered", _one_review_reordered, {"indent": 2}, "full"),
    ("a fact orjson writes otherwise", _small_float, {"indent": 2}, "full"),
    ("an integer beyond 64 bits", _huge_integer, {"indent": 2}, "full"),
]


@pytest.mark.parametrize("change, dump, read", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_what_cannot_be_proved_takes_the_full_path_and_every_way_gives_its_bytes(
    change: Callable[[dict[str, Any]], None] | None, dump: dict[str, Any], read: str | None,
    stored: list[Path], weights: Options, full_reads: list[tuple[str, Path]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = stored[0]
    _rewrite(path, change, **dump)
    again = rescore(path, weights).json()
    assert full_reads == ([] if read is None else [(read, path)])
    assert again == _full(path, weights, monkeypatch)


def test_an_evidence_edit_is_still_reported(stored: list[Path], weights: Options) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["evidence"]["facts"]["pull"]["title"] = "Edited"
    _rewrite(stored[1], edit, indent=2)
    with pytest.raises(BundleFileError, match="bundleHash does not match its evidence"):
        rescore(stored[1], weights)


def test_a_shape_no_bundle_has_with_a_matching_hash_is_not_trusted(
    stored: list[Path], weights: Options,
) -> None:
    """A hash recomputed by hand over evidence that does not validate: the evidence is hashed
    as read and matches, but the parts scoring reads are validated, so the full path reports it."""
    def broken(data: dict[str, Any]) -> None:
        data["evidence"]["facts"]["pull"]["number"] = "not a number"
        data["bundleHash"] = hashlib.sha256(canonical.reference_canonical(data["evidence"])).hexdigest()
    _rewrite(stored[2], broken, indent=2)
    with pytest.raises(BundleFileError, match=r"invalid result: evidence\.facts\.pull\.number"):
        rescore(stored[2], weights)


def test_recompute_and_a_config_of_patterns_read_the_evidence_again(
    stored: list[Path], weights: Options, full_reads: list[tuple[str, Path]], tmp_path: Path,
) -> None:
    from dataclasses import replace

    rescore(stored[3], replace(weights, keep_signals=False))
    patterns = tmp_path / "patterns.yml"
    patterns.write_text("patterns:\n  doc_paths: ['handbook/**']\n", encoding="utf-8")
    rescore(stored[3], replace(weights, config_path=patterns))
    assert full_reads == [("full", stored[3]), ("validated", stored[3])]


def _form() -> dict[str, Any]:
    return spread.example().json_form()


def _moved(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], Any]:
    """The dict at ``path`` with its first key moved to the end."""
    def change(data: dict[str, Any]) -> Any:
        target = data
        for step in path:
            target = target[step]
        first = next(iter(target))
        target[first] = target.pop(first)
        return data
    return change


ORDER_CASES: list[tuple[str, Callable[[dict[str, Any]], Any], bool]] = [
    ("as taskeval writes it", lambda d: d, True),
    ("a field missing (the hash decides whether it may be)",
     lambda d: {k: v for k, v in d.items() if k != "htmlBase"}, True),
    ("the top keys reordered", _moved(()), False),
    ("one evidence item's keys reordered", _moved(("groups", 1, "items", 0)), False),
    ("one timeline event's keys reordered", _moved(("facts", "timeline", 0)), False),
    ("the PR's keys reordered", _moved(("facts", "pull")), False),
    ("a fact's keys reordered (free-form, kept as read)", _moved(("groups", 0, "items", 0, "facts")), True),
    ("an unknown key", lambda d: {**d, "extra": 1}, False),
    ("a list where a model goes", lambda d: {**d, "facts": [1, 2]}, False),
    ("not an object", lambda d: [d], False),
]


@pytest.mark.parametrize("change, expected", [c[1:] for c in ORDER_CASES], ids=[c[0] for c in ORDER_CASES])
def test_field_order_is_checked_in_every_model_of_the_bundle(
    change: Callable[[dict[str, Any]], Any], expected: bool,
) -> None:
    from taskeval.models import in_field_order

    assert in_field_order(EvidenceBundle, change(_form())) is expected
