"""Exit codes, budgets, failure reasons and interrupts of `mlagent run | resume | fork`, as a
script sees them: real `mlagent` processes, real signals, a real home folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlagent_tui.core.store import Store

from .agent_helpers import research, write_replay
from .conftest import ROOT, TINY, bwrap_ready
from .test_cli import mlagent

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

SLOW = "import time\nprint('working', flush=True)\ntime.sleep(60)\n"


def run_args(replay: Path, *extra: str) -> list[str]:
    return ["run", "--task-dir", str(TINY), "--model", f"replay:{replay}", "--json", *extra]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-steps", "0"),
        ("--max-steps", "-1"),
        ("--max-minutes", "0"),
        ("--max-cost", "-2"),
        ("--stuck-after", "-1"),
    ],
)
def test_a_budget_of_zero_or_less_is_a_usage_error(tmp_path: Path, option: str, value: str) -> None:
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "r.jsonl", [research("List Files", {"dir_path": "."})])
    proc = mlagent(*run_args(replay, option, value), home=home)
    assert proc.returncode == 2 and option in proc.stderr and "Traceback" not in proc.stderr
    assert Store(home / "mlagent.db").sessions() == []  # nothing ran, nothing was recorded


def test_exit_codes_and_the_reasons_a_script_reads(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bad = [
        research("Write File", {"file_name": "x.py", "content": "def f(\n"}),
        research("Execute Script", {"script_name": "x.py"}),
        research("Read File", {"file_name": "notes/missing.txt"}),
    ]
    proc = mlagent(
        *run_args(write_replay(tmp_path / "bad.jsonl", bad), "--max-steps", "3"), home=home
    )
    assert proc.returncode == 3, proc.stderr  # a budget ended, no valid submission
    out = json.loads(proc.stdout)
    assert out["status"] == "budget"
    assert out["why"].startswith("step budget of 3 used; no submission: submission.csv does not")
    assert out["last_error"] == (
        "step 3 (Read File): Error: notes/missing.txt does not exist. "
        "Use List Files to see what is there."
    )
    lines = proc.stderr.splitlines()
    # progress lines: the error itself, whole (not cut at 80 or 90 columns), with where it is
    assert "step 2: Execute Script [error] SyntaxError: '(' was never closed (x.py, line 1)" in (
        proc.stderr
    )
    assert any(
        line.startswith("step 3: Read File [error]")
        and line.endswith("Use List Files to see what is there.")
        for line in lines
    )
    assert "None" not in proc.stderr

    good = [research("Execute Script", {"script_name": "train.py"})]
    proc = mlagent(
        *run_args(write_replay(tmp_path / "good.jsonl", good), "--max-steps", "1"), home=home
    )
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["valid"]  # the budget's auto-submit is a valid one
    assert out["why"] == "step budget of 1 used; auto-submitted, score 1"

    broken = tmp_path / "broken"
    shutil.copytree(TINY, broken)
    (broken / "prepare.py").write_text("raise SystemExit('the data source is gone')\n")
    proc = mlagent(
        "run", "--task-dir", str(broken), "--model", f"replay:{tmp_path / 'good.jsonl'}", home=home
    )
    assert proc.returncode == 1 and "failed preparing the task" in proc.stderr
    assert "the data source is gone" in proc.stderr and "Traceback" not in proc.stderr
    proc = mlagent("run", "--task", "no-such-task", "--model", "replay:x.jsonl", home=home)
    assert proc.returncode == 2 and "unknown task" in proc.stderr
    # a bench whose run crashed still writes its report, and says so by its exit code
    bench = mlagent(
        "bench", "--task-dir", str(broken), "--models", f"replay:{tmp_path / 'good.jsonl'}",
        "--json", home=home,
    )  # fmt: skip
    assert bench.returncode == 1 and "1 run(s) crashed" in bench.stderr
    assert [r["status"] for r in json.loads(bench.stdout)["runs"]] == ["crashed"]


def start(home: Path, replay: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "mlagent_tui", *run_args(replay)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        # a shell that ran us in the background ignores SIGINT, and children inherit that;
        # give the run the default, as an interactive terminal would
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def running_script(home: Path) -> str:
    """The session id once its script is running (it printed), within 90 seconds."""
    deadline = time.time() + 90
    while time.time() < deadline:
        if (home / "mlagent.db").exists():
            store = Store(home / "mlagent.db")
            try:
                for row in store.sessions():
                    if any(e.kind == "exec_output" for e in store.events(row["id"])):
                        return row["id"]
            finally:
                store.close()
        time.sleep(0.1)
    raise AssertionError("the script never started")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_records_interrupted_and_resume_goes_on(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    home = tmp_path / "home"
    responses = [
        research("Write File", {"file_name": "slow.py", "content": SLOW}),
        research("Execute Script", {"script_name": "slow.py"}),
        research("Execute Script", {"script_name": "train.py"}),
        research("Final Answer", {"final_answer": "done"}),
    ]
    proc = start(home, write_replay(tmp_path / "r.jsonl", responses))
    sid = running_script(home)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert json.loads(out)["status"] == "interrupted"
    assert f"resume with: mlagent resume {sid}" in err
    row = Store(home / "mlagent.db").session(sid)
    assert row["status"] == "interrupted" and row["end_reason"].startswith("interrupted by SIG")
    if sig != signal.SIGINT:
        return
    # the interrupted step runs again on resume; a person made the script fast meanwhile
    (Path(row["workspace"]) / "slow.py").write_text("print('fast now')\n")
    resumed = mlagent("resume", sid, "--json", home=home)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["status"] == "finished" and result["valid"] and result["steps"] == 4
