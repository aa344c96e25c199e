"""LocalExecutor: bubblewrap shows the child only the workspace and the Python runtime.

Where `bwrap` is missing the command still gets its own process group, rlimits and the
pids cgroup, and every result says loudly what is not isolated.
"""

from __future__ import annotations

import os
import resource
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from .base import (
    DEFAULT_DISK_MB,
    ExecResult,
    OutputCallback,
    OutputCapture,
    as_shell,
    killed_reason_from,
)
from .bwrap import (
    SANDBOX_UID,
    SANDBOX_WORKDIR,
    Overlay,
    ReadOnlyError,
    bwrap_args,
    launch_script,
    overlay_supported,
    read_only_files,
    runtime_paths,
    sandbox_env,
    write_args,
)
from .feed import InputFeed
from .hostuid import HostUidError, Staging, hand_over, sandbox_host_uid
from .limits import (
    SAMPLED_ONLY,
    DiskWatch,
    ResourceMonitor,
    kill_group,
    memory_cgroup_available,
    run_limits,
)
from .seccomp import write_filter
from .stub import Stub

__all__ = ["LocalExecutor", "SANDBOX_WORKDIR", "runtime_paths"]

NOT_ISOLATED = (
    "bubblewrap (bwrap) not found: commands run with rlimits and their own process group only; "
    "they can read every file this user can (private answers included), reach the network and "
    "write outside the workspace. Install bubblewrap for isolation."
)
PATHS_VISIBLE = "host paths visible in mountinfo (no overlayfs in user namespaces here)"
AS_HOST_ROOT = (
    "sandboxed commands run as host root: mlagent is root and cannot make a private mount "
    "namespace (or has no setpriv) to drop to the sandbox uid from"
)
NO_SECCOMP = "no seccomp filter (no syscall table for this machine)"


