"""The unprivileged host uid a sandbox runs as when mlagent is root, and what that takes.

Run by root, bubblewrap maps the sandbox's uid to host uid 0: whatever root owns and the
sandbox can reach (global sysctls in /proc/sys, /proc/sysrq-trigger) is then writable from
inside. So a root mlagent drops to a dedicated uid and gid first, as rootless container
runtimes do: one no /etc/passwd user and no /etc/subuid range holds, fixed so that files the
sandbox made in one step stay its own in the next. A mlagent that is not root keeps running
sandboxes as its own (unprivileged) uid.

That uid cannot walk into root's folders (its home, pytest's 0700 temporary folders), so root
prepares what bwrap must reach before dropping: in a private mount namespace, a small tmpfs
holds bind mounts of the Python runtime (made while the stub waits, off the critical path)
and, per step, the workspace or its overlay (mounted by root there, so no user-namespace
overlay support is needed). The workspace is handed over to the uid before each step.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

DEFAULT_HOST_UID = 2_000_000_000  # in the range systemd leaves unused (below 2^31)
UID_ENV = "MLAGENT_SANDBOX_UID"
_STAGING_OK: dict[str, bool] = {}


class HostUidError(RuntimeError):
    """The configured sandbox uid is unusable (root, or another user's)."""


def sandbox_host_uid() -> int | None:
    """The host uid (also the gid) sandboxes run as; None when mlagent is not root."""
    if os.geteuid() != 0:
        return None
    raw = os.environ.get(UID_ENV, "").strip()
    if not raw:
        uid = DEFAULT_HOST_UID
        owner = _taken(uid)
        if owner:
            raise HostUidError(f"sandbox uid {uid} is already {owner}: set {UID_ENV} to a free uid")
        return uid
    try:
        uid = int(raw)
    except ValueError:
        raise HostUidError(f"{UID_ENV}={raw!r} is not a number") from None
    if not 0 < uid < 2**31 - 1:
        raise HostUidError(f"{UID_ENV}={uid} must be an unprivileged uid (1 .. 2^31-2)")
    return uid


def _taken(uid: int) -> str:
    """Who already holds `uid` as a uid or gid ("" when nobody does)."""
    for path, what in (("/etc/passwd", "user"), ("/etc/group", "group")):
        for line in _lines(path):
            fields = line.split(":")
            if len(fields) > 2 and fields[2] == str(uid):
                return f"{what} {fields[0]} in {path}"
    for path in ("/etc/subuid", "/etc/subgid"):
        for line in _lines(path):
            fields = line.split(":")
            try:
                start, count = int(fields[1]), int(fields[2])
            except (IndexError, ValueError):
                continue
            if start <= uid < start + count:
                return f"in {fields[0]}'s range in {path}"
    return ""


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def hand_over(root: Path, uid: int) -> None:
    """Make `root` and everything under it owned by `uid`:`uid`, never following a link.

    Folders are opened with O_NOFOLLOW relative to their parent and links are chowned
    themselves, so a link the sandbox left can never hand a host file over; a file the host
    hard-linked in keeps its owner (its other names are not the sandbox's). Entries already
    owned are left alone (no ctime churn, and one stat each on later steps).
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    top = os.open(root, flags)
    try:
        st = os.fstat(top)
        if (st.st_uid, st.st_gid) != (uid, uid):
            os.fchown(top, uid, uid)
    except OSError as exc:
        os.close(top)
        msg = f"cannot hand the workspace to sandbox uid {uid}: {exc.strerror}"
        raise HostUidError(msg) from None
    # one open folder per level of the current path, never one per folder seen
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
            st = entry.stat(follow_symlinks=False)
            shared = stat.S_ISREG(st.st_mode) and st.st_nlink > 1 and st.st_uid != uid
            if (st.st_uid, st.st_gid) != (uid, uid) and not shared:
                os.chown(entry.name, uid, uid, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                child = os.open(entry.name, flags, dir_fd=fd)
                try:
                    stack.append((child, os.scandir(child)))
                except OSError:
                    os.close(child)
                    raise
        except OSError:
            continue  # gone meanwhile, replaced by a link (O_NOFOLLOW), or past the fd limit


class Staging:
    """Where bwrap finds the workspace: a mount point of its own that names no session.

    bwrap's memory is readable inside (/proc/1/mem of its init, same uid), and it holds every
    bind source: so the workspace's overlay is mounted at this neutral folder rather than
    beside the workspace. With `uid` (mlagent is root) it is a tmpfs in root's private mount
    namespace: `wrap` and `setup` start the stub there and bind the runtime while it waits,
    `script` mounts the step's workspace, and `drop` execs bwrap as the sandbox uid. Without
    (not root) the overlay is mounted from a user namespace of the step's own, as before.
    """

    def __init__(self, uid: int | None, runtime: Sequence[Path]) -> None:
        self.uid = uid
        self.runtime = list(runtime)
        # empty on the host: each step mounts over it in a namespace of its own
        self.dir = Path(tempfile.mkdtemp(prefix="mlagent-stage-", dir="/tmp"))
        self.ws = f"{self.dir}/ws" if uid is not None else str(self.dir)
        self.tools = {name: shutil.which(name) or name for name in ("unshare", "mount", "mkdir")}
        self.setpriv = shutil.which("setpriv")

    def source(self, workspace: Path, overlay: bool) -> Path:
        """What bwrap binds as /workspace (a plain bind of a user's workspace shows its path)."""
        return Path(self.ws) if overlay or self.uid is not None else workspace

    @property
    def runtime_binds(self) -> list[tuple[str, str]]:
        """(source bwrap reads, where it shows it) per runtime folder."""
        if self.uid is None:
            return [(str(path), str(path)) for path in self.runtime]
        return [(f"{self.dir}/r{i}", str(path)) for i, path in enumerate(self.runtime)]

    def wrap(self) -> list[str]:
        if self.uid is None:
            return []
        return [self.tools["unshare"], "--mount", "--propagation", "private"]

    def setup(self) -> str:
        """Shell lines run by the stub (as root, in its namespace) before it waits."""
        if self.uid is None:
            return ""
        mount, q = self.tools["mount"], shlex.quote
        dirs = [self.ws] + [src for src, _ in self.runtime_binds]
        lines = [
            f"{mount} -t tmpfs -o mode=0755,size=1m,nosuid,nodev mlagent-stage {q(str(self.dir))}",
            f"{self.tools['mkdir']} {' '.join(q(d) for d in dirs)}",
        ]
        lines += [f"{mount} --bind {q(dest)} {q(src)}" for src, dest in self.runtime_binds]
        return " && ".join(lines) + " || exit 125\n"

    def script(self, workspace: Path, overlay_mount: str | None, run: str) -> str:
        """The step's shell lines: the workspace onto `ws`, then `run` (which execs bwrap)."""
        q = shlex.quote
        if overlay_mount is not None:
            failed = "{ echo 'sandbox: overlay mount failed' >&2; exit 126; }"
            lines = f"cd {q(str(workspace))} || exit 126\n{overlay_mount} || {failed}\n{run}\n"
        elif self.uid is not None:
            failed = "{ echo 'sandbox: bind failed' >&2; exit 126; }"
            bind = f"{self.tools['mount']} --bind {q(str(workspace))} {q(self.ws)}"
            lines = f"{bind} || {failed}\n{run}\n"
        else:
            return run + "\n"
        if self.uid is None:
            user = f"exec {self.tools['unshare']} --user --map-root-user --mount /bin/sh -c "
            return user + q(lines) + "\n"
        return lines

    def drop(self) -> list[str]:
        """setpriv's command line: the sandbox uid and gid, no groups, no capability left."""
        if self.uid is None:
            return []
        uid = str(self.uid)
        return [
            self.setpriv or "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]

    def supported(self) -> bool:
        """Whether root may make a private mount namespace here (probed once per process)."""
        if self.uid is None:
            return True
        key = "ok"
        if key not in _STAGING_OK:
            _STAGING_OK[key] = self._probe()
        return _STAGING_OK[key]

    def _probe(self) -> bool:
        if not (self.setpriv and shutil.which("unshare") and shutil.which("mount")):
            return False
        script = self.setup() + f"exec {shlex.join(self.drop())} /bin/true\n"
        try:
            proc = subprocess.run(
                [*self.wrap(), "/bin/sh", "-c", script], capture_output=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError):
            return False
        return proc.returncode == 0

    def remove(self) -> None:
        try:
            self.dir.rmdir()
        except OSError:
            pass
