"""Probes of what the host does with the workspace after a step: reads and diffs, bounded.

The agent picks what lies in its workspace when the host looks: a FIFO where the host reads a
CSV would block a plain open() forever, a link would take the read out of the workspace, and
one big rewritten text file would cost a full line diff. Each probe runs the host's own code
in a thread with a deadline and passes only when it returns in time with nothing leaked.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..agent.tweak import columns_of
from ..workspace import Workspace

DEADLINE_S = 5.0
BIG_MB = 16
SPECIALS = """
import os
for name in ("sample_submission.csv", "train.csv", "test.csv"):
    if os.path.lexists(name):
        os.remove(name)
os.mkfifo("sample_submission.csv")
os.symlink({target!r}, "train.csv")
os.symlink({target!r}, "test.csv")
print("SPECIALS:made")
"""
BIG = f"""
import sys
tag = sys.argv[1]
with open("big.csv", "w") as fh:
    for i in range({BIG_MB} * 1024 * 1024 // 40):
        fh.write(f"{{tag}},{{i:012d}},a row of a big file\\n")
print("BIG:made")
"""


def _within(seconds: float, fn: Callable[[], Any]) -> tuple[bool, Any, float]:
    """(returned in time, its result or error, seconds taken); a hung call is left behind in
    a daemon thread."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(fn())
        except Exception as exc:  # noqa: BLE001 - reported as the probe's detail
            box.append(exc)

    start = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive(), box[0] if box else None, time.monotonic() - start


def hostreads_probes(executor: Any, ws: Path, home: Path, session_id: str, report: Any) -> None:
    """Add the probes of the host's bounded reads and change summary to `report`."""

    def run(cmd: str) -> Any:
        return executor.run(cmd, cwd=ws, timeout_s=120, mem_mb=512)

    secret = f"HOSTSECRET{secrets.token_hex(6)}"
    outside = home / f"hostreads-{secrets.token_hex(3)}.csv"
    outside.write_text(f"id,{secret},target\n1,2,3\n")
    (ws / "specials.py").write_text(SPECIALS.format(target=str(outside)))
    res = run("python specials.py")
    done, got, took = _within(DEADLINE_S, lambda: columns_of(ws))
    leaked = secret in repr(got)
    report.add(
        "host reads: a FIFO and links in place of the CSVs neither hang nor leak",
        "SPECIALS:made" in res.output and done and not leaked,
        (f"returned in {took:.2f} s" if done else f"hung past {DEADLINE_S:.0f} s")
        + ("; a file outside the workspace was read" if leaked else "")
        + ("" if "SPECIALS:made" in res.output else f"; the maker stopped: {res.output[-300:]!r}"),
    )
    run("rm -f specials.py sample_submission.csv train.csv test.csv")
    outside.unlink(missing_ok=True)

    meta = home / "snapshots" / f"{session_id}-hostreads-{secrets.token_hex(3)}"
    (ws / "big.py").write_text(BIG)
    probe_ws = Workspace(ws, meta)
    first = run("python big.py a")
    before = probe_ws.snapshot("before").get("big.csv")
    second = run("python big.py b")
    after = probe_ws.snapshot("after").get("big.csv")
    made = "BIG:made" in first.output and "BIG:made" in second.output and before and after
    done, diff, took = (
        _within(DEADLINE_S, lambda: probe_ws.diff_objects("big.csv", before, after))
        if made
        else (False, None, 0.0)
    )
    small = isinstance(diff, str) and len(diff) < 20_000
    report.add(
        f"change summary: a {BIG_MB} MB rewrite is summarised within {DEADLINE_S:.0f} s",
        bool(made) and done and small,
        (
            f"{took:.2f} s, {len(diff) if isinstance(diff, str) else 0} characters"
            if done
            else f"still diffing after {DEADLINE_S:.0f} s"
        )
        if made
        else f"the writer stopped: {(first.output + second.output)[-300:]!r}",
    )
    run("rm -f big.py big.csv")
