"""The solve agent that starts from the task's starter: step 1 runs it as given with no model
call, the model's steps improve on it, and solve sessions stored before it replay as they did."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.session.budget import BudgetLimits
from trainer.data import load_samples

from .agent_helpers import write_replay
from .search_helpers import GOOD, reply, run_with_each_flag


def solve(tmp_path: Path, home, store, task: Path, replies: list[str], **cfg) -> Session:  # noqa: ANN001, ANN003
    replay = write_replay(tmp_path / "replay.jsonl", replies)
    config = SessionConfig(task_dir=str(task), model=f"replay:{replay}", agent="solve", **cfg)
    return Session.create(home, store, config)


def test_step_one_runs_the_starter_and_the_model_improves_it(
    tmp_path, home, store, tiny_task
) -> None:
    s = solve(tmp_path, home, store, tiny_task, [reply(GOOD)], max_steps=2, solve_starter=True)
    result = s.run()
    calls = [e for e in store.events(s.id, kinds=["llm_call"])]
    assert len(calls) == 1 and calls[0].step == 2  # the starter cost no model call
    first = next(e.payload for e in store.events(s.id, kinds=["agent_response"]) if e.step == 1)
    starter = (tiny_task / "env" / "train.py").read_text()
    assert first.action == "Run Solution" and first.action_input == {"content": starter}
    assert first.raw == "" and "starter" in first.plan
    steps = store.rows("steps", s.id)
    assert [r["ok"] for r in steps] == [1, 1] and "Validation:" in steps[0]["observation"]
    assert result.valid and result.final_score == pytest.approx(0.0)  # GOOD is exact


def test_the_improve_sample_knows_the_starters_score(tmp_path, home, store, tiny_task) -> None:
    """The trainer skips the starter step (no answer to learn) but keeps its score as the
    parent score of the answer after it."""
    s = solve(tmp_path, home, store, tiny_task, [reply(GOOD)], max_steps=2, solve_starter=True)
    s.run()
    samples = load_samples(store)
    assert [(x.step, x.mode) for x in samples] == [(2, "improve")]
    starter = (tiny_task / "env" / "train.py").read_text()
    assert starter.strip() in samples[0].messages[-1]["content"]  # the script it improves
    assert samples[0].parent_score is not None and samples[0].parent_score >= 0.1


def test_off_by_default_in_the_config_so_stored_sessions_replay_as_they_did(
    tmp_path, home, store, tiny_task
) -> None:
    stored = {"task_dir": str(tiny_task), "model": "replay:x", "agent": "solve"}
    assert SessionConfig.model_validate(stored).solve_starter is False
    s = solve(tmp_path, home, store, tiny_task, [reply(GOOD)] * 2, max_steps=2)
    s.run()
    assert [e.step for e in store.events(s.id, kinds=["llm_call"])] == [1, 2]
    # a resume of a session that began with the starter does not run it again
    (tmp_path / "b").mkdir()
    replies = [reply(GOOD)] * 2
    b = solve(tmp_path / "b", home, store, tiny_task, replies, max_steps=1, solve_starter=True)
    b.run()
    again = Session.resume(home, store, b.id, limits=BudgetLimits(max_steps=1))
    again.run()
    responses = [e.payload for e in store.events(b.id, kinds=["agent_response"])]
    assert sum(r.raw == "" for r in responses) == 1 and len(responses) == 2


def test_no_starter_where_none_runs(tmp_path, home, store, tiny_task) -> None:
    """A script submission (graded as the folder holds it) gets no starter step: the model
    writes step 1 as before."""
    s = solve(tmp_path, home, store, tiny_task, [reply(GOOD)], max_steps=1, solve_starter=True)
    s.task.spec.submission.file = "strategy.py"
    s.run()
    assert [e.step for e in store.events(s.id, kinds=["llm_call"])] == [1]


def test_run_starts_solve_from_the_starter_unless_told_not_to(tmp_path, tiny_task) -> None:
    flags = ("--starter", "--no-starter")
    args = ("--agent", "solve", "--max-steps", "2")
    runs = run_with_each_flag(tmp_path, tiny_task, [reply(GOOD)] * 2, flags, *args)
    calls = {
        flag: [e.step for e in store.events(sid, kinds=["llm_call"])]
        for flag, (store, sid) in runs.items()
    }
    assert calls == {"--starter": [2], "--no-starter": [1, 2]}
