"""What the docker backend does on the host: read-only binds, ownership, a container's cgroup.

Everything here treats the workspace as written by an adversary: no link in it is ever
followed, and a bind source is checked component by component before docker sees it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

LABEL = "mlagent.workspace"  # the docker label naming a container's workspace


class ReadOnlyRefused(ValueError):
    """A read-only entry that cannot be bound safely (a link, not a regular file, outside)."""


class SandboxBusy(RuntimeError):
    """The workspace already has a live docker sandbox (two sessions on one workspace)."""


def run_dir() -> Path:
    """The host-only folder of the backend's locks and mount points (not in any workspace)."""
    if os.getuid() == 0 and os.access("/run", os.W_OK):
        path = Path("/run/mlagent-sandbox")
    else:
        path = Path(tempfile.gettempdir()) / f"mlagent-sandbox-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise SandboxBusy(f"{path} is not a folder of this user's")
    return path


class WorkspaceLock:
    """One live docker sandbox per workspace: an flock that the kernel drops when its process
    dies, so whatever a kill -9'd session left is known to be stale once it is taken."""

    def __init__(self, key: str) -> None:
        self.path = run_dir() / f"{key[:16]}.lock"
        self.fd: int | None = None

    def acquire(self) -> bool:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a file its last holder unlinked meanwhile
                self.fd = fd
                return True
            os.close(fd)

    def release(self) -> None:
        if self.fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self.fd)
            self.fd = None


def workspace_label(workspace: Path) -> str:
    """The container label of a workspace: its resolved path, hashed (no path leaks out)."""
    return hashlib.sha256(str(Path(workspace).resolve()).encode()).hexdigest()


def remove_workspace_containers(client: Any, value: str, key: str) -> None:
    """Force-remove every container labelled `key=value`, running or not."""
    for container in client.containers.list(all=True, filters={"label": f"{key}={value}"}):
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001 - removed meanwhile is fine
            pass


