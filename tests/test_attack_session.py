"""Attacks on a running session: hostile text, hostile file names, links, two resumes at once.

Each case runs a real Session with the replay model. It must end as a clear observation for
the model (or a clear error for the person), end in a recorded state and stay resumable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlagent_tui.core.session import BudgetLimits, Session, SessionError
from mlagent_tui.core.session import step as session_step
from mlagent_tui.core.workspace import workspace as workspace_mod

from .agent_helpers import research
from .conftest import HOST_TEXT, ROOT, bwrap_ready
from .test_session import observations, start

pytestmark = [
    pytest.mark.adversarial,
    pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing"),
]


def ended(store, session_id: str) -> list:
    return store.events(session_id, kinds=["session_ended"])


def link_script(name: str, target: Path) -> str:
    return f"import os\nos.remove({name!r})\nos.symlink({str(target)!r}, {name!r})\n"


# -- links: resume, undo, solution.py -------------------------------------------------------------
def test_resume_after_a_crash_never_writes_through_a_link(
    tmp_path, home, store, tiny_task, host_file
) -> None:
    responses = [
        research("List Files", {"dir_path": "."}),
        research(
            "Write File", {"file_name": "x.py", "content": link_script("train.py", host_file)}
        ),
        research("Execute Script", {"script_name": "x.py"}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=2)
    s.run()
    # the interrupted step 3 had replaced train.py by a link (kill -9 before its snapshot)
    os.remove(s.workspace.root / "train.py")
    os.symlink(host_file, s.workspace.root / "train.py")
    resumed = Session.resume(home, store, s.id, limits=BudgetLimits(max_steps=1))
    assert host_file.read_text() == HOST_TEXT
    assert not (resumed.workspace.root / "train.py").is_symlink()
    assert "print" in (resumed.workspace.root / "train.py").read_text()


def test_undo_by_the_person_never_writes_through_a_link(
    tmp_path, home, store, tiny_task, host_file
) -> None:
    responses = [
        research("Write File", {"file_name": "train.py", "content": "print('edited')\n"}),
        research(
            "Write File", {"file_name": "x.py", "content": link_script("train.py", host_file)}
        ),
        research("Execute Script", {"script_name": "x.py"}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=3)
    s.run()
    assert (s.workspace.root / "train.py").is_symlink()  # the script made it
    s.undo_last_edit()  # x.py
    s.undo_last_edit()  # train.py: the write goes into the workspace, not through the link
    assert host_file.read_text() == HOST_TEXT
    assert not (s.workspace.root / "train.py").is_symlink()


def test_solve_agent_never_reads_a_linked_solution(
    tmp_path, home, store, tiny_task, host_file
) -> None:
    script = f"import os\nos.symlink({str(host_file)!r}, 'solution.py.tmp')\n"
    script += "os.replace('solution.py.tmp', 'solution.py')\n"
    responses = [f"Plan: link it\n```python\n{script}```", "Plan: again\n```python\npass\n```"]
    s = start(tmp_path, home, store, tiny_task, responses, agent="solve", max_steps=2)
    s.run()
    assert (s.workspace.root / "solution.py").read_text() == "pass\n"
    for event in store.events(s.id, kinds=["llm_call"]):
        assert "must never change" not in event.payload.text
    assert s.state.previous_script is None or HOST_TEXT not in s.state.previous_script


def test_read_actions_report_a_link_instead_of_reading_it(
    tmp_path, home, store, tiny_task, host_file
) -> None:
    inside = "import os\nos.symlink('train.py', 'inner.py')\nos.mkfifo('pipe')\n"
    responses = [
        research("Write File", {"file_name": "x.py", "content": inside}),
        research("Execute Script", {"script_name": "x.py"}),
        research("Read File", {"file_name": "inner.py"}),
        research("Copy File", {"source": "inner.py", "destination": "copy.py"}),
        research(
            "Inspect Script Lines",
            {"script_name": "inner.py", "start_line_number": 1} | {"end_line_number": 3},
        ),
        research("Read File", {"file_name": "pipe"}),  # a FIFO would block a plain read
        research("List Files", {"dir_path": "."}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=7)
    s.run()
    obs = observations(store, s.id)
    for text in obs[2:5]:
        assert "link" in text and "Error" in text
    assert obs[5].startswith("Error") and "not a regular file" in obs[5]
    assert "inner.py (symbolic link)" in obs[6] and "pipe (special file)" in obs[6]
    assert not (s.workspace.root / "copy.py").exists()


# -- hostile text --------------------------------------------------------------------------------
def test_lone_surrogates_in_a_response(tmp_path, home, store, tiny_task) -> None:
    responses = [
        research(
            "Write File", {"file_name": "a.py", "content": "x = '\ud800'\n"}, plan="1. \udcff"
        ),
        research("Write File", {"file_name": "\ud800.py", "content": "x = 1\n"}),
        research("Memory Write", {"content": "note \udfff"}),
        research("List Files", {"dir_path": "."}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=4)
    result = s.run()
    assert result.status == "budget" and result.steps == 4
    assert len(observations(store, s.id)) == 4
    raw = store.db.execute("SELECT payload FROM events WHERE session_id = ?", [s.id]).fetchall()
    for (payload,) in raw:
        payload.encode("utf-8")  # all stored text is valid UTF-8
    resumed = Session.resume(home, store, s.id, limits=BudgetLimits(max_steps=1))
    assert resumed.completed == 4


def test_hostile_json_in_the_action_input(tmp_path, home, store, tiny_task) -> None:
    responses = [
        research("Read File", '{"file_name": ' + "1" * 5000 + "}"),
        research("Read File", '{"file_name": ' + "[" * 50_000 + "]" * 50_000 + "}"),
        research("List Files", {"dir_path": "."}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=1)
    result = s.run()
    assert result.status == "budget" and result.parse_errors == 2
    errors = [e.payload.error for e in store.events(s.id, kinds=["parse_error"])]
    assert "digits" in errors[0] and "nested too deeply" in errors[1]


def test_bad_file_names_become_observations(tmp_path, home, store, tiny_task) -> None:
    responses = [
        research("Write File", {"file_name": "a\u0000b.py", "content": "x = 1\n"}),
        research("Write File", {"file_name": "", "content": "x = 1\n"}),
        research("Copy File", {"source": "train.py", "destination": "."}),
        research("Write File", {"file_name": "n" * 5000, "content": "x = 1\n"}),
        research("Write File", {"file_name": "sub/a.py", "content": "x = 1\n"}),
        research("Write File", {"file_name": "sub", "content": "x = 1\n"}),
        research("Read File", {"file_name": "a\u0000b.py"}),
        research("List Files", {"dir_path": "n" * 5000}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=8)
    result = s.run()
    assert result.status == "budget" and result.steps == 8
    obs = observations(store, s.id)
    for i in (0, 1, 2, 3, 5, 6, 7):
        assert obs[i].startswith("Error:"), (i, obs[i])
    assert "NUL" in obs[0] and "empty" in obs[1] and "directory" in obs[2]
    assert "too long" in obs[3] and "directory" in obs[5]
    assert (s.workspace.root / "sub" / "a.py").is_file()


def test_a_script_writing_a_non_utf8_file_name(tmp_path, home, store, tiny_task) -> None:
    script = "open(b'\\xff\\xfe.txt', 'wb').write(b'hi')\nprint('made it')\n"
    responses = [
        research("Write File", {"file_name": "x.py", "content": script}),
        research("Execute Script", {"script_name": "x.py"}),
        research("List Files", {"dir_path": "."}),
        research("Write File", {"file_name": "b.py", "content": "x = 1\n"}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=3)
    result = s.run()
    assert result.status == "budget" and result.steps == 3
    paths = [e.payload.path for e in store.events(s.id, kinds=["file_changed"])]
    assert "\\xff\\xfe.txt" in paths
    assert "\\xff\\xfe.txt" in observations(store, s.id)[2]
    resumed = Session.resume(home, store, s.id, limits=BudgetLimits(max_steps=1))
    resumed.max_steps = 4
    assert resumed.run().steps == 4
    assert (s.workspace.root / os.fsdecode(b"\xff\xfe.txt")).read_bytes() == b"hi"


def test_enormous_model_output_is_stored_capped(tmp_path, home, store, tiny_task) -> None:
    huge = "z" * 3_000_000
    responses = [research("Memory Write", {"content": huge}), research("List Files", {})]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=2)
    result = s.run()
    assert result.steps == 2
    longest = store.db.execute(
        "SELECT MAX(LENGTH(payload)) FROM events WHERE session_id = ?", [s.id]
    ).fetchone()[0]
    assert longest < 2_500_000


# -- crashes inside a step, and concurrent resumes ------------------------------------------------
def test_an_unexpected_error_ends_the_session_and_resume_works(
    tmp_path, home, store, tiny_task, monkeypatch
) -> None:
    """A bug inside a step (here: a fault injected after the action ran) ends the session as
    failed, recorded; `mlagent resume` then re-runs that step and goes on."""
    responses = [
        research("List Files", {"dir_path": "."}),
        research("List Files", {"dir_path": "."}),
        research("Final Answer", {"final_answer": "done"}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=5)
    real = session_step.record_file_changes
    calls = []

    def boom(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk on fire")
        return real(*args, **kwargs)

    monkeypatch.setattr(session_step, "record_file_changes", boom)
    result = s.run()
    assert result.status == "failed" and "RuntimeError" in result.reason
    assert "disk on fire" in result.reason
    assert store.session(s.id)["status"] == "failed" and ended(store, s.id)
    proc = subprocess.run(  # `mlagent resume` in a fresh process, without the fault
        [sys.executable, "-m", "mlagent_tui", "resume", s.id, "--json"],
        env={**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home.root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr  # finished, but with no valid submission
    out = json.loads(proc.stdout)
    assert out["status"] == "finished" and out["steps"] == 3
    assert store.session(s.id)["status"] == "finished"


def test_a_second_resume_is_refused_before_it_runs_anything(
    tmp_path, home, store, tiny_task
) -> None:
    responses = [research("List Files", {"dir_path": "."})] * 4
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=1)
    s.run()
    s.close()
    first = Session.resume(home, store, s.id, limits=BudgetLimits(max_steps=1))
    count = len(store.events(s.id))
    with pytest.raises(SessionError, match=f"process {os.getpid()}"):
        Session.resume(home, store, s.id)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLAGENT_HOME": str(home.root)}
    proc = subprocess.run(
        [sys.executable, "-m", "mlagent_tui", "resume", s.id, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode != 0 and str(os.getpid()) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(store.events(s.id)) == count  # nothing ran, nothing was logged
    first.max_steps = 2
    assert first.run().steps == 2
    first.close()
    # the lock goes with the session
    again = Session.resume(home, store, s.id, limits=BudgetLimits(max_steps=1))
    again.close()


def test_snapshot_skips_are_told_to_the_person(
    tmp_path, home, store, tiny_task, monkeypatch
) -> None:
    monkeypatch.setattr(workspace_mod, "MAX_SNAPSHOT_FILE_BYTES", 200_000)
    script = "import os\nopen('big.bin', 'wb').write(os.urandom(300_000))\n"
    responses = [
        research("Write File", {"file_name": "x.py", "content": script}),
        research("Execute Script", {"script_name": "x.py"}),
        research("Execute Script", {"script_name": "x.py"}),
    ]
    s = start(tmp_path, home, store, tiny_task, responses, max_steps=3)
    s.run()
    obs = observations(store, s.id)
    assert "big.bin" in obs[1] and "not snapshotted" in obs[1]
    assert "big.bin" not in obs[2]  # told once, not every step
    assert "big.bin" in s.workspace.skipped("step-0003")
    assert json.loads(json.dumps(s.workspace.skipped("step-0003")))
