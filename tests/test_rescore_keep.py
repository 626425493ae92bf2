"""Re-scoring keeps a stored result's signals where measuring again would give the same bytes.

A team that changes weights (what ``taskeval calibrate`` suggests) re-scores its whole history;
every signal of every stored result is then exactly what measuring again would give, so none is
measured again. A changed threshold, pattern or agents table measures again only the signals that
read it (and attributes again when accounts or agents changed); another scorer version measures
everything again. Both ways must write the same bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from taskeval import SCORER_VERSION
from taskeval.agents import attribute
from taskeval.config import THRESHOLD_OWNERS, LoadedConfig, Patterns, Settings, Thresholds, load_config
from taskeval.models import EvidenceBundle
from taskeval.pipeline import Options, rescore, score_bundle
from taskeval.signals import ATTRIBUTION_READS, READERS, Stale, base, context, signal_specs, stale_signals
from tests import spread

ROOT = Path(__file__).resolve().parent.parent
STORED_WITH = "2026-01-01T00:00:00Z"

CUSTOM = ("patterns:\n  test_paths: ['spec/**', '**/*_spec.rb']\n  bot_logins: [Alice]\n"
          "signal_weights:\n  agent.text_hygiene: 4\ndisabled_signals: [process.change_size]\n")


def _store(tmp_path: Path, config_text: str | None) -> list[Path]:
    loaded = load_config(config_text, None) if config_text else LoadedConfig(Settings(), "defaults")
    options = Options(ai="off", env={}, trigger="rescore", evaluated_at=STORED_WITH)
    paths = []
    for n, bundle in enumerate(spread.bundles(25, seed=31)):
        paths.append(tmp_path / f"r{n:02d}.json")
        paths[-1].write_text(score_bundle(bundle, loaded, options).to_json(), encoding="utf-8")
    return paths


# (stored with, re-scored with, the signals measured again)
CHANGES: list[tuple[str, str | None, set[str]]] = [
    ("defaults", None, set()),
    ("defaults", "signal_weights:\n  agent.ci_recovery: 3\n  outcome.claims: 0.5\n", set()),
    ("defaults", "disabled_signals: [process.description, agent.objections]\n", set()),
    ("defaults", "ai: false\nmax_prompt_chars: 20000\n", set()),
    ("custom", None, set()),
    ("custom", CUSTOM.replace("agent.text_hygiene: 4", "agent.text_hygiene: 1"), set()),
    ("custom", CUSTOM.replace("disabled_signals: [process.change_size]", "disabled_signals: []"),
     {"process.change_size"}),  # only the signal that was off
    ("defaults", "thresholds:\n  red_push_half_life: 2.5\n", {"agent.red_pushes"}),
    ("defaults", "thresholds:\n  comfortable_change_lines: 150\n  max_change_lines: 900\n"
     "  claims_half_life: 3\n", {"process.change_size", "outcome.claims"}),
    ("defaults", "thresholds:\n  red_push_half_life: 2.0\n", set()),  # the default, written out
    ("custom", CUSTOM + "thresholds:\n  hygiene_half_life: 9\n", {"agent.text_hygiene"}),
    ("defaults", "patterns:\n  doc_paths: ['handbook/**']\n", set(READERS["patterns.doc_paths"])),
    ("defaults", "patterns:\n  task_id_pattern: 'TASK-[0-9]+'\n", {"process.task_reference"}),
    ("defaults", "agents:\n  - id: devin\n    enabled: false\n", set(READERS["agents"])),
    ("defaults", "patterns:\n  bot_logins: [alice]\n", set(READERS["patterns.bot_logins"])),
    ("custom", CUSTOM.replace("bot_logins: [Alice]", "bot_logins: []"), set(READERS["patterns.bot_logins"])),
    ("defaults", "thresholds:\n  red_push_half_life: 2.5\npatterns:\n  doc_paths: ['handbook/**']\n",
     {"agent.red_pushes", *READERS["patterns.doc_paths"]}),
    # Other test paths and bot logins than the stored config's, and a signal it had switched off.
    ("custom", "patterns:\n  test_paths: ['spec/**']\n",
     {*READERS["patterns.test_paths"], *READERS["patterns.bot_logins"], "process.change_size"}),
]


@pytest.mark.parametrize("stored_with, config, again", CHANGES)
def test_kept_signals_give_the_bytes_measuring_again_gives(
    stored_with: str, config: str | None, again: set[str], tmp_path: Path,
) -> None:
    paths = _store(tmp_path, CUSTOM if stored_with == "custom" else None)
    config_path = None
    if config is not None:
        config_path = tmp_path / "taskeval.yml"
        config_path.write_text(config, encoding="utf-8")
    keep = Options(ai="off", env={}, config_path=config_path)
    fresh = Options(ai="off", env={}, config_path=config_path, keep_signals=False)
    measured = _counting()
    kept = [rescore(p, keep).json() for p in paths]
    measured_when_keeping = measured[:]
    again_all = [rescore(p, fresh).json() for p in paths]
    assert kept == again_all
    assert len(measured) > len(measured_when_keeping)  # measuring again measured something
    assert Counter(measured_when_keeping) == Counter({sid: len(paths) for sid in again})


def _counting() -> list[str]:
    """Every signal measured from now on, by id (the fixture below puts the signals back)."""
    measured: list[str] = []
    for spec in signal_specs():
        def counting(ctx: base.Ctx, run: Callable[[base.Ctx], Any] = spec.run_in, sid: str = spec.id) -> Any:
            measured.append(sid)
            return run(ctx)
        object.__setattr__(spec, "run_in", counting)  # a frozen dataclass
    return measured


@pytest.fixture(autouse=True)
def _restore_specs() -> Any:
    before = {spec.id: spec.run_in for spec in signal_specs()}
    yield
    for spec in signal_specs():
        object.__setattr__(spec, "run_in", before[spec.id])


def _edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def test_a_result_from_another_scorer_version_is_measured_again(tmp_path: Path) -> None:
    path = _store(tmp_path, None)[1]
    truth = rescore(path, Options(ai="off", env={}, keep_signals=False)).json()

    def older(data: dict[str, Any]) -> None:
        data["scorerVersion"] = "2025.1.1"
        data["signals"][0]["score"] = 0  # what an older scorer may have said
    _edit(path, older)
    assert rescore(path, Options(ai="off", env={})).json() == truth


def test_a_damaged_stored_signal_is_measured_again_and_recompute_measures_all(tmp_path: Path) -> None:
    path = _store(tmp_path, None)[2]
    truth = rescore(path, Options(ai="off", env={}, keep_signals=False)).json()

    def damage(data: dict[str, Any]) -> None:
        data["signals"][0]["unexpected"] = 1
        data["signals"][1] = "not a signal"
        del data["signals"][2]
    _edit(path, damage)
    assert rescore(path, Options(ai="off", env={})).json() == truth

    def tamper(data: dict[str, Any]) -> None:
        data["signals"][3]["reason"] = "Edited by hand."
    _edit(path, tamper)
    assert "Edited by hand." in rescore(path, Options(ai="off", env={})).json()
    assert rescore(path, Options(ai="off", env={}, keep_signals=False)).json() == truth


# What a signal can read of the settings, which signals.stale_signals compares: the patterns, the
# agents table and the thresholds; the rest only weighs signals, turns them off, or concerns the
# AI judge.
_SIGNAL_INPUTS = frozenset({"patterns", "agents", "thresholds"})


def test_every_setting_is_known_to_be_read_by_signals_or_not() -> None:
    """A new setting must be classified: if a signal can read it, keeping stored signals must
    depend on it too."""
    # task_types: read by the task type, which every scoring computes again (never kept).
    not_read = {"version", "signal_weights", "disabled_signals", "ai", "max_prompt_chars", "task_types"}
    assert set(Settings.model_fields) == set(_SIGNAL_INPUTS) | not_read


class _Recorder:
    """Settings that note every setting read: top-level names, ``thresholds.NAME`` and
    ``patterns.NAME``."""

    def __init__(self, target: Any, log: set[str], prefix: str = "") -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_log", log)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> Any:
        self._log.add(self._prefix + name)
        value = getattr(self._target, name)
        return _Recorder(value, self._log, f"{name}.") if name in ("thresholds", "patterns") else value

    def __eq__(self, other: object) -> bool:  # attribution caches by settings
        return self._target == other

    def __hash__(self) -> int:
        return id(self._target)


def _owned(reader: str) -> set[str]:
    """What the tables say ``reader`` may read: its thresholds, patterns and the agents table."""
    thresholds = {f"thresholds.{name}" for name, owner in THRESHOLD_OWNERS.items() if owner == reader}
    return thresholds | {name for name, readers in READERS.items() if reader in readers}


@pytest.mark.parametrize("config", [None, CUSTOM])
def test_signals_read_only_the_settings_keeping_depends_on(config: str | None) -> None:
    """What keeping rests on: a signal reads no setting but weights and the thresholds, patterns
    and agents table the tables say it reads; attribution only what ATTRIBUTION_READS says."""
    settings = load_config(config, None).settings if config else Settings()
    detailed = ("thresholds.", "patterns.")
    for bundle in spread.bundles(40, seed=31):
        for spec in signal_specs():
            log: set[str] = set()
            spec.run_in(context.Ctx(bundle, _Recorder(settings, log)))  # type: ignore[arg-type]
            read = {name for name in log if not name.startswith(detailed)}
            assert read <= set(_SIGNAL_INPUTS) | {"signal_weights"}, (spec.id, read)
            inputs = {name for name in log if name.startswith(detailed)} | ({"agents"} & log)
            assert inputs <= _owned(spec.id), (spec.id, inputs - _owned(spec.id))
        log = set()
        attribute(bundle, _Recorder(settings, log))  # type: ignore[arg-type]
        assert {name for name in log if name not in ("patterns", "thresholds")} <= ATTRIBUTION_READS, log


def test_every_threshold_and_pattern_names_the_signals_that_read_it() -> None:
    ids = {spec.id for spec in signal_specs()}
    assert {owner for owner in THRESHOLD_OWNERS.values()} <= ids
    assert set(READERS) == {f"patterns.{name}" for name in Patterns.model_fields} | {"agents"}
    assert set().union(*READERS.values()) <= ids


SAME, OTHER = Settings(), Settings(thresholds=Thresholds(red_push_half_life=3, restart_half_life=2))
DOCS = Settings(patterns=Patterns(doc_paths=["handbook/**"]))
BOTS = Settings(patterns=Patterns(bot_logins=["ci-helper"]))
STALE_CASES = [
    # (stored version, stored settings, settings now, measured again: None is everything)
    (SCORER_VERSION, SAME, SAME, Stale(frozenset(), False)),
    (SCORER_VERSION, SAME, Settings(), Stale(frozenset(), False)),
    (SCORER_VERSION, SAME, Settings(signal_weights={"agent.restarts": 2}, ai=False), Stale(frozenset(), False)),
    (SCORER_VERSION, SAME, OTHER, Stale(frozenset({"agent.red_pushes", "agent.restarts"}), False)),
    (SCORER_VERSION, OTHER, SAME, Stale(frozenset({"agent.red_pushes", "agent.restarts"}), False)),
    (SCORER_VERSION, SAME, DOCS, Stale(READERS["patterns.doc_paths"], False)),
    (SCORER_VERSION, SAME, BOTS, Stale(READERS["patterns.bot_logins"], True)),
    (SCORER_VERSION, DOCS, BOTS, Stale(READERS["patterns.doc_paths"] | READERS["patterns.bot_logins"], True)),
    ("2025.1.1", SAME, SAME, None),
    (None, SAME, Settings(), None),
]


@pytest.mark.parametrize("version, stored, now, expected", STALE_CASES)
def test_stale_signals(version: object, stored: Settings, now: Settings, expected: Stale | None) -> None:
    assert stale_signals(version, stored, now) == expected


# The scorer's output on a fixed spread of bundles, under this scorer version. Keeping stored
# signals rests on "same SCORER_VERSION, same signals": a change that alters any score must bump it.
# The bundles are frozen bytes the tests own (the example bundle and 40 PRs generated with seed 31,
# as built at scorer version 2026.11.2), so neither the benchmark's generator, the test builders
# nor evidence collection can move this digest: only scoring can.
FROZEN_SPREAD = ROOT / "tests" / "scorer_spread.json.gz"
FROZEN_SPREAD_SHA256 = "5ebb78dbb53f5475ddd9f72becc1c15d904d358aaa5ab68bb6f92cf5660fa5f1"
SCORES_OF_THIS_VERSION = ("2026.12.6", "bb373058276c3b2fd79181fe380d3d9058460807a2f7e95a1da43724d2641f31")


def test_scores_change_only_with_the_scorer_version() -> None:
    import gzip
    import hashlib

    text = gzip.decompress(FROZEN_SPREAD.read_bytes())
    assert hashlib.sha256(text).hexdigest() == FROZEN_SPREAD_SHA256, (
        f"{FROZEN_SPREAD.name} was edited; it is the scorer's fixed input and must stay as it is: "
        f"restore it with `git checkout -- {FROZEN_SPREAD.relative_to(ROOT)}`")
    bundles = [EvidenceBundle.model_validate(form) for form in json.loads(text)]
    options = Options(ai="off", env={}, trigger="rescore", evaluated_at=STORED_WITH)
    digest = hashlib.sha256()
    for loaded in (LoadedConfig(Settings(), "defaults"), load_config(CUSTOM, None)):
        for bundle in bundles:
            result = json.loads(score_bundle(bundle, loaded, options).to_json())
            digest.update(json.dumps({k: result[k] for k in ("agent", "signals", "categoryScores",
                                                             "overallScore")}, sort_keys=True).encode())
    version, recorded = SCORES_OF_THIS_VERSION
    if digest.hexdigest() == recorded:
        assert version == SCORER_VERSION, (
            f"SCORER_VERSION is now {SCORER_VERSION} but scores did not change: record "
            f"SCORES_OF_THIS_VERSION = ({SCORER_VERSION!r}, {recorded!r}) here")
    else:
        assert version != SCORER_VERSION, (
            f"the scorer's output on the frozen bundles changed under the same SCORER_VERSION "
            f"{version}, so results stored by this version would keep signals it no longer gives. "
            f"If the change to scores is intended, bump SCORER_VERSION in taskeval/__init__.py and "
            f"record SCORES_OF_THIS_VERSION = (<new version>, {digest.hexdigest()!r}) here; if not, "
            f"find what altered the scores")
        raise AssertionError(
            f"SCORER_VERSION was bumped to {SCORER_VERSION}: record SCORES_OF_THIS_VERSION = "
            f"({SCORER_VERSION!r}, {digest.hexdigest()!r}) here")
