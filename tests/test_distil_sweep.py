"""distil's sweep (recipes.distil_sweep): every one-setting change of a starter, run as real
solve sessions forked after the starter, and the choice taught where it beat the starter at
most of the seeds. The tiny task's answer is y = 2x + (seed mod 3); its starter adds OFFSET = 1,
so OFFSET = 2 is right at seeds 10001 and 10004 only."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlagent_tui.core.home import Home
from mlagent_tui.core.llm.replay import ReplayModel
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task
from trainer.distil_data import added_columns
from trainer.prompts import step_prompt
from trainer.recipes import RunOptions, run_training
from trainer.recipes.distil_options import DistilOptions
from trainer.recipes.distil_sweep import (
    SWEEP_FILE,
    SweepStep,
    menu_choices,
    not_swept,
    run_sweep,
)

from .agent_helpers import write_replay
from .conftest import bwrap_ready
from .train_helpers import solve_text

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def _offset_task(tiny_task: Path, starter: str | None = None) -> Path:
    train = tiny_task / "env" / "train.py"
    text = train.read_text().replace("import csv\n", "import csv\n\nOFFSET = 1\n")
    train.write_text(starter or text.replace("+ 1}", "+ OFFSET}"))
    return tiny_task


def _ctx(tmp_path: Path) -> SimpleNamespace:
    home = Home.at(tmp_path / "home")
    return SimpleNamespace(
        home=home,
        store=Store(home.db_path),
        options=SimpleNamespace(exec_timeout_s=None),
        out_dir=tmp_path / "run",
    )


def _sessions(ctx: SimpleNamespace) -> int:
    return ctx.store.fetch("SELECT COUNT(*) FROM sessions")[0][0]


def test_the_choice_that_helped_at_most_seeds_is_taught_at_each_seeds_prompt(
    tmp_path, tiny_task
) -> None:
    task = Task(_offset_task(tiny_task))
    assert [c.label for c in menu_choices(task.folder.joinpath("env/train.py").read_text(), [])]
    ctx = _ctx(tmp_path)
    phases: list[str] = []
    sweep = run_sweep(ctx, [task], [10001, 10004], phases.append)
    assert phases == ["sweep 1/1 on tiny-task (seed 10001)", "sweep 1/1 on tiny-task (seed 10004)"]
    assert [s.starter_score for s in sweep.seeds] == [1.0, 1.0]
    gains = {c.label: c.gain for c in sweep.seeds[0].choices}
    assert gains == {"1 -> 2": 1.0, "1 -> 10": 0.0}  # worse on validation: the starter stays
    assert sweep.taught["tiny-task"].startswith("1 -> 2 (better at 2/2 seeds")
    assert [s.seed for s in sweep.steps] == [10001, 10004]
    step = sweep.steps[0]
    assert step.response == "Setting: 1\nPlan: Change 1 to 2.\nValue: 2"
    starter = sweep.seeds[0].session_id
    config = json.loads(ctx.store.session(starter)["config"])
    assert step.messages == step_prompt(ctx.store, starter, 2, task, config)  # the agent's own
    assert "1. Change this number: 1" in step.messages[-1]["content"]
    assert sweep.sessions == 6 == _sessions(ctx)  # two starters, four forks
    again = run_sweep(ctx, [task], [10001, 10004], phases.append)  # read back, not run again
    assert again == sweep and _sessions(ctx) == 6 and (ctx.out_dir / SWEEP_FILE).is_file()


def test_no_choice_taught_where_none_helps_at_most_seeds_or_the_starter_fails(
    tmp_path, tiny_task
) -> None:
    task = Task(_offset_task(tiny_task))
    sweep = run_sweep(_ctx(tmp_path), [task], [10001, 10002], lambda _: None)
    assert sweep.steps == []  # OFFSET = 2 helps at 10001, not at 10002
    assert sweep.taught == {"tiny-task": "no change beat the starter at most of 2 seed(s)"}
    broken = tmp_path / "broken"
    broken.mkdir()
    bad = Task(_offset_task(tiny_task, "raise SystemExit('starter broke')\n"))
    sweep = run_sweep(_ctx(broken), [bad], [10001], lambda _: None)
    assert sweep.seeds[0].choices == [] and sweep.seeds[0].starter_score is None
    assert sweep.steps == [] and "no change beat the starter" in sweep.taught["tiny-task"]


def test_a_column_list_is_swept_with_its_first_and_its_last_columns() -> None:
    script = 'import pandas as pd\nFEATURES = ["c0"]\nX = pd.read_csv("train.csv")[FEATURES]\n'
    wide = [c.label for c in menu_choices(script, [f"c{i}" for i in range(14)])]
    first = ", ".join(f'"c{i}"' for i in range(11))
    last = ", ".join(f'"c{i}"' for i in [0, *range(4, 14)])
    assert wide == [f'["c0"] -> [{first}]', f'["c0"] -> [{last}]']  # ten added, each way
    narrow = [c.label for c in menu_choices(script, [f"c{i}" for i in range(6)])]
    assert narrow == ['["c0"] -> ["c0", "c1", "c2", "c3", "c4", "c5"]']  # one block: once
    plans = [c.answer.splitlines()[1] for c in menu_choices(script, [f"c{i}" for i in range(14)])]
    assert plans == [  # the plan names the block, before the list is written
        "Plan: Add the 10 columns from c1 to c10 to this list.",
        "Plan: Add the 10 columns from c4 to c13 to this list.",
    ]
    lists = ['["c0", "c1"]', '["c0", "c2", "c4"]', '["c0"]']
    assert [added_columns('["c0"]', v) for v in lists] == [
        "the column c1",
        "the columns c2 and c4",
        "more of the data's columns",
    ]


def test_the_search_steps_on_a_task_the_sweep_taught_are_left_out() -> None:
    msgs = [{"role": "user", "content": "edit"}]
    taught = [SweepStep(task="digits", seed=s, messages=msgs, response="1") for s in (1, 2)]
    search = [SimpleNamespace(task=t) for t in ("digits", "citation-graph", "digits")]
    kept, left_out = not_swept(search, taught)
    assert [s.task for s in kept] == ["citation-graph"] and left_out == 2
    assert not_swept(search, []) == (search, 0)  # no sweep: every search step is kept


@pytest.mark.timeout(900)  # one update of the 135M model on a shared CPU
def test_a_round_whose_search_found_nothing_trains_what_the_sweep_taught(
    tmp_path, tiny_task
) -> None:
    """Without the sweep this round stops (no improvement, no anchor); with it, it trains."""
    task_dir = _offset_task(tiny_task)
    replay = write_replay(tmp_path / "flat.jsonl", [solve_text("print('no')")] * 3)
    assert ReplayModel(replay)  # a searcher that finds nothing better
    out = tmp_path / "run"
    result = run_training(
        RunOptions(
            recipe="distil",
            task_dirs=[str(task_dir)],
            home=str(tmp_path / "home"),
            out=str(out),
            steps=1,
            distil=DistilOptions(
                rounds=1,
                round_updates=1,
                search_model=f"replay:{replay}",
                search_steps=3,
                search_workers=1,
                procedural=0,
                sweep_seeds=1,
            ),
        )
    )
    assert result.updates_done == 1
    (r1,) = json.loads((out / "distil.json").read_text())["rounds"]
    assert r1["improvements_found"] == 0 and r1["items"] == 1 and not r1["anchor_only"]
    assert r1["swept"] == 3 and r1["sweep"]["tiny-task"].startswith("1 -> 2 (better at 1/1")
    assert "sweep before round 1: 3 session(s)" in result.notes
    assert any(n.startswith("sweep of tiny-task's starter: ") for n in result.notes)
    data = json.loads((out / "training_data.json").read_text())
    assert 10001 in data["tasks"]["tiny-task"]


def test_a_taught_answers_hard_token_carries_its_gradient_until_learned() -> None:
    """The one token where a taught answer leaves the model's copy (p = 0.0003 after ten
    passes under the plain mean) gets most of its answer's gradient; learned, the weights
    even out."""
    import torch

    from trainer.recipes.distil import hard_token_loss

    nll = torch.tensor([0.02] * 99 + [8.0], requires_grad=True)
    loss = hard_token_loss(nll)
    loss.backward()
    assert 6.0 < float(loss) <= 8.0  # a mean of token losses, at most the largest
    assert nll.grad is not None
    assert float(nll.grad[-1]) > 0.5 > 100 * float(nll.grad[0])  # plain mean: 0.01 each
    even = torch.full((4,), 0.3, requires_grad=True)
    hard_token_loss(even).backward()
    assert even.grad is not None and torch.allclose(even.grad, torch.full((4,), 0.25))
    assert float(hard_token_loss(torch.zeros(3))) == 0.0  # nothing left to learn: no NaN


def test_updates_past_the_last_round_train_it_and_search_no_new_round() -> None:
    """`--resume --steps` with a larger total after `--rounds 1`: the extra updates stay in
    round 1 (they once started a search round nobody asked for)."""
    from trainer.recipes.distil import DistilRecipe

    one = SimpleNamespace(opts=DistilOptions(rounds=1, round_updates=26))
    assert [DistilRecipe._round_of(one, u) for u in (1, 26, 27, 36)] == [1, 1, 1, 1]  # type: ignore[arg-type]
    two = SimpleNamespace(opts=DistilOptions(rounds=2, round_updates=8))
    assert [DistilRecipe._round_of(two, u) for u in (8, 9, 16, 40)] == [1, 2, 2, 2]  # type: ignore[arg-type]
    stored = SimpleNamespace(opts=DistilOptions())
    assert DistilRecipe._round_of(stored, 5) == 0  # type: ignore[arg-type]
