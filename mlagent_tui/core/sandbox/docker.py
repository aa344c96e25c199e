"""DockerExecutor: one container per session from the sandbox image, through docker-py.

No network, memory/CPU/pids limits, a non-root user, the workspace bind-mounted at
/workspace and nothing else of the host (private answers never) mounted.
"""

from __future__ import annotations

import os
import shlex
import threading
import time
from pathlib import Path

from .base import ExecResult, OutputCallback, OutputCapture, as_shell, killed_reason_from
from .image import IMAGE, SANDBOX_UID, ImageError, docker_client, image_exists

WORKDIR = "/workspace"
GRACE_S = 2
WATCHDOG_SLACK_S = GRACE_S + 3


class DockerExecutor:
    name = "docker"

    def __init__(
        self,
        workspace: Path,
        *,
        image: str = IMAGE,
        mem_mb: int = 2048,
        cpus: float = 2.0,
        max_pids: int = 256,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.client = docker_client()
        if not image_exists(image):
            raise ImageError(
                f"sandbox image {image} not found: run `mlagent sandbox build --offline`"
            )
        self.user = self._prepare_owner()
        self.mem_mb = mem_mb
        self.container = self.client.containers.run(
            image,
            ["sleep", "infinity"],
            detach=True,
            auto_remove=False,
            network_mode="none",
            mem_limit=f"{mem_mb}m",
            memswap_limit=f"{mem_mb}m",
            nano_cpus=int(cpus * 1e9),
            pids_limit=max_pids,
            user=self.user,
            working_dir=WORKDIR,
            volumes={str(self.workspace): {"bind": WORKDIR, "mode": "rw"}},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            labels={"mlagent": "sandbox"},
            init=True,
        )

    def _prepare_owner(self) -> str:
        """Run as the host user when it is not root; as root, hand the workspace to uid 1000."""
        if os.getuid() != 0:
            return f"{os.getuid()}:{os.getgid()}"
        for dirpath, dirnames, filenames in os.walk(self.workspace):
            os.chown(dirpath, SANDBOX_UID, SANDBOX_UID)
            for name in filenames + dirnames:
                os.chown(
                    os.path.join(dirpath, name), SANDBOX_UID, SANDBOX_UID, follow_symlinks=False
                )
        return f"{SANDBOX_UID}:{SANDBOX_UID}"

    def run(
        self,
        command: str | list[str],
        *,
        cwd: Path | None = None,
        timeout_s: float = 60.0,
        mem_mb: int = 1024,
        on_output: OutputCallback | None = None,
    ) -> ExecResult:
        shell = as_shell(command)
        workdir = WORKDIR
        if cwd is not None and Path(cwd).resolve() != self.workspace:
            workdir = f"{WORKDIR}/{Path(cwd).resolve().relative_to(self.workspace).as_posix()}"
        # `timeout` inside the container does TERM-then-KILL; its exit 124 marks a time-out.
        wrapped = [
            "timeout",
            "-k",
            str(GRACE_S),
            str(timeout_s),
            "sh",
            "-c",
            f"ulimit -v {(mem_mb * 2 + 2048) * 1024} 2>/dev/null; exec sh -c {shlex.quote(shell)}",
        ]
        api = self.client.api
        capture = OutputCapture(on_output)
        start = time.perf_counter()
        exec_id = api.exec_create(self.container.id, wrapped, workdir=workdir, user=self.user)["Id"]
        stream = api.exec_start(exec_id, stream=True)
        watchdog = threading.Timer(timeout_s + WATCHDOG_SLACK_S, self._kill_exec, args=(exec_id,))
        watchdog.daemon = True
        watchdog.start()
        try:
            for chunk in stream:
                capture.feed(chunk)
        finally:
            watchdog.cancel()
        exit_code = api.exec_inspect(exec_id).get("ExitCode")
        duration = time.perf_counter() - start
        capture.close()
        output = capture.text()
        timed_out = exit_code == 124 or (exit_code == 137 and duration >= timeout_s)
        monitor = "memory" if exit_code == 137 and not timed_out else None
        return ExecResult(
            command=shell,
            exit_code=exit_code,
            duration_s=round(duration, 4),
            peak_rss_mb=self._peak_mb(),
            timed_out=timed_out,
            killed_reason=killed_reason_from(exit_code, output[-4000:], timed_out, monitor),
            output=output,
            output_truncated=capture.truncated,
            isolation="docker",
        )

    def _kill_exec(self, exec_id: str) -> None:
        pid = self.client.api.exec_inspect(exec_id).get("Pid")
        if pid:
            try:
                os.kill(pid, 9)
            except (ProcessLookupError, PermissionError):
                pass

    def _peak_mb(self) -> float:
        """The container's memory high-water mark from its cgroup, where the host exposes it."""
        for path in (
            Path(f"/sys/fs/cgroup/memory/docker/{self.container.id}/memory.max_usage_in_bytes"),
            Path(f"/sys/fs/cgroup/system.slice/docker-{self.container.id}.scope/memory.peak"),
        ):
            try:
                return round(int(path.read_text()) / 1024 / 1024, 1)
            except (OSError, ValueError):
                continue
        return 0.0

    def close(self) -> None:
        try:
            self.container.remove(force=True)
        except Exception:  # noqa: BLE001 - already gone is fine
            pass
