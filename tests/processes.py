"""What a process a test starts inherits, how its refusal reads, and how it is stopped.

What it inherits: the machine's environment less anything that would point
it at a real GitHub, AI endpoint, runner or deployment, but with the transport under test.

``TASKEVAL_API`` is kept on purpose: the suites that run once per transport
(``tests/conftest.py``, ``transport``) set it, and a CLI, Action, worker or backfill process must
collect the way the test says, as it would in a deployment that sets it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any, Final

from taskeval.transports import API_ENV

SCRUBBED: Final = ("GITHUB_", "GH_", "OPENAI_", "AZURE_", "TASKEVAL_", "INPUT_", "RUNNER_")
KEPT: Final = frozenset({API_ENV})


def transport_env() -> dict[str, str]:
    """``TASKEVAL_API`` as this test process has it, for a child built from nothing."""
    value = os.environ.get(API_ENV)
    return {API_ENV: value} if value else {}


def child_env(**values: str) -> dict[str, str]:
    """The machine's environment, scrubbed (``DATABASE_URL`` too: a test names its own store),
    with ``values`` on top."""
    base = {k: v for k, v in os.environ.items()
            if (k in KEPT or not k.startswith(SCRUBBED)) and k != "DATABASE_URL"}
    return {**base, **values}


def one_line(proc: subprocess.CompletedProcess[str], code: int = 2, prefix: str = "taskeval") -> str:
    """The one stderr line of a refused command (which exits with ``code``), with no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(prefix), proc.stderr
    return lines[0]


def stop(proc: subprocess.Popen[Any], wait: float = 40) -> None:
    """Stop a service as its supervisor would: SIGTERM, then a kill if it has not ended within
    ``wait`` seconds."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()


def ctrl_c_reaches() -> None:
    """``preexec_fn`` for a child the test stops with Ctrl-C (SIGINT). A shell starts background
    jobs with SIGINT ignored and a child inherits that (then Python installs no KeyboardInterrupt),
    so reset it to the default, as a terminal's foreground job has it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
