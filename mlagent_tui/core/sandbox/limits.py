"""Process containment that needs no container: rlimits, a pids cgroup, a resource monitor."""

from __future__ import annotations

import os
import resource
import signal
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 1024 / 1024


def run_limits(mem_mb: int, timeout_s: float, fsize_mb: int, nproc: int) -> dict[int, int]:
    """The rlimits of one run (applied to the waiting child with prlimit)."""
    # Address space is a backstop well above the RSS limit the monitor enforces, because
    # numpy/BLAS reserve far more virtual memory than they use.
    cpu_s = int(timeout_s * max(os.cpu_count() or 1, 1)) + 5
    return {
        resource.RLIMIT_AS: (mem_mb * 2 + 2048) << 20,
        resource.RLIMIT_CPU: cpu_s,
        resource.RLIMIT_FSIZE: fsize_mb << 20,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_NPROC: nproc,
    }


class PidsCgroup:
    """A pids cgroup (v1 or v2) capping how many processes a run may have; root only.

    Where it cannot be made (not root, no pids controller) `available` is False and
    RLIMIT_NPROC, which binds non-root users, does the job instead.
    """

    ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))

    def __init__(self, max_pids: int) -> None:
        self.path: Path | None = None
        for root in self.ROOTS:
            if not (root / "cgroup.procs").exists() or not os.access(root, os.W_OK):
                continue
            if root == Path("/sys/fs/cgroup") and "pids" not in _read(root / "cgroup.controllers"):
                continue
            path = root / f"mlagent-{uuid.uuid4().hex[:12]}"
            try:
                path.mkdir()
                (path / "pids.max").write_text(str(max_pids))
            except OSError:
                _rmdir(path)
                continue
            self.path = path
            break

    @property
    def available(self) -> bool:
        return self.path is not None

    @property
    def procs_file(self) -> Path | None:
        return self.path / "cgroup.procs" if self.path else None

    def pids(self) -> list[int]:
        if not self.path:
            return []
        return [int(p) for p in _read(self.path / "cgroup.procs").split()]

    def hit_limit(self) -> bool:
        """True when a fork was refused because of pids.max."""
        if not self.path:
            return False
        events = _read(self.path / "pids.events")
        return any(
            line.startswith("max ") and line.split()[1] != "0" for line in events.splitlines()
        )

    def kill_all(self) -> None:
        """SIGKILL every member until the cgroup is empty (exiting ones linger a moment)."""
        delay = 0.0005
        for _ in range(40):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def remove(self) -> None:
        if self.path:
            self.kill_all()
            _rmdir(self.path)
            self.path = None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _rmdir(path: Path) -> None:
    delay = 0.0005
    for _ in range(30):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(delay)
            delay = min(delay * 2, 0.02)


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
    """What the sandbox's own /tmp (a tmpfs in its mount namespace) holds, in MB.

    Seen from the host through /proc/PID/root of a process inside; a process not (yet) inside
    sees the host's /tmp, which is not counted.
    """
    try:
        host_dev = os.stat("/tmp").st_dev
    except OSError:
        return 0.0
    for pid in reversed(pids):
        tmp = f"/proc/{pid}/root/tmp"
        try:
            if os.stat(tmp).st_dev == host_dev:
                continue
            st = os.statvfs(tmp)
        except OSError:
            continue
        return (st.f_blocks - st.f_bfree) * st.f_frsize / 1024 / 1024
    return 0.0


class ResourceMonitor(threading.Thread):
    """Samples the run's total RSS (plus its /tmp tmpfs); kills the group past the limit."""

    def __init__(
        self,
        pgid: int,
        mem_mb: int,
        cgroup: PidsCgroup,
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
        return self.cgroup.pids() if self.cgroup.available else group_pids(self.pgid)

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            if self.cgroup.hit_limit():
                self._kill("processes")
                return
            pids = self._pids()
            used = rss_mb(pids) + (tmpfs_mb(pids) if self.count_tmpfs else 0.0)
            self.peak_mb = max(self.peak_mb, used)
            if used > self.mem_mb:
                self._kill("memory")
                return

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


def tree_mb(root: Path) -> float:
    """Disk space used under `root` (allocated blocks, links not followed), in MB."""
    total = 0
    stack = [str(root)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += st.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return total / 1024 / 1024


class DiskWatch(threading.Thread):
    """Polls a workspace's size while a command runs; past `limit_mb` it calls `kill` once.

    The limit counts what the workspace holds, starting files included, so a task's data
    must fit well under it.
    """

    def __init__(
        self, root: Path, limit_mb: int, kill: Callable[[], None], interval_s: float = 0.05
    ) -> None:
        super().__init__(daemon=True)
        self.root = Path(root)
        self.limit_mb = limit_mb
        self.kill = kill
        self.interval_s = interval_s
        self.exceeded = False
        self.peak_mb = 0.0
        self._stop_event = threading.Event()

    def run(self) -> None:
        wait = self.interval_s
        while not self._stop_event.wait(wait):
            start = time.perf_counter()
            if self.check():
                return
            # a workspace of many files costs a walk each time: never spend over ~10% of a core
            wait = max(self.interval_s, 10 * (time.perf_counter() - start))

    def check(self) -> bool:
        """Measure once; True (and the command killed) when over the limit."""
        used = tree_mb(self.root)
        self.peak_mb = max(self.peak_mb, used)
        if used > self.limit_mb and not self.exceeded:
            self.exceeded = True
            self.kill()
        return self.exceeded

    def stop(self) -> bool:
        """Stop polling; measure one last time (a burst between polls still counts)."""
        self._stop_event.set()
        return self.check()
