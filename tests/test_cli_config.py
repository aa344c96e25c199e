"""Shell completion for both commands, and defaults from a config file: read at startup, the
command line wins, a broken file is one line (exit 2)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .agent_helpers import research, write_replay
from .conftest import TINY, bwrap_ready
from .test_cli import mlagent

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    ("command", "function"),
    [("mlagent", "_mlagent_completion"), ("mlagent-train", "_mlagent_train_completion")],
)
def test_completion_is_offered(command: str, function: str) -> None:
    # typer names the shell it runs under (the parent process), so run it from bash: under
    # `make` the test's own parent is sh, which typer does not complete for
    script = f"{shlex.quote(str(BIN / command))} --show-completion; true"
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0 and function in proc.stdout, proc.stderr


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_defaults_from_the_config_files_and_the_command_line_wins(tmp_path: Path) -> None:
    home = tmp_path / "home"
    xdg = tmp_path / "xdg"
    (xdg / "mlagent").mkdir(parents=True)
    listing = write_replay(tmp_path / "a.jsonl", [research("List Files", {"dir_path": "."})])
    other = write_replay(tmp_path / "b.jsonl", [research("Validate", {})])
    (xdg / "mlagent" / "config.toml").write_text(f'model = "replay:{listing}"\nagent = "solve"\n')
    env = {"XDG_CONFIG_HOME": str(xdg)}

    def run(*extra: str) -> dict:
        proc = mlagent(
            "run", "--task-dir", str(TINY), "--max-steps", "1", "--json", *extra,
            home=home, env=env,
        )  # fmt: skip
        result = json.loads(proc.stdout)
        return json.loads(
            mlagent("sessions", "show", result["session_id"], "--json", home=home).stdout
        )["session"]

    first = run()
    assert first["model"] == f"replay:{listing}" and first["agent"] == "solve"
    second = run("--model", f"replay:{other}", "--agent", "research")
    assert second["model"] == f"replay:{other}" and second["agent"] == "research"

    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('agent = "research"\n')  # the home's file wins
    assert run()["agent"] == "research"

    (home / "config.toml").write_text("agent = \n")
    broken = mlagent("sessions", "list", home=home, env=env)
    lines = [line for line in broken.stderr.splitlines() if line.strip()]
    assert broken.returncode == 2 and len(lines) == 1 and "config.toml" in lines[0]
    (home / "config.toml").write_text('colour = "blue"\n')
    unknown = mlagent("sessions", "list", home=home, env=env)
    assert unknown.returncode == 2 and "unknown key 'colour'" in unknown.stderr
