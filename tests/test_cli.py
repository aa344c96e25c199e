"""The CLI as a user runs it: real processes, a real home folder, --json output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, TINY, bwrap_ready

COMMANDS = [
    [],
    ["tasks"],
    ["tasks", "list"],
    ["tasks", "show"],
    ["tasks", "prepare"],
    ["tasks", "baseline"],
    ["tasks", "grade"],
    ["tasks", "check"],
    ["sandbox"],
    ["sandbox", "run"],
    ["sandbox", "build"],
    ["sandbox", "check"],
    ["logs"],
    ["logs", "path"],
    ["logs", "status"],
    ["logs", "backup"],
    ["bench"],
    ["bench", "list"],
    ["bench", "report"],
    ["bench", "aup"],
    ["tasks", "synth"],
]


def mlagent(
    *args: str, home: Path | None = None, check: bool = False, env: dict[str, str] | None = None
):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    if home is not None:
        env["MLAGENT_HOME"] = str(home)
    proc = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=ROOT,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "mlagent")
def test_every_command_has_help(cmd: list[str]) -> None:
    proc = mlagent(*cmd, "--help", check=True)
    assert "Usage" in proc.stdout


def test_trainer_has_help() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from trainer.cli import main; main()", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0 and "mlagent-train" in proc.stdout


def test_tasks_list_json_covers_the_suite() -> None:
    data = json.loads(mlagent("tasks", "list", "--json", check=True).stdout)
    names = {t["name"] for t in data["tasks"]}
    assert len(names) >= 12
    for row in data["tasks"]:
        assert set(row) >= {
            "name",
            "modality",
            "metric",
            "higher_is_better",
            "baseline",
            "thresholds",
        }


def test_show_unknown_task_is_a_clear_error() -> None:
    proc = mlagent("tasks", "show", "no-such-task")
    assert proc.returncode == 1 and "unknown task 'no-such-task'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_task_dir_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text("name = 'x'\n")
    proc = mlagent("tasks", "show", "--task-dir", str(tmp_path))
    assert proc.returncode == 1 and "task.toml" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_baseline_records_a_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = json.loads(
        mlagent(
            "tasks", "baseline", "--task-dir", str(TINY), "--json", home=home, check=True
        ).stdout
    )
    assert out["valid"] and out["score"] == pytest.approx(1.0)
    assert set(out) >= {"score", "valid", "medal", "above_median", "exec_seconds", "session_id"}
    status = json.loads(mlagent("logs", "status", "--json", home=home, check=True).stdout)
    assert status["sessions"] == 1 and status["events"] >= 5 and status["journal_mode"] == "wal"
    assert mlagent("logs", "path", home=home, check=True).stdout.strip().endswith("mlagent.db")
    backup = tmp_path / "backup.db"
    mlagent("logs", "backup", str(backup), home=home, check=True)
    assert backup.stat().st_size > 0


def test_prepare_then_grade(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    mlagent(
        "tasks", "prepare", "--task-dir", str(TINY), "--workspace", str(ws), home=home, check=True
    )
    assert (ws / "train.csv").exists()
    proc = mlagent(
        "tasks", "grade", "--task-dir", str(TINY), "--workspace", str(ws), "--json", home=home
    )
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"].startswith("no submission")
    subprocess.run([sys.executable, "train.py"], cwd=ws, check=True, capture_output=True)
    out = json.loads(
        mlagent(
            "tasks",
            "grade",
            "--task-dir",
            str(TINY),
            "--workspace",
            str(ws),
            "--split",
            "test",
            "--json",
            home=home,
            check=True,
        ).stdout
    )
    assert out["valid"] and out["score"] == pytest.approx(1.0) and out["medal"] is None


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_sandbox_run_json(tmp_path: Path) -> None:
    out = json.loads(
        mlagent(
            "sandbox",
            "run",
            "--workspace",
            str(tmp_path),
            "--timeout",
            "1",
            "--json",
            "--",
            "sleep",
            "30",
        ).stdout
    )
    assert out["timed_out"] and out["killed_reason"] == "timeout"
    assert set(out) >= {
        "exit_code",
        "duration_s",
        "peak_rss_mb",
        "timed_out",
        "killed_reason",
        "output_truncated",
    }
    ok = json.loads(
        mlagent(
            "sandbox",
            "run",
            "--workspace",
            str(tmp_path),
            "--json",
            "--",
            "python",
            "-c",
            "print(1)",
            check=True,
        ).stdout
    )
    assert ok["exit_code"] == 0


def test_sandbox_run_missing_workspace(tmp_path: Path) -> None:
    proc = mlagent("sandbox", "run", "--workspace", str(tmp_path / "nope"), "--", "true")
    assert proc.returncode == 1 and "workspace does not exist" in proc.stderr


def test_unusable_home_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    proc = mlagent("logs", "status", "--home", str(blocker))
    assert proc.returncode == 2 and "cannot use home folder" in proc.stderr


def test_app_without_a_terminal_says_so(tmp_path: Path) -> None:
    from mlagent_tui.core.events import Event, SessionStarted
    from mlagent_tui.core.home import Home
    from mlagent_tui.core.store import Store

    home = tmp_path / "home"
    store = Store(Home.at(home).db_path)  # a stored session, so only the terminal is missing
    store.append(Event(session_id="s1", seq=1, ts=0.0, payload=SessionStarted(task="t")))
    store.close()
    for args in ([], ["replay", "s1"]):
        proc = mlagent(*args, home=home)
        assert proc.returncode == 1 and "needs a terminal" in proc.stderr
        assert "Traceback" not in proc.stderr
