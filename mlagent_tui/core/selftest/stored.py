"""Probes of the data the host stores about a workspace and acts on later.

The agent makes files in the sandbox; the host snapshots them (a manifest), and fork, undo and
landing a bundle later write what stored data names. Each probe passes only when the attack
fails: a tree of many names costs the host no more than its cap (and the snapshot says so),
odd names the agent can make do not break reading the snapshot back, and a manifest or
journal row naming `..` or an absolute path is refused with nothing written outside.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from ..workspace import Workspace, WorkspaceError

CAP = 500
MANY = f"""
import os
os.makedirs("many", exist_ok=True)
for i in range({CAP * 3}):
    open(f"many/f{{i:05d}}", "w").close()
print("MANY:made")
"""
ODD = r"""
names = ["..\\..\\back", "new\nline", "tab\there", "\udcff-not-utf8", "-rf", " space "]
for name in names:
    try:
        open(name, "w").write("x")
    except (OSError, ValueError) as exc:
        print("cannot make", repr(name), exc)
print("ODD:made")
"""


def stored_probes(executor: Any, ws: Path, home: Path, session_id: str, report: Any) -> None:
    """Add one probe per attack on stored data to `report` (a SelfTest)."""

    def run(cmd: str) -> Any:
        return executor.run(cmd, cwd=ws, timeout_s=60, mem_mb=512)

    meta = home / "snapshots" / f"{session_id}-stored-{secrets.token_hex(3)}"
    (ws / "many.py").write_text(MANY)
    res = run("python many.py")
    probe_ws = Workspace(ws, meta, max_files=CAP)
    probe_ws.snapshot("many")
    manifest = probe_ws.load_manifest("many")
    report.add(
        "many files: the snapshot stops at the cap and says so",
        "MANY:made" in res.output
        and manifest.over_limit is not None
        and len(manifest.files) <= CAP,
        f"{len(manifest.files)} names kept of over {CAP * 3}: {manifest.over_limit}"
        + ("" if "MANY:made" in res.output else f"; the maker stopped: {res.output[-300:]!r}"),
    )
    run("rm -rf many many.py")

    (ws / "odd.py").write_text(ODD)
    run("python odd.py")
    try:
        fresh = Workspace(ws, meta)
        fresh.snapshot("odd")
        kept = sorted(fresh.manifest("odd"))
        ok, detail = all(".." not in p.split("/") for p in kept), f"kept {len(kept)} names"
    except WorkspaceError as exc:
        ok, detail = False, f"the snapshot of odd names does not read back: {exc}"
    report.add("odd file names the agent makes keep the snapshot readable", ok, detail)

    target = (ws / "../../stored-escape").resolve()
    absolute = home / f"abs-escape-{secrets.token_hex(3)}"
    path = meta / "snapshots" / "odd.json"
    data = json.loads(path.read_text())
    digest = next(iter(fresh.manifest("odd").values()), "0" * 64)
    data.setdefault("changes", {}).update({"../../stored-escape": digest, str(absolute): digest})
    path.write_text(json.dumps(data))
    (home / "probe-fork").mkdir(exist_ok=True)
    refused = _refused(lambda: Workspace(home / "probe-fork", meta).restore("odd", source=fresh))
    (meta / "edits.jsonl").write_text(
        json.dumps({"path": "../../stored-escape", "before_hash": None, "after_hash": digest})
        + "\n"
    )
    refused_undo = _refused(fresh.undo_last_edit)
    escaped = target.exists() or absolute.exists()
    report.add(
        "a manifest or journal row naming .. or an absolute path is refused",
        refused and refused_undo and not escaped,
        f"restore refused: {refused}, undo refused: {refused_undo}, wrote outside: {escaped}",
    )


def _refused(action: Any) -> bool:
    try:
        action()
    except WorkspaceError:
        return True
    return False
