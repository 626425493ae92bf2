"""A small process supervisor for ``taskeval serve`` / ``taskeval worker``.

gunicorn supervises its own web workers, but not queue workers; running them as gunicorn hooks
would tie job leases to web-worker recycling and let gunicorn's SIGCHLD handler reap them. So
``serve`` runs gunicorn and the queue workers as sibling child processes and this loop keeps
them alive: a queue worker that exits unexpectedly is restarted with backoff; if the web server
exits, everything stops and its exit code is returned, for the orchestrator to act on. SIGTERM or
SIGINT is forwarded once (graceful: finish current jobs); a second signal is forwarded again (a
worker then releases its job at once).

A queue worker whose process is still there but stopped heartbeating while it runs a job (hung:
a call that never returns while holding the interpreter lock, a stopped process) is replaced:
the :class:`HeartbeatWatch` reads the workers' heartbeats from the database, and the supervisor
kills the silent child (SIGKILL: a hung process runs no handler), gives its jobs back to the
queue (requeued, or dead on their last attempt) and starts a new worker at once.

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
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.jobs.queue import Queue, Stalled
    from bot.settings import BotSettings

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
    watched: bool = False  # a queue worker: replaced when it stops heartbeating mid-job
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


class HeartbeatWatch:
    """Which queue workers among the supervisor's children hang mid-job, from the heartbeats
    they write to the database (``Queue.stalled``), and giving their jobs back (``Queue.abandon``).
    A worker is hung when it holds a running job and has been silent for the stale window
    (``TASKEVAL_WORKER_STALE_SECONDS``, 16 s by default)."""

    def __init__(self, settings: BotSettings) -> None:
        from bot.jobs.presence import alive_window

        self.settings = settings
        window = alive_window(settings.lease_seconds, settings.worker_stale_seconds)
        self.interval = max(0.5, min(5.0, window / 4))  # seconds between looks
        self._queue: Queue | None = None

    def queue(self) -> Queue:
        if self._queue is None:
            from bot.jobs.queue import Queue
            from taskeval.store.db import make_engine

            self._queue = Queue.for_settings(make_engine(self.settings.database_url), self.settings)
        return self._queue

    def stalled(self, pids: list[int]) -> list[Stalled]:
        return self.queue().stalled(socket.gethostname(), pids)

    def abandon(self, stalled: Stalled, why: str) -> list[int]:
        return self.queue().abandon(stalled.worker_id, why)

    def close(self) -> None:
        if self._queue is not None:
            self._queue.engine.dispose()


class Supervisor:
    def __init__(self, *, grace_seconds: float, watch: HeartbeatWatch | None = None) -> None:
        self.children: list[Child] = []
        self.grace_seconds = grace_seconds
        self.stop = threading.Event()
        self.watch = watch
        self._signals = 0

    def add(self, name: str, argv: list[str], *, critical: bool = False, watched: bool = False) -> None:
        self.children.append(Child(name, argv, critical, watched))

    def _replace_hung(self) -> None:
        """Kill the queue workers that stopped heartbeating mid-job, give their jobs back to the
        queue, and start new ones in their place."""
        assert self.watch is not None
        live = {c.proc.pid: c for c in self.children
                if c.watched and c.proc is not None and c.proc.poll() is None}
        try:
            stalled = self.watch.stalled(sorted(live))
        except Exception as exc:  # the database may be restarting: look again next time
            log.warning("could not read the queue workers' heartbeats: %s", str(exc).splitlines()[0])
            return
        for hung in stalled:
            child = live.get(hung.pid)
            if child is None or child.proc is None:
                continue
            log.error("%s (pid %d) stopped heartbeating %.0f s ago while running job %s; replacing it",
                      child.name, hung.pid, hung.silent_seconds, ", ".join(map(str, hung.jobs)),
                      extra={"fields": {"child_pid": hung.pid, "jobs": hung.jobs}})
            child.proc.kill()  # hung: it would run no SIGTERM handler
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.proc.wait(timeout=10)
            why = (f"its worker (pid {hung.pid}) stopped heartbeating for {hung.silent_seconds:.0f} s "
                   "while running it (hung) and was replaced")
            try:
                self.watch.abandon(hung, why)
            except Exception as exc:  # the next claim requeues it once the worker's row is stale
                log.warning("could not requeue the hung worker's jobs yet: %s", str(exc).splitlines()[0])
            child.restarts += 1
            child.restart_at = None
            child.start()

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
        next_look = time.monotonic() + (self.watch.interval if self.watch else 0)
        while not self.stop.wait(0.5):
            now = time.monotonic()
            if self.watch is not None and now >= next_look:
                next_look = now + self.watch.interval
                self._replace_hung()
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
        if self.watch is not None:
            self.watch.close()
        log.info("all processes stopped", extra={"fields": {"pid": os.getpid()}})
