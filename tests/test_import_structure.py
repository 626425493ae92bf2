"""The import graph of taskeval/, bot/, dashboard/ and action/ keeps its layers and has no circle.

The layers themselves are import-linter contracts in pyproject.toml, run by the test command
(``lint-imports``); this module checks what a layers contract cannot say: no two modules import
each other, directly or round a circle, at module level, inside a function or under
``TYPE_CHECKING``. The graph is grimp's, the one import-linter reads."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("taskeval", "bot", "action", "dashboard")
ADAPTERS = ("bot", "action", "dashboard")
COMMANDS = {"validity": "taskeval.validity_cli:add_commands", "webhook-bot": "bot.cli:add_commands"}


@cache
def graph() -> dict[str, frozenset[str]]:
    """Module -> the project's modules it imports, as grimp reads the source (a lazy import in a
    function and a ``TYPE_CHECKING`` import count: a circle through them is still a tangle)."""
    found = grimp.build_graph(*PACKAGES, cache_dir=None)
    return {m: frozenset(found.find_modules_directly_imported_by(m)) for m in found.modules}


def circles(edges: dict[str, frozenset[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as one cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_cycle_through(sorted(component), edges))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def _cycle_through(component: list[str], edges: dict[str, frozenset[str]]) -> list[str]:
    """One concrete circle in ``component`` starting at its first module, for the message."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v] & members):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return component


def test_the_graph_sees_lazy_and_relative_imports() -> None:
    """The reader itself: an import inside a function and a relative import are edges, and a
    circle through them is found."""
    edges = graph()
    assert "dashboard.views" in edges["dashboard.core"]  # inside install()
    assert "taskeval.signals.base" in edges["taskeval.signals.rework"]  # from .base import ...
    made_up = {**edges, "dashboard.views": edges["dashboard.views"] | {"dashboard.core"}}
    assert ["dashboard.core", "dashboard.views", "dashboard.core"] in circles(made_up)


def test_no_module_imports_itself_round_a_circle() -> None:
    found = circles(graph())
    assert found == [], "import circles: " + "; ".join(" -> ".join(c) for c in found)


@pytest.mark.parametrize("modules", [
    ("taskeval.cli", "bot.cli"),
    ("taskeval.cli", "taskeval.validity_cli"),
    ("dashboard.core", "dashboard.views"),
    ("taskeval.agents", "taskeval.config", "taskeval.evidence.vocabulary"),
])
def test_the_circles_of_issue_19_are_gone(modules: tuple[str, ...]) -> None:
    for circle in circles(graph()):
        assert not set(modules) & set(circle), " -> ".join(circle)


def test_the_core_imports_no_adapter() -> None:
    upward = {(m, t) for m, targets in graph().items() if m.startswith("taskeval")
              for t in targets if t.split(".")[0] in ADAPTERS}
    assert upward == set(), sorted(upward)


def test_lint_imports_keeps_every_contract() -> None:
    """The declared layers (pyproject.toml) hold; the test command runs the same check."""
    proc = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                           "lint_imports_command()"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "0 broken" in proc.stdout


def test_the_commands_beyond_the_core_are_registered_as_entry_points() -> None:
    """pyproject.toml names them, and the installed metadata does too (an older install lists
    only evaluate, score and schema: reinstall with pip install -e .)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["taskeval.commands"]
    assert declared == COMMANDS
    installed = {e.name: e.value for e in entry_points(group="taskeval.commands")}
    assert installed == COMMANDS, "stale install: run pip install -e ."


def test_each_module_of_a_former_circle_works_without_the_other() -> None:
    """In a fresh interpreter: the dashboard's views without its core, the config (validating
    agents: entries, where it read the agent table) without attribution, the core CLI's own
    commands without the bot."""
    code = """
import sys
sys.modules["dashboard.core"] = None
import dashboard.views
assert dashboard.views.dashboard.name == "dashboard"

sys.modules["taskeval.agents"] = None
from taskeval.config import parse_config
loaded = parse_config("agents:\\n  - id: copilot\\n    enabled: false\\n  - id: newbot\\n", "file:x.yml")
assert loaded.errors == ["file:x.yml: agents: Value error, new agent 'newbot' needs a name"], loaded.errors
del sys.modules["taskeval.agents"]  # the schema lists the signals, which attribute

sys.modules["bot"] = None
from taskeval.cli import main
sys.exit(main(["schema", "config"]))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert '"title": "taskeval configuration (.github/taskeval.yml)"' in proc.stdout


LONGEST = 800  # lines: past it a module holds more than one room (migrations are frozen history)


def test_no_source_file_outgrows_one_room() -> None:
    tracked = subprocess.run(["git", "ls-files", "*.py"], capture_output=True, text=True, cwd=ROOT,
                             check=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout: no tracked files to measure")
    long = {path: n for path in tracked if "/migrations/versions/" not in path and (ROOT / path).is_file()
            and (n := len((ROOT / path).read_text(encoding="utf-8").splitlines())) > LONGEST}
    assert long == {}, f"split these by concern (at most {LONGEST} lines): {long}"
