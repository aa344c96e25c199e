"""Rewards: AceGRPO's improvement shaping, partial credit from progress lines, milestones.

Plain floats (no torch): rewards are computed where programs are executed and graded.
"""

from __future__ import annotations

import math

from mlagent_tui.core.instrument import count_progress
from mlagent_tui.core.tasks import (
    MILESTONE_WEIGHTS,
    milestone_reward,
    milestone_reward_for,
)

__all__ = [
    "ACEGRPO_ALPHA",
    "FAILURE_REWARD",
    "MILESTONE_WEIGHTS",
    "PROGRESS_CREDIT",
    "acegrpo_reward",
    "milestone_reward",
    "milestone_reward_for",
    "partial_credit",
]

ACEGRPO_ALPHA = 0.3
FAILURE_REWARD = -10.0  # a program that produced no valid submission starts here ...
PROGRESS_CREDIT = 0.1  # ... and earns this much back per distinct progress line it printed


def _finite(value: float, what: str) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value}")
    return value


def acegrpo_reward(
    score: float | None,
    parent_score: float | None,
    alpha: float = ACEGRPO_ALPHA,
    eps: float = 1e-6,
) -> float:
    """(1 - α)·s + α·max(0, (s - s_parent) / (1 - s_parent + ε)); 0 for an invalid submission.

    Scores are normalised to [0, 1] (higher is better) by the caller. The second term rewards
    improving on the parent state's solution, relative to the room that was left to improve. A
    parent without a score (a Draft, which has no solution yet, or a Debug state, whose solution
    was invalid) counts as s_parent = 0, so the bonus is then the score itself.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be within [0, 1], got {alpha}")
    if score is None:
        return 0.0
    s = _finite(score, "score")
    s_parent = 0.0 if parent_score is None else _finite(parent_score, "parent_score")
    gain = max(0.0, (s - s_parent) / (1.0 - s_parent + eps))
    return (1.0 - alpha) * s + alpha * gain


def partial_credit(output: str, graded_score: float | None, higher_is_better: bool) -> float:
    """The grader's score (sign flipped where lower is better) for a valid submission; otherwise
    -10 plus 0.1 per distinct progress line in the program's output (RL for MLE agents).
    """
    if graded_score is not None:
        s = _finite(graded_score, "graded_score")
        return s if higher_is_better else -s
    return FAILURE_REWARD + PROGRESS_CREDIT * count_progress(output)
