"""Host access to a workspace that never follows a link the agent could have made.

The agent's programs share the workspace with the host and may swap any file or folder for a
symbolic link at any moment, so checking a path and then using it is not safe. Every call
here walks the path one component at a time from an fd of the workspace root with
O_NOFOLLOW, and writes a temporary file (O_EXCL|O_NOFOLLOW) that it renames over the
target: a rename replaces a link itself, never what the link points at.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

NAME_MAX = 255
PATH_MAX = 4096
MAX_DEPTH = 64
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TEMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_PREFIX = ".mlagent-write-"


class WorkspaceError(Exception):
    """A path outside the workspace, a link, a read-only file, or nothing to undo."""


class MissingError(WorkspaceError):
    """The path (or a folder on the way to it) does not exist."""


@dataclass(frozen=True)
class Entry:
    """One thing that is not a folder, found by `walk` (links are entries, never followed)."""

    rel: str
    st: os.stat_result

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.st.st_mode)


def kind_of(st: os.stat_result | None) -> str | None:
    if st is None:
        return None
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "link" if stat.S_ISLNK(mode) else "other"


def parts_of(rel: str) -> list[str]:
    """The components of a workspace-relative path; `..` or a NUL is refused here too, so
    no caller can walk out of the root fd whatever it was handed."""
    if "\x00" in rel:
        raise WorkspaceError(f"refusing the path {rel[:200]!r}: it contains a NUL byte")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise WorkspaceError(f"refusing the path {rel[:200]!r}: it leaves the workspace (..)")
    return parts


@contextmanager
def root_fd(root: Path) -> Iterator[int]:
    fd = os.open(root, _DIR)
    try:
        yield fd
    finally:
        os.close(fd)


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _owner(dir_fd: int, st: os.stat_result | None) -> tuple[int, int]:
    """Who a new file should belong to: the file it replaces, else its folder."""
    if st is None or not stat.S_ISREG(st.st_mode):
        st = os.fstat(dir_fd)
    return st.st_uid, st.st_gid


def _open_dir(fd: int, name: str, shown: str, *, create: bool, replace: bool) -> int:
    """Open folder `name` in `fd` without following a link; make or replace it as asked."""
    for _ in range(5):  # another process may change it between our calls: try again
        try:
            return os.open(name, _DIR, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise MissingError(f"{shown} does not exist") from None
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                continue
            new = os.open(name, _DIR, dir_fd=fd)
            if os.geteuid() == 0:
                os.fchown(new, *_owner(fd, None))
            return new
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            what = kind_of(lstat_at(fd, name))
            if what is None:
                continue
            if not replace:
                noun = "a symbolic link" if what == "link" else "not a folder"
                raise WorkspaceError(
                    f"{shown} is {noun}; the host never follows links in the workspace"
                ) from None
            os.unlink(name, dir_fd=fd)
    raise WorkspaceError(f"{shown} keeps changing under the host; try again")


@contextmanager
def parent_fd(root: Path, rel: str, *, create: bool = False, replace: bool = False):
    """(fd of the folder holding the last component, that component's name)."""
    parts = parts_of(rel)
    if not parts:
        raise WorkspaceError("the workspace itself is a directory, not a file")
    with root_fd(root) as top:
        fd = os.dup(top)
        try:
            for i, name in enumerate(parts[:-1]):
                shown = "/".join(parts[: i + 1])
                nxt = _open_dir(fd, name, shown, create=create, replace=replace)
                os.close(fd)
                fd = nxt
            yield fd, parts[-1]
        finally:
            os.close(fd)


def lstat(root: Path, rel: str) -> os.stat_result | None:
    """The path's own status (a link is a link), None where it or a folder on the way is not
    there; a folder on the way that is a link raises."""
    if not parts_of(rel):
        return os.stat(root, follow_symlinks=False)
    try:
        with parent_fd(root, rel) as (fd, name):
            return lstat_at(fd, name)
    except MissingError:
        return None


def read_bytes(root: Path, rel: str, limit: int | None = None) -> bytes:
    """A regular file's content (at most `limit` bytes); a link or a special file is refused."""
    with parent_fd(root, rel) as (dir_fd, name):
        try:
            fd = os.open(name, _READ, dir_fd=dir_fd)
        except FileNotFoundError:
            raise MissingError(f"{rel} does not exist") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise WorkspaceError(
                    f"{rel} is a symbolic link; the host never follows links in the workspace"
                ) from None
            raise WorkspaceError(f"{rel} cannot be read: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as fh:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise WorkspaceError(f"{rel} is a directory")
            if not stat.S_ISREG(mode):
                raise WorkspaceError(f"{rel} is not a regular file")
            return fh.read() if limit is None else fh.read(limit)


def read_head(root: Path, rel: str, limit: int) -> str | None:
    """The first `limit` bytes of a regular file as text, cut at its last whole line when
    cut; None where it is missing, a link, a FIFO or unreadable. Host previews of the agent's
    files read through here, so none blocks on a special file or leaves the workspace."""
    try:
        data = read_bytes(root, rel, limit)
    except (WorkspaceError, OSError):
        return None
    if len(data) >= limit and b"\n" in data:
        data = data[: data.rindex(b"\n") + 1]
    return data.decode("utf-8", "replace")


def write_bytes(root: Path, rel: str, data: bytes, *, replace: bool = False) -> None:
    """Put `data` at `rel` atomically: a temporary file renamed over the target.

    A link at the target is replaced, never written through. A link or file where a folder
    should be is refused, or (with `replace`, for restores) removed and made a folder.
    """
    with parent_fd(root, rel, create=True, replace=replace) as (dir_fd, name):
        st = lstat_at(dir_fd, name)
        if st is not None and stat.S_ISDIR(st.st_mode):
            if not replace:
                raise WorkspaceError(f"{rel} is a directory")
            shutil.rmtree(name, dir_fd=dir_fd)
            st = None
        mode = stat.S_IMODE(st.st_mode) if st is not None and stat.S_ISREG(st.st_mode) else 0o644
        owner = _owner(dir_fd, st)
        tmp = f"{_TEMP_PREFIX}{secrets.token_hex(8)}"
        fd = os.open(tmp, _TEMP, 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                os.fchmod(fd, mode)
                if os.geteuid() == 0:
                    os.fchown(fd, *owner)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException as exc:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            if isinstance(exc, IsADirectoryError):
                raise WorkspaceError(f"{rel} is a directory") from None
            raise


def remove(root: Path, rel: str, *, folders: bool = False) -> bool:
    """Remove what is at `rel` (a link itself, never its target); False when nothing is."""
    try:
        with parent_fd(root, rel) as (dir_fd, name):
            st = lstat_at(dir_fd, name)
            if st is None:
                return False
            if stat.S_ISDIR(st.st_mode):
                if not folders:
                    raise WorkspaceError(f"{rel} is a directory")
                shutil.rmtree(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)
            return True
    except (MissingError, FileNotFoundError):
        return False  # gone meanwhile


class TooManyFiles(WorkspaceError):
    """A walk stopped at a cap on entries or path bytes; `found` is what it had by then."""

    def __init__(self, message: str, found: list[Entry]) -> None:
        super().__init__(message)
        self.found = found


@dataclass
class WalkCap:
    """How much one walk may collect: entries (folders counted) and bytes of their paths."""

    entries: int
    path_bytes: int
    seen: int = 0
    size: int = 0

    def take(self, rel: str, found: list[Entry]) -> None:
        self.seen += 1
        self.size += len(rel.encode("utf-8", "surrogateescape")) + 1
        if self.seen > self.entries:
            raise TooManyFiles(
                f"the workspace holds over {self.entries} files and folders (the limit)", found
            )
        if self.size > self.path_bytes:
            raise TooManyFiles(
                f"the workspace's file names total over {self.path_bytes >> 20} MB "
                f"(the limit; {self.seen} names in)",
                found,
            )


def walk(
    root: Path, skip_dirs: set[str] | frozenset[str] = frozenset(), cap: WalkCap | None = None
) -> list[Entry]:
    """Everything under `root` that is not a folder, sorted by path, links never followed.

    Breadth first: with `cap` the walk stops (TooManyFiles) once the tree is past it, having
    seen the shallowest names (the agent's scripts before a deep data folder), so a tree of
    millions of names costs the host no more than the cap. Folders deeper than MAX_DEPTH are
    not entered.
    """
    found: list[Entry] = []
    queue: deque[tuple[str, int]] = deque([("", MAX_DEPTH)])
    with root_fd(root) as top:
        try:
            while queue:
                prefix, depth = queue.popleft()
                fd = _open_below(top, prefix)
                if fd is None:
                    continue  # swapped for a link (or gone) since its listing: not entered
                try:
                    _scan(fd, prefix, skip_dirs, depth, found, queue, cap)
                finally:
                    os.close(fd)
        except TooManyFiles as exc:
            exc.found.sort(key=lambda e: e.rel)
            raise
    found.sort(key=lambda e: e.rel)
    return found


def _open_below(top: int, prefix: str) -> int | None:
    fd = os.dup(top)
    for name in prefix.split("/")[:-1]:
        try:
            nxt = os.open(name, _DIR, dir_fd=fd)
        except OSError:
            nxt = None
        os.close(fd)
        if nxt is None:
            return None
        fd = nxt
    return fd


def _scan(
    fd: int,
    prefix: str,
    skip: set[str] | frozenset[str],
    depth: int,
    out: list[Entry],
    queue: deque[tuple[str, int]],
    cap: WalkCap | None,
) -> None:
    room = cap.entries - cap.seen + 1 if cap is not None else None
    with os.scandir(fd) as it:  # a folder of millions is read only as far as the cap
        entries = [e for _, e in zip(range(room), it, strict=False)] if room else list(it)
    entries.sort(key=lambda e: e.name)
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        rel = prefix + entry.name
        if cap is not None:
            cap.take(rel, out)
        if not stat.S_ISDIR(st.st_mode):
            out.append(Entry(rel, st))
        elif entry.name not in skip and depth > 0:
            queue.append((rel + "/", depth - 1))


def listing(root: Path, rel: str) -> list[tuple[str, str | None, int]]:
    """(name, kind, size) of each entry of the folder at `rel`, links not followed."""
    parts = parts_of(rel)
    with root_fd(root) as top:
        fd = os.dup(top)
        try:
            for i, name in enumerate(parts):
                nxt = _open_dir(fd, name, "/".join(parts[: i + 1]), create=False, replace=False)
                os.close(fd)
                fd = nxt
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
            rows = []
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                rows.append((entry.name, kind_of(st), st.st_size))
            return rows
        finally:
            os.close(fd)
