"""Re-scoring's fast paths change no byte: old and new scoring paths over the same bundles.

The speed-ups behind ``taskeval score`` at scale (one signal context per bundle, the text
detector's needle prefilter and caches, one glob pattern per glob list, the bundle hashed once)
are each switched off here to get the old path back, and the result JSON of both paths must be
identical for the stored example and for generated variations of realistic PRs.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

from benchmarks.rescore_bench import variants
from taskeval import canonical, contract
from taskeval.config import LoadedConfig, Settings, load_config
from taskeval.evidence import blank_code, build_bundle
from taskeval.models import EvidenceBundle
from taskeval.pipeline import Options, rescore, rescore_file, score_bundle
from taskeval.signals import base, hygiene, signal_specs
from taskeval.signals.agent import _texts

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "agent-pr-482.bundle.json"
OPTIONS = Options(ai="off", trigger="rescore", evaluated_at="2026-01-01T00:00:00Z", env={})


class _AnyGlob:
    """What ``Ctx.classify`` did before: ``any(fnmatchcase(path, g) for g in globs)``."""

    def __init__(self, globs: tuple[str, ...]) -> None:
        self.globs = globs

    def match(self, path: str) -> bool | None:
        return True if any(fnmatchcase(path, g) for g in self.globs) else None


def _clear_caches() -> None:
    for value in vars(hygiene).values():
        if hasattr(value, "cache_clear"):
            value.cache_clear()


@pytest.fixture
def old_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every fast path off: a fresh context per signal, every text rule on every text, no
    caches, fnmatch per glob, the bundle hashed again when the result is built, the standard
    library's JSON and Decimal rounding."""
    import taskeval.pipeline as pipeline

    monkeypatch.setattr(hygiene, "_NEEDLES", {})
    monkeypatch.setattr(hygiene, "_NEEDLE_RULES", ())
    monkeypatch.setattr(hygiene, "_BY_KIND", False)
    monkeypatch.setattr(hygiene, "_FAST_LINES", False)
    monkeypatch.setattr(hygiene, "_blank_code", blank_code)
    monkeypatch.setattr(hygiene, "_blank_comments", hygiene.blank_comments)
    monkeypatch.setattr(base, "_globs", _AnyGlob)
    monkeypatch.setattr(canonical, "FAST", False)
    monkeypatch.setattr(contract, "FAST_ROUNDING", False)
    monkeypatch.setattr(pipeline, "compute_signals", lambda bundle, settings, kept=None: [
        spec.run(bundle, settings) for spec in signal_specs()
        if spec.id not in settings.disabled_signals
        and settings.signal_weights.get(spec.id, spec.weight) != 0
    ])
    _clear_caches()
    yield
    _clear_caches()


def _bundles(count: int) -> list[EvidenceBundle]:
    example = EvidenceBundle.model_validate_json(EXAMPLE.read_text(encoding="utf-8"))
    return [example, *(build_bundle(raw) for raw in variants(count, seed=11))]


def _score_all(bundles: list[EvidenceBundle], loaded: LoadedConfig) -> list[str]:
    return [score_bundle(b, loaded, OPTIONS).to_json() for b in bundles]


SETTINGS = [
    LoadedConfig(Settings(), "defaults"),
    load_config(
        "patterns:\n  test_paths: ['spec/**', '**/*_spec.rb']\n  doc_paths: []\n"
        "  bot_logins: [Alice]\nsignal_weights:\n  agent.text_hygiene: 4\n"
        "disabled_signals: [process.change_size]\n",
        None,
    ),
]


