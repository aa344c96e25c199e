"""`mlagent run / resume / fork / sessions` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .agent_helpers import research, write_replay
from .conftest import TINY, bwrap_ready
from .test_cli import mlagent

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

RESPONSES = [
    research("List Files", {"dir_path": "."}),
    research("Execute Script", {"script_name": "train.py"}),
    research("Validate", {}),
    research("Final Answer", {"final_answer": "done"}),
]


def test_run_show_export_replay(tmp_path: Path) -> None:
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "r.jsonl", RESPONSES)
    proc = mlagent(
        "run",
        "--task-dir",
        str(TINY),
        "--model",
        f"replay:{replay}",
        "--json",
        home=home,
        check=True,
    )
    out = json.loads(proc.stdout)
    assert set(out) >= {
        "session_id",
        "steps",
        "status",
        "final_score",
        "valid",
        "medal",
        "improvement_pct",
        "success",
        "parse_errors",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "wall_seconds",
    }
    assert out["status"] == "finished" and out["steps"] == 4 and out["valid"]
    assert out["improvement_pct"] == 0.0 and out["success"] is False
    sid = out["session_id"]
    listed = json.loads(mlagent("sessions", "list", "--json", home=home, check=True).stdout)
    assert [s["id"] for s in listed["sessions"]] == [sid]
    shown = json.loads(mlagent("sessions", "show", sid, "--json", home=home, check=True).stdout)
    assert [s["action"] for s in shown["steps"]] == [
        "List Files",
        "Execute Script",
        "Validate",
        "Final Answer",
    ]
    assert [s["split"] for s in shown["scores"]] == ["validate", "submit"] and shown["plans"]
    exported = tmp_path / "again.jsonl"
    mlagent("sessions", "export", sid, "--responses", "--out", str(exported), home=home, check=True)
    again = json.loads(
        mlagent(
            "run",
            "--task-dir",
            str(TINY),
            "--model",
            f"replay:{exported}",
            "--json",
            home=home,
            check=True,
        ).stdout
    )
    assert again["final_score"] == out["final_score"] and again["steps"] == 4
    events = mlagent("sessions", "export", sid, "--jsonl", home=home, check=True).stdout
    kinds = [json.loads(line)["payload"]["kind"] for line in events.splitlines()]
    assert kinds[0] == "session_started" and kinds[-1] == "session_ended"


def test_resume_and_fork_from_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "r.jsonl", RESPONSES)
    first = json.loads(
        mlagent(
            "run",
            "--task-dir",
            str(TINY),
            "--model",
            f"replay:{replay}",
            "--max-steps",
            "2",
            "--json",
            home=home,
            check=True,
        ).stdout
    )
    assert first["status"] == "budget"
    sid = first["session_id"]
    spent = mlagent("resume", sid, "--json", home=home)  # its budget would run nothing
    assert spent.returncode == 2 and "step budget of 2 used" in spent.stderr
    assert f"mlagent resume {sid} --max-steps N" in spent.stderr
    resumed = json.loads(
        mlagent("resume", sid, "--max-steps", "1", "--json", home=home, check=True).stdout
    )
    assert resumed["session_id"] == sid and resumed["steps"] == 3  # one step more
    assert resumed["reason"] == "step budget of 1 used (counted from step 2)"
    forked = json.loads(
        mlagent(
            "fork", sid, "--step", "1", "--max-steps", "4", "--json", home=home, check=True
        ).stdout
    )
    assert forked["session_id"] != sid and forked["status"] == "finished"
    assert forked["steps"] == 4  # 3 new steps: List Files of the parent, then its own
    other = write_replay(tmp_path / "other.jsonl", RESPONSES[1:2] + RESPONSES[3:])
    proc = mlagent(
        "fork", sid, "--step", "1", "--model", f"replay:{other}", "--json", home=home, check=True
    )
    again = json.loads(proc.stdout)  # another model starts at its own first response
    assert again["status"] == "finished" and again["valid"] and again["steps"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resume", "no-such-session"], "no session 'no-such-session'"),
        (["fork", "no-such-session", "--step", "1"], "no session"),
        (["run", "--task", "no-such-task", "--model", "replay:x.jsonl"], "unknown task"),
        (["run", "--task-dir", str(TINY), "--model", "replay:/nonexistent.jsonl"], "replay"),
        (["sessions", "show", "nope"], "no session 'nope'"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    proc = mlagent(*args, home=tmp_path / "home")
    assert proc.returncode != 0 and message in proc.stderr and "Traceback" not in proc.stderr


def test_resume_of_finished_session_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "r.jsonl", RESPONSES)
    sid = json.loads(
        mlagent(
            "run",
            "--task-dir",
            str(TINY),
            "--model",
            f"replay:{replay}",
            "--json",
            home=home,
            check=True,
        ).stdout
    )["session_id"]
    proc = mlagent("resume", sid, home=home)
    assert proc.returncode == 2 and "is finished" in proc.stderr
    proc = mlagent("fork", sid, "--step", "7", home=home)
    assert proc.returncode == 2 and "no completed step 7" in proc.stderr


def test_listing_status_and_replay_read_well_at_80_columns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    long_dir = tmp_path / ("a-folder-with-a-long-name-" * 3)
    long_dir.mkdir()
    replay = write_replay(long_dir / "responses-of-a-long-name.jsonl", RESPONSES[:1])
    sid = json.loads(
        mlagent(
            "run", "--task-dir", str(TINY), "--model", f"replay:{replay}", "--json", home=home
        ).stdout
    )["session_id"]
    env_80 = {"COLUMNS": "80"}
    listed = mlagent("sessions", "list", home=home, env=env_80, check=True).stdout
    assert sid in listed  # whole, on one line
    assert max(len(line) for line in listed.splitlines()) <= 80
    status = mlagent("logs", "status", home=home, env=env_80, check=True).stdout
    assert "journal mode" in status and "{" not in status and "'" not in status
    assert (
        json.loads(mlagent("logs", "status", "--json", home=home, check=True).stdout)["sessions"]
        == 1
    )
    missing = mlagent("replay", "/missing.jsonl", home=home)
    assert missing.returncode == 2
    assert "/missing.jsonl is a path that does not exist" in missing.stderr
    a_file = mlagent("replay", str(replay), home=home)
    assert "is a file, not a session id" in a_file.stderr
    assert "mlagent run --model replay:FILE" in a_file.stderr
