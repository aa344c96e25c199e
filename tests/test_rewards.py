"""Rewards: AceGRPO shaping, partial credit, dense credit, milestones, all-equal groups
(values worked out by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlagent_tui.core.store import (
    UpdateRecord,
    record_update,
    start_training_run,
    training_updates,
)
from mlagent_tui.core.tasks import Task, load_spec, milestones
from trainer.recipes.common import TrainItem
from trainer.recipes.stats import all_equal_groups
from trainer.rewards import (
    CREDIT,
    INVALID_BASE,
    MILESTONE_WEIGHTS,
    SESSION_DENSE_WEIGHT,
    Execution,
    acegrpo_reward,
    dense_credit,
    execution_reward,
    milestone_reward,
    milestone_reward_for,
    partial_credit,
    session_reward,
)

TINY = Path(__file__).parent / "data" / "tiny-task"  # mae, lower is better


# -- AceGRPO -------------------------------------------------------------------------------------


def test_acegrpo_reward_by_hand() -> None:
    # s = 0.8, parent 0.5: 0.7·0.8 + 0.3·(0.3 / 0.500001) = 0.56 + 0.179999640 = 0.739999640
    assert acegrpo_reward(0.8, 0.5) == pytest.approx(0.56 + 0.3 * 0.3 / 0.500001, abs=1e-12)
    assert acegrpo_reward(0.8, 0.5) == pytest.approx(0.74, abs=1e-6)
    # worse than the parent: no bonus, 0.7·0.4 = 0.28
    assert acegrpo_reward(0.4, 0.5) == pytest.approx(0.28)
    # alpha = 0: the plain score
    assert acegrpo_reward(0.4, 0.1, alpha=0.0) == pytest.approx(0.4)


def test_acegrpo_invalid_and_parentless() -> None:
    assert acegrpo_reward(None, 0.9) == 0.0  # invalid submission
    assert acegrpo_reward(None, None) == 0.0
    # a Draft parent counts as s_parent = 0: 0.7·0.6 + 0.3·0.6/1.000001 ≈ 0.6
    assert acegrpo_reward(0.6, None) == pytest.approx(0.6, abs=1e-6)
    assert acegrpo_reward(0.6, None) == acegrpo_reward(0.6, 0.0)
    # a perfect parent leaves no room: the bonus is 0 unless s exceeds it
    assert acegrpo_reward(1.0, 1.0) == pytest.approx(0.7)


def test_acegrpo_rejects_bad_alpha_and_nan() -> None:
    with pytest.raises(ValueError, match="alpha"):
        acegrpo_reward(0.5, 0.1, alpha=1.5)
    with pytest.raises(ValueError, match="finite"):
        acegrpo_reward(float("nan"), 0.1)


# -- partial credit ------------------------------------------------------------------------------


def test_partial_credit_valid_submission_uses_the_score() -> None:
    assert partial_credit("whatever", 0.93, higher_is_better=True) == 0.93
    assert partial_credit("", 2.5, higher_is_better=False) == -2.5  # lower is better: flipped
    assert partial_credit("", 0.0, higher_is_better=False) == 0.0


def test_partial_credit_counts_distinct_progress_lines() -> None:
    crashed = (
        "imported packages\nloaded data\ndefined model\n"
        "training loss: 0.9\ntraining loss: 0.8\nTraceback ...\nMemoryError\n"
    )
    # 4 distinct markers (training loss twice counts once): -10 + 0.4 = -9.6
    assert partial_credit(crashed, None, higher_is_better=True) == pytest.approx(-9.6)
    assert partial_credit("SyntaxError: invalid syntax", None, True) == -10.0


# -- milestones ----------------------------------------------------------------------------------


def test_milestone_weights_sum_to_one_and_are_reexported() -> None:
    assert sum(MILESTONE_WEIGHTS.values()) == pytest.approx(1.0)
    assert milestone_reward is milestones.milestone_reward
    assert milestone_reward_for is milestones.milestone_reward_for


def test_milestone_reward_by_hand() -> None:
    # all responses well-formed, valid and above median, no medal: 0.1 + 0.2 + 0.2 = 0.5
    assert milestone_reward(1.0, True, True, False, False, False) == pytest.approx(0.5)
    # half the responses well-formed, nothing valid: 0.1·0.5 = 0.05
    assert milestone_reward(0.5, False, False, False, False, False) == pytest.approx(0.05)
    # gold alone implies every lower milestone: the whole ladder, 1.0
    assert milestone_reward(1.0, False, False, False, False, True) == pytest.approx(1.0)
    # bronze implies valid and above median: 0.2 + 0.2 + 0.15 = 0.55
    assert milestone_reward(0.0, False, False, True, False, False) == pytest.approx(0.55)
    with pytest.raises(ValueError, match="format_ratio"):
        milestone_reward(1.5, True, False, False, False, False)


@pytest.mark.parametrize(
    ("score", "expected"),
    [
        # tiny task, mae: median 0.9, bronze 0.5, silver 0.2, gold 0.05 (lower is better)
        (None, 0.08),  # 0.1·0.8
        (1.0, 0.08 + 0.2),  # valid, worse than the median
        (0.9, 0.08 + 0.4),  # exactly the median counts (reaches means <=)
        (0.3, 0.08 + 0.55),  # bronze
        (0.2, 0.08 + 0.7),  # silver
        (0.01, 0.08 + 0.9),  # gold
    ],
)
def test_milestone_reward_for_uses_the_task_thresholds(
    score: float | None, expected: float
) -> None:
    spec = load_spec(TINY)
    assert milestone_reward_for(spec, score, 0.8) == pytest.approx(expected)
    assert milestone_reward_for(Task(TINY), score, 0.8) == pytest.approx(expected)


# -- dense reward for programs with no valid submission -----------------------------------------


def _ex(**kw: object) -> Execution:
    return Execution(answered=True, parses=True, **kw)


def test_dense_reward_orders_how_far_a_program_got() -> None:
    ladder = [
        Execution(),  # no script in the answer
        Execution(answered=True),  # a script that does not parse
        _ex(exit_code=1, stages=10, stages_reached=0),  # crashed at once
        _ex(exit_code=1, stages=10, stages_reached=3),  # loaded the data, then crashed
        _ex(exit_code=1, stages=10, stages_reached=9),
        _ex(exit_code=0, stages=10, stages_reached=9),  # ran (a clean exit counts every stage)
        _ex(exit_code=0, stages=10, stages_reached=10, wrote_submission=True),  # invalid file
        _ex(exit_code=0, valid=True, unit=0.0),  # the lowest valid submission
        _ex(exit_code=0, valid=True, unit=0.1),
        _ex(exit_code=0, valid=True, unit=1.0),
    ]
    rewards = [execution_reward(ex) for ex in ladder]
    assert rewards == sorted(rewards) and len(set(rewards)) == len(rewards)
    # by hand: -1 + 0.05 + 0.05 + 0.4·0.3 = -0.78; ran, no submission -0.3; invalid file -0.1
    assert rewards[0] == pytest.approx(-1.0) and rewards[2] == pytest.approx(-0.9)
    assert rewards[3] == pytest.approx(-0.78)
    assert rewards[5] == pytest.approx(-0.3) and rewards[6] == pytest.approx(-0.1)
    assert max(rewards[:7]) < 0.0 <= min(rewards[7:])


def test_every_invalid_reward_is_below_every_valid_one() -> None:
    best_invalid = _ex(exit_code=0, stages=3, stages_reached=3, wrote_submission=True)
    assert INVALID_BASE + dense_credit(best_invalid) == pytest.approx(INVALID_BASE + 0.9)
    worst_valid = [
        execution_reward(_ex(valid=True, unit=0.0)),
        execution_reward(_ex(valid=True, unit=0.1), shaping="acegrpo", parent_score=0.9),
        execution_reward(_ex(valid=True, unit=0.0), shaping="acegrpo", alpha=1.0),
    ]
    assert execution_reward(best_invalid) < min(worst_valid)
    assert sum(CREDIT.values()) == pytest.approx(0.9)
    # AceGRPO shaping of a valid answer is acegrpo_reward's
    shaped = execution_reward(_ex(valid=True, unit=0.8), shaping="acegrpo", parent_score=0.5)
    assert shaped == acegrpo_reward(0.8, 0.5)
    # out-of-range counts are clipped, never above the full progress credit
    assert dense_credit(_ex(exit_code=1, stages=2, stages_reached=7)) == pytest.approx(0.5)


def test_uninstrumented_runs_get_no_progress_credit() -> None:
    crashed = _ex(exit_code=1)  # stages 0: `--instrument-model none`, or a screened program
    ran = _ex(exit_code=0)
    assert execution_reward(crashed) == pytest.approx(-0.9)
    assert execution_reward(ran) == pytest.approx(-0.7)


def test_session_reward_stays_below_the_valid_milestone() -> None:
    spec = load_spec(TINY)
    best = _ex(exit_code=0, stages=4, stages_reached=4, wrote_submission=True)
    failed = session_reward(spec, None, 1.0, [_ex(exit_code=1, stages=4), best])
    assert failed == pytest.approx(0.1 + SESSION_DENSE_WEIGHT * 0.9)
    assert failed < session_reward(spec, 1.0, 0.0, [best])  # the lowest valid session
    assert session_reward(spec, None, 0.5, []) == pytest.approx(0.05)


# -- all-equal groups ----------------------------------------------------------------------------


def _item(reward: float, group: str, **kw: object) -> TrainItem:
    return TrainItem(prompt_ids=[1], completion_ids=[2], reward=reward, group=group, **kw)


def test_all_equal_groups_counts_groups_without_spread() -> None:
    items = [
        *(_item(-0.9, "equal") for _ in range(4)),  # counts
        _item(-0.9, "spread"),
        _item(-0.5, "spread"),  # does not
        _item(0.3, "masked-spread"),
        _item(0.3, "masked-spread"),
        _item(9.0, "masked-spread", masked=True),  # the masked item has no say: counts
        _item(0.1, "one-trajectory", unit_id="a"),
        _item(0.1, "one-trajectory", unit_id="a"),  # a single unit: not a group of two
        _item(1.0, "alone"),
    ]
    assert all_equal_groups(items) == (2, 3)
    assert all_equal_groups([]) == (0, 0)


def test_update_records_keep_all_equal_groups(store) -> None:
    start_training_run(store, "run-1", recipe="single-step", base_model="smollm2", config={},
                       out_dir="x")  # fmt: skip
    assert "m006_update_all_equal_groups" in store.migrations()
    record_update(store, "run-1", UpdateRecord(update=1, all_equal_groups=3, extra={"groups": 4}))
    (back,) = training_updates(store, "run-1")
    assert back.all_equal_groups == 3 and back.extra["groups"] == 4


def test_the_loop_reports_all_equal_groups_per_update() -> None:
    from types import SimpleNamespace

    from trainer.recipes.common import Collected
    from trainer.recipes.loop import RunResult, _one_update

    class Recipe:
        def collect(self, ctx: object, phase: object) -> Collected:
            items = [_item(-0.9, "a"), _item(-0.9, "a"), _item(-0.9, "b"), _item(0.2, "b")]
            return Collected(items=items)

        def update(self, ctx: object, optimizer: object, items: object) -> dict[str, float]:
            return {"loss": 0.0, "kl": 0.0, "items_with_signal": 2.0, "clip_frac": 0.0,
                    "entropy": 0.0, "ratio_mean": 1.0}  # fmt: skip

    record = _one_update(SimpleNamespace(update=1), Recipe(), None, lambda text: None)
    assert record.all_equal_groups == 1 and record.extra["groups"] == 2
    assert RunResult(run_id="r", recipe="x", base_model="b", updates_done=0, out_dir="o")
    assert "all_equal_groups" in RunResult.model_fields
