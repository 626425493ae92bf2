"""The held-out comment and fault samples (benchmarks/comment_sample.py, docs/labelling.md).

The split, kappa and the label-file checker are tested on small tables written here and always
run. The tests that read the AIDev-pop folder (``TASKEVAL_CORPUS_DIR`` or
``../shared/data/aidev-pop-v1``) skip, saying so, when it is absent, unless
``TASKEVAL_REQUIRE_CORPUS=1`` makes that a failure.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from benchmarks import comment_sample as cs
from taskeval.corpus import aidev
from taskeval.corpus.labels import cohen_kappa
from tests.waiting import corpus_dir

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("repository", "expected"),
    [
        ("microsoft/vscode", "train"),
        ("Microsoft/VSCode", "train"),
        (" microsoft/vscode ", "train"),
        ("CrewAIInc/CREWAI", "heldout"),
    ],
)
def test_side_ignores_case_and_spaces(repository: str, expected: str) -> None:
    assert cs.side(repository) == expected


@pytest.mark.parametrize(
    ("repository", "expected"),
    [
        # Fixed by the salt: a change of salt or rule moves these, which must be deliberate.
        ("tinygrad/tinygrad", "heldout"),
        ("dotnet/aspire", "train"),
        ("mlflow/mlflow", "train"),
        ("crewAIInc/crewAI", "heldout"),
        ("airbytehq/airbyte", "heldout"),
    ],
)
def test_side_is_the_salted_hash(repository: str, expected: str) -> None:
    assert cs.side(repository) == expected


def test_side_splits_about_evenly() -> None:
    names = [f"owner{i}/repo{i}" for i in range(2000)]
    train = sum(cs.side(n) == "train" for n in names)
    assert 900 < train < 1100


@pytest.mark.parametrize(
    ("pairs", "kappa"),
    [
        ([("a", "a"), ("b", "b"), ("a", "a"), ("b", "b")], 1.0),  # perfect
        ([("a", "b"), ("b", "a"), ("a", "b"), ("b", "a")], -1.0),  # perfect disagreement
        # observed 0.5, chance 0.5 -> 0
        ([("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")], 0.0),
        # 50 units: 20 a/a, 5 a/b, 10 b/a, 15 b/b; po = 0.7, pe = (25*30 + 25*20)/2500 = 0.5 -> 0.4
        ([("a", "a")] * 20 + [("a", "b")] * 5 + [("b", "a")] * 10 + [("b", "b")] * 15, 0.4),
        # three classes: first x4 y3 z3, second x3 y4 z3; po = 0.8, pe = (12 + 12 + 9)/100 = 0.33
        ([("x", "x")] * 3 + [("y", "y")] * 3 + [("z", "z")] * 2 + [("x", "z"), ("z", "y")],
         0.47 / 0.67),
    ],
)
def test_cohen_kappa(pairs: list[tuple[str, str]], kappa: float) -> None:
    assert cohen_kappa(pairs) == pytest.approx(kappa)


@pytest.mark.parametrize("pairs", [[], [("a", "a"), ("a", "a")]])
def test_cohen_kappa_undefined(pairs: list[tuple[str, str]]) -> None:
    assert cohen_kappa(pairs) is None


def test_class_agreement_and_common_ids() -> None:
    first = [{"id": "comment:1", "verdict": "work_wrong"}, {"id": "comment:2", "verdict": "neutral"},
             {"id": "comment:3", "verdict": "approval"}]
    second = [{"id": "comment:1", "verdict": "work_wrong"}, {"id": "comment:2", "verdict": "approval"},
              {"id": "comment:9", "verdict": "neutral"}]
    pairs = cs.pairs_of(first, second)
    assert pairs == [("work_wrong", "work_wrong"), ("neutral", "approval")]
    table = cs.class_agreement(pairs)
    assert list(table) == ["work_wrong", "approval", "neutral"]  # in VERDICTS order
    assert table["work_wrong"] == {"first": 1, "second": 1, "both": 1, "agreement": 1.0}
    assert table["neutral"] == {"first": 1, "second": 0, "both": 0, "agreement": 0.0}


def _write(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(header)
        out.writerows(rows)


SAMPLE_HEADER = ["id", "pr_id", "agent", "repository", "side", "kind", "role", "position", "double"]


@pytest.fixture
def labels_dir(tmp_path: Path) -> Path:
    _write(tmp_path / "comments-sample.csv", SAMPLE_HEADER, [
        ["comment:1", "10", "Copilot", "o/r", "train", "comment", "person", "last3", "1"],
        ["review:2", "10", "Copilot", "o/r", "train", "review", "person", "earlier", "0"],
        ["body:11", "11", "Devin", "o/s", "heldout", "body", "agent", "last3", "0"],
    ])
    _write(tmp_path / "fault-sample.csv", ["pr_id", "agent", "repository", "side"],
           [["10", "Copilot", "o/r", "train"], ["11", "Devin", "o/s", "heldout"]])
    return tmp_path


GOOD_COMMENTS = [["comment:1", "work_wrong", "ann"], ["review:2", "neutral", "ann"],
                 ["body:11", "trial", "ann"]]


@pytest.mark.parametrize(
    ("name", "header", "rows", "problems"),
    [
        ("comments.csv", ["id", "verdict", "labeller"], GOOD_COMMENTS, []),
        ("comments.csv", ["id", "verdict", "labeller"],
         [*GOOD_COMMENTS, ["comment:1", "neutral", "ann"]], ["duplicate id comment:1"]),
        ("comments.csv", ["id", "verdict", "labeller"], [["comment:7", "neutral", "ann"]],
         ["comment:7 is not in the sample"]),
        ("comments.csv", ["id", "verdict", "labeller"], [["comment:1", "wrong", "ann"]],
         ["unknown verdict 'wrong'"]),
        ("comments.csv", ["id", "verdict", "labeller"], [["comment:1", "neutral", ""]],
         ["no labeller"]),
        ("comments.csv", ["id", "label"], [["comment:1", "neutral"]],
         ["missing columns: verdict, labeller"]),
        ("comments.second.csv", ["id", "verdict", "labeller"], [["comment:1", "approval", "bo"]], []),
        ("comments.second.csv", ["id", "verdict", "labeller"], [["review:2", "approval", "bo"]],
         ["review:2 is not in the sample"]),  # not a double unit
        ("faults.csv", ["pr_id", "fault", "labeller", "note"],
         [["10", "agent", "ann", "reviewer says the fix breaks the build"],
          ["11", "unclear", "ann", ""]], []),
        ("faults.csv", ["pr_id", "fault", "labeller", "note"], [["10", "project", "ann", "x" * 81]],
         ["note longer than 80"]),
        ("faults.csv", ["pr_id", "fault", "labeller", "note"], [["10", "project", "ann", 'said "no"']],
         ["note quotes text"]),
        ("faults.csv", ["pr_id", "fault", "labeller", "note"], [["12", "people", "ann", ""]],
         ["pr_id 12 is not in the sample", "unknown fault 'people'"]),
    ],
)
def test_check(labels_dir: Path, name: str, header: list[str], rows: list[list[str]],
               problems: list[str]) -> None:
    _write(labels_dir / name, header, rows)
    found, checked = cs.check_files(labels_dir)
    assert checked == [name]
    assert len(found) == len(problems), found
    for want, got in zip(problems, found, strict=True):
        assert got.startswith(f"{name}: ") and want in got


def test_check_double_units_need_another_labeller(labels_dir: Path) -> None:
    _write(labels_dir / "comments.csv", ["id", "verdict", "labeller"], GOOD_COMMENTS)
    _write(labels_dir / "comments.second.csv", ["id", "verdict", "labeller"],
           [["comment:1", "work_wrong", "ann"]])
    found, _ = cs.check_files(labels_dir)
    assert found == ["comments.second.csv: comment:1 labelled twice by the same labeller"]


def test_the_class_lists_are_the_guide_s() -> None:
    guide = (ROOT / "docs" / "labelling.md").read_text(encoding="utf-8")
    section = guide.split("### One verdict per unit", 1)[1].split("### ", 1)[0]
    assert tuple(re.findall(r"^\| `(\w+)` \|", section, re.M)) == cs.VERDICTS
    faults = guide.split("### Whose fault a rejection was", 1)[1].split("### ", 1)[0]
    assert tuple(re.findall(r"^\| `(\w+)` \|", faults, re.M)) == cs.FAULTS


def test_the_committed_samples_are_ids_only() -> None:
    sample = cs.read_csv(cs.COMMENT_SAMPLE)
    assert list(sample[0]) == SAMPLE_HEADER
    assert len(sample) == cs.COMMENT_TOTAL and len({r["id"] for r in sample}) == len(sample)
    assert sum(r["double"] == "1" for r in sample) == cs.DOUBLE_TOTAL
    for r in sample:
        assert re.fullmatch(r"(comment|review|body):\d+", r["id"]), r
        assert r["side"] == cs.side(r["repository"])
    faults = cs.read_csv(cs.FAULT_SAMPLE)
    assert list(faults[0]) == ["pr_id", "agent", "repository", "side"]
    assert len(faults) == cs.FAULT_TOTAL
    problems, _ = cs.check_files()
    assert problems == []


@pytest.fixture(scope="module")
def corpus() -> aidev.Corpus:
    return aidev.load(corpus_dir("the sample-drawing tests"))


def test_the_samples_are_drawn_again_identically(corpus: aidev.Corpus) -> None:
    picked, double = cs.sample_comments(cs.all_units(corpus))
    assert [u.id for u in picked] == [r["id"] for r in cs.read_csv(cs.COMMENT_SAMPLE)]
    assert double == {r["id"] for r in cs.read_csv(cs.COMMENT_SAMPLE) if r["double"] == "1"}
    assert [str(p.id) for p in cs.sample_faults(corpus)] == [
        r["pr_id"] for r in cs.read_csv(cs.FAULT_SAMPLE)]


def test_the_sample_keeps_its_caps_and_weights(corpus: aidev.Corpus) -> None:
    ends = {p.id: cs.end_state(p) for p in corpus.prs}
    sample = cs.read_csv(cs.COMMENT_SAMPLE)
    heavy = sum(ends[int(r["pr_id"])] == "closed" and r["position"] == "last3" for r in sample)
    assert heavy == cs.COMMENT_TOTAL // 2
    per_repo: dict[str, int] = {}
    for r in sample:
        per_repo[r["repository"]] = per_repo.get(r["repository"], 0) + 1
    assert max(per_repo.values()) <= cs.REPO_CAP_UNITS
    faults = cs.read_csv(cs.FAULT_SAMPLE)
    assert all(ends[int(r["pr_id"])] == "closed" for r in faults)
    assert {s: sum(r["side"] == s for r in faults) for s in cs.SIDES} == {"train": 210, "heldout": 210}


def test_units_positions_and_roles(corpus: aidev.Corpus) -> None:
    for pr in corpus.prs[:300]:
        units = cs.units_of(pr)
        if cs.end_state(pr) == "open":
            assert {u.position for u in units} <= {"open"}
        else:
            assert sum(u.position == "last3" for u in units) == min(
                3, sum(u.position != "after" for u in units))
        for u in units:
            assert u.text.strip() and u.role in {"agent", "operator", "bot", "person"}
            if u.kind == "body":
                assert u.role == "agent"
