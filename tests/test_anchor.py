"""The anchor (--anchor N): RL optimiser steps also imitate the store's successful solve steps,
so exploring keeps what the warm start does well; its loss is reported per update, its data is
part of the run's training record, and a store without demonstrations is a clear error."""

from __future__ import annotations

import pytest

from mlagent_tui.core.store import training_updates
from trainer.provenance import TrainingData
from trainer.recipes import run_training
from trainer.recipes.common import NothingToTrain
from trainer.recipes.loop import run_training_data

from .conftest import bwrap_ready
from .train_helpers import gold_script, solve_session, solve_text, store_parents_options


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_anchor_makes_the_demonstration_likelier_within_an_rl_run(
    tmp_path, home, store, tiny_task
) -> None:
    solve_session(tmp_path, home, store, tiny_task, [solve_text(gold_script(tiny_task))])
    options = store_parents_options(
        tmp_path,
        home,
        store,
        tiny_task,
        steps=2,
        guide="gold",  # a valid member in every group: every update has signal
        anchor=1,
        anchor_coef=5.0,
        inner_steps=2,
        lr=1e-3,
    )
    result = run_training(options)
    first, second = training_updates(store, result.run_id)
    # one demonstration step, drawn in every optimiser step: its negative log-likelihood falls
    assert 0 < second.extra["anchor_loss"] < first.extra["anchor_loss"]
    assert any("each optimiser step also imitates 1 of 1" in n for n in result.notes)


def test_an_anchor_needs_successful_solve_sessions(tmp_path, home, store, tiny_task) -> None:
    options = store_parents_options(tmp_path, home, store, tiny_task, anchor=2)
    with pytest.raises(NothingToTrain, match="mlagent-train demos"):
        run_training(options)


def test_sft_has_no_anchor(tmp_path, home, store, tiny_task) -> None:
    options = store_parents_options(tmp_path, home, store, tiny_task, anchor=2, recipe="sft")
    with pytest.raises(ValueError, match="--anchor is for RL recipes"):
        run_training(options)


def test_the_anchors_demonstrations_join_the_runs_training_record() -> None:
    class Ctx:
        class options:  # noqa: N801 - stands in for RunOptions
            recipe, seed, task_seeds, init = "single-step", 3, [], None

        tasks: list = []
        run_id = "train-x"

    class Anchor:
        training_data = TrainingData(tasks={"tiny-task": [9]}, runs=[])

    data = run_training_data(Ctx(), object(), Anchor())  # type: ignore[arg-type]
    assert data.tasks == {"tiny-task": [9]}  # eval refuses seed 9 of tiny-task as held out
    assert data.runs == ["train-x"]
