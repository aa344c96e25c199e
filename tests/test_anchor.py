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


class _CharPolicy:
    """Counts characters as tokens: enough for the anchor's item building, no model loaded."""

    eos_ids, max_context = [0], 100_000

    def chat_prompt_ids(self, messages: list[dict]) -> list[int]:
        return [ord(c) % 200 + 1 for m in messages for c in m["content"]]

    def tokenizer(self, text: str, add_special_tokens: bool = False) -> dict:
        return {"input_ids": [ord(c) % 200 + 1 for c in text]}


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_a_distil_anchor_draws_research_steps_apart_from_solve_steps(tmp_path, tiny_task) -> None:
    """distil's model also drives the research agent: its six demonstrated steps are a stratum
    of their own, two in every optimiser step, their mean weighing what the solve steps' does."""
    from types import SimpleNamespace

    from mlagent_tui.core.home import Home
    from mlagent_tui.core.store import Store
    from mlagent_tui.core.tasks import Task
    from trainer.demos import record_demos
    from trainer.recipes import RunOptions
    from trainer.recipes.anchor import Anchor

    home = Home.at(tmp_path / "home")
    store = Store(home.db_path)
    record_demos(home, store, [Task(tiny_task)], levels=["gold"], seeds=[0])
    options = RunOptions(
        recipe="distil", task_dirs=[str(tiny_task)], anchor=1, sft_max_tokens=10**6
    )
    ctx = SimpleNamespace(options=options, store=store, tasks=[Task(tiny_task)])
    ctx.policy = _CharPolicy()
    solve_only = Anchor(ctx)  # type: ignore[arg-type]
    assert solve_only.others == {} and len(solve_only.items) == 2  # a Draft and an improve
    both = Anchor(ctx, agents=("solve", "research"))  # type: ignore[arg-type]
    assert len(both.items) == 2 and len(both.others["research"]) == 6  # its six steps
    assert "1 of 2 successful solve step(s) and 2 of 6 research step(s)" in both.notes[0]
    drawn = [both.draw(0, update, 0) for update in range(6)]
    for (solve, w), *research in drawn:
        assert solve in both.items and w == 1.0  # --anchor 1, coefficient 1
        assert [w for _, w in research] == [0.5, 0.5]  # the stratum's mean weighs 1 too
        assert all(it in both.others["research"] for it, _ in research)
    assert len({id(d[1][0]) for d in drawn}) > 1  # fresh research steps each optimiser step
    assert [id(i) for i, _ in both.draw(0, 3, 0)] == [id(i) for i, _ in drawn[3]]  # resumes alike
    # the solve draw is what an anchor without research draws: RL runs' anchors are unchanged
    assert [solve_only.items.index(solve_only.draw(0, u, 0)[0][0]) for u in range(6)] == [
        both.items.index(d[0][0]) for d in drawn
    ]
    # a store without research demonstrations: the solve anchor alone, and a note saying so
    store.db.execute("DELETE FROM sessions WHERE agent = 'research'")
    store.db.commit()
    alone = Anchor(ctx, agents=("solve", "research"))  # type: ignore[arg-type]
    assert alone.others == {} and "not anchored: no successful research step" in alone.notes
    ctx.options = options.model_copy(update={"sft_agents": ["solve"]})
    told = Anchor(ctx, agents=("solve", "research"))  # type: ignore[arg-type]
    assert "not anchored: no successful research step (--sft-agents leaves them out)" in told.notes


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
