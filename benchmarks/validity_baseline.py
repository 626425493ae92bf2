"""Re-score stored results with whichever taskeval is on the path, dropping evidence fields that
version does not know: the "before" side of a before/after validity figure, on the same evidence.

    PYTHONPATH=<checkout of the older scorer> python benchmarks/validity_baseline.py IN_DIR OUT_DIR

An older scorer never saw the fields added since (the issue timeline, attribution facts); they are
removed from each stored bundle before it is validated, exactly as if the older collection had
produced it. Scores use the defaults, AI off.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from taskeval.config import LoadedConfig, Settings
from taskeval.models import EvidenceBundle
from taskeval.pipeline import Options, score_bundle


def _drop(data: dict[str, Any], loc: tuple[Any, ...]) -> bool:
    node: Any = data
    for part in loc[:-1]:
        node = node[part]
    if isinstance(node, dict) and loc[-1] in node:
        del node[loc[-1]]
        return True
    return False


def known_bundle(evidence: dict[str, Any]) -> EvidenceBundle:
    """The bundle with every field this taskeval version forbids removed."""
    for _ in range(50):
        try:
            return EvidenceBundle.model_validate(evidence)
        except ValidationError as exc:
            extra = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
            if not extra or not all(_drop(evidence, tuple(loc)) for loc in extra):
                raise
    raise ValueError("could not reduce the bundle to known fields")


def main(argv: list[str]) -> int:
    source, target = Path(argv[0]), Path(argv[1])
    target.mkdir(parents=True, exist_ok=True)
    loaded = LoadedConfig(Settings(), "defaults")
    done = failed = 0
    for path in sorted(source.glob("*.json")):
        out = target / path.name
        if out.exists():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            bundle = known_bundle(data["evidence"])
            options = Options(ai="off", trigger="rescore", env={},
                              evaluated_at=data.get("evaluatedAt"))
            out.write_text(score_bundle(bundle, loaded, options).to_json(), encoding="utf-8")
            done += 1
        except Exception as exc:  # counted and listed; one bad file does not stop the run
            failed += 1
            print(f"{path.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    print(f"{done} re-scored, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