def read_only_binds(workspace: Path, entries: Sequence[str]) -> dict[str, tuple[int, int]]:
    """The read-only entries to bind: relative path -> (device, inode) of the regular file.

    Every component is checked with lstat: a link anywhere, a non-directory on the way or
    a final entry that is not a regular file is refused, so a bind can never expose what a
    link the agent made points to. A missing entry has nothing to protect and is skipped.
    """
    binds: dict[str, tuple[int, int]] = {}
    for entry in entries:
        rel = PurePosixPath(entry)
        parts = [p for p in rel.parts if p != "."]
        if rel.is_absolute() or not parts or ".." in parts or "\0" in entry:
            raise ReadOnlyRefused(f"read-only entry {entry!r} is not a path inside the workspace")
        path, st = workspace, None
        for i, part in enumerate(parts):
            path = path / part
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                st = None
                break
            if stat.S_ISLNK(st.st_mode):
                raise ReadOnlyRefused(f"read-only entry {entry!r}: {part!r} is a symbolic link")
            if i < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
                raise ReadOnlyRefused(f"read-only entry {entry!r}: {part!r} is not a directory")
        if st is None:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise ReadOnlyRefused(f"read-only entry {entry!r} is not a regular file")
        if st.st_nlink > 1:
            raise ReadOnlyRefused(f"read-only entry {entry!r} has another hard link (writable)")
        binds["/".join(parts)] = (st.st_dev, st.st_ino)
    return dict(sorted(binds.items()))


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Chown `root` and everything under it through directory fds opened with O_NOFOLLOW.

    A link is chowned itself, never what it points to, so a link the agent left can never
    hand a host file over; the kernel drops setuid/setgid bits on every chown.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    top = os.open(root, flags)
    os.fchown(top, uid, gid)
    stack = [(top, os.scandir(top))]
    while stack:
        fd, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            entries.close()
            os.close(fd)
            stack.pop()
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                child = os.open(entry.name, flags, dir_fd=fd)
                try:
                    os.fchown(child, uid, gid)
                    stack.append((child, os.scandir(child)))
                except OSError:
                    os.close(child)
                    raise
            else:
                os.chown(entry.name, uid, gid, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue  # gone meanwhile, or too deep for the fd limit


def empty_folders(fds: Sequence[int]) -> bool:
    """Empty each folder (an open fd) without following a link; False where something stays."""
    try:
        for fd in fds:
            with os.scandir(fd) as entries:
                names = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
            for name, is_dir in names:
                if is_dir:
                    shutil.rmtree(name, dir_fd=fd)
                else:
                    os.unlink(name, dir_fd=fd)
    except Exception:  # noqa: BLE001 - too deep to walk, vanished, ...: the caller starts afresh
        return False
    return True


def _cgroup_mounts() -> dict[str, tuple[str, str]]:
    """Controller (or "" for cgroup2) -> (mount point, mount root) of the host's cgroup mounts."""
    mounts: dict[str, tuple[str, str]] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, kinds = left.split(), right.split()
        if len(fields) < 5 or len(kinds) < 3:
            continue
        if kinds[0] == "cgroup2":
            mounts.setdefault("", (fields[4], fields[3]))
        elif kinds[0] == "cgroup":
            for option in kinds[2].split(","):
                mounts.setdefault(option, (fields[4], fields[3]))
    return mounts


def _read(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return path.read_text()
    except OSError:
        return ""


class ContainerCgroup:
    """A running container seen from the host: its processes, OOM kills, memory peak.

    The container's init and its `sleep infinity` (there when it starts) are its base;
    everything else in its cgroup belongs to a step.
    """

    def __init__(self, init_pid: int, container_id: str, top: Callable[[], list[int]]) -> None:
        mounts = _cgroup_mounts()
        dirs: dict[str, Path] = {}
        for line in _read(Path(f"/proc/{init_pid}/cgroup")).splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                if name in mounts:
                    point, root = mounts[name]
                    inner = path[len(root) :] if root != "/" and path.startswith(root) else path
                    dirs[name] = Path(point + inner)
        if not any(container_id in str(d) for d in dirs.values()):
            raise RuntimeError(f"process {init_pid} is not in container {container_id[:12]}")
        self.procs: Path | None = None
        for name in ("pids", "", "name=systemd", *dirs):
            candidate = dirs[name] / "cgroup.procs" if name in dirs else None
            if candidate and str(init_pid) in _read(candidate).split():
                self.procs = candidate
                break
        self.memory = dirs.get("memory") or dirs.get("")
        self._top = top
        self.base: set[int] = {init_pid}
        deadline = time.monotonic() + 5
        while len(self.base) < 2 and time.monotonic() < deadline:
            self.base |= set(self.pids())
            time.sleep(0.005)

    def pids(self) -> list[int]:
        if self.procs is None:
            return self._top()
        return [int(p) for p in _read(self.procs).split()]

    def step_pids(self) -> list[int]:
        return [p for p in self.pids() if p not in self.base]

    def kill_step(self) -> bool:
        """SIGKILL every process but the base until none is left.

        False when some would not go (the caller then removes the whole container).
        """
        delay = 0.0005
        for _ in range(60):
            pids = self.step_pids()
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                except PermissionError:
                    return False
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        return False

    def heads(self) -> list[int]:
        """Step processes whose parent is outside the container: the exec's own process.

        Orphans go to the container's init, so once no head is left the step has ended
        whatever daemons it left behind.
        """
        pids = set(self.pids())
        heads = []
        for pid in pids - self.base:
            stat_line = _read(Path(f"/proc/{pid}/stat")).rsplit(")", 1)[-1].split()
            if len(stat_line) > 1 and int(stat_line[1]) not in pids:
                heads.append(pid)
        return heads

    def oom_kills(self) -> int | None:
        """How many processes the kernel killed for memory in this container so far."""
        for name in ("memory.oom_control", "memory.events"):
            text = _read(self.memory / name if self.memory else None)
            for line in text.splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
        return None

    def peak_mb(self) -> float:
        """The container's memory high-water mark, where the host exposes it."""
        for name in ("memory.max_usage_in_bytes", "memory.peak"):
            text = _read(self.memory / name if self.memory else None).strip()
            if text.isdigit():
                return round(int(text) / 1024 / 1024, 1)
        return 0.0
