"""The research agent's degenerate repetition: the measure, and its line in `mlagent-train eval`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trainer.cli import app
from trainer.repetition import repeated_phrase, step_repetition

from .agent_helpers import research, write_replay
from .conftest import bwrap_ready

LOOP = "1. Run the script. 2. Run the script. 3. Run the script. 4. Run the script."


def test_a_phrase_said_more_than_three_times_is_degenerate() -> None:
    assert repeated_phrase(LOOP) == ("run the script", 4)
    assert repeated_phrase("Run the script, run the script and run the script.") is None  # 3
    assert repeated_phrase("") is None and repeated_phrase("one two") is None
    got = step_repetition(
        [
            {"plan": LOOP, "thought": "go"},
            {"plan": "1. Execute train.py", "thought": "see " * 9},  # "see see see" x7
            {"plan": "1. look", "thought": "validate the submission"},
        ]
    )
    assert (got.steps, got.repetitive, got.share) == (3, 2, 0.6667)
    assert got.examples[0] == "run the script x4"
    assert "2 of 3 research steps (67%)" in got.line()


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_eval_reports_the_share_for_research_sessions(tmp_path: Path) -> None:
    responses = [
        research("Execute Script", {"script_name": "train.py"}, plan=LOOP),
        research("Final Answer", {"final_answer": "the starter"}),
    ]
    replay = write_replay(tmp_path / "research.jsonl", responses)
    args = ["eval", "--model", f"replay:{replay}", "--agent", "research"]
    args += ["--tasks", "breast-cancer", "--seeds", "4"]
    done = CliRunner().invoke(app, [*args, "--json"])
    assert done.exit_code == 0, done.stderr
    said = json.loads(done.stdout)["repetition"]
    assert said["steps"] == 2 and said["repetitive"] == 1 and said["share"] == 0.5
    text = CliRunner().invoke(app, args)
    assert "repetition: 1 of 2 research steps (50%)" in " ".join(text.stdout.split())
