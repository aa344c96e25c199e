"""Recipes on the CPU with the bundled model: the shared update, offline, acegrpo, trajectory."""

from __future__ import annotations

import math

import pytest

from mlagent_tui.core.store import training_updates
from trainer.recipes import RunOptions, run_training
from trainer.recipes.common import TrainItem, item_advantages, policy_update

from .conftest import bwrap_ready
from .train_helpers import gold_script, solve_session, solve_text, store_parents_options

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def _item(reward: float, group: str = "g", **kw) -> TrainItem:
    return TrainItem(prompt_ids=[1, 2, 3], completion_ids=[4, 5], reward=reward, group=group, **kw)


def test_advantages_all_equal_masked_and_per_trajectory() -> None:
    assert item_advantages([_item(0.5), _item(0.5), _item(0.5)]) == [0.0, 0.0, 0.0]
    adv = item_advantages([_item(1.0), _item(0.0), _item(7.0, masked=True)])
    assert adv[0] > 0 > adv[1] and adv[2] == 0.0
    # Two steps of one session share its advantage; the group has two sessions, not three items.
    adv = item_advantages(
        [_item(1.0, unit_id="a"), _item(1.0, unit_id="a"), _item(0.0, unit_id="b")]
    )
    assert adv[0] == adv[1] == pytest.approx(1.0, abs=1e-3) and adv[2] == pytest.approx(
        -1.0, abs=1e-3
    )
    assert item_advantages([_item(1.0)]) == [0.0]  # a lone answer carries no signal


@pytest.fixture(scope="module")
def policy():
    import torch

    from trainer.policy import load_policy

    torch.set_num_threads(1)
    return load_policy("local", seed=0)


def test_all_equal_rewards_make_no_update_and_no_nan(policy) -> None:
    import torch

    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-3)
    before = [p.detach().clone() for p in policy.trainable_parameters()]
    prompt = policy.chat_prompt_ids([{"role": "user", "content": "hi"}])
    items = [
        TrainItem(prompt_ids=prompt, completion_ids=[10, 11, 12], reward=-10.0, group="g")
        for _ in range(3)
    ]
    metrics = policy_update(policy, opt, items, RunOptions(recipe="single-step"))
    assert all(math.isfinite(v) for v in metrics.values()) and metrics["items_with_signal"] == 0
    after = policy.trainable_parameters()
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    items[0].reward = 1.0
    items[0].old_logprobs = [-2.0, -2.0, -2.0]
    metrics = policy_update(policy, opt, items, RunOptions(recipe="single-step"))
    assert all(math.isfinite(v) for v in metrics.values()) and metrics["items_with_signal"] == 3
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_inner_steps_take_that_many_optimiser_steps_on_one_batch(policy) -> None:
    import torch

    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-4)
    prompt = policy.chat_prompt_ids([{"role": "user", "content": "hello"}])
    items = [
        TrainItem(prompt_ids=prompt, completion_ids=[20, 21], reward=r, group="g",
                  old_logprobs=[-3.0, -3.0])
        for r in (1.0, 0.0)
    ]  # fmt: skip
    metrics = policy_update(policy, opt, items, RunOptions(recipe="single-step", inner_steps=3))
    steps = {int(state["step"]) for state in opt.state.values()}
    assert steps == {3} and all(math.isfinite(v) for v in metrics.values())
    with pytest.raises(ValueError, match="inner_steps"):
        RunOptions(recipe="single-step", inner_steps=0)


def test_items_without_old_logprobs_take_the_first_steps_as_the_ratios_base(policy) -> None:
    """llama.cpp's samples carry no policy log-probs: the update's first step supplies them, so
    its ratio is 1 and later steps are measured (and clipped) against the pre-update policy."""
    import torch

    from trainer.recipes.common import answer_logprobs, prompt_cache

    opt = torch.optim.AdamW(policy.trainable_parameters(), lr=5e-2)
    prompt = policy.chat_prompt_ids([{"role": "user", "content": "hello"}])
    items = [
        TrainItem(prompt_ids=prompt, completion_ids=[20, 21, 22], reward=r, group="g")
        for r in (1.0, 0.0)
    ]
    with torch.no_grad():
        before = answer_logprobs(policy, prompt, [20, 21, 22], prompt_cache(policy, prompt))
    first = policy_update(policy, opt, items, RunOptions(recipe="single-step", inner_steps=1))
    assert first["ratio_mean"] == pytest.approx(1.0) and first["clip_frac"] == 0.0
    assert items[0].old_logprobs == pytest.approx(before.tolist(), abs=1e-4)
    later = policy_update(policy, opt, items, RunOptions(recipe="single-step", inner_steps=2))
    assert later["ratio_mean"] != pytest.approx(1.0)  # against the first step's policy
    assert items[0].old_logprobs == pytest.approx(before.tolist(), abs=1e-4)  # kept, not reset


