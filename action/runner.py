"""Talking to the Actions runner: workflow commands, step outputs and the step summary.

Written by hand rather than pulled in from a toolkit package: the protocol is three small,
documented formats (``::cmd prop=v::data`` lines, ``name<<DELIM`` blocks in ``$GITHUB_OUTPUT``,
markdown appended to ``$GITHUB_STEP_SUMMARY``), and the escaping is the part that matters for
safety, so it lives here where tests pin it down instead of in an extra image dependency.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO


def escape_data(value: str) -> str:
    """Escape a command's message so untrusted text cannot end the line and forge a command."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a property value (``title=``, ``file=``); these also split on ``:`` and ``,``."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def output_block(name: str, value: str) -> str:
    """One ``$GITHUB_OUTPUT`` entry in the heredoc form, safe for any value, multiline or not.

    The delimiter is random and re-drawn if the value happens to contain it, so a value can never
    close its own block early and smuggle in another output.
    """
    if not name or any(c in name for c in "\r\n=<"):
        raise ValueError(f"invalid output name {name!r}")
    delimiter = f"ghadelimiter_{uuid.uuid4()}"
    while delimiter in value:
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


class Runner:
    """Workflow commands on ``out`` plus the runner's file channels named in ``env``.

    Outside a runner (no ``GITHUB_OUTPUT`` / ``GITHUB_STEP_SUMMARY``) outputs and the summary are
    printed instead, so a local ``python -m action`` run still shows what it would have set.
    """

    def __init__(self, env: Mapping[str, str], out: TextIO | None = None) -> None:
        self.env = env
        self.out = out or sys.stdout
        self.annotations: list[tuple[str, str]] = []

    def _command(self, command: str, message: str, **props: str | None) -> None:
        given = {k: v for k, v in props.items() if v}
        prop_text = ",".join(f"{k}={escape_property(v)}" for k, v in given.items() if v)
        head = f"::{command} {prop_text}::" if prop_text else f"::{command}::"
        self.out.write(f"{head}{escape_data(message)}\n")
        self.out.flush()

    def mask(self, secret: str | None) -> None:
        """Ask the runner to redact ``secret`` from every later log line (each line of it)."""
        if not secret:
            return
        for line in secret.splitlines():
            if line.strip():
                self._command("add-mask", line)

    def notice(self, message: str, title: str | None = None) -> None:
        self.annotations.append(("notice", message))
        self._command("notice", message, title=title)

    def warning(self, message: str, title: str | None = None, file: str | None = None) -> None:
        self.annotations.append(("warning", message))
        self._command("warning", message, title=title, file=file)

    def error(self, message: str, title: str | None = None, file: str | None = None) -> None:
        self.annotations.append(("error", message))
        self._command("error", message, title=title, file=file)

    def debug(self, message: str) -> None:
        self._command("debug", message)

    def info(self, message: str) -> None:
        """A plain log line; escaped anyway so untrusted text cannot start a command."""
        self.out.write(escape_data(message) + "\n")
        self.out.flush()

    def set_outputs(self, outputs: Mapping[str, str]) -> None:
        target = self.env.get("GITHUB_OUTPUT")
        if not target:
            for name, value in outputs.items():
                self.info(f"output {name}={value}")
            return
        with Path(target).open("a", encoding="utf-8") as fh:
            for name, value in outputs.items():
                fh.write(output_block(name, value))

    def append_summary(self, markdown: str) -> None:
        target = self.env.get("GITHUB_STEP_SUMMARY")
        if not target:
            return
        with Path(target).open("a", encoding="utf-8") as fh:
            fh.write(markdown if markdown.endswith("\n") else markdown + "\n")


class LogBridge(logging.Handler):
    """Library logging as workflow commands: taskeval's own warnings become ``::warning::``;
    everything else (PyGithub's "Request GET /user failed with 403" for installation tokens,
    HTTP client chatter) goes to ``::debug::``, shown only when step debug logging is on, so an
    expected refusal never reads like a failure in the log."""

    def __init__(self, runner: Runner) -> None:
        super().__init__(logging.DEBUG)
        self.runner = runner

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a malformed log call must not break the action
            message = str(record.msg)
        if record.levelno >= logging.WARNING and record.name.split(".")[0] == "taskeval":
            self.runner.warning(message, title="taskeval")
        else:
            self.runner.debug(f"{record.name}: {message}")

    @classmethod
    def install(cls, runner: Runner) -> LogBridge:
        """Route the root logger here (PyGithub's own handler is removed by taskeval.github)."""
        handler = cls(runner)
        root = logging.getLogger()
        for existing in list(root.handlers):
            root.removeHandler(existing)
        root.addHandler(handler)
        root.setLevel(logging.DEBUG if runner.env.get("RUNNER_DEBUG") == "1" else logging.INFO)
        return handler
