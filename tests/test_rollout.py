"""Rollouts: parallel executions in the sandbox, one-step solution sessions, whole sessions."""

from __future__ import annotations

import pytest

from mlagent_tui.core.llm.base import Completion
from mlagent_tui.core.llm.replay import ReplayModel
from mlagent_tui.core.tasks import find_task
from trainer.data import load_samples
from trainer.rollout import execute_solutions, solution_sessions, solve_sessions

from .agent_helpers import write_replay
from .conftest import bwrap_ready
from .train_helpers import gold_script, solve_text

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

SLEEPER = "import time\nprint('loaded data', flush=True)\ntime.sleep(60)\n"


def test_execute_solutions_in_parallel_with_a_timeout(tiny_task) -> None:
    task = find_task(task_dir=tiny_task)
    scripts = [gold_script(tiny_task), "raise SystemExit('oops')\n", SLEEPER]
    gold, crash, slow = execute_solutions(task, scripts, workers=2, timeout_s=1.0)
    assert gold.exit_code == 0 and gold.valid and gold.score == pytest.approx(0.0)
    assert crash.exit_code != 0 and not crash.valid and "oops" in crash.output
    assert slow.timed_out and not slow.valid and "loaded data" in slow.output


def test_solution_sessions_are_real_sessions(tmp_path, home, store, tiny_task) -> None:
    task = find_task(task_dir=tiny_task)
    texts = [solve_text(gold_script(tiny_task)), solve_text(SLEEPER)]
    completions = [
        Completion(text=t, token_ids=[1, 2, 3], logprobs=[-0.5, -0.5, -0.5]) for t in texts
    ]
    name = "policy:local@run-x/update-0001"
    good, slow = solution_sessions(
        home, store, task, completions, model_name=name, workers=2, exec_timeout_s=1.0
    )
    assert good.valid and good.steps[0].ok and good.steps[0].unit == pytest.approx(1.0)
    assert good.steps[0].logprobs == [-0.5, -0.5, -0.5]
    assert slow.timed_out and slow.steps[0].timed_out and not slow.steps[0].valid
    assert "loaded data" in slow.steps[0].output
    rows = {r["id"]: r for r in store.sessions()}
    assert rows[good.session_id]["model"] == name and rows[good.session_id]["agent"] == "solve"

    # An improve prompt: fork the good session after its step and answer once more.
    (again,) = solution_sessions(
        home, store, task, completions[:1], model_name=name, parent=(good.session_id, 1)
    )
    assert [s.step for s in again.steps] == [2] and again.steps[0].valid
    samples = [s for s in load_samples(store) if s.session_id == again.session_id]
    assert samples[-1].mode == "improve" and samples[-1].logprobs == [-0.5, -0.5, -0.5]


def test_solve_sessions_share_one_model(tmp_path, home, store, tiny_task) -> None:
    task = find_task(task_dir=tiny_task)
    good = solve_text(gold_script(tiny_task))
    replay = ReplayModel(write_replay(tmp_path / "r.jsonl", [good] * 4))
    outcomes = solve_sessions(home, store, task, replay, 2, max_steps=2, workers=2)
    assert len(outcomes) == 2 and all(len(o.steps) == 2 for o in outcomes)
    assert {o.status for o in outcomes} == {"budget"}
    assert sum(o.valid for o in outcomes) == 2


LOADS = "import csv\nrows = list(csv.DictReader(open('train.csv')))\nprint(len(rows))\n"
LADDER = [
    "import not_a_module_xyz\n" + LOADS,  # crashes at once
    LOADS + "print(rows[0]['no_such_column'])\n",  # loads the data, then crashes
    LOADS,  # runs, writes no submission
    LOADS + "open('submission.csv', 'w').write('nonsense\\n')\n",  # an invalid submission
]


def test_structure_instrumented_sessions_order_rewards_and_keep_the_program(
    home, store, tiny_task
) -> None:
    from trainer.rewards import execution_reward

    task = find_task(task_dir=tiny_task)
    scripts = [*LADDER, gold_script(tiny_task)]
    completions = [Completion(text=solve_text(s)) for s in scripts]
    outcomes = solution_sessions(home, store, task, completions, model_name="p", workers=2)
    steps = [o.steps[-1] for o in outcomes]
    assert [s.stages > 0 for s in steps] == [True] * 5
    assert steps[0].stages_reached == 0 and steps[1].stages_reached == 3
    assert steps[3].wrote_submission and not steps[2].wrote_submission
    rewards = [execution_reward(s.execution()) for s in steps]
    assert rewards == sorted(rewards) and len(set(rewards)) == 5 and rewards[-1] >= 0 > rewards[-2]
    # The store, the workspace and the agent's observation hold the agent's own program.
    for outcome, script in zip(outcomes, scripts, strict=True):
        texts = [e.payload.model_dump_json() for e in store.events(outcome.session_id)]
        assert not any("mlagent-progress" in t or ".mlagent-" in t for t in texts)
        workspace = home.workspace(outcome.session_id)
        assert (workspace / "solution.py").read_text().strip() == script.strip()
        assert not list(workspace.glob(".mlagent-*"))
    assert "KeyError: 'no_such_column'" in steps[1].output and "line 4" in steps[1].output

    plain = solution_sessions(
        home, store, task, completions[1:2], model_name="p", instrument="none"
    )
    assert plain[0].steps[-1].stages == 0 and plain[0].steps[-1].exit_code == 1
