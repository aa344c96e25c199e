"""One cgroup per step: pids.max and memory.max (swap 0), counted by the kernel.

The kernel charges a cgroup for everything its processes make resident: heap, page tables,
tmpfs files (/tmp, /dev/shm) and memfd buffers, mapped or not, which no sampler of RSS sees.
Step cgroups are made beside the cgroup mlagent runs in (cgroup v2, or the v1 `pids` and
`memory` hierarchies), where this process may write: as root, or in a subtree delegated to
it. The host side joins a waiting child by writing its pid into cgroup.procs, so the child
itself needs no right on the cgroup (it may run as another uid).
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import time
import uuid
from pathlib import Path

from pydantic import BaseModel

PREFIX = "mlagent-"
CONTROLLERS = ("pids", "memory")


class Layout(BaseModel):
    """Where step cgroups go: a parent folder per controller, and whether it is cgroup v2."""

    parents: dict[str, Path] = {}
    v2: dict[str, bool] = {}


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _mounts() -> tuple[dict[str, tuple[Path, str]], tuple[Path, str] | None]:
    """v1 mounts by controller, and the v2 mount: (mount point, root inside the hierarchy)."""
    v1: dict[str, tuple[Path, str]] = {}
    v2: tuple[Path, str] | None = None
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, point = fields[3], Path(fields[4].replace("\\040", " "))
        if tail[0] == "cgroup2" and v2 is None:
            v2 = (point, root)
        elif tail[0] == "cgroup":
            for opt in tail[2].split(","):
                if opt in CONTROLLERS and opt not in v1:
                    v1[opt] = (point, root)
    return v1, v2


def _own_paths() -> dict[str, str]:
    """This process's cgroup per controller ("" for v2), from /proc/self/cgroup."""
    own: dict[str, str] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                own[name] = parts[2]
    return own


def _inside(point: Path, root: str, path: str) -> Path:
    """The folder of cgroup `path` under a mount of the hierarchy's `root`; past our own ones."""
    if root != "/" and path.startswith(root):
        path = path[len(root) :]
    folder = point / path.lstrip("/")
    while folder.name.startswith(PREFIX) and folder != point:
        folder = folder.parent  # a grader in its own cgroup makes its steps beside it
    return folder


def _v2_parent(point: Path, folder: Path, wanted: list[str]) -> Path | None:
    """`folder` with `wanted` enabled for its children; None where that is not allowed.

    A non-root v2 cgroup that holds processes cannot give controllers to children, so where
    the kernel says EBUSY this process moves into a leaf of its own first (delegated subtree).
    """
    if not os.access(folder, os.W_OK):
        return None
    if not set(wanted) <= set(_read(folder / "cgroup.controllers").split()):
        return None
    enabled = set(_read(folder / "cgroup.subtree_control").split())
    missing = [c for c in wanted if c not in enabled]
    if not missing:
        return folder
    control = folder / "cgroup.subtree_control"
    try:
        control.write_text(" ".join(f"+{c}" for c in missing))
        return folder
    except OSError as exc:
        if exc.errno != errno.EBUSY or folder == point:
            return None
    leaf = folder / f"{PREFIX}host"
    try:
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(os.getpid()))
        control.write_text(" ".join(f"+{c}" for c in missing))
        return folder
    except OSError:
        return None


@functools.cache
def layout() -> Layout:
    """Found once per process: which controllers this host lets mlagent use, and where."""
    v1, v2 = _mounts()
    own = _own_paths()
    found = Layout()
    for name in CONTROLLERS:
        if name not in v1:
            continue
        point, root = v1[name]
        for folder in (_inside(point, root, own.get(name, "/")), point):
            if (folder / "cgroup.procs").exists() and os.access(folder, os.W_OK):
                found.parents[name], found.v2[name] = folder, False
                break
    rest = [c for c in CONTROLLERS if c not in found.parents]
    if rest and v2 is not None and "" in own:
        point, root = v2
        folder = _inside(point, root, own[""])
        usable = [c for c in rest if c in _read(folder / "cgroup.controllers").split()]
        parent = _v2_parent(point, folder, usable) if usable else None
        for name in usable if parent else []:
            found.parents[name], found.v2[name] = parent, True
    for parent in set(found.parents.values()):
        sweep(parent)
    return found


def sweep(parent: Path, min_age_s: float = 60.0) -> None:
    """Remove step cgroups an earlier mlagent left empty (killed before it could rmdir them).

    A live step's cgroup is empty only for the milliseconds between mkdir and join or after
    its end, so an empty one born more than `min_age_s` ago (its name says when: the
    kernel bumps a memory cgroup's ctime as it runs) belongs to nobody.
    """
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        born, _, rest = entry.name.removeprefix(PREFIX).partition("-")
        try:
            if not entry.name.startswith(PREFIX) or not rest or now - int(born, 16) < min_age_s:
                continue
        except ValueError:
            continue
        if not _read(Path(entry.path) / "cgroup.procs").split():
            try:
                os.rmdir(entry.path)
            except OSError:
                pass  # a child cgroup or a process arrived: not ours to take


