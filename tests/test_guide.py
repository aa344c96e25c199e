"""single-step's guided improve groups (--guide LEVEL): the task's reference joins each improve
group as one more, off-policy member; it is run and graded like the policy's own answers, never
becomes a parent, and each update counts the answers that beat the script they improve."""

from __future__ import annotations

import json

import pytest

from mlagent_tui.core.store import training_updates
from mlagent_tui.core.tasks import Task
from trainer.recipes import RunOptions, run_training
from trainer.recipes.guide import better_than_parent
from trainer.rollout import SessionOutcome, StepOutcome

from .conftest import bwrap_ready
from .train_helpers import gold_script, solve_session, solve_text, store_parents_options


def _outcome(score: float | None, valid: bool = True) -> SessionOutcome:
    step = StepOutcome(step=2, valid=valid, score=score)
    return SessionOutcome(
        session_id="s",
        task="tiny-task",
        status="budget",
        end_reason="",
        final_score=score,
        valid=valid,
        medal=None,
        timed_out=False,
        steps=[step],
        wall_seconds=1.0,
    )


def test_better_than_parent_follows_the_metric_direction(tiny_task) -> None:
    task = Task(tiny_task)
    higher = task.spec.metric.higher_is_better
    better, worse = (0.9, 0.1) if higher else (0.1, 0.9)
    outcomes = [_outcome(better), _outcome(0.5), _outcome(worse), _outcome(better, valid=False)]
    assert better_than_parent(task, 0.5, outcomes) == 1  # equal, worse and invalid do not count
    assert better_than_parent(task, None, outcomes) == 0  # a parent without a score: nothing


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_guided_group_runs_the_reference_and_never_forks_it(
    tmp_path, home, store, tiny_task
) -> None:
    starter = (tiny_task / "env" / "train.py").read_text()
    draft = solve_session(tmp_path, home, store, tiny_task, [solve_text(starter)])
    options = store_parents_options(tmp_path, home, store, tiny_task, steps=2, guide="gold")
    result = run_training(options)
    first, second = training_updates(store, result.run_id)
    assert first.extra["guided"] == second.extra["guided"] == 1
    assert first.extra["items"] == 3  # two sampled answers and the reference
    forks = [s for s in store.sessions() if s.get("parent_session_id")]
    assert len(forks) == 6
    gold = gold_script(tiny_task).strip()

    def script(session_id: str) -> str:
        (step,) = [r for r in store.rows("steps", session_id) if r["step"] == 2]
        return json.loads(step["action_input"] or "{}").get("content", "").strip()

    guides = [s["id"] for s in forks if script(s["id"]) == gold]
    assert len(guides) == 2
    assert not {s["parent_session_id"] for s in forks} & set(guides)  # parents: never the guide
    assert {s["parent_session_id"] for s in forks} >= {draft}
    # the reference is valid and beats the starter; the policy's 32-token answers cannot
    assert all((store.session(g) or {}).get("valid") for g in guides)
    assert first.extra["better_than_parent"] == 0


def test_guide_level_must_be_a_reference_level() -> None:
    with pytest.raises(ValueError, match="guide"):
        RunOptions(recipe="single-step", guide="platinum")
