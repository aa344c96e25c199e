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

from .hostuid import Staging

SANDBOX_WORKDIR = "/workspace"
SANDBOX_UID = 1000
_ETC = ("ld.so.cache", "alternatives", "localtime", "passwd", "group", "nsswitch.conf", "hosts")
_OVERLAY_OK: dict[tuple[int, bool], bool] = {}
# Sysctls and the like stay read-only whatever the uid: bwrap's own cover of them is skipped
# where its access() check fails, and a sysctl such as kernel.core_pattern names a program the
# kernel runs as host root.
PROC_READ_ONLY = [
    arg
    for sub in ("sys", "sysrq-trigger", "irq", "bus", "fs")
    for arg in ("--ro-bind-try", f"/proc/{sub}", f"/proc/{sub}")
]


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


def overlay_supported(folder: Path, *, as_root: bool = False) -> bool:
    """Whether overlayfs may be mounted in `folder`'s file system, probed once per file system.

    Unprivileged, from a user namespace: needs Linux 5.11+ and a file system that takes user
    extended attributes. `as_root`: root mounting it in a private mount namespace (how a root
    mlagent mounts it before dropping to the sandbox uid).
    """
    try:
        key = (os.stat(folder).st_dev, as_root)
    except OSError:
        return False
    if key not in _OVERLAY_OK:
        _OVERLAY_OK[key] = _probe_overlay(folder, as_root)
    return _OVERLAY_OK[key]


def _probe_overlay(folder: Path, as_root: bool) -> bool:
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
        user = [] if as_root else ["--user", "--map-root-user"]
        proc = subprocess.run(
            ["unshare", *user, "--mount", "--propagation", "private", "/bin/sh", "-c", script],
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

    def mount_command(self, target: str | None = None) -> str:
        """Run from inside the workspace: every option string is relative and says nothing.

        `target`: where to mount it (default: the `mnt` folder beside the workspace).
        """
        rel = f"../{self.name}"
        opts = f"lowerdir={rel}/lower,upperdir=.,workdir={rel}/work"
        where = shlex.quote(target) if target else f"{rel}/mnt"
        return f"mount -t overlay overlay -o {opts} {where}"

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
    runtime: Sequence[tuple[str, str]] | None = None,
    seccomp_fd: int | None = None,
) -> list[str]:
    """bwrap's options (read from a descriptor): `source` becomes /workspace.

    `runtime` lists (source, shown at) per runtime folder (default: each where it is);
    `seccomp_fd` is where bwrap reads the seccomp filter it sets right before the command.
    """
    args = ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
    args += ["--new-session", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    args += ["--cap-drop", "ALL", "--clearenv"]
    for top in ("/usr", "/bin", "/lib", "/lib64", "/sbin"):
        args += ["--ro-bind-try", top, top]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--proc", "/proc", *PROC_READ_ONLY]
    # /dev is bwrap's own tmpfs of no size: read-only, with a sized /dev/shm (shared memory
    # files count against the step's memory like /tmp).
    args += ["--dev", "/dev", "--size", str(tmp_mb << 20), "--tmpfs", "/dev/shm"]
    args += ["--remount-ro", "/dev"]
    # /tmp first: a runtime that lives under /tmp must be bound on top of it, not hidden.
    args += ["--size", str(tmp_mb << 20), "--tmpfs", "/tmp"]
    for src, dest in runtime or [(str(p), str(p)) for p in runtime_paths()]:
        args += ["--ro-bind", src, dest]
    args += ["--bind", str(source), SANDBOX_WORKDIR]
    for rel in read_only:
        args += ["--ro-bind", str(source / rel), f"{SANDBOX_WORKDIR}/{rel}"]
    args += ["--remount-ro", "/", "--chdir", SANDBOX_WORKDIR]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
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
    *,
    seccomp_file: Path | None = None,
    staging: Staging | None = None,
) -> str:
    """The shell lines the waiting stub sources: mount the overlay, then exec bwrap.

    bwrap starts with an empty environment and from "/", so neither its environment nor its
    working directory (both readable as /proc/1/... inside) names a host path. `stdin`, a
    host FIFO (feed.InputFeed), becomes the command's standard input. Descriptors 3 (the
    arguments) and 4 (the seccomp filter) are opened before any uid change. With `staging`
    the workspace is mounted at its neutral folder (hostuid.Staging), and when mlagent is root
    bwrap starts as the unprivileged sandbox uid.
    """
    command = shlex.join(["/bin/sh", "-c", shell])
    feed = f" 0<{shlex.quote(str(stdin))}" if stdin else ""
    if seccomp_file is not None:
        feed += f" 4<{shlex.quote(str(seccomp_file))}"
    drop = "".join(shlex.quote(a) + " " for a in staging.drop()) if staging else ""
    run = (
        f"cd / && exec env -i {drop}{shlex.quote(bwrap)} --args 3 {command} "
        f"3<{shlex.quote(str(args_file))}{feed}"
    )
    if staging is not None:
        mount = overlay.mount_command(staging.ws) if overlay is not None else None
        return staging.script(workspace, mount, run)
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