def test_store_parents_are_valid_drafts_at_the_run_seed(tmp_path, home, store, tiny_task) -> None:
    """--parents store: every improve prompt forks a valid stored Draft at --seed, never a
    broken one (a debug prompt) nor one of another seed."""
    from trainer.recipes.single_step import stored_drafts

    good = solve_session(tmp_path, home, store, tiny_task, [solve_text(gold_script(tiny_task))])
    solve_session(tmp_path, home, store, tiny_task, [solve_text("raise SystemExit(1)")])

    class Ctx:  # what stored_drafts reads of a RunContext
        pass

    ctx = Ctx()
    ctx.store = store  # type: ignore[attr-defined]
    name = store.sessions()[0]["task"]
    assert stored_drafts(ctx, name, 0) == [(good, 1)]  # type: ignore[arg-type]
    assert stored_drafts(ctx, name, 5) == []  # type: ignore[arg-type]
    options = store_parents_options(tmp_path, home, store, tiny_task)
    result = run_training(options)
    (update,) = training_updates(store, result.run_id)
    assert update.extra["improve_prompts"] == 1
    forks = [s for s in store.sessions() if s.get("parent_session_id")]
    assert len(forks) == 2 and {s["parent_session_id"] for s in forks} == {good}

    # --task-seeds 9,0: update 1 drafts at seed 9 (no Draft stored there), update 2 improves
    # seed 0's stored Draft; the run's record names both seeds.
    import json

    from trainer.provenance import TrainingData

    run = tmp_path / "seeds"
    options = options.model_copy(update={"task_seeds": [9, 0], "steps": 2, "out": str(run)})
    result = run_training(options)
    first, second = training_updates(store, result.run_id)
    assert (first.extra["improve_prompts"], second.extra["improve_prompts"]) == (0, 1)
    assert any("at seed 9 in the store" in n and "--seeds 9" in n for n in result.notes)
    ours = [s for s in store.sessions() if result.run_id in s["model"]]
    seeds = sorted(json.loads(s["config"])["seed"] for s in ours)
    assert seeds == [0, 0, 9, 9]
    assert TrainingData.load(run).tasks[name] == [0, 9]


def test_offline_excludes_other_base_model_and_uses_ratios(
    tmp_path, home, store, tiny_task
) -> None:
    gold, crash = solve_text(gold_script(tiny_task)), solve_text("raise SystemExit(1)")
    solve_session(tmp_path, home, store, tiny_task, [gold], name="local", logprobs=True)
    solve_session(tmp_path, home, store, tiny_task, [crash], name="local", logprobs=True)
    solve_session(tmp_path, home, store, tiny_task, [crash])  # replayed: no ratio
    solve_session(tmp_path, home, store, tiny_task, [gold], name="openai/gpt-4o-mini")
    options = RunOptions(recipe="offline", db=str(store.path), out=str(tmp_path / "run"))
    result = run_training(options)
    assert result.updates_done == 1 and any("excluded 1 sample(s)" in n for n in result.notes)
    (update,) = training_updates(store, result.run_id)
    assert update.extra["ratio_items"] == 2 and update.extra["no_ratio_items"] == 1
    assert update.extra["excluded_other_base_model"] == 1
    assert update.valid_rate == pytest.approx(1 / 3) and math.isfinite(update.loss)
    assert update.extra["items_with_signal"] == 3
    assert 0 < update.extra["update_seconds"] <= update.seconds  # where the time went


def test_acegrpo_grows_its_buffer_from_real_sessions(tmp_path, tiny_task) -> None:
    options = RunOptions(
        recipe="acegrpo",
        task_dirs=[str(tiny_task)],
        group_size=2,
        max_new_tokens=48,
        states_per_update=1,
        home=str(tmp_path / "home"),
        out=str(tmp_path / "run"),
    )
    result = run_training(options)
    assert result.updates_done == 1 and math.isfinite(result.loss[0])
    from mlagent_tui.core.home import Home
    from mlagent_tui.core.store import Store

    store = Store(Home.at(tmp_path / "home").db_path)
    (update,) = training_updates(store, result.run_id)
    assert update.extra["states"] == ["draft:0"] and len(store.sessions()) == 2


def test_trajectory_runs_whole_sessions_and_masks_time_outs(tmp_path, tiny_task) -> None:
    options = RunOptions(
        recipe="trajectory",
        task_dirs=[str(tiny_task)],
        group_size=2,
        max_new_tokens=32,
        max_session_steps=5,
        max_minutes=0.02,  # 1.2 s: spent within the first steps, so every session ends on time
        home=str(tmp_path / "home"),
        out=str(tmp_path / "run"),
    )
    result = run_training(options)
    assert result.updates_done == 1
    from mlagent_tui.core.home import Home
    from mlagent_tui.core.store import Store

    store = Store(Home.at(tmp_path / "home").db_path)
    (update,) = training_updates(store, result.run_id)
    assert update.extra["sessions"] == 2 and update.extra["timed_out"] == 2
    assert update.extra["items"] >= 2 and update.extra["masked"] == update.extra["items"]
    assert update.extra["items_with_signal"] == 0 and update.loss == 0.0
    sessions = store.sessions()
    assert all(
        s["agent"] == "solve" and s["end_reason"].startswith("time budget") for s in sessions
    )
    assert update.tokens_per_s > 0
