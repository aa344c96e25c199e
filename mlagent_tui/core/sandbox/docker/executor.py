"""DockerExecutor: one container per session from the sandbox image, through docker-py.

No network, memory/CPU/pids limits, no capabilities, a read-only root file system, a
non-root user, the workspace mounted at /workspace (its read-only files bound again,
read-only, on top) and nothing else of the host (private answers never). As root the
workspace arrives as a fresh overlay per step, so no host path shows inside
(mounts.py). /tmp is a tmpfs inside the memory limit, emptied after every step; every
process a step starts is killed when it ends; the workspace's size is watched meanwhile.
"""

from __future__ import annotations

import os
import select
import shlex
import threading
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from ..base import DEFAULT_DISK_MB, ExecResult, OutputCallback, OutputCapture, as_shell
from ..image import IMAGE, SANDBOX_UID, ImageError, docker_client, image_exists
from ..limits import DiskWatch
from ..seccomp import docker_profile
from .host import (
    LABEL,
    ContainerCgroup,
    ReadOnlyRefused,
    SandboxBusy,
    WorkspaceLock,
    chown_tree,
    empty_folders,
    read_only_binds,
    remove_workspace_containers,
    workspace_label,
)
from .mounts import WorkspaceMounts, pinned_dirs
from .outcome import step_result
from .stdin import start_exec

__all__ = ["DockerExecutor", "SandboxBusy"]

WORKDIR = "/workspace"
GRACE_S = 2
WATCHDOG_SLACK_S = GRACE_S + 1
MAIN_POLL_S = 0.05
# As root, the container's init and its `sleep infinity` run as nobody: the agent's uid
# cannot signal them, so no step can stop the sandbox for the next one.
BASE_USER_AS_ROOT = "65534:65534"
PATHS_SHOWN = "the docker sandbox shows the workspace's host path in /proc/self/mountinfo"


