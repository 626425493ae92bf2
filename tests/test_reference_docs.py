"""docs/config.md and docs/signals.md are generated; a change to settings or signals must regenerate them."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskeval import reference
from taskeval.config import Settings
from taskeval.signals import signal_specs


@pytest.mark.parametrize(("name", "render"), [("config.md", reference.config_reference),
                                               ("signals.md", reference.signals_reference)])
def test_reference_docs_are_current(name: str, render) -> None:
    committed = (reference.DOCS / name).read_text(encoding="utf-8")
    assert committed == render(), f"docs/{name} is stale: run `python -m taskeval.reference`"


def test_every_signal_and_setting_is_documented(tmp_path: Path) -> None:
    config_md, signals_md = (p.read_text() for p in reference.write(tmp_path))
    for spec in signal_specs():
        assert f"`{spec.id}`" in signals_md
    for name in Settings.model_fields:
        assert f"`{name}`" in config_md
    for name in type(Settings().thresholds).model_fields:
        assert f"`thresholds.{name}`" in config_md
