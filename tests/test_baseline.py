"""A baseline run is a small recorded session, and a broken one still leaves its events."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlagent_tui.core.tasks import Task, TaskError, run_baseline

from .conftest import bwrap_ready

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def test_baseline_session_events(tiny_task: Path, home, store) -> None:
    lines: list[str] = []
    res = run_baseline(Task(tiny_task), home, store, echo=lines.append)
    assert res.valid and res.score == pytest.approx(1.0) and lines == ["wrote submission.csv"]
    kinds = [e.kind for e in store.events(res.session_id)]
    assert kinds[0] == "session_started" and "exec_output" in kinds
    assert kinds[-3:] == ["exec_finished", "score_recorded", "session_ended"]
    session = store.session(res.session_id)
    assert session["status"] == "finished" and session["agent"] == "baseline"
    assert not list(Path(res.workspace).glob("validate.csv"))


def test_crashing_prepare_ends_the_session_as_failed(tiny_task: Path, home, store) -> None:
    (tiny_task / "prepare.py").write_text("import sys; sys.exit('no data today')\n")
    with pytest.raises(TaskError, match="no data today"):
        run_baseline(Task(tiny_task), home, store)
    (session,) = store.sessions()
    assert session["status"] == "failed" and "no data today" in session["end_reason"]
    assert [e.kind for e in store.events(session["id"])] == ["session_started", "session_ended"]


def test_crashing_baseline_is_recorded_not_raised(tiny_task: Path, home, store) -> None:
    (tiny_task / "env" / "train.py").write_text("print('starting')\nraise RuntimeError('boom')\n")
    res = run_baseline(Task(tiny_task), home, store)
    assert not res.valid and res.exit_code == 1 and "no submission" in res.error
    finished = store.events(res.session_id, kinds=["exec_finished"])[0].payload
    assert finished.exit_code == 1
    chunks = store.events(res.session_id, kinds=["exec_output"])
    output = [line for e in chunks for line in e.payload.lines]
    assert output[0] == "starting" and any("boom" in line for line in output)
    assert store.session(res.session_id)["status"] == "failed"
