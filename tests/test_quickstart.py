"""The README's quick start, command for command: the scripted session ends submitted with a
score, and `sessions list`/`show` find it (`replay` opens the app, so only its ID is checked)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, bwrap_ready

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def quick_start_commands() -> list[list[str]]:
    """The `sh` block under `## Quick start`, one argv per line, comments dropped."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def run(argv: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    assert argv[0] == ".venv/bin/mlagent"
    exe = ROOT / argv[0]  # the venv's entry point where there is one, else this interpreter's
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mlagent_tui"]
    env = {**os.environ, "MLAGENT_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        cmd + argv[1:], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    commands = quick_start_commands()
    assert [c[1] for c in commands] == ["run", "sessions", "sessions", "replay"]
    home = tmp_path / "home"
    done = run(commands[0], home)
    assert done.returncode == 0, done.stderr
    assert "submitted (Final Answer); score 0.9739 (silver)" in done.stdout
    listed = run(commands[1], home)
    assert listed.returncode == 0, listed.stderr
    ids = run([*commands[1], "--json"], home)
    (session,) = json.loads(ids.stdout)["sessions"]
    assert session["status"] == "finished" and session["id"][:8] in listed.stdout
    show = [session["id"] if a == "ID" else a for a in commands[2]]
    shown = run(show, home)
    assert shown.returncode == 0, shown.stderr
    assert "0.973913 (valid) silver" in shown.stdout and "Final Answer" in shown.stdout
    assert commands[3][2] == "ID"  # `replay` takes the same ID (it opens the app: not run here)