class StepCgroup:
    """The cgroup(s) of one step: pids.max always, memory.max where the host allows it.

    `pids_ok` / `memory_ok` say what the kernel enforces; where a controller is missing (not
    root, nothing delegated) RLIMIT_NPROC and the RSS sampler stand in for it.
    """

    def __init__(self, max_pids: int, *, memory: bool = True) -> None:
        self.dirs: dict[str, Path] = {}
        self._dropped: list[Path] = []
        self.v2 = False
        found = layout()
        # the name carries its birth time: a sweep can tell a leftover from a fresh one
        token = f"{PREFIX}{int(time.time()):x}-{uuid.uuid4().hex[:8]}"
        for name in CONTROLLERS:
            if name not in found.parents or (name == "memory" and not memory):
                continue
            folder = found.parents[name] / token
            try:
                folder.mkdir(exist_ok=True)
                if name == "pids":
                    (folder / "pids.max").write_text(str(max_pids))
                elif found.v2[name]:
                    _write_optional(folder / "memory.swap.max", "0")  # absent: no swap here
                    _write_optional(folder / "memory.oom.group", "1")  # one OOM kills all
            except OSError:
                if not any(d == folder for d in self.dirs.values()):
                    _rmdir(folder)
                continue
            self.dirs[name] = folder
            self.v2 = self.v2 or found.v2[name]

    @property
    def pids_ok(self) -> bool:
        return "pids" in self.dirs

    @property
    def memory_ok(self) -> bool:
        return "memory" in self.dirs

    @property
    def available(self) -> bool:
        return bool(self.dirs)

    def join(self, pid: int) -> bool:
        """Move `pid` in (from the host side); a controller that refuses is dropped."""
        done: set[Path] = set()
        for name, folder in list(self.dirs.items()):
            if folder in done:
                continue
            try:
                (folder / "cgroup.procs").write_text(str(pid))
                done.add(folder)
            except OSError:
                self._drop(name)
        return self.available

    def set_memory(self, mem_mb: int) -> bool:
        """memory.max (v1: limit and memory+swap) = `mem_mb`; False (and dropped) if refused."""
        folder = self.dirs.get("memory")
        if folder is None:
            return False
        limit = str(mem_mb << 20)
        files = ("memory.max",) if self.v2 else ("memory.limit_in_bytes",)
        if not self.v2 and (folder / "memory.memsw.limit_in_bytes").exists():
            files += ("memory.memsw.limit_in_bytes",)  # after the limit: memsw >= limit
        try:
            for name in files:
                (folder / name).write_text(limit)
        except OSError:
            self._drop("memory")
            return False
        return True

    def _drop(self, name: str) -> None:
        """Stop using a controller that refused; its folder goes when the step ends."""
        folder = self.dirs.pop(name)
        if folder not in self.dirs.values():
            self._dropped.append(folder)

    def pids(self) -> list[int]:
        seen: list[int] = []
        for folder in set(self.dirs.values()):
            seen += [int(p) for p in _read(folder / "cgroup.procs").split()]
        return sorted(set(seen))

    def hit_pids_limit(self) -> bool:
        """True when a fork was refused because of pids.max."""
        folder = self.dirs.get("pids")
        events = _read(folder / "pids.events") if folder else ""
        return any(ln.startswith("max ") and ln.split()[1] != "0" for ln in events.splitlines())

    def oom_kills(self) -> int:
        """How many processes the kernel killed for this step's memory limit."""
        folder = self.dirs.get("memory")
        if folder is None:
            return 0
        name = "memory.events" if self.v2 else "memory.oom_control"
        for line in _read(folder / name).splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def memory_mb(self) -> float:
        """What the step holds now (anon, tmpfs, memfd, page cache), in MB."""
        folder = self.dirs.get("memory")
        name = "memory.current" if self.v2 else "memory.usage_in_bytes"
        text = _read(folder / name).strip() if folder else ""
        return int(text) / 2**20 if text.isdigit() else 0.0

    def peak_mb(self) -> float:
        """The kernel's high-water mark of the step (0 where the kernel keeps none)."""
        folder = self.dirs.get("memory")
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        text = _read(folder / name).strip() if folder else ""
        return int(text) / 2**20 if text.isdigit() else 0.0

    def kill_all(self) -> None:
        for folder in set(self.dirs.values()):
            self._kill_in(folder)

    @staticmethod
    def _kill_in(folder: Path) -> None:
        """SIGKILL every member until the cgroup is empty (exiting ones linger a moment)."""
        delay = 0.0005
        for _ in range(40):
            pids = [int(p) for p in _read(folder / "cgroup.procs").split()]
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
        for folder in {*self.dirs.values(), *self._dropped}:
            self._kill_in(folder)
            _rmdir(folder)
        self.dirs, self._dropped = {}, []


def _write_optional(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError:
        pass


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
