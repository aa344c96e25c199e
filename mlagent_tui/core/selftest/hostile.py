"""The probes of `mlagent sandbox check` that play an adversarial agent running as root.

Each one tries an attack that once worked and passes only when it fails: keeping
capabilities, remounting the host read-write, reading the host path of the workspace, filling
/tmp or the disk, leaving a daemon behind, swapping a read-only file, and winning a grade with
a symbolic link to the answers.
"""

from __future__ import annotations

import secrets
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CAPS = "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; id -u"
LEAKS = (
    "cat /proc/self/mountinfo; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; "
    "tr '\\0' ' ' < $p/environ; done 2>/dev/null; env; pwd"
)
FILL_TMP = (
    "chunk = b'x' * (16 << 20)\nwith open('/tmp/fill', 'wb') as f:\n"
    "    for _ in range(64):\n        f.write(chunk); f.flush()\nprint('TMP:full')\n"
)
FILL_DISK = (
    "chunk = b'x' * (4 << 20)\nfor i in range(64):\n"
    "    with open(f'fill{i}.bin', 'wb') as f:\n        f.write(chunk)\nprint('DISK:full')\n"
)


def hostile_probes(executor: Any, ws: Path, home: Path, session_id: str, report: Any) -> None:
    """Add one probe per attack to `report` (a SelfTest)."""

    def run(cmd: str, **kw: Any):  # noqa: ANN202
        return executor.run(cmd, cwd=ws, **{"timeout_s": 30, "mem_mb": 512, **kw})

    res = run(CAPS)
    lines = res.output.splitlines()
    caps = [int(ln.split()[1], 16) for ln in lines if ln.startswith("Cap")]
    uid = lines[-1].strip() if lines else "?"
    report.add(
        "no capabilities, not root",
        bool(caps) and not any(caps) and uid not in ("0", "?"),
        f"uid {uid}, caps {[hex(c) for c in caps]}",
    )

    marker = Path(f"/usr/mlagent-remount-{secrets.token_hex(4)}")
    res = run(f"mount -o remount,rw,bind /usr && touch {marker}; mount -o remount,rw / && echo RW")
    escaped = marker.exists()
    marker.unlink(missing_ok=True)
    report.add(
        "remounting the host read-write refused",
        not escaped and "RW" not in res.output.split(),
        res.output.strip()[-200:],
    )

    res = run(LEAKS)
    leaked = [s for s in (str(home), session_id) if s in res.output]
    report.add(
        "mountinfo, cmdline, environ name no host path",
        res.ok and not leaked,
        f"leaked {leaked}" if leaked else "home and session id not visible",
    )

    (ws / "fill_tmp.py").write_text(FILL_TMP)
    res = run("python fill_tmp.py", mem_mb=256)
    report.add(
        "/tmp is bounded (counts against memory)",
        "TMP:full" not in res.output,
        f"exit {res.exit_code}, reason {res.killed_reason}",
    )

    (ws / "fill_disk.py").write_text(FILL_DISK)
    res = run("python fill_disk.py", disk_mb=64)
    report.add(
        "workspace disk limit kills (reason disk)",
        res.killed_reason == "disk" and not res.ok,
        f"exit {res.exit_code}, reason {res.killed_reason}",
    )
    for leftover in ws.glob("fill*.bin"):
        leftover.unlink()

    name = f"mlagent-daemon-{secrets.token_hex(4)}"
    daemon = f"setsid sh -c 'exec -a {name} sleep 300' </dev/null >/dev/null 2>&1 &"
    run(f'sh -c "{daemon}"; sleep 0.2; exit 0')
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", name], capture_output=True, text=True).stdout.split()
    report.add("no process outlives its step", not left, f"{len(left)} left")

    (ws / "evaluate.py").write_text("print('evaluator')\n")
    swap = "chmod 666 evaluate.py; echo hacked > evaluate.py; rm -f evaluate.py"
    run(swap, read_only=["evaluate.py"])
    intact = (ws / "evaluate.py").is_file() and "hacked" not in (ws / "evaluate.py").read_text()
    report.add("read-only files stay read-only", intact, "")

    try:
        report.add(*_symlink_submission(executor))
    except Exception as exc:  # noqa: BLE001 - a probe that breaks is a failed probe
        report.add("a symlinked submission is refused", False, f"{type(exc).__name__}: {exc}")


def _symlink_submission(executor: Any) -> tuple[str, bool, str]:
    """A submission that links to the answers must never be graded as if it were them."""
    from ..tasks import find_task

    name = "a symlinked submission is refused"
    task = find_task()
    with tempfile.TemporaryDirectory(prefix="mlagent-selftest-grade-") as tmp:
        ws, private = Path(tmp) / "workspace", Path(tmp) / "private"
        try:
            task.prepare(ws, private, seed=0)
        except Exception as exc:  # noqa: BLE001 - report, do not crash
            return name, False, f"could not prepare {task.name}: {exc}"
        answers = private / "validate.csv"
        sub = task.spec.submission.file
        for target in (str(answers), "../private/validate.csv"):
            # made on the host, as a sandboxed script that learnt the path would: the grader
            # is what is probed here
            (ws / sub).unlink(missing_ok=True)
            (ws / sub).symlink_to(target)
            result = task.grade(ws, private, "validate", sandbox=executor.name)
            if result.valid or result.score is not None:
                return name, False, f"a link to {target} scored {result.score}"
    return name, True, "graded as invalid: " + (result.error or "")[:120]
