"""`mlagent resume` of a session that has ended: refused without a new budget, its stored end
never rewritten; with a new budget it goes on as a new segment, the old end kept in its events."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from .agent_helpers import research, write_replay
from .conftest import TINY, bwrap_ready
from .test_cli import mlagent

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

MISSING = research("Execute Script", {"script_name": "nosuch.py"})


def _row(home: Path, sid: str) -> tuple:
    with sqlite3.connect(home / "mlagent.db") as db:
        return db.execute(
            "SELECT status, end_reason, ended_at FROM sessions WHERE id=?", (sid,)
        ).fetchone()


def _ends(home: Path, sid: str) -> list[dict]:
    with sqlite3.connect(home / "mlagent.db") as db:
        rows = db.execute(
            "SELECT payload FROM events WHERE session_id=? AND kind='session_ended' ORDER BY seq",
            (sid,),
        ).fetchall()
    return [json.loads(r[0]) for r in rows]


def test_resume_of_a_stopped_session_needs_a_budget_and_keeps_its_end(tmp_path: Path) -> None:
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "r.jsonl", [MISSING, MISSING, research("List Files", {})])
    first = json.loads(
        mlagent(
            "run",
            "--task-dir",
            str(TINY),
            "--model",
            f"replay:{replay}",
            "--stuck-after",
            "2",
            "--max-steps",
            "9",
            "--json",
            home=home,
        ).stdout
    )
    sid = first["session_id"]
    assert first["status"] == "stopped" and first["reason"].startswith("stuck:")
    before = _row(home, sid)

    proc = mlagent("resume", sid, home=home)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "has ended" in lines[0] and "--max-steps" in lines[0]
    assert _row(home, sid) == before and len(_ends(home, sid)) == 1

    going_on = json.loads(
        mlagent("resume", sid, "--max-steps", "1", "--json", home=home, check=False).stdout
    )
    assert going_on["steps"] == 3 and going_on["reason"].startswith("step budget of 1")
    ends = _ends(home, sid)
    assert [e["reason"] for e in ends][0] == first["reason"] and len(ends) == 2
    shown = mlagent("sessions", "show", sid, home=home, env={"COLUMNS": "200"}).stdout
    assert f"ended at step 2: stopped, {first['reason']}" in shown
    assert "resumed at step 2 with a new budget" in shown
    assert "ended at step 3: budget, step budget of 1 used" in shown
