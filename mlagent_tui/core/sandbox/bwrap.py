"""The bubblewrap command line of one sandboxed command, and how its workspace is mounted.

Root inside bubblewrap is still root: the child runs as an unprivileged uid in a user namespace
of its own, with every capability dropped and no way to make further namespaces. The host
paths of the session (the mlagent home, the session id) must not be readable inside either:
a plain bind mount shows its source path in /proc/self/mountinfo, so where the kernel allows
it the workspace is shown through an overlay mounted with *relative* option strings from inside
the workspace (upper = ".", an empty lower, a work folder beside it), whose mountinfo line
holds nothing but "/" and those strings. bwrap reads its own arguments from a file descriptor,
so its command line (visible as /proc/1/cmdline inside) holds no path either.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

SANDBOX_WORKDIR = "/workspace"
SANDBOX_UID = 1000
_ETC = ("ld.so.cache", "alternatives", "localtime", "passwd", "group", "nsswitch.conf", "hosts")
_OVERLAY_OK: dict[int, bool] = {}


class ReadOnlyError(Exception):
    """A read-only entry of the task is a link or not a regular file: never mounted."""


def runtime_paths() -> list[Path]:
    """The Python runtime the child needs: the venv and the interpreter it was made from."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return sorted(paths)


def sandbox_env(threads: int) -> dict[str, str]:
    venv_bin = str(Path(sys.prefix) / "bin")
    n = str(threads)
    return {
        "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": n,
        "OPENBLAS_NUM_THREADS": n,
        "MKL_NUM_THREADS": n,
        "MPLBACKEND": "Agg",
    }


def overlay_supported(folder: Path) -> bool:
    """Whether an unprivileged user namespace may mount overlayfs in `folder`'s file system.

    Needs Linux 5.11+ and a file system that takes user extended attributes; probed once per
    file system.
    """
    try:
        dev = os.stat(folder).st_dev
    except OSError:
        return False
    if dev not in _OVERLAY_OK:
        _OVERLAY_OK[dev] = _probe_overlay(folder)
    return _OVERLAY_OK[dev]


def _probe_overlay(folder: Path) -> bool:
    if not (shutil.which("unshare") and shutil.which("mount")):
        return False
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".mlagent-ovl-probe-", dir=folder))
    except OSError:
        return False
    try:
        ws = tmp / "ws"
        ws.mkdir()
        aux = Overlay(ws, "probe")
        aux.prepare()
        script = f"cd {shlex.quote(str(ws))} && {aux.mount_command()}"
        proc = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "/bin/sh", "-c", script],
            capture_output=True,
            timeout=10,
        )
        aux.remove()
        return proc.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class Overlay:
    """The folders beside a workspace that its overlay needs (an empty lower, work, a target)."""

    def __init__(self, workspace: Path, token: str) -> None:
        self.workspace = workspace
        self.name = f".mlagent-ovl-{token}"
        self.dir = workspace.parent / self.name

    @property
    def target(self) -> Path:
        return self.dir / "mnt"

    def prepare(self) -> None:
        for sub in ("lower", "work", "mnt"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)

    def mount_command(self) -> str:
        """Run from inside the workspace: every option string is relative and says nothing."""
        rel = f"../{self.name}"
        opts = f"lowerdir={rel}/lower,upperdir=.,workdir={rel}/work"
        return f"mount -t overlay overlay -o {opts} {rel}/mnt"

    def remove(self) -> None:
        # overlay leaves work/work with mode 000; make it removable first
        for path in (self.dir / "work" / "work", self.dir / "work"):
            try:
                path.chmod(0o700)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def read_only_files(workspace: Path, read_only: Sequence[str]) -> list[str]:
    """The entries to mount read-only: regular files reached without following any link."""
    found = []
    for rel in read_only:
        parts = Path(rel).parts
        if not parts or Path(rel).is_absolute() or ".." in parts:
            raise ReadOnlyError(f"read-only entry {rel!r} is not inside the workspace")
        path = workspace
        for i, part in enumerate(parts):
            path = path / part
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                path = None  # type: ignore[assignment]
                break
            last = i == len(parts) - 1
            if os.path.stat.S_ISLNK(st.st_mode):
                raise ReadOnlyError(f"read-only file {rel} has been replaced by a link")
            if last and not os.path.stat.S_ISREG(st.st_mode):
                raise ReadOnlyError(f"read-only file {rel} is no longer a regular file")
        if path is not None:
            found.append(Path(*parts).as_posix())
    return found


def bwrap_args(
    *,
    source: Path,
    env: dict[str, str],
    tmp_mb: int,
    read_only: Sequence[str],
) -> list[str]:
    """bwrap's options (read from a descriptor): `source` becomes /workspace."""
    args = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
    args += ["--new-session", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    args += ["--cap-drop", "ALL", "--clearenv"]
    for top in ("/usr", "/bin", "/lib", "/lib64", "/sbin"):
        args += ["--ro-bind-try", top, top]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--proc", "/proc"]
    # /dev is bwrap's own tmpfs of no size: read-only, with a sized /dev/shm (shared memory
    # files count against the step's memory like /tmp).
    args += ["--dev", "/dev", "--size", str(tmp_mb << 20), "--tmpfs", "/dev/shm"]
    args += ["--remount-ro", "/dev"]
    # /tmp first: a runtime that lives under /tmp must be bound on top of it, not hidden.
    args += ["--size", str(tmp_mb << 20), "--tmpfs", "/tmp"]
    for path in runtime_paths():
        args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(source), SANDBOX_WORKDIR]
    for rel in read_only:
        args += ["--ro-bind", str(source / rel), f"{SANDBOX_WORKDIR}/{rel}"]
    args += ["--remount-ro", "/", "--chdir", SANDBOX_WORKDIR]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return args


def launch_script(
    bwrap: str,
    args_file: Path,
    shell: str,
    workspace: Path,
    overlay: Overlay | None,
    stdin: Path | None = None,
) -> str:
    """The shell lines the waiting stub sources: mount the overlay, then exec bwrap.

    bwrap starts with an empty environment and from "/", so neither its environment nor its
    working directory (both readable as /proc/1/... inside) names a host path. `stdin`, a
    host FIFO (feed.InputFeed), becomes the command's standard input.
    """
    command = shlex.join(["/bin/sh", "-c", shell])
    feed = f" 0<{shlex.quote(str(stdin))}" if stdin else ""
    run = (
        f"cd / && exec env -i {shlex.quote(bwrap)} --args 3 {command} "
        f"3<{shlex.quote(str(args_file))}{feed}"
    )
    if overlay is None:
        return run + "\n"
    inner = (
        f"cd {shlex.quote(str(workspace))} || exit 126\n"
        f"{overlay.mount_command()} || {{ echo 'sandbox: overlay mount failed' >&2; exit 126; }}\n"
        f"{run}\n"
    )
    return f"exec unshare --user --map-root-user --mount /bin/sh -c {shlex.quote(inner)}\n"


def write_args(path: Path, args: list[str]) -> None:
    """NUL-separated, as `bwrap --args FD` reads them; only the host can read the file."""
    data = b"".join(os.fsencode(a) + b"\0" for a in args)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
