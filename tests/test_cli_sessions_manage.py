"""`mlagent sessions list / show / delete / prune` as a person reads and uses them: costs,
local times instead of JSON, the trainer's rollouts kept apart, and removal that asks first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mlagent_tui.core.home import Home
from mlagent_tui.core.llm import ReplayModel
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.store import Store

from .agent_helpers import research, write_replay
from .conftest import TINY, bwrap_ready
from .test_cli import mlagent

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

ONE = [research("List Files", {"dir_path": "."})]


def _sessions(tmp_path: Path) -> tuple[Path, str, str]:
    """A person's session and a trainer's rollout (model policy:...), one step each."""
    home = tmp_path / "home"
    replay = write_replay(tmp_path / "r.jsonl", ONE)
    mine = json.loads(
        mlagent(
            "run", "--task-dir", str(TINY), "--model", f"replay:{replay}", "--max-steps", "1",
            "--json", home=home,
        ).stdout
    )["session_id"]  # fmt: skip
    h = Home.at(home)
    store = Store(h.db_path)
    try:
        model = ReplayModel(replay)
        model.name = "policy:SmolLM2-135M@step-1"
        config = SessionConfig(task_dir=str(TINY), model=f"replay:{replay}", max_steps=1)
        rollout = Session.create(h, store, config, model=model)
        rollout.run()
    finally:
        store.close()
    return home, mine, rollout.id


def test_list_show_delete_and_prune(tmp_path: Path) -> None:
    home, mine, rollout = _sessions(tmp_path)

    listed = mlagent("sessions", "list", home=home, env={"COLUMNS": "160"}, check=True).stdout
    assert mine in listed and rollout not in listed
    assert "cost" in listed.splitlines()[0] and "total cost $0.0000" in listed
    every = mlagent("sessions", "list", "--all", "--json", home=home, check=True).stdout
    rows = {r["id"]: r for r in json.loads(every)["sessions"]}
    assert set(rows) == {mine, rollout} and rows[mine]["cost_usd"] == 0

    shown = mlagent("sessions", "show", mine, home=home, check=True).stdout
    assert not shown.lstrip().startswith("{") and '"config"' not in shown
    assert re.search(r"started\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", shown)
    assert not re.search(r"\b1[0-9]{9}\.[0-9]+", shown)  # no epoch seconds

    refused = mlagent("sessions", "delete", mine, home=home)  # no terminal to ask, no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert (home / "workspaces" / mine).is_dir()

    removed = mlagent("sessions", "delete", mine, "--yes", home=home)
    assert removed.returncode == 0, removed.stderr
    assert not (home / "workspaces" / mine).exists() and not (home / "snapshots" / mine).exists()
    gone = json.loads(mlagent("sessions", "list", "--all", "--json", home=home).stdout)
    assert [r["id"] for r in gone["sessions"]] == [rollout]
    assert mlagent("sessions", "show", mine, home=home).returncode == 2

    dry = mlagent("sessions", "prune", "--older-than", "0", "--all", "--dry-run", home=home)
    assert rollout in dry.stdout and "nothing removed" in dry.stderr
    assert mlagent("sessions", "prune", home=home).returncode == 2  # no filter: refused
    pruned = mlagent("sessions", "prune", "--older-than", "0", "--all", "--yes", home=home)
    assert pruned.returncode == 0 and "removed 1 of 1" in pruned.stderr
    empty = json.loads(mlagent("sessions", "list", "--all", "--json", home=home).stdout)
    assert empty["sessions"] == []
