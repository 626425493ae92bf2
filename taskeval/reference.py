"""Reference docs generated from the code, so docs/config.md and docs/signals.md cannot drift.

``python -m taskeval.reference`` rewrites both files; a test fails when they are stale.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from taskeval.config import Settings
from taskeval.report import CATEGORY_TITLES
from taskeval.schema import CONFIG_SCHEMA_FILE
from taskeval.signals import signal_specs

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False).replace("|", "\\|")
    if len(text) > 80 and isinstance(value, list):
        return f"<details><summary>{len(value)} entries</summary>`{text}`</details>"
    return f"`{text}`"


def config_reference() -> str:
    lines = [
        "# Configuration reference: `.github/taskeval.yml`",
        "",
        "Generated from `taskeval/config.py` by `python -m taskeval.reference`; do not edit by hand.",
        "Every key is optional. An invalid file is reported (naming the key) and the evaluation runs",
        "on these defaults. Rules between keys hold whichever of them the file sets",
        "(`max_change_lines` above `comfortable_change_lines`, either at its default): a file that",
        "breaks one is reported and that pair takes its defaults, while the rest of the file applies.",
        "Globs use `fnmatch` on the full path (`*` also matches `/`). Regexes a file gives run on RE2,",
        "which matches in linear time whatever the pattern: RE2 syntax, so no lookaround or",
        "backreferences, and `\\w`, `\\d`, `\\b` are ASCII. One RE2 cannot take is reported (naming the",
        "key) and the defaults apply. taskeval's own patterns (the defaults, the built-in agents')",
        "keep Python's `re`, also when a file repeats one word for word.",
        "",
        "## Editor support",
        "",
        "`taskeval schema config` prints the JSON Schema of this file (generated from the same model",
        "the loader uses). Save it beside the config and point the first line of the config at it; any",
        "editor with the YAML language server (VS Code's YAML extension, Neovim, JetBrains, Helix) then",
        "completes keys and signal ids, shows each key's meaning and default, and flags unknown keys",
        "and wrong types as you type:",
        "",
        "```sh",
        f"taskeval schema config > .github/{CONFIG_SCHEMA_FILE}",
        "```",
        "",
        "```yaml",
        f"# yaml-language-server: $schema={CONFIG_SCHEMA_FILE}",
        "thresholds:",
        "  comfortable_change_lines: 300",
        "```",
        "",
        "The path after `$schema=` is relative to the config file; an `https://` URL works too.",
        "Regenerate the schema after upgrading taskeval (new keys and signals appear in it).",
        "",
    ]
    defaults = Settings()

    def section(title: str, model: BaseModel, prefix: str) -> None:
        lines.extend([f"## {title}", "", "| key | default | meaning |", "|---|---|---|"])
        nested = []
        for name, field in type(model).model_fields.items():
            value = getattr(model, name)
            if isinstance(value, BaseModel):
                nested.append((name, value))
                lines.append(f"| `{prefix}{name}` | (section below) | {_cell(field.description or '')} |")
                continue
            lines.append(f"| `{prefix}{name}` | {_default(value)} | {_cell(field.description or '')} |")
        lines.append("")
        for name, value in nested:
            section(f"`{prefix}{name}`", value, f"{prefix}{name}.")

    section("Top level", defaults, "")
    lines.extend(agents_reference())
    lines.extend(task_types_reference())
    return "\n".join(lines)


def task_types_reference() -> list[str]:
    """The built-in task type tables (taskeval/tasktypes.py), by type."""
    from taskeval.tasktypes import BUILTIN_LABELS, BUILTIN_PREFIXES, BUILTIN_SCOPES, PRECEDENCE, TYPES

    lines = [
        "## Built-in task types",
        "",
        "A PR's task type comes from its title's prefix, else its labels, else its linked issues' "
        "labels, else it is `unknown` (taskeval/tasktypes.py). Entries under `task_types:` are added "
        "to these tables or replace an entry; `none` removes one. When labels name several types, "
        f"the first of {', '.join(f'`{t}`' for t in PRECEDENCE)} wins.",
        "",
        "| type | title prefixes | scopes | labels |",
        "|---|---|---|---|",
    ]

    def keys(table: Mapping[str, str], kind: str) -> str:
        return _cell(", ".join(f"`{k}`" for k, v in table.items() if v == kind)) or "—"

    for kind in TYPES:
        lines.append(f"| `{kind}` | {keys(BUILTIN_PREFIXES, kind)} | {keys(BUILTIN_SCOPES, kind)} | "
                     f"{keys(BUILTIN_LABELS, kind)} |")
    lines.append("")
    return lines


def agents_reference() -> list[str]:
    """The ``agents:`` entry keys and the built-in attribution table (taskeval/agent_table.py)."""
    from taskeval.agent_table import BUILTIN_RULES
    from taskeval.config import AgentRuleConfig

    lines = [
        "## `agents` entries",
        "",
        "Each entry adds an agent or, with a built-in id, replaces the fields it gives of that agent",
        "(how it is recognised: a built-in agent keeps its name). Results feed views shared across",
        "repositories, so a repository names only its own agents, and only on its own PRs: the",
        "leaderboard and the dashboard's rows list a repository's agent by its id.",
        "How attribution weighs each kind of mark is documented in `taskeval/agents.py`.",
        "",
        "| key | meaning |",
        "|---|---|",
    ]
    for name, field in AgentRuleConfig.model_fields.items():
        lines.append(f"| `agents[].{name}` | {_cell(field.description or '')} |")
    lines += [
        "",
        "### Built-in agents",
        "",
        "| id | name | accounts | Apps | branch prefixes | co-author / text marks | operator from |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in BUILTIN_RULES:
        marks = [*r.co_authors, *r.text_marks]
        lines.append(
            f"| `{r.id}` | {r.name} | {_cell(', '.join(r.logins))} | {_cell(', '.join(r.apps))} | "
            f"{_cell(', '.join(r.branch_prefixes))} | {_cell(' · '.join(f'`{m}`' for m in marks))} | "
            f"{', '.join(r.operator)} |"
        )
    lines.append("")
    return lines


def signals_reference() -> str:
    thresholds = Settings().thresholds
    by_signal: dict[str, list[str]] = {}
    for name, field in type(thresholds).model_fields.items():
        desc = field.description or ""
        if desc.startswith("[") and "]" in desc:
            entry = f"`thresholds.{name}` = {getattr(thresholds, name)}"
            by_signal.setdefault(desc[1 : desc.index("]")], []).append(entry)
    lines = [
        "# Signal reference",
        "",
        "Generated from `taskeval/signals/` by `python -m taskeval.reference`; do not edit by hand.",
        "Each category's deterministic score is the weighted mean of its conclusive signals' scores;",
        "an inconclusive signal (no data) is left out of the mean. Weights can be changed or set to 0",
        "with `signal_weights` in the config, and signals turned off with `disabled_signals`.",
        "",
    ]
    current = None
    for spec in signal_specs():
        if spec.category != current:
            if current is not None:
                lines.append("")
            current = spec.category
            lines.extend(
                [
                    f"## {CATEGORY_TITLES[current]} (`{current}`)",
                    "",
                    "| signal | default weight | measures | reads | parameters |",
                    "|---|---:|---|---|---|",
                ]
            )
        doc = _cell((spec.run.__doc__ or "").strip().split("\n\n")[0])
        reads = ", ".join(f"`{r}`" for r in spec.reads)
        params = "<br>".join(by_signal.get(spec.id, [])) or "—"
        lines.append(f"| `{spec.id}`<br>{_cell(spec.name)} | {spec.weight:g} | {doc} | {reads} | {params} |")
    lines.append("")
    return "\n".join(lines)


def write(docs: Path = DOCS) -> list[Path]:
    docs.mkdir(exist_ok=True)
    written = []
    for name, text in (("config.md", config_reference()), ("signals.md", signals_reference())):
        path = docs / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else DOCS):
        print(f"wrote {path}")
