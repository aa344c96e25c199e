"""A Ray cluster of several nodes on this one machine, for tests and benchmarks.

Each node is a `ray start --block` process of ours; stopping sends it SIGTERM (it stops the
processes it started) and then kills by PID whatever of its descendants is left. Never
`ray stop`: that stops every Ray process of the machine, other users' clusters included.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# A node whose raylet dies is declared dead in about 2 s instead of Ray's default 30 s.
FAST_HEALTH = {
    "RAY_health_check_initial_delay_ms": "0",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_timeout_ms": "500",
    "RAY_health_check_failure_threshold": "3",
    "RAY_USAGE_STATS_ENABLED": "0",
    # a token left in ~/.ray by any `ray.init()` turns auth on for a head but not for the nodes
    # joining it (Ray 2.60); a cluster of this one machine needs none
    "RAY_AUTH_MODE": "disabled",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """Every process below `pid` now (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class LocalCluster:
    """A head and more raylets on this machine, one CPU each unless told otherwise."""

    def __init__(self, cwd: Path | None = None) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))  # short: socket paths
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[subprocess.Popen] = []
        self.env = {**os.environ, **FAST_HEALTH}
        self.cwd = cwd
        self.ray = Path(sys.executable).with_name("ray")

    def start(
        self,
        head: bool = False,
        cpus: int = 1,
        timeout_s: float = 90,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen:
        """Start a node (`env`: what differs on it, e.g. a PATH without the sandbox)."""
        args = [str(self.ray), "start", "--block", "--num-cpus", str(cpus)]
        args += ["--disable-usage-stats", "--node-ip-address", "127.0.0.1"]
        args += ["--object-store-memory", str(80 << 20)]
        args += ["--dashboard-agent-listen-port", str(free_port())]
        if head:
            args += ["--head", "--port", str(self.port), "--temp-dir", str(self.tmp)]
            args += ["--include-dashboard", "false", "--dashboard-port", str(free_port())]
        else:
            args += ["--address", self.address]
        log = self.tmp / f"node-{len(self.nodes)}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**self.env, **(env or {})},
                cwd=self.cwd,
            )
        self.nodes.append(proc)
        deadline = time.monotonic() + timeout_s
        while "Ray runtime started" not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ray start failed:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        return proc

    def raylet(self, node: subprocess.Popen) -> int:
        pids = [p for p in descendants(node.pid) if "/raylet/raylet " in cmdline(p)]
        if len(pids) != 1:
            raise RuntimeError(f"expected one raylet under {node.pid}, found {pids}")
        return pids[0]

    def stop_node(self, node: subprocess.Popen) -> None:
        left = {pid: cmdline(pid) for pid in descendants(node.pid)}
        if node.poll() is None:
            node.send_signal(signal.SIGTERM)
        try:
            node.wait(timeout=20)
        except subprocess.TimeoutExpired:
            node.kill()
            node.wait()
        for pid, line in left.items():
            if line and cmdline(pid) == line:  # still that process, not a reused PID
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def stop(self) -> None:
        """Each `ray start` by PID, the head last, then the folder."""
        for node in reversed(self.nodes):
            self.stop_node(node)
        self.nodes.clear()
        shutil.rmtree(self.tmp, ignore_errors=True)