class DockerExecutor:
    """The docker backend of one workspace; the container starts with the first run.

    `hide_host_path=False` keeps plain bind mounts even as root (a workspace whose named
    pipes the host also opens needs them: through an overlay those are other pipes). A
    second live executor for the same workspace is refused (SandboxBusy); one that a killed
    process left behind is cleaned away first.
    """

    name = "docker"
    takes_input = True  # run(stdin=...): the exec's own connection (stdin.py)

    def __init__(
        self,
        workspace: Path,
        *,
        image: str = IMAGE,
        mem_mb: int = 2048,
        cpus: float = 2.0,
        max_pids: int = 256,
        hide_host_path: bool = True,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.client = docker_client()
        if not image_exists(image):
            raise ImageError(
                f"sandbox image {image} not found: run `mlagent sandbox build --offline`"
            )
        self.image = image
        self.mem_mb = mem_mb
        self.cpus = cpus
        self.max_pids = max_pids
        self.label = workspace_label(self.workspace)
        self._owner = WorkspaceLock(self.label)
        if not self._owner.acquire():
            raise SandboxBusy(f"{self.workspace} already has a live docker sandbox")
        try:
            self._set_up(hide_host_path)
        except BaseException:
            if getattr(self, "mounts", None) is not None:
                self.mounts.close()
            self._owner.release()
            raise

    def _set_up(self, hide_host_path: bool) -> None:
        # A session killed with -9 left its container running: it goes before ours starts.
        remove_workspace_containers(self.client, self.label, LABEL)
        self.as_root = os.getuid() == 0
        if self.as_root:
            self.user = f"{SANDBOX_UID}:{SANDBOX_UID}"
            self.base_user = BASE_USER_AS_ROOT
        else:
            self.user = self.base_user = f"{os.getuid()}:{os.getgid()}"
        self.mounts: WorkspaceMounts | None = None
        self.hides_host_path = False
        if self.as_root and hide_host_path:
            mounts = WorkspaceMounts(self.workspace, self.label)
            try:
                mounts.setup()
                self.mounts, self.hides_host_path = mounts, True
            except OSError as exc:
                warnings.warn(f"{PATHS_SHOWN}: {exc}", stacklevel=2)
        self._hand_over()
        self._lock = threading.Lock()
        self._container = None
        self._binds: dict[str, tuple[int, int]] = {}
        self._cgroup: ContainerCgroup | None = None
        self._init_fd: int | None = None
        self._scratch_fds: list[int] = []
        self._closed = False

    def __del__(self) -> None:
        # an executor dropped without close() must not keep its workspace locked
        owner = getattr(self, "_owner", None)
        if owner is not None:
            owner.release()

    # -- the container ---------------------------------------------------------------------
    @property
    def container(self):  # noqa: ANN201 - a docker-py Container
        """The session's container, started on first use (after close: the removed one)."""
        if self._container is None and not self._closed:
            self._start(self._binds)
        return self._container

    def _start(self, binds: dict[str, tuple[int, int]]) -> None:
        from docker.types import Mount

        if self.mounts is not None:
            # the per-step overlay arrives here by propagation; read-only files come with it
            mounts = [
                Mount(WORKDIR, str(self.mounts.bind_source), type="bind", propagation="rslave")
            ]
        else:
            mounts = [Mount(WORKDIR, str(self.workspace), type="bind")]
            for rel in pinned_dirs(binds) + sorted(binds):
                src, dst = str(self.workspace / rel), f"{WORKDIR}/{rel}"
                mounts.append(Mount(dst, src, type="bind", read_only=rel in binds))
        container = self.client.containers.run(
            self.image,
            ["sleep", "infinity"],
            detach=True,
            auto_remove=False,
            network_mode="none",
            mem_limit=f"{self.mem_mb}m",
            memswap_limit=f"{self.mem_mb}m",
            nano_cpus=int(self.cpus * 1e9),
            pids_limit=self.max_pids,
            user=self.base_user,
            working_dir="/",
            mounts=mounts,
            read_only=True,
            # Exec allowed (native extensions unpack there); tmpfs pages count as memory.
            tmpfs={"/tmp": f"size={max(self.mem_mb // 2, 16)}m,mode=1777,exec"},
            # /dev/shm like /tmp; its pages and memfd buffers count in the memory cgroup
            shm_size=f"{max(self.mem_mb // 2, 16)}m",
            cap_drop=["ALL"],
            # docker's default profile lets io_uring through before engine 25: ours refuses it
            security_opt=["no-new-privileges", f"seccomp={docker_profile()}"],
            labels={"mlagent": "sandbox", LABEL: self.label},
            init=True,
        )
        self._container, self._binds = container, binds
        try:
            container.reload()
            pid = container.attrs["State"]["Pid"]
            self._init_fd = os.pidfd_open(pid)
            self._cgroup = ContainerCgroup(pid, container.id, self._top_pids)
            # Held for the container's life, so a recycled pid can never aim them at the
            # host; the init still alive after the opens proves /proc/<pid> was the container's.
            for d in ("tmp", "dev/shm"):
                try:
                    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
                    self._scratch_fds.append(os.open(f"/proc/{pid}/root/{d}", flags))
                except OSError:
                    pass  # not ours to open (rootless): it is emptied with the container only
            if not self._alive():
                raise ImageError("the sandbox container exited as it started")
            self._init_pid = pid
        except Exception:
            self._discard()
            raise

    def _top_pids(self) -> list[int]:
        """Host pids of the container's processes through docker (where no cgroup is readable)."""
        if self._container is None:
            return []
        top = self.client.api.top(self._container.id, ps_args="-eo pid")
        column = top["Titles"].index("PID")
        return [int(row[column]) for row in top.get("Processes") or []]

    def _alive(self) -> bool:
        if self._init_fd is None:
            return False
        readable, _, _ = select.select([self._init_fd], [], [], 0)
        return not readable

    def _discard(self) -> None:
        """Remove the container (the next run starts a fresh one) and drop its handles."""
        for fd in [self._init_fd, *self._scratch_fds]:
            if fd is not None:
                os.close(fd)
        self._init_fd, self._scratch_fds = None, []
        self._cgroup = None
        if self._container is not None:
            try:
                self._container.remove(force=True)
            except Exception:  # noqa: BLE001 - already gone is fine
                pass
        self._container = None

    def _ensure(self, binds: dict[str, tuple[int, int]]) -> None:
        """Start (or restart) the container when its read-only binds changed or it died."""
        if self.mounts is not None:
            binds = {}  # bound per step instead
        if self._container is not None and (binds != self._binds or not self._alive()):
            self._discard()
        if self._container is None:
            self._start(binds)

    # -- one step --------------------------------------------------------------------------
    def run(
        self,
        command: str | list[str],
        *,
        cwd: Path | None = None,
        timeout_s: float = 60.0,
        mem_mb: int = 1024,
        on_output: OutputCallback | None = None,
        disk_mb: int = DEFAULT_DISK_MB,
        read_only: Sequence[str] = (),
        stdin: bytes | None = None,
    ) -> ExecResult:
        if self._closed:
            raise RuntimeError("this docker sandbox is closed")
        shell = as_shell(command)
        workdir = WORKDIR
        if cwd is not None and Path(cwd).resolve() != self.workspace:
            workdir = f"{WORKDIR}/{Path(cwd).resolve().relative_to(self.workspace).as_posix()}"
        try:
            binds = read_only_binds(self.workspace, read_only)
        except ReadOnlyRefused as exc:
            return ExecResult(
                command=shell,
                exit_code=126,
                duration_s=0.0,
                output=f"sandbox refused to run the command: {exc}",
                isolation="docker",
            )
        with self._lock:
            self._ensure(binds)
            self._hand_over()
            if self.mounts is not None and not self._mount_step(binds):
                self._ensure(binds)  # a fresh container with plain binds
            try:
                return self._exec(shell, workdir, timeout_s, mem_mb, on_output, disk_mb, stdin)
            finally:
                if self.mounts is not None:
                    self.mounts.unmount_step()

    def _mount_step(self, binds: dict[str, tuple[int, int]]) -> bool:
        """Mount the step's overlay; where it fails or does not reach the container, go back
        to plain binds for good (False) rather than run with an empty /workspace."""
        assert self.mounts is not None
        try:
            self.mounts.mount_step(binds)
            if self.mounts.visible_in(self._init_pid, WORKDIR):
                return True
            reason = "the overlay does not reach the container (mount propagation)"
        except OSError as exc:
            reason = str(exc)
        warnings.warn(f"{PATHS_SHOWN}: {reason}", stacklevel=3)
        self.mounts.close()
        self.mounts, self.hides_host_path = None, False
        self._discard()
        return False

    def _exec(
        self,
        shell: str,
        workdir: str,
        timeout_s: float,
        mem_mb: int,
        on_output: OutputCallback | None,
        disk_mb: int,
        stdin: bytes | None = None,
    ) -> ExecResult:
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
        cgroup = self._cgroup
        assert cgroup is not None and self._container is not None
        oom_before = cgroup.oom_kills()
        capture = OutputCapture(on_output)
        fired, finished = threading.Event(), threading.Event()

        def on_timeout() -> None:
            fired.set()
            cgroup.kill_step()

        def watch_main() -> None:
            # Once only orphans are left the exec's own process is gone and the step is over:
            # end them now, so one holding the output open cannot keep the step going.
            while not finished.wait(MAIN_POLL_S):
                if cgroup.step_pids() and not cgroup.heads():
                    cgroup.kill_step()
                    return

        start = time.perf_counter()
        exec_id, stream = start_exec(
            api, self._container.id, wrapped, workdir=workdir, user=self.user, stdin=stdin
        )
        watch = DiskWatch(self.workspace, disk_mb, lambda: cgroup.kill_step())
        watch.start()
        watchdog = threading.Timer(timeout_s + WATCHDOG_SLACK_S, on_timeout)
        watchdog.daemon = True
        watchdog.start()
        main = threading.Thread(target=watch_main, daemon=True)
        main.start()
        try:
            for chunk in stream:
                capture.feed(chunk)
            exit_code = api.exec_inspect(exec_id).get("ExitCode")
            oom_after, peak_mb = cgroup.oom_kills(), cgroup.peak_mb()
        finally:
            finished.set()
            watchdog.cancel()
            disk = watch.stop()
            # The step is over: nothing it started may live on (a double-forked daemon
            # included), whatever went wrong; failing that, the container goes.
            if not cgroup.kill_step() or not empty_folders(self._scratch_fds):
                self._discard()
        return step_result(
            shell,
            exit_code,
            time.perf_counter() - start,
            timeout_s,
            capture,
            disk=disk,
            fired=fired.is_set(),
            oom_kills=(oom_before, oom_after),
            peak_mb=peak_mb,
        )

    # -- ownership -------------------------------------------------------------------------
    def _hand_over(self) -> None:
        """As root, the sandbox user must own the workspace (files the host wrote included)."""
        if self.as_root:
            chown_tree(self.workspace, SANDBOX_UID, SANDBOX_UID)

    def close(self) -> None:
        """Remove the container and mounts; as root, give the workspace back to the host user."""
        if self._closed:
            return
        self._closed = True
        container = self._container
        self._discard()
        self._container = container  # its id stays readable
        if self.mounts is not None:
            self.mounts.close()
        if self.as_root and self.workspace.is_dir():
            chown_tree(self.workspace, os.getuid(), os.getgid())
        self._owner.release()
