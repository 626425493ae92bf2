"""Regenerate the stored example evaluation in this folder.

The example is a realistic merged agent PR — Copilot's usual three commits, a failing first CI run
fixed by the next push, a change request answered before approval — collected from the fake GitHub
the tests use (so no network or token is needed) and evaluated with the AI judge off. Run from the
repository root after a scorer change:

    python examples/make_example.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from taskeval.github import make_client  # noqa: E402
from taskeval.pipeline import Options, evaluate_pull_request  # noqa: E402
from tests.fakegithub import FAKE_TOKEN, FakeGitHub  # noqa: E402

REPO, NUMBER = "octo-org/widgets", 482
BODY = """\
## Summary
`parse_widget("")` raised `IndexError`; it now returns `None`, and whitespace-only input is
treated the same way.

Fixes #471

## Changes
- handle empty and whitespace-only input in `parse_widget`
- add tests for empty, whitespace and `None` input
- note the fix in CHANGELOG.md

## Testing
- [x] unit tests added
- [x] all tests pass in CI
"""
MESSAGES = [
    "chore: initial plan\n\nTask-Id: WID-471",
    "fix(parser): handle empty input in parse_widget\n\nReturn None instead of raising IndexError.\n\n"
    "Task-Id: WID-471\nCo-authored-by: octocat <octocat@users.noreply.github.com>",
    "test(parser): cover empty, whitespace and None input\n\nTask-Id: WID-471\n"
    "Co-authored-by: octocat <octocat@users.noreply.github.com>",
]


def build() -> FakeGitHub:
    fake = FakeGitHub()
    fake.add_pr(
        REPO, NUMBER, commits=3, ci="fail-then-fix", body=BODY,
        title="Fix IndexError on empty input in parse_widget",
        reviews=[
            {"user": "octocat", "state": "CHANGES_REQUESTED", "body": "Please cover whitespace-only input too."},
            {"user": "octocat", "state": "APPROVED", "body": "Thanks, looks good."},
        ],
        files=[
            {"filename": "src/widgets/parser.py", "additions": 14, "deletions": 3},
            {"filename": "tests/test_parser.py", "additions": 31, "deletions": 0},
            {"filename": "CHANGELOG.md", "additions": 2, "deletions": 0},
        ],
    )
    for commit, message in zip(fake.repos[REPO].pulls[NUMBER].commits, MESSAGES, strict=True):
        commit["commit"]["message"] = message
    return fake


def main() -> None:
    fake = build()
    with fake.mock():
        evaluation = evaluate_pull_request(
            make_client(FAKE_TOKEN, base_url=fake.url), REPO, NUMBER,
            Options(ai="off", trigger="pull_request", evaluated_at="2025-03-04T12:00:00Z", env={}),
        )
    out = ROOT / "examples"
    (out / "agent-pr-482.result.json").write_text(evaluation.result.to_json() + "\n", encoding="utf-8")
    (out / "agent-pr-482.bundle.json").write_text(evaluation.result.evidence.to_json() + "\n", encoding="utf-8")
    (out / "agent-pr-482.comment.md").write_text(evaluation.markdown, encoding="utf-8")
    print(f"overall {evaluation.result.overall_score} ({evaluation.result.overall_band})")


if __name__ == "__main__":
    main()
