"""A child spawned ahead of time, already in its step cgroup, waiting for its command.

Joining a cgroup costs about 10-13 ms per hierarchy here (the kernel waits for an RCU grace
period), which is half the local executor's overhead budget. The executor therefore keeps one
stub ready: made in the background while the previous command runs, it only has to `exec`
when asked. The host writes the stub's pid into cgroup.procs, so the command needs no right on
the cgroup; its memory limit, known only at launch, is one write to memory.max.
"""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Sequence
from pathlib import Path

from .limits import StepCgroup


class Stub:
    def __init__(
        self,
        env: dict[str, str],
        max_pids: int,
        script_dir: Path,
        *,
        memory_cgroup: bool = True,
        wrap: Sequence[str] = (),
        setup: str = "",
    ) -> None:
        """`wrap` prefixes the stub's command line and `setup` runs before it waits (both
        prepare, as root, the namespace a root mlagent's sandbox starts from)."""
        self.cgroup = StepCgroup(max_pids, memory=memory_cgroup)
        self.script = script_dir / f"launch-{os.getpid()}-{id(self)}.sh"
        read_end, self._write_end = os.pipe()
        # The command arrives on stdin; the command itself then gets /dev/null as its stdin.
        stub = 'read -r s; exec </dev/null; [ -n "$s" ] || exit 0; . "$s"'
        self.proc = subprocess.Popen(
            [*wrap, "/bin/sh", "-c", setup + stub],
            cwd="/",
            env=env,
            stdin=read_end,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        os.close(read_end)
        self.cgroup.join(self.proc.pid)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def launch(
        self, script: str, *, limits: dict[int, int], mem_mb: int
    ) -> subprocess.Popen[bytes]:
        """Set the limits on the waiting child, then let it source `script` (which execs)."""
        self.cgroup.set_memory(mem_mb)
        for which, value in limits.items():
            try:
                resource.prlimit(self.proc.pid, which, (value, value))
            except (ValueError, OSError):
                if which != resource.RLIMIT_NPROC:
                    raise
        self.script.write_text(script)
        os.write(self._write_end, f"{self.script}\n".encode())
        os.close(self._write_end)
        self._write_end = -1
        return self.proc

    def discard(self) -> None:
        """Let an unused stub exit (EOF on its pipe) and drop its cgroup."""
        if self._write_end >= 0:
            os.close(self._write_end)
            self._write_end = -1
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self.cgroup.remove()
        self.script.unlink(missing_ok=True)
