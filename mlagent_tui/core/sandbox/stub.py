"""A child spawned ahead of time, already in its pids cgroup, waiting for its command.

Joining a cgroup costs about 13 ms here (the kernel waits for an RCU grace period), which is
half the local executor's overhead budget. The executor therefore keeps one stub ready:
made in the background while the previous command runs, it only has to `exec` when asked.
"""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

from .limits import PidsCgroup


class Stub:
    def __init__(self, env: dict[str, str], max_pids: int, script_dir: Path) -> None:
        self.cgroup = PidsCgroup(max_pids)
        self.script = script_dir / f"launch-{os.getpid()}-{id(self)}.sh"
        read_end, self._write_end = os.pipe()
        # The command arrives on stdin; the command itself then gets /dev/null as its stdin.
        stub = 'read -r s; exec </dev/null; [ -n "$s" ] || exit 0; . "$s"'
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", stub],
            cwd="/",
            env=env,
            stdin=read_end,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        os.close(read_end)
        if self.cgroup.procs_file is not None:
            try:
                self.cgroup.procs_file.write_text(str(self.proc.pid))
            except OSError:
                self.cgroup.remove()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def launch(self, script: str, *, limits: dict[int, int]) -> subprocess.Popen[bytes]:
        """Set the rlimits on the waiting child, then let it source `script` (which execs)."""
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