@pytest.mark.parametrize("loaded", SETTINGS, ids=["defaults", "custom-config"])
def test_fast_and_old_paths_give_byte_identical_results(
    loaded: LoadedConfig, monkeypatch: pytest.MonkeyPatch, old_path: None
) -> None:
    bundles = _bundles(60)
    old = _score_all(bundles, loaded)
    monkeypatch.undo()  # back to the fast path
    _clear_caches()
    new = _score_all(bundles, loaded)
    assert len(old) == len(new) == 61
    mismatched = [n for n, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    assert not mismatched, f"bundles {mismatched[:5]} score differently on the fast path"
    assert new == _score_all(bundles, loaded), "a warm cache changed a result"


def test_rescoring_a_stored_result_reuses_its_checked_hash_and_matches_a_fresh_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, old_path: None
) -> None:
    paths, expected = [], []
    for n, bundle in enumerate(_bundles(30)):
        stored = score_bundle(bundle, LoadedConfig(Settings(), "defaults"), OPTIONS)
        paths.append(tmp_path / f"r{n}.json")
        paths[-1].write_text(stored.to_json(), encoding="utf-8")
        expected.append(stored.to_json())
    old = [rescore(p, Options(ai="off", env={})).json() for p in paths]
    monkeypatch.undo()  # back to the fast path
    _clear_caches()
    for path, want, was in zip(paths, expected, old, strict=True):
        assert rescore_file(path, Options(ai="off", env={})).to_json() == want == was
        assert rescore(path, Options(ai="off", env={})).json() == want
        assert rescore(path, Options(ai="off", env={})).json(indent=False) == json.dumps(
            json.loads(want), separators=(",", ":"), ensure_ascii=False)