class LocalExecutor:
    name = "local"
    takes_input = True  # run(stdin=...): see feed.InputFeed

    def __init__(
        self,
        *,
        use_bwrap: bool | None = None,
        max_pids: int = 256,
        fsize_mb: int = 1024,
        grace_s: float = 2.0,
        threads: int = 2,
        hide_host_path: bool = True,
        memory_cgroup: bool = True,
    ) -> None:
        bwrap = shutil.which("bwrap")
        self.bwrap = bwrap if use_bwrap is not False else None
        if use_bwrap and not bwrap:
            raise RuntimeError("bubblewrap requested but `bwrap` is not on PATH")
        self.max_pids = max_pids
        self.fsize_mb = fsize_mb
        self.grace_s = grace_s
        self.threads = threads
        # False for a grader's scratch folder: its named pipes must be the host's own inodes,
        # which an overlay would replace (its path holds no session id or home)
        self.hide_host_path = hide_host_path
        # False: sample RSS even where the kernel could count the step (tests of the fallback)
        self.memory_cgroup = memory_cgroup and memory_cgroup_available()
        if not self.bwrap:
            warnings.warn(NOT_ISOLATED, stacklevel=2)
        self._stub_lock = threading.Lock()
        self._spare: Stub | None = None
        self._closed = False
        self._script_dir = Path(tempfile.mkdtemp(prefix="mlagent-exec-"))
        self._paths_hidden = True
        self._staging = self._make_staging() if self.bwrap else None
        self._seccomp = write_filter(self._script_dir) if self.bwrap else None

    @property
    def _host_uid(self) -> int | None:
        """The unprivileged uid a root mlagent's sandboxes run as (None: not root, or none)."""
        return self._staging.uid if self._staging else None

    def _make_staging(self) -> Staging:
        """As root, the namespace to drop to the sandbox's own uid from; else a neutral folder."""
        uid = sandbox_host_uid()
        staging = Staging(uid, runtime_paths())
        if staging.supported():
            return staging
        staging.remove()
        warnings.warn(AS_HOST_ROOT, stacklevel=3)
        return Staging(None, runtime_paths())

    @property
    def isolation(self) -> str:
        if not self.bwrap:
            return "none (rlimits and process group only)"
        host_uid = os.getuid() if self._host_uid is None else self._host_uid
        base = f"bubblewrap (uid {SANDBOX_UID}, host uid {host_uid}, no capabilities)"
        notes = [] if self._seccomp else [NO_SECCOMP]
        notes += [] if host_uid else [AS_HOST_ROOT]
        notes += [] if self._paths_hidden else [PATHS_VISIBLE]
        base = "; ".join([base, *notes])
        return base if self.memory_cgroup else f"{base}; {SAMPLED_ONLY}"

    def _env(self, workdir: str) -> dict[str, str]:
        env = sandbox_env(self.threads)
        env["HOME"] = "/tmp" if self.bwrap else workdir
        return env

    def _script(
        self, shell: str, cwd: Path, tmp_mb: int, read_only: Sequence[str], stdin: Path | None
    ) -> tuple[str, list[Callable[[], None]]]:
        """What the waiting stub sources to start this command, and what to clean up after."""
        if not self.bwrap:
            feed = f" <{shlex.quote(str(stdin))}" if stdin else ""
            script = (
                f"export HOME={shlex.quote(str(cwd))}\ncd {shlex.quote(str(cwd))} || exit 126\n"
                f"exec /bin/sh -c {shlex.quote(shell)}{feed}\n"
            )
            return script, []
        ro_files = read_only_files(cwd, read_only)
        staging = self._staging
        assert staging is not None
        if staging.uid is not None:
            hand_over(cwd, staging.uid)  # what the host wrote there becomes the sandbox's
        overlay = self._overlay(cwd) if self.hide_host_path else None
        args = bwrap_args(
            source=staging.source(cwd, overlay is not None),
            env=self._env(SANDBOX_WORKDIR),
            tmp_mb=tmp_mb,
            read_only=ro_files,
            runtime=staging.runtime_binds,
            seccomp_fd=4 if self._seccomp else None,
        )
        args_file = self._script_dir / f"args-{secrets.token_hex(6)}"
        write_args(args_file, args)
        cleanup = [lambda: args_file.unlink(missing_ok=True)]
        if overlay is not None:
            cleanup.append(overlay.remove)
        seccomp, script = self._seccomp, (self.bwrap, args_file, shell, cwd, overlay, stdin)
        return launch_script(*script, seccomp_file=seccomp, staging=staging), cleanup

    def _overlay(self, cwd: Path) -> Overlay | None:
        """This run's own overlay folders beside `cwd` (runs may overlap); None if unsupported."""
        overlay = Overlay(cwd, secrets.token_hex(6))
        try:
            overlay.prepare()
        except OSError:
            overlay.remove()
            self._paths_hidden = False
            return None
        if not overlay_supported(cwd.parent, as_root=self._host_uid is not None):
            overlay.remove()
            self._paths_hidden = False
            return None
        return overlay

    def run(
        self,
        command: str | list[str],
        *,
        cwd: Path,
        timeout_s: float = 60.0,
        mem_mb: int = 1024,
        on_output: OutputCallback | None = None,
        disk_mb: int = DEFAULT_DISK_MB,
        read_only: Sequence[str] = (),
        stdin: bytes | None = None,
    ) -> ExecResult:
        """`stdin`: bytes the command reads once on its standard input (else /dev/null)."""
        shell = as_shell(command)
        cwd = Path(cwd).resolve()
        if not cwd.is_dir():
            raise FileNotFoundError(f"workspace does not exist: {cwd}")
        feed = InputFeed(self._script_dir, stdin) if stdin is not None else None
        try:
            script, cleanup = self._script(shell, cwd, mem_mb, read_only, feed and feed.path)
        except (ReadOnlyError, HostUidError) as exc:
            if feed is not None:
                feed.close()
            return ExecResult(
                command=shell,
                exit_code=126,
                duration_s=0.0,
                output=f"sandbox refused to start: {exc}",
                isolation=self.isolation,
            )
        if feed is not None:
            cleanup.append(feed.close)
        capture = OutputCapture(on_output)
        stub = self._take_stub()
        cgroup = stub.cgroup
        start = time.perf_counter()
        fsize = min(self.fsize_mb, disk_mb)
        try:
            # one host uid for every sandbox: the pids cgroup counts per step where it can
            own_count = self._host_uid is not None and cgroup.pids_ok
            nproc = resource.RLIM_INFINITY if own_count else self.max_pids
            limits = run_limits(mem_mb, timeout_s, fsize, nproc)
            proc = stub.launch(script, limits=limits, mem_mb=mem_mb)
        except OSError:
            stub.discard()
            for clean in cleanup:
                clean()
            raise
        # a step whose cgroup refused memory.max is sampled, and its result says so
        isolation = self.isolation
        if self.memory_cgroup and not cgroup.memory_ok:
            isolation = f"{isolation}; {SAMPLED_ONLY}"
        monitor = ResourceMonitor(proc.pid, mem_mb, cgroup, count_tmpfs=bool(self.bwrap))
        disk = DiskWatch(cwd, disk_mb, monitor.kill_for("disk"))
        monitor.start()
        disk.start()
        reader = threading.Thread(target=_drain, args=(proc, capture), daemon=True)
        reader.start()
        timed_out = False
        try:
            _, status, usage = _wait4(proc.pid, timeout_s)
            if status is None:
                timed_out = True
                kill_group(proc.pid, signal.SIGTERM)
                _, status, usage = _wait4(proc.pid, self.grace_s)
                if status is None:
                    kill_group(proc.pid, signal.SIGKILL)
                    _, status, usage = _wait4(proc.pid, None)
        finally:
            # Nothing outlives the command: the group, then anything that escaped it (the pid
            # namespace dies with bwrap, and the cgroup is emptied).
            kill_group(proc.pid, signal.SIGKILL)
            peak_mb, monitor_reason = monitor.finish()
            disk_over = disk.stop()
            cgroup.remove()
            reader.join(timeout=10)
            stub.script.unlink(missing_ok=True)
            for clean in cleanup:
                clean()
        proc.returncode = exit_code = _exit_code(status)
        duration = time.perf_counter() - start
        capture.close()
        output = capture.text()
        peak = max(peak_mb, (usage.ru_maxrss / 1024) if usage else 0.0)
        reason = killed_reason_from(exit_code, output[-4000:], timed_out, monitor_reason)
        if reason == "file_size" or (disk_over and not timed_out):
            reason = "disk"  # killed past the limit, or finished over it: never a clean run
        return ExecResult(
            command=shell,
            exit_code=exit_code,
            duration_s=round(duration, 4),
            peak_rss_mb=round(peak, 1),
            timed_out=timed_out,
            killed_reason=reason,
            output=output,
            output_truncated=capture.truncated,
            isolation=isolation,
        )

    def _take_stub(self) -> Stub:
        """The stub made ahead of time (or a new one); start making the next."""
        with self._stub_lock:
            stub, self._spare = self._spare, None
        if stub is None or not stub.alive:
            if stub is not None:
                stub.discard()
            stub = self._new_stub()
        threading.Thread(target=self._prewarm, daemon=True).start()
        return stub

    def _new_stub(self) -> Stub:
        staging = self._staging
        return Stub(
            self._env("/"),
            self.max_pids,
            self._script_dir,
            memory_cgroup=self.memory_cgroup,
            wrap=staging.wrap() if staging else [],
            setup=staging.setup() if staging else "",
        )

    def _prewarm(self) -> None:
        stub = self._new_stub()
        with self._stub_lock:
            if self._closed:
                old, stub = stub, None
            else:
                old, self._spare = self._spare, stub
        if old is not None:
            old.discard()

    def close(self) -> None:
        with self._stub_lock:
            self._closed = True
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.discard()
        shutil.rmtree(self._script_dir, ignore_errors=True)
        if getattr(self, "_staging", None) is not None:
            self._staging.remove()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _drain(proc: subprocess.Popen[bytes], capture: OutputCapture) -> None:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        capture.feed(chunk)
    proc.stdout.close()


def _wait4(pid: int, timeout_s: float | None) -> tuple[int, int | None, os.struct_rusage | None]:
    """Wait for `pid` up to `timeout_s` (None: forever); status None means still running.

    A pidfd wakes us the moment the child exits, with no polling delay.
    """
    wpid, status, usage = os.wait4(pid, os.WNOHANG)
    if wpid == pid:
        return wpid, status, usage
    if timeout_s is None:
        return os.wait4(pid, 0)
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        fd = None
    try:
        if fd is not None:
            select.select([fd], [], [], max(timeout_s, 0))
        else:
            time.sleep(min(timeout_s, 0.01))
    finally:
        if fd is not None:
            os.close(fd)
    wpid, status, usage = os.wait4(pid, os.WNOHANG)
    if wpid == pid:
        return wpid, status, usage
    if fd is None and timeout_s > 0.01:
        return _wait4(pid, timeout_s - 0.01)
    return pid, None, None


def _exit_code(status: int | None) -> int | None:
    if status is None:
        return None
    return os.waitstatus_to_exitcode(status)
