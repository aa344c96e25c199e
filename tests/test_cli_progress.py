"""A headless `mlagent run` says what it is doing before the first step ends: the model loading,
then each step as it starts (the model may think for a minute), on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .agent_helpers import research, write_replay
from .conftest import TINY, bwrap_ready
from .test_cli import mlagent

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def test_run_prints_the_load_and_each_step_s_start(tmp_path: Path) -> None:
    replay = write_replay(
        tmp_path / "r.jsonl", [research("List Files", {"dir_path": "."}), research("Validate", {})]
    )
    proc = mlagent(
        "run", "--task-dir", str(TINY), "--model", f"replay:{replay}", "--max-steps", "2",
        "--json", home=tmp_path / "home",
    )  # fmt: skip
    assert json.loads(proc.stdout)["steps"] == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("loading the model replay:")

    def at(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    assert at("step 1: started") < at("step 1: List Files [ok]") < at("step 2: started")
    assert at("step 2: started") < at("step 2: Validate")


def test_a_bad_model_is_still_one_line(tmp_path: Path) -> None:
    proc = mlagent(
        "run", "--task-dir", str(TINY), "--model", f"replay:{tmp_path / 'none.jsonl'}",
        home=tmp_path / "home",
    )  # fmt: skip
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "loading" not in lines[0]
