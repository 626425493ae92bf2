"""A small process supervisor for ``taskeval serve`` / ``taskeval worker``.

gunicorn supervises its own web workers, but not queue workers; running them as gunicorn hooks
would tie job leases to web-worker recycling and let gunicorn's SIGCHLD handler reap them. So
``serve`` runs gunicorn and the queue workers as sibling child processes and this loop keeps
them alive: a queue worker that exits unexpectedly is restarted with backoff; if the web server
exits, everything stops and its exit code is returned, for the orchestrator to act on. SIGTERM or
SIGINT is forwarded once (graceful: finish current jobs); a second signal is forwarded again (a
worker then releases its job at once).

If the supervisor itself is killed outright (SIGKILL, the OOM killer), no handler runs; each child
is started with ``PR_SET_PDEATHSIG`` (Linux), so the kernel sends it SIGTERM the moment its parent
dies: gunicorn closes its listening socket and stops, instead of answering webhooks with no queue
worker behind it and holding the port against a restart.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("bot.supervise")


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks the kernel to send ``sig`` to the child when the process that
    started it dies; None where ``prctl`` does not exist (not Linux). It also covers the race of a
    parent that died between ``fork`` and the ``prctl`` call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before fork, not in the child
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return preexec


@dataclass
class Child:
    name: str
    argv: list[str]
    critical: bool  # its exit ends the whole service
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    restart_at: float | None = None
    started_at: float = field(default=0.0)

    def start(self) -> None:
        # Own session: a terminal's Ctrl-C reaches the supervisor only, which forwards it once.
        self.proc = subprocess.Popen(self.argv, start_new_session=True,
                                     preexec_fn=die_with_parent())
        self.started_at = time.monotonic()
        log.info("started %s", self.name, extra={"fields": {"child_pid": self.proc.pid}})


class Supervisor:
    def __init__(self, *, grace_seconds: float) -> None:
        self.children: list[Child] = []
        self.grace_seconds = grace_seconds
        self.stop = threading.Event()
        self._signals = 0

    def add(self, name: str, argv: list[str], *, critical: bool = False) -> None:
        self.children.append(Child(name, argv, critical))

    def _forward(self, sig: int) -> None:
        for child in self.children:
            if child.proc is not None and child.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(sig)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._signals += 1
        self.stop.set()
        if self._signals > 1:
            self._forward(signal.SIGTERM)

    def run(self) -> int:
        """Start the children and watch them until a signal or a critical exit; returns the
        service's exit code."""
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        for child in self.children:
            child.start()
        code = 0
        while not self.stop.wait(0.5):
            now = time.monotonic()
            for child in self.children:
                if child.proc is None:
                    continue
                rc = child.proc.poll()
                if rc is None:
                    if child.restart_at is None and now - child.started_at > 60:
                        child.restarts = 0  # ran a while: forget earlier crashes
                    continue
                if child.critical:
                    log.error("%s exited with %s; stopping", child.name, rc)
                    code = rc or 1
                    self.stop.set()
                    break
                if child.restart_at is None:
                    delay = min(30.0, 2.0 ** child.restarts)
                    child.restart_at = now + delay
                    log.warning("%s exited with %s; restarting in %.0f s", child.name, rc, delay)
                elif now >= child.restart_at:
                    child.restarts += 1
                    child.restart_at = None
                    child.start()
        self._shutdown()
        return code

    def _shutdown(self) -> None:
        self._forward(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_seconds + 5
        for child in self.children:
            if child.proc is None:
                continue
            try:
                child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.error("%s did not stop in time; killing it", child.name)
                child.proc.kill()
                child.proc.wait()
        log.info("all processes stopped", extra={"fields": {"pid": os.getpid()}})
