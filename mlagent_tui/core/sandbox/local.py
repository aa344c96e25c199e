"""LocalExecutor: bubblewrap shows the child only the workspace and the Python runtime.

Where `bwrap` is missing the command still gets its own process group, rlimits and the
pids cgroup, and every result says loudly what is not isolated.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

from .base import ExecResult, OutputCallback, OutputCapture, as_shell, killed_reason_from
from .limits import ResourceMonitor, kill_group, run_limits
from .stub import Stub

SANDBOX_WORKDIR = "/workspace"
NOT_ISOLATED = (
    "bubblewrap (bwrap) not found: commands run with rlimits and their own process group only; "
    "they can read every file this user can (private answers included), reach the network and "
    "write outside the workspace. Install bubblewrap for isolation."
)
_ETC = ("ld.so.cache", "alternatives", "localtime", "passwd", "group", "nsswitch.conf", "hosts")


def runtime_paths() -> list[Path]:
    """The Python runtime the child needs: the venv and the interpreter it was made from."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return sorted(paths)


class LocalExecutor:
    name = "local"

    def __init__(
        self,
        *,
        use_bwrap: bool | None = None,
        max_pids: int = 256,
        fsize_mb: int = 1024,
        grace_s: float = 2.0,
        threads: int = 2,
    ) -> None:
        bwrap = shutil.which("bwrap")
        self.bwrap = bwrap if use_bwrap is not False else None
        if use_bwrap and not bwrap:
            raise RuntimeError("bubblewrap requested but `bwrap` is not on PATH")
        self.max_pids = max_pids
        self.fsize_mb = fsize_mb
        self.grace_s = grace_s
        self.threads = threads
        if not self.bwrap:
            warnings.warn(NOT_ISOLATED, stacklevel=2)
        self._stub_lock = threading.Lock()
        self._spare: Stub | None = None
        self._closed = False
        self._script_dir = Path(tempfile.mkdtemp(prefix="mlagent-exec-"))

    @property
    def isolation(self) -> str:
        return "bubblewrap" if self.bwrap else "none (rlimits and process group only)"

    def _env(self, workdir: str) -> dict[str, str]:
        venv_bin = str(Path(sys.prefix) / "bin")
        n = str(self.threads)
        return {
            "PATH": f"{venv_bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp" if self.bwrap else workdir,
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": n,
            "OPENBLAS_NUM_THREADS": n,
            "MKL_NUM_THREADS": n,
            "MPLBACKEND": "Agg",
        }

    def _argv(self, shell: str, cwd: Path) -> tuple[list[str], str]:
        if not self.bwrap:
            return ["/bin/sh", "-c", shell], str(cwd)
        argv = [self.bwrap, "--unshare-all", "--die-with-parent", "--clearenv"]
        for top in ("/usr", "/bin", "/lib", "/lib64", "/sbin"):
            argv += ["--ro-bind-try", top, top]
        for name in _ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # /tmp first: a runtime that lives under /tmp must be bound on top of it, not hidden.
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for path in runtime_paths():
            argv += ["--ro-bind", str(path), str(path)]
        argv += ["--bind", str(cwd), SANDBOX_WORKDIR, "--remount-ro", "/"]
        argv += ["--chdir", SANDBOX_WORKDIR]
        for key, value in self._env(SANDBOX_WORKDIR).items():
            argv += ["--setenv", key, value]
        return argv + ["/bin/sh", "-c", shell], "/"

    def run(
        self,
        command: str | list[str],
        *,
        cwd: Path,
        timeout_s: float = 60.0,
        mem_mb: int = 1024,
        on_output: OutputCallback | None = None,
    ) -> ExecResult:
        shell = as_shell(command)
        cwd = Path(cwd).resolve()
        if not cwd.is_dir():
            raise FileNotFoundError(f"workspace does not exist: {cwd}")
        argv, popen_cwd = self._argv(shell, cwd)
        capture = OutputCapture(on_output)
        stub = self._take_stub()
        cgroup = stub.cgroup
        start = time.perf_counter()
        try:
            proc = stub.launch(
                argv,
                cwd=popen_cwd,
                home=self._env(str(cwd))["HOME"],
                limits=run_limits(mem_mb, timeout_s, self.fsize_mb, self.max_pids),
            )
        except OSError:
            stub.discard()
            raise
        monitor = ResourceMonitor(proc.pid, mem_mb, cgroup)
        monitor.start()
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
            # Nothing outlives the command: the group, then anything that escaped it.
            kill_group(proc.pid, signal.SIGKILL)
            monitor.stop()
            cgroup.remove()
            reader.join(timeout=10)
            stub.script.unlink(missing_ok=True)
        proc.returncode = exit_code = _exit_code(status)
        duration = time.perf_counter() - start
        capture.close()
        output = capture.text()
        peak = max(monitor.peak_mb, (usage.ru_maxrss / 1024) if usage else 0.0)
        reason = killed_reason_from(exit_code, output[-4000:], timed_out, monitor.reason)
        return ExecResult(
            command=shell,
            exit_code=exit_code,
            duration_s=round(duration, 4),
            peak_rss_mb=round(peak, 1),
            timed_out=timed_out,
            killed_reason=reason,
            output=output,
            output_truncated=capture.truncated,
            isolation=self.isolation,
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
        return Stub(self._env("/"), self.max_pids, self._script_dir)

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
