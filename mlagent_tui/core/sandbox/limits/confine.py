"""A trusted host process (a task's grader) run under a memory limit of its own.

A grader runs on the host, beside the answers, so no sandbox holds it; a memory cgroup still
bounds what it may take (a 100 MB submission once grew one to 1.2 GB). The child waits on a
pipe until the host has moved it into its cgroup, so nothing it allocates escapes the count.
Without a memory cgroup an address-space rlimit is the backstop.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from pathlib import Path

from pydantic import BaseModel

from .cgroup import StepCgroup

# the child waits for one line on its stdin before it becomes the command (stdin /dev/null)
GATE = 'read -r _ || exit 125; exec </dev/null; exec "$@"'
MAX_PIDS = 1024


class Confined(BaseModel):
    """How a confined process ended."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    out_of_memory: bool = False  # the kernel killed it for its memory limit
    counted_by: str = "cgroup"  # or "address space" where no memory cgroup is available


def run_confined(
    cmd: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float, mem_mb: int
) -> Confined:
    """Run `cmd` to its end with at most `mem_mb` of memory; all its processes die with it."""
    cgroup = StepCgroup(MAX_PIDS)
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", GATE, "sh", *cmd],
            cwd=cwd,
            env=env,
            stdin=read_end,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError:
        os.close(write_end)
        cgroup.remove()
        raise
    finally:
        os.close(read_end)
    counted_by = "cgroup"
    if not (cgroup.join(proc.pid) and cgroup.set_memory(mem_mb)):
        counted_by = "address space"
        limit = (mem_mb * 2 + 2048) << 20  # numpy and friends reserve far more than they use
        try:
            resource.prlimit(proc.pid, resource.RLIMIT_AS, (limit, limit))
        except (ValueError, OSError):
            pass
    os.write(write_end, b"go\n")
    os.close(write_end)
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc.pid, cgroup)
        stdout, stderr = proc.communicate()
    finally:
        out_of_memory = cgroup.oom_kills() > 0
        _kill(proc.pid, cgroup)
        cgroup.remove()
    return Confined(
        returncode=proc.returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        out_of_memory=out_of_memory,
        counted_by=counted_by,
    )


def _kill(pgid: int, cgroup: StepCgroup) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    cgroup.kill_all()
