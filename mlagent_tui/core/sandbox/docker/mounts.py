"""Hiding the workspace's host path from the docker sandbox: a fresh overlay per step (root).

A bind mount shows its source's path in the container's /proc/self/mountinfo, and with it
the home and the session id. Instead the container binds a directory of a small shared
tmpfs (seen inside as "/ws"), and for each step the host mounts an overlay whose upper layer
is the workspace itself, named as /proc/self/fd/N so that no path shows in its options,
binds the read-only files read-only inside it, and moves the whole tree onto that directory:
mount propagation carries it into the container. It is unmounted as soon as the step ends,
so the host never changes the workspace under a mounted overlay (overlayfs leaves that
undefined).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from pathlib import Path

from .host import run_dir

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_MOVE = 8192
MS_PRIVATE = 1 << 18
MS_SHARED = 1 << 20
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)


def _mount(
    source: str | None, target: Path, fstype: str | None, flags: int, data: str = ""
) -> None:
    def enc(s: str | None) -> bytes | None:
        return s.encode() if s is not None else None

    if _libc.mount(enc(source), bytes(target), enc(fstype), ctypes.c_ulong(flags), enc(data)):
        err = ctypes.get_errno()
        raise OSError(err, f"mount {fstype or source} on {target}: {os.strerror(err)}")


def _umount(target: Path, flags: int = 0) -> bool:
    return _libc.umount2(bytes(target), flags) == 0


def pinned_dirs(read_only: Iterable[str]) -> list[str]:
    """The folders above nested read-only files, outermost first: each is bound onto itself
    so that it cannot be renamed away (and a writable file put in its place)."""
    dirs = {"/".join(rel.split("/")[:i]) for rel in read_only for i in range(1, rel.count("/") + 1)}
    return sorted(dirs, key=lambda d: (d.count("/"), d))


class WorkspaceMounts:
    """The host side of one workspace's per-step overlay (needs root)."""

    def __init__(self, workspace: Path, key: str) -> None:
        self.workspace = workspace
        self.root = run_dir() / key[:16]
        self.share = self.root / "share"  # shared tmpfs: what the container binds
        self.target = self.share / "ws"
        self.stage = self.root / "stage"  # the tree is built here, on a private parent
        self.lower = self.root / "lower"  # the overlay's empty lower layer
        # overlayfs wants its work dir beside the upper one, on the same file system
        self.work = workspace.parent / f".mlagent-overlay-{key[:16]}"
        self._binds: list[Path] = []
        self.mounted = False
        # no index (it would tie the workspace to this lower layer), no uuid xattr written
        # into the workspace
        self.extra = ",index=off,uuid=off"

    @property
    def bind_source(self) -> Path:
        return self.target

    def setup(self) -> None:
        """Mount the two tmpfs and try one overlay; OSError where that cannot be done."""
        self.close()  # whatever a crashed session left
        self.root.mkdir(mode=0o700, exist_ok=True)
        try:
            _mount("tmpfs", self.root, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=700")
            _mount(None, self.root, None, MS_PRIVATE)
            for d in (self.share, self.stage, self.lower):
                d.mkdir(mode=0o755)
            _mount("tmpfs", self.share, "tmpfs", MS_NOSUID | MS_NODEV, "size=16k,mode=755")
            _mount(None, self.share, None, MS_PRIVATE)
            _mount(None, self.share, None, MS_SHARED)
            self.target.mkdir(mode=0o755)
            self.work.mkdir(mode=0o700, exist_ok=True)
            self.mount_step(())
            self.unmount_step()
        except OSError:
            self.close()
            raise

    def mount_step(self, read_only: Iterable[str]) -> None:
        """Mount a fresh overlay of the workspace with `read_only` bound read-only inside."""
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        fds = [os.open(p, flags) for p in (self.lower, self.workspace, self.work)]
        try:
            layers = "lowerdir=/proc/self/fd/{},upperdir=/proc/self/fd/{},workdir=/proc/self/fd/{}"
            layers = layers.format(*fds)
            try:
                _mount("overlay", self.stage, "overlay", MS_NOSUID | MS_NODEV, layers + self.extra)
            except OSError:
                if not self.extra:
                    raise
                # an older kernel without these options: the defaults do
                _mount("overlay", self.stage, "overlay", MS_NOSUID | MS_NODEV, layers)
                self.extra = ""
        finally:
            for fd in fds:
                os.close(fd)
        made: list[str] = []
        try:
            dirs, files = pinned_dirs(read_only), sorted(read_only)
            for rel in dirs + files:
                # the caller checked every component with lstat and no step process runs
                path = self.stage / rel
                _mount(str(path), path, None, MS_BIND)
                made.append(rel)
                if rel in files:
                    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
                    _mount(None, path, None, flags)
            _mount(str(self.stage), self.target, None, MS_MOVE)
        except OSError:
            for rel in reversed(made):
                _umount(self.stage / rel, MNT_DETACH)
            _umount(self.stage, MNT_DETACH)
            raise
        self._binds = [self.target / rel for rel in reversed(made)]
        self.mounted = True

    def unmount_step(self) -> None:
        """Unmount the step's tree (its processes are gone, so nothing holds it)."""
        if not self.mounted:
            return
        for path in [*self._binds, self.target]:
            if not _umount(path):
                _umount(path, MNT_DETACH)
        self._binds = []
        self.mounted = False

    def visible_in(self, pid: int, where: str) -> bool:
        """True when process `pid` (the container's init) sees the overlay at `where`."""
        try:
            text = Path(f"/proc/{pid}/mountinfo").read_text()
        except OSError:
            return False
        for line in text.splitlines():
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) > 4 and fields[4] == where and right.startswith("overlay "):
                return True
        return False

    def close(self) -> None:
        """Unmount everything and remove the (empty) directories; never deletes a file."""
        self.unmount_step()
        if self.root.is_dir():
            _umount(self.root, MNT_DETACH)
        for d in (self.work / "work", self.work, self.root):
            try:
                d.rmdir()
            except OSError:
                pass
