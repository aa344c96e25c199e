"""Rewards: AceGRPO shaping, partial credit, milestones (values worked out by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlagent_tui.core.tasks import Task, load_spec, milestones
from trainer.rewards import (
    MILESTONE_WEIGHTS,
    acegrpo_reward,
    milestone_reward,
    milestone_reward_for,
    partial_credit,
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
