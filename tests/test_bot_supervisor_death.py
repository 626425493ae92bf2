"""`taskeval serve` killed outright (SIGKILL: no handler runs) takes its gunicorn and queue
workers with it: a real process tree, a real port, bounded waits."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.bot.helpers import SECRET
from tests.fakegithub import FAKE_TOKEN
from tests.test_bot_serve import base_env, free_port, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PR_SET_PDEATHSIG and /proc are Linux")


def children_of(pid: int) -> dict[int, str]:
    """Direct children of ``pid`` from /proc: {pid: command line}."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.mark.parametrize("workers", [True, False], ids=["serve", "serve --no-workers"])
def test_sigkill_of_serve_stops_gunicorn_and_frees_the_port(tmp_path: Path, workers: bool) -> None:
    port = free_port()
    env = base_env(tmp_path, GITHUB_WEBHOOK_SECRET=SECRET, GITHUB_TOKEN=FAKE_TOKEN,
                   GITHUB_API_URL="http://127.0.0.1:9", TASKEVAL_AI="off", WEB_CONCURRENCY="2",
                   TASKEVAL_QUEUE_WORKERS="1", TASKEVAL_POLL_SECONDS="0.2")
    argv = [sys.executable, "-m", "taskeval", "serve", "--bind", f"127.0.0.1:{port}"]
    if not workers:
        argv.append("--no-workers")
    proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    tree: dict[int, str] = {}
    try:
        wait_for(lambda: requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).ok,
                 "the service to start")
        tree = children_of(proc.pid)
        web = [pid for pid, cmd in tree.items() if "gunicorn" in cmd]
        assert len(web) == 1, tree
        assert len(tree) == (2 if workers else 1), tree
        gunicorn_workers = children_of(web[0])
        assert len(gunicorn_workers) == 2
        monitor = f"http://127.0.0.1:{port}/healthz/workers"
        if workers:
            wait_for(lambda: requests.get(monitor, timeout=2).status_code == 200,
                     "the queue worker's heartbeat")
        else:
            assert requests.get(monitor, timeout=2).status_code == 503  # web node only

        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        everyone = [*tree, *gunicorn_workers]
        wait_for(lambda: not any(alive(p) for p in everyone),
                 "gunicorn and the queue workers to exit after their supervisor died", limit=30)
        wait_for(lambda: port_free(port), "the port to be free for a restart", limit=10)
        with pytest.raises(requests.ConnectionError):
            requests.post(f"http://127.0.0.1:{port}/webhook", data=b"{}", timeout=2)
    finally:
        for pid in tree:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
