"""Closing the terminal under a live session (a tmux kill-session, an ssh drop): the kernel
sends SIGHUP, the app stops the session after its step and exits; nothing keeps running."""

from __future__ import annotations

import os
import pty
import select
import sys
import time
from pathlib import Path

import pytest

from mlagent_tui.core.store import Store

from .agent_helpers import write_replay
from .conftest import ROOT, bwrap_ready
from .search_helpers import reply, sleepy

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def read_for(fd: int, seconds: float) -> bytes:
    """What the app drew in `seconds` (the pty must be read, or the app blocks writing)."""
    out, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out


def exited_within(pid: int, seconds: float) -> int | None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.2)
    return None


def test_a_hangup_stops_the_session_and_the_app_exits(tmp_path: Path, tiny_task: Path) -> None:
    replay = write_replay(tmp_path / "r.jsonl", [reply(sleepy(2.0))] * 40)
    home = tmp_path / "home"
    args = ["--task-dir", str(tiny_task), "--model", f"replay:{replay}", "--agent", "search"]
    args += ["--workers", "1", "--no-starter", "--max-nodes", "40"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home), "TERM": "xterm"}
    env["COLUMNS"], env["LINES"] = "100", "30"
    pid, fd = pty.fork()
    if pid == 0:  # the child: the app on the pty, as in a terminal
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "mlagent_tui", *args], env)
    status = None
    try:
        drawn = read_for(fd, 12.0)
        assert drawn, "the app drew nothing"
        os.close(fd)  # the terminal goes away: SIGHUP to the app
        status = exited_within(pid, 40.0)
    finally:
        if status is None:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    assert status is not None, "the app kept running after its terminal closed"
    store = Store(home / "mlagent.db")
    (row,) = store.sessions()
    assert row["status"] != "running", row  # stopped after its step: resumable, not orphaned
    assert 0 < len(store.events(row["id"], kinds=["node_finished"])) < 40
