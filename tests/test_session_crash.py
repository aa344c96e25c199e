"""kill -9 in the middle of a session loses no completed step; resume goes on from there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlagent_tui.core.session import Session
from mlagent_tui.core.store import Store

from .agent_helpers import research, write_replay
from .conftest import ROOT, TINY, bwrap_ready, require_docker

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def test_kill_9_then_resume(tmp_path: Path, home, tiny_task: Path) -> None:
    slow = "import time\nprint('working', flush=True)\ntime.sleep(60)\n"
    responses = [
        research("Memory Write", {"content": "first note #setup"}),
        research("Write File", {"file_name": "slow.py", "content": slow}),
        research("Execute Script", {"script_name": "slow.py"}),
        research("Execute Script", {"script_name": "train.py"}),
        research("Final Answer", {"final_answer": "done"}),
    ]
    replay = write_replay(tmp_path / "r.jsonl", responses)
    session_id = run_then_kill(home, tiny_task, replay)
    store = Store(home.db_path)
    done = [e.payload.action for e in store.events(session_id, kinds=["action_finished"])]
    assert done == ["Memory Write", "Write File"]
    resumed = Session.resume(home, store, session_id)
    assert resumed.completed == 2 and resumed.model.position == 2
    assert [n.content for n in resumed.state.memory.notes] == ["first note #setup"]
    resumed.config.model_options.clear()
    # the interrupted step is re-run; skip the 60 s sleep by editing the script like a person
    (resumed.workspace.root / "slow.py").write_text("print('fast now')\n")
    result = resumed.run()
    assert result.status == "finished" and result.valid and result.steps == 5
    actions = [e.payload.action for e in store.events(session_id, kinds=["action_finished"])]
    assert actions == [
        "Memory Write",
        "Write File",
        "Execute Script",
        "Execute Script",
        "Final Answer",
    ]


def test_kill_9_shows_interrupted_on_open_and_resumes(
    tmp_path: Path, home, tiny_task: Path
) -> None:
    """No process records the end of a kill -9: the next command to open the store does."""
    slow = "import time\nprint('working', flush=True)\ntime.sleep(60)\n"
    responses = [
        research("Write File", {"file_name": "slow.py", "content": slow}),
        research("Execute Script", {"script_name": "slow.py"}),
        research("Final Answer", {"final_answer": "done"}),
    ]
    session_id = run_then_kill(home, tiny_task, write_replay(tmp_path / "r.jsonl", responses))
    store = Store(home.db_path)
    assert store.session(session_id)["status"] == "running"  # what the killed process left
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home.root)}
    listed = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", "sessions", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (row,) = json.loads(listed.stdout)["sessions"]
    assert row["status"] == "interrupted" and "without recording an end" in row["end_reason"]
    ended = store.events(session_id, kinds=["session_ended"])  # an event, as every end is
    assert [e.payload.status for e in ended] == ["interrupted"] and ended[0].step == 1
    resumed = Session.resume(home, store, session_id)
    assert resumed.completed == 1 and store.session(session_id)["status"] == "running"
    resumed.close()


def test_a_live_session_is_never_taken_for_an_orphan(tmp_path: Path, home, store) -> None:
    """Its process holds the lock: opening the store leaves it running."""
    from mlagent_tui.core.session import SessionConfig, end_orphans

    replay = write_replay(tmp_path / "r.jsonl", [research("List Files", {"dir_path": "."})])
    config = SessionConfig(task_dir=str(TINY), model=f"replay:{replay}")
    live = Session.create(home, store, config)
    assert end_orphans(home, store) == [] and store.session(live.id)["status"] == "running"
    live.close()  # no process holds it any more, and it never ended
    assert end_orphans(home, store) == [live.id]
    assert store.session(live.id)["status"] == "interrupted"


@pytest.mark.docker
@pytest.mark.adversarial
def test_kill_9_of_a_docker_session_then_resume(tmp_path: Path, home, tiny_task: Path) -> None:
    """The killed run's container is gone once resumed, and the files are the host's again."""
    require_docker()
    slow = "import time\nprint('working', flush=True)\ntime.sleep(60)\n"
    responses = [
        research("Write File", {"file_name": "slow.py", "content": slow}),
        research("Execute Script", {"script_name": "slow.py"}),
        research("Execute Script", {"script_name": "train.py"}),
        research("Final Answer", {"final_answer": "done"}),
    ]
    replay = write_replay(tmp_path / "r.jsonl", responses)

    def containers() -> set[str]:
        out = subprocess.run(
            ["docker", "ps", "-q", "--filter", "label=mlagent=sandbox"],
            capture_output=True,
            text=True,
        ).stdout
        return set(out.split())

    others = containers()  # sandboxes of other processes on this dockerd are not this run's
    session_id = run_then_kill(home, tiny_task, replay, "--sandbox", "docker")
    store = Store(home.db_path)
    left = containers() - others
    assert left, "the killed run's container should still be there before resume"
    resumed = Session.resume(home, store, session_id)
    assert not left & containers()
    ws = resumed.workspace.root
    assert all(p.lstat().st_uid == os.getuid() for p in [ws, *ws.rglob("*")])
    (ws / "slow.py").write_text("print('fast now')\n")
    result = resumed.run()
    assert result.status == "finished" and result.valid
    assert not left & containers()


def run_then_kill(home, tiny_task: Path, replay: Path, *extra: str) -> str:  # noqa: ANN001
    """Start `mlagent run` in a child, kill -9 it once a script prints; the session id."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home.root)}
    cmd = [sys.executable, "-m", "mlagent_tui", "run", "--task-dir", str(tiny_task)]
    cmd += ["--model", f"replay:{replay}", "--json", *extra]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    store = Store(home.db_path)
    deadline = time.time() + 90
    session_id = None
    while time.time() < deadline:
        rows = store.sessions()
        if rows:
            session_id = rows[0]["id"]
            if any(e.kind == "exec_output" for e in store.events(session_id)):
                break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    store.close()
    assert session_id is not None
    return session_id
