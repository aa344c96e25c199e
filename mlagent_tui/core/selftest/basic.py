"""The basic probes of `mlagent sandbox check` (network, private files, limits); runs them all."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel, Field

from ..sandbox import make_executor
from .registry import CLASS_PROBES

NETWORK = """
import socket
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("NET:open")
except OSError as exc:
    print("NET:refused", exc)
"""
READ = """
import sys
for target in sys.argv[1:]:
    try:
        open(target).read()
        print("READ:ok", target)
    except OSError as exc:
        print("READ:denied", target, type(exc).__name__)
"""
WRITE = """
import sys
for target in sys.argv[1:]:
    try:
        open(target, "w").write("x")
        print("WRITE:ok", target)
    except OSError as exc:
        print("WRITE:denied", target, type(exc).__name__)
"""
MEMORY = "x = []\nwhile True:\n    x.append(bytearray(16 * 1024 * 1024))\n"
FLOOD = (
    "import sys\nline = 'y' * 99 + '\\n'\nfor _ in range(600_000):\n    sys.stdout.write(line)\n"
)
FORK = """
import os, time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
"""


class Probe(BaseModel):
    name: str
    ok: bool
    detail: str = ""


class SelfTest(BaseModel):
    backend: str
    isolation: str = ""
    ok: bool = True
    probes: list[Probe] = Field(default_factory=list)

    def add(self, name: str, ok: bool, detail: str = "") -> None:
        detail = " ".join(detail.split())  # one line, whatever the probe printed
        self.probes.append(Probe(name=name, ok=ok, detail=detail))
        self.ok = self.ok and ok


SESSION_ID = "selftest-" + secrets.token_hex(4)


def run_selftest(backend: str) -> SelfTest:
    report = SelfTest(backend=backend)
    base = Path(tempfile.mkdtemp(prefix="mlagent-selftest-"))
    # laid out like a session's, so the probes can look for the home and the session id
    ws, private = base / "workspaces" / SESSION_ID, base / "private" / SESSION_ID
    ws.mkdir(parents=True)
    private.mkdir(parents=True)
    (private / "answers.csv").write_text("id,target\n1,1\n")
    for name, src in [
        ("net.py", NETWORK),
        ("read.py", READ),
        ("write.py", WRITE),
        ("mem.py", MEMORY),
        ("flood.py", FLOOD),
        ("fork.py", FORK),
    ]:
        (ws / name).write_text(src)
    try:
        executor = make_executor(backend, workspace=ws, mem_mb=512)
    except Exception as exc:  # noqa: BLE001 - report, do not crash
        report.add("backend starts", False, str(exc))
        shutil.rmtree(base, ignore_errors=True)
        return report
    report.isolation = getattr(executor, "isolation", backend)
    try:
        _probes(executor, ws, private, report)
        for probe in CLASS_PROBES:
            try:
                probe(executor, ws, base, SESSION_ID, report)
            except Exception as exc:  # noqa: BLE001 - a probe that breaks is a failed probe
                report.add(probe.__name__, False, f"{type(exc).__name__}: {exc}")
    finally:
        executor.close()
        shutil.rmtree(base, ignore_errors=True)
    return report


def _probes(executor, ws: Path, private: Path, report: SelfTest) -> None:  # noqa: ANN001
    def run(cmd: str, **kw: object):  # noqa: ANN202
        return executor.run(cmd, cwd=ws, **{"timeout_s": 30, "mem_mb": 512, **kw})

    res = run("python -c 'print(1 + 1)'")
    report.add("runs python", res.ok and "2" in res.output, res.output[-200:])

    res = run("python net.py")
    report.add("network refused", "NET:refused" in res.output, res.output.strip()[-200:])

    targets = [str(private / "answers.csv"), f"../../private/{private.name}/answers.csv"]
    res = run("python read.py " + " ".join(targets))
    report.add("private files unreadable", "READ:ok" not in res.output, res.output.strip()[-300:])

    outside = ws.parent / "escaped.txt"
    res = run(f"python write.py {outside} ../escaped.txt /usr/escaped.txt")
    escaped = outside.exists() or Path("/usr/escaped.txt").exists()
    report.add(
        "writes outside the workspace refused",
        not escaped and "WRITE:ok" not in res.output,
        res.output.strip()[-300:],
    )

    res = run("python mem.py", mem_mb=256)
    report.add(
        "memory limit kills (reason memory)",
        res.killed_reason == "memory",
        f"exit {res.exit_code}, reason {res.killed_reason}, peak {res.peak_rss_mb} MB",
    )

    marker = f"mlagent-orphan-{secrets.token_hex(4)}"
    res = run(f"sh -c 'exec -a {marker} sleep 300' & sleep 300", timeout_s=1.0)
    time.sleep(0.2)
    left = _processes_named(marker)
    report.add(
        "time-out kills the whole group",
        res.timed_out and not left,
        f"timed_out={res.timed_out} left={left}",
    )

    start = time.perf_counter()
    res = run("python flood.py", timeout_s=60)
    report.add(
        "a flood of output is capped, not blocking",
        res.output_truncated and res.exit_code == 0 and len(res.output) < 1_000_000,
        f"{time.perf_counter() - start:.1f}s, kept {len(res.output)} chars",
    )

    res = run("python fork.py", timeout_s=3.0)
    left = _count_processes("fork.py")
    report.add(
        "a fork bomb is contained", left == 0, f"reason {res.killed_reason}, {left} processes left"
    )


def _processes_named(marker: str) -> list[str]:
    proc = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True)
    return [ln for ln in proc.stdout.splitlines() if "pgrep" not in ln]


def _count_processes(name: str) -> int:
    time.sleep(0.3)
    return sum(1 for ln in _processes_named(name) if str(os.getpid()) not in ln.split()[0])
