"""What `mlagent bench` prints, end to end: a parallel bench of several runs keeps its --json
on stdout and a line on stderr for each run's start, step and end; and loading local models in
parallel threads (as a bench's runs do) leaves the process its stdout and stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .agent_helpers import research, write_replay
from .conftest import ROOT, TINY, bwrap_ready
from .test_cli import mlagent

STEPS = [research("List Files", {"dir_path": "."}), research("Validate", {})]


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_a_parallel_bench_prints_its_json_and_each_run_s_progress(tmp_path: Path) -> None:
    replay = write_replay(tmp_path / "r.jsonl", STEPS)
    proc = mlagent(
        "bench", "--task-dir", str(TINY), "--models", f"replay:{replay}", "--runs", "4",
        "--parallel", "2", "--max-steps", "2", "--json", home=tmp_path / "home", check=True,
    )  # fmt: skip
    summary = json.loads(proc.stdout)  # one JSON object, nothing else on stdout
    assert summary["bench_id"].startswith("bench-")
    for i in range(4):
        mine = [line for line in proc.stderr.splitlines() if f"#{i}:" in line]
        assert any("started" in line for line in mine), proc.stderr
        assert any("step 1 List Files [ok]" in line for line in mine), proc.stderr
        assert any("step 2 Validate" in line for line in mine), proc.stderr
        assert any(line.rstrip().endswith(")") and ": done (" in line for line in mine)


SCRIPT = """
import sys, threading
from mlagent_tui.core.llm import LocalModel

def load():
    for _ in range(3):
        LocalModel(n_ctx=256, lookup=False)

threads = [threading.Thread(target=load) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("stdout is still there", flush=True)
print("stderr is still there", file=sys.stderr, flush=True)
"""


def test_parallel_model_loads_leave_stdout_and_stderr() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert "stdout is still there" in proc.stdout
    assert "stderr is still there" in proc.stderr
