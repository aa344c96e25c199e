"""Probes of memory a sampler of RSS cannot see: files in /dev/shm and unmapped memfd buffers.

Each writes up to 1.5 GB in 16 MB chunks under a 512 MB limit and passes only when it is
stopped near the limit: killed with reason "memory", or refused (a full /dev/shm). Where no
memory cgroup counts the step the memfd probe fails, and its detail says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LIMIT_MB = 512
SHM_FILL = """
import sys
chunk = b"x" * (16 << 20)
try:
    for i in range(1, 97):  # files of 256 MB: a file-size rlimit stops none of them
        with open(f"/dev/shm/fill{i // 16}", "ab", buffering=0) as f:
            f.write(chunk)
        print("MB", i * 16, flush=True)
except OSError as exc:
    print("SHM:refused", exc, flush=True)
    sys.exit(1)
print("SHM:full", flush=True)
"""
MEMFD_FILL = """
import os
chunk = b"x" * (16 << 20)
fds = [os.memfd_create(f"hidden{n}") for n in range(6)]  # 256 MB each: no file-size rlimit
for i in range(1, 97):
    os.write(fds[(i - 1) // 16], chunk)
    print("MB", i * 16, flush=True)
print("MEMFD:full", flush=True)
"""


def written_mb(output: str) -> int:
    """How far a fill got, from the "MB n" lines it printed."""
    lines = output.splitlines()
    return max((int(ln.split()[1]) for ln in lines if ln.startswith("MB ")), default=0)


def memory_probes(executor: Any, ws: Path, home: Path, session_id: str, report: Any) -> None:
    """Add the /dev/shm and memfd probes to `report` (a SelfTest)."""

    def run(name: str, src: str):  # noqa: ANN202
        (ws / name).write_text(src)
        return executor.run(f"python {name}", cwd=ws, timeout_s=120, mem_mb=LIMIT_MB)

    res = run("shm_fill.py", SHM_FILL)
    got = written_mb(res.output)
    stopped = res.killed_reason == "memory" or "SHM:refused" in res.output
    report.add(
        f"/dev/shm is bounded ({LIMIT_MB} MB limit)",
        stopped and "SHM:full" not in res.output and got <= LIMIT_MB,
        f"wrote {got} MB; exit {res.exit_code}, reason {res.killed_reason}",
    )

    res = run("memfd_fill.py", MEMFD_FILL)
    got = written_mb(res.output)
    unseen = "" if res.killed_reason else f"; {res.isolation}"
    report.add(
        f"unmapped memfd counts as memory ({LIMIT_MB} MB limit)",
        res.killed_reason == "memory" and "MEMFD:full" not in res.output and got <= LIMIT_MB,
        f"wrote {got} MB; exit {res.exit_code}, reason {res.killed_reason}{unseen}",
    )
