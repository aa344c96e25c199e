"""Watching a running command: the kernel's verdicts from its cgroup, or sampled RSS without one."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from .cgroup import StepCgroup

PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 1024 / 1024
# What a result says where no memory cgroup counts the step (not root, nothing delegated).
SAMPLED_ONLY = (
    "memory sampled (no memory cgroup): RSS, /tmp and /dev/shm counted every 50 ms; "
    "memfd buffers that no process maps are not counted"
)
SCRATCH = ("/tmp", "/dev/shm")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def group_pids(pgid: int) -> list[int]:
    """Processes whose process group is `pgid` (found through /proc)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = _read(Path(entry.path) / "stat")
        if not stat:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def rss_mb(pids: list[int]) -> float:
    """Proportional set size summed over `pids`, so pages shared by forks count once."""
    total_kb = 0
    for pid in pids:
        rollup = _read(Path(f"/proc/{pid}/smaps_rollup"))
        for line in rollup.splitlines():
            if line.startswith("Pss:"):
                total_kb += int(line.split()[1])
                break
        else:
            statm = _read(Path(f"/proc/{pid}/statm")).split()
            if len(statm) > 1:
                total_kb += int(int(statm[1]) * PAGE_MB * 1024)
    return total_kb / 1024


def tmpfs_mb(pids: list[int]) -> float:
    """What the sandbox's own /tmp and /dev/shm (tmpfs in its mount namespace) hold, in MB.

    Seen from the host through /proc/PID/root of a process inside; a process not (yet) inside
    sees the host's folders, which are not counted.
    """
    total = 0.0
    for name in SCRATCH:
        try:
            host_dev = os.stat(name).st_dev
        except OSError:
            host_dev = None
        for pid in reversed(pids):
            folder = f"/proc/{pid}/root{name}"
            try:
                if os.stat(folder).st_dev == host_dev:
                    continue
                st = os.statvfs(folder)
            except OSError:
                continue
            total += (st.f_blocks - st.f_bfree) * st.f_frsize / 1024 / 1024
            break
    return total


class ResourceMonitor(threading.Thread):
    """Ends the step when the kernel refused a fork or killed for memory in its cgroup.

    Without a memory cgroup it samples the step's RSS (plus its /tmp and /dev/shm) and kills
    the group past the limit: memory the sampler cannot see (see SAMPLED_ONLY) escapes it.
    """

    def __init__(
        self,
        pgid: int,
        mem_mb: int,
        cgroup: StepCgroup,
        interval_s: float = 0.05,
        count_tmpfs: bool = False,
    ) -> None:
        super().__init__(daemon=True)
        self.pgid = pgid
        self.mem_mb = mem_mb
        self.cgroup = cgroup
        self.interval_s = interval_s
        self.count_tmpfs = count_tmpfs
        self.peak_mb = 0.0
        self.reason: str | None = None
        self._stop_event = threading.Event()

    def _pids(self) -> list[int]:
        return self.cgroup.pids() if self.cgroup.pids_ok else group_pids(self.pgid)

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            if self.cgroup.hit_pids_limit():
                self._kill("processes")
                return
            if self.cgroup.memory_ok:
                self.peak_mb = max(self.peak_mb, self.cgroup.memory_mb())
                if self.cgroup.oom_kills():
                    self._kill("memory")  # v1 kills one process; the step ends whole
                    return
                continue
            pids = self._pids()
            used = rss_mb(pids) + (tmpfs_mb(pids) if self.count_tmpfs else 0.0)
            self.peak_mb = max(self.peak_mb, used)
            if used > self.mem_mb:
                self._kill("memory")
                return

    def finish(self) -> tuple[float, str | None]:
        """Stop watching; the step's peak and the reason it was killed, the kernel's included."""
        self.stop()
        if self.cgroup.memory_ok:
            self.peak_mb = max(self.peak_mb, self.cgroup.peak_mb())
            if self.reason is None and self.cgroup.oom_kills():
                self.reason = "memory"  # killed just before the command ended
        return self.peak_mb, self.reason

    def kill_for(self, reason: str) -> Callable[[], None]:
        """A kill that another watcher (the disk) can trigger, naming its own reason."""
        return lambda: self._kill(reason)

    def _kill(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        kill_group(self.pgid, signal.SIGKILL)
        self.cgroup.kill_all()

    def stop(self) -> None:
        self._stop_event.set()


def kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
