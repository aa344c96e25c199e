"""What the learning curve reads back from its work home's store: demonstrations and an sft run
an earlier run left (`--reuse-demos`, `--reuse-sft`), and the RL run's per-update counts."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any


def update_counts(home: Path, run_id: str) -> dict[str, list[Any]]:
    """Per update: answers that beat the script they improve, guided groups, and the anchor's
    loss where the run had one."""
    rows = sqlite3.connect(home / "mlagent.db").execute(
        'SELECT extra FROM training_updates WHERE run_id = ? ORDER BY "update"', (run_id,)
    )
    extras = [json.loads(r[0] or "{}") for r in rows]
    counts: dict[str, list[Any]] = {
        k: [int(e.get(k, 0)) for e in extras] for k in ("better_than_parent", "guided")
    }
    if any("anchor_loss" in e for e in extras):
        counts["anchor_loss"] = [round(float(e.get("anchor_loss", 0.0)), 4) for e in extras]
    return counts


def reused_demos(home: Path) -> dict[str, Any]:
    """Demonstrations an earlier run of this script recorded in `home` before its first training
    run (not the RL phase's Drafts), and the wall time they took (first start to last end)."""
    db = sqlite3.connect(home / "mlagent.db")
    rows = db.execute(
        "SELECT agent, COUNT(*), SUM(valid), MIN(started_at), MAX(ended_at) FROM sessions "
        "WHERE model LIKE 'reference:%' AND started_at < "
        "COALESCE((SELECT MIN(started_at) FROM training_runs), 1e18) GROUP BY agent"
    ).fetchall()
    first, last = min(r[3] for r in rows), max(r[4] for r in rows)
    return {
        "reused": str(home),
        "seconds": round(last - first, 1),
        **{r[0]: {"sessions": r[1], "valid": r[2]} for r in rows},
    }


def reused_sft(home: Path) -> dict[str, Any]:
    """The sft run an earlier run of this script left, its wall time and updates."""
    db = sqlite3.connect(home / "mlagent.db")
    run_id, started, ended = db.execute(
        "SELECT id, started_at, ended_at FROM training_runs WHERE recipe = 'sft' "
        "AND status = 'finished' ORDER BY started_at DESC LIMIT 1"
    ).fetchone()
    updates = db.execute(
        "SELECT COUNT(*) FROM training_updates WHERE run_id = ?", (run_id,)
    ).fetchone()[0]
    return {"reused": run_id, "seconds": round(ended - started, 1), "updates_done": updates}