def _texts_to_scan() -> list[str]:
    texts = []
    for bundle in _bundles(60):
        texts += [text for _, _, text in _texts(base.Ctx(bundle, Settings())) if text]
    source = (ROOT / "tests" / "test_signals.py").read_text(encoding="utf-8")
    # Every string in the detector's table tests: its positive and negative examples.
    texts += [node.value for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    return texts


# Template text whose instruction sits on a later line, spans a line or hides in a comment: the
# whole-text searches that spare the per-line search must let every one of these through.
TEMPLATE_TEXTS = [
    "## Summary\n\nPlease\ndescribe the changes\n- [ ] tests", "x\n- describe your changes\n- [ ] a",
    "Intro\n\n### Explain the problem\n\n## Next\nText", "What does this PR do?\n<!-- x -->",
    "a please  describe your change\n- [ ] b\n- [ ] c", "<!--please-->describe the pr",
    "## Describe your changes\n<!-- leave blank -->\n## Más\n- [ ] ✅ done", "ok\n  summarize the PR",
    "İ: please provide a summary\n- [ ] one\n- [ ] two", "PLEASE ADD THE DETAILS\r\n- [ ] x",
]


def _variants(texts: list[str]) -> list[str]:
    """Case changes, and the non-ASCII letters ``re.IGNORECASE`` matches with ASCII ones (with
    emoji beside them: most agent PR bodies are not ASCII)."""
    odd = str.maketrans({"i": "\u0130", "I": "\u0131", "s": "\u017f", "K": "\u212a"})
    return [*texts, *(t.upper() for t in texts), *(t.swapcase() for t in texts),
            *("✅ " + t.translate(odd) for t in texts), *(t.upper().translate(odd) for t in texts)]


def test_needle_prefilter_finds_exactly_what_every_rule_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = _variants(_texts_to_scan() + TEMPLATE_TEXTS)
    assert len(texts) > 500
    kinds = [frozenset({"leakage", "boilerplate"}), frozenset({"template"}),
             frozenset({"leakage"}), hygiene.ALL_KINDS]
    monkeypatch.setattr(hygiene, "_FAST_LINES", False)
    full = [(hygiene._detect(t, False, False), hygiene._detect(t, True, False)) for t in texts]
    monkeypatch.undo()
    hygiene._detect.cache_clear()
    for text, (prose, code) in zip(texts, full, strict=True):
        assert hygiene._detect(text, False, True) == prose, text
        assert hygiene._detect(text, True, True) == code, text
        for some in kinds:  # only the rules of the kinds asked for: the same findings of those
            assert hygiene._detect(text, False, True, some) == tuple(
                f for f in prose if f.kind in some), (text, some)


def test_fold_knows_every_character_ignorecase_matches_with_an_ascii_letter() -> None:
    """``fold`` must turn each such character into its letter, or a needle would miss a match."""
    import re
    import string
    import sys

    chars = "".join(chr(c) for c in range(128, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    for char in re.findall("[a-z]", chars, re.IGNORECASE):
        letters = [x for x in string.ascii_lowercase if re.fullmatch(x, char, re.IGNORECASE)]
        assert hygiene.fold(char) in letters, hex(ord(char))
    # No other ASCII character is matched by a non-ASCII one.
    others = "".join(x for x in string.printable if not x.isalpha())
    assert not re.findall(f"[{re.escape(others)}]", chars, re.IGNORECASE)


@pytest.mark.parametrize("kind, rule, source", hygiene._RULE_SOURCES, ids=[r for _, r, _ in hygiene._RULE_SOURCES])
def test_every_rule_has_needles(kind: str, rule: str, source: str) -> None:
    """A rule without needles still runs (it is only slower); new rules should add theirs."""
    del kind, source
    assert hygiene._NEEDLES.get(rule), f"{rule}: add its needles to hygiene._NEEDLES"
    assert all(n == n.lower() for n in hygiene._NEEDLES[rule])


GLOBS = [
    ("**/test_*.py", "tests/*", "docs/**", "*.md"),
    ("[!a]*.txt", "src/[ab]?/x", "a*b*c", "**"),
    (),
]
PATHS = ["tests/test_a.py", "src/tests/test_b.py", "docs/a/b.md", "README.md", "a/README.md",
         "b.txt", "a.txt", "src/a1/x", "src/c1/x", "abc", "aXbYc", "", "x\ny.md", "src/ab/x"]


@pytest.mark.parametrize("globs", GLOBS)
def test_one_pattern_per_glob_list_matches_as_fnmatch_does(globs: tuple[str, ...]) -> None:
    for path in PATHS:
        assert (base._globs(globs).match(path) is not None) == any(
            fnmatchcase(path, g) for g in globs), (globs, path)


def _blank_code_by_lines(text: str) -> str:
    """The line scan ``blank_code`` always ran before its no-fence shortcut."""
    from taskeval.evidence.vocabulary import _INLINE_CODE

    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        stripped = line.lstrip(" ")
        marker = stripped[:3] if len(line) - len(stripped) <= 3 else ""
        if fence is None and marker not in ("```", "~~~"):
            out.append(_INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line))
            continue
        out.append(" " * len(line))
        if fence is None:
            fence = marker
        elif marker == fence:
            fence = None
    return "\n".join(out)


def test_blank_code_shortcut_blanks_what_the_line_scan_blanks() -> None:
    texts = [
        *_texts_to_scan(),
        "a `b` c\n`d\ne` f ``g`` `", "``` not closed\n`x`", "~~~\ncode\n~~~\n`y`", "`a`\n\n`b`c`d`",
        "   ```\nx\n   ```", "    ```\nindented four: not a fence", "``", "`\n`", "",
    ]
    for text in texts:
        assert blank_code(text) == _blank_code_by_lines(text), text


def test_timestamp_shortcut_parses_as_strptime_does() -> None:
    import random
    from datetime import datetime

    from taskeval.signals.rework import _stamp

    rng = random.Random(5)
    cases = ["2026-01-02T03:04:05Z", "2026-1-2T3:4:5Z", "", "2024-02-29T23:59:59Z", "2026-01-02T03:04:60Z",
             "2026-01-02 03:04:05Z", "２０２６-01-02T03:04:05Z"]
    cases += [f"{rng.randint(0, 9999):04d}-{rng.randint(0, 14):02d}-{rng.randint(0, 32):02d}T"
              f"{rng.randint(0, 25):02d}:{rng.randint(0, 61):02d}:{rng.randint(0, 62):02d}Z" for _ in range(3000)]
    for value in cases:
        try:
            expected: datetime | None = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            expected = None
        assert _stamp(value) == expected, value
