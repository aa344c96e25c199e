"""Rewards: AceGRPO's improvement shaping, dense credit for failed programs, milestones.

Plain floats (no torch): rewards are computed where programs are executed and graded.

The scale of `execution_reward` (what single-step and acegrpo use):

- a valid submission: its unit score on [0, 1] (trainer.data.unit_score: 0.1 at the starter
  baseline, 1 at gold), or under AceGRPO shaping (1-a)·s + a·gain, also >= 0;
- no valid submission: INVALID_BASE (-1) plus credits, at most -0.1, so every invalid reward is
  below every valid one:
  0.05 the answer parsed into a script, 0.05 the script parses as Python,
  0.40 × the structural progress (stages reached / stages; a clean exit counts as all of them,
  an uninstrumented run as none), 0.20 it ran to exit code 0, 0.20 it wrote the submission file.
  Crash at once (-0.9) < load the data, then crash (-0.9 + 0.4·k/n) < run without a submission
  (-0.3) < write an invalid submission (-0.1) < any valid submission (>= 0).

A whole session (trajectory) keeps the milestone reward; one with no valid submission adds
SESSION_DENSE_WEIGHT × its best step's credit, staying under the "valid" milestone (0.2).

`partial_credit` (the raw score, or -10 + 0.1 per LLM progress line) is kept for its callers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from mlagent_tui.core.tasks import (
    MILESTONE_WEIGHTS,
    Task,
    TaskSpec,
    milestone_reward,
    milestone_reward_for,
)

from .instrument import count_progress

__all__ = [
    "ACEGRPO_ALPHA",
    "CREDIT",
    "FAILURE_REWARD",
    "INVALID_BASE",
    "MILESTONE_WEIGHTS",
    "PROGRESS_CREDIT",
    "SESSION_DENSE_WEIGHT",
    "Execution",
    "acegrpo_reward",
    "dense_credit",
    "execution_reward",
    "milestone_reward",
    "milestone_reward_for",
    "partial_credit",
    "session_reward",
]

ACEGRPO_ALPHA = 0.3
FAILURE_REWARD = -10.0  # partial_credit: a program with no valid submission starts here ...
PROGRESS_CREDIT = 0.1  # ... and earns this much back per distinct progress line it printed

INVALID_BASE = -1.0
CREDIT = {"answered": 0.05, "parses": 0.05, "progress": 0.40, "exit_zero": 0.20, "submission": 0.20}
SESSION_DENSE_WEIGHT = 0.1


class Execution(BaseModel):
    """What one answer's execution produced: everything its reward depends on."""

    answered: bool = False  # the answer parsed into a script
    parses: bool = False  # the script parses as Python
    exit_code: int | None = None  # None: never ran, or killed
    wrote_submission: bool = False
    stages: int = 0  # progress markers inserted (0: not instrumented)
    stages_reached: int = 0
    valid: bool = False
    unit: float = 0.0  # the valid submission's score on [0, 1]


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


def dense_credit(ex: Execution) -> float:
    """The credit of a program with no valid submission, on [0, 0.9] (see the module doc)."""
    progress = 0.0
    if ex.stages > 0:
        reached = ex.stages if ex.exit_code == 0 else min(max(ex.stages_reached, 0), ex.stages)
        progress = reached / ex.stages
    answered = ex.answered or ex.parses
    return round(
        CREDIT["answered"] * answered
        + CREDIT["parses"] * ex.parses
        + CREDIT["progress"] * progress
        + CREDIT["exit_zero"] * (ex.exit_code == 0)
        + CREDIT["submission"] * ex.wrote_submission,
        9,
    )


def execution_reward(
    ex: Execution,
    *,
    shaping: Literal["score", "acegrpo"] = "score",
    parent_score: float | None = None,
    alpha: float = ACEGRPO_ALPHA,
) -> float:
    """The reward of one executed answer: its unit score (or AceGRPO's shaping of it against
    `parent_score`) when valid, else INVALID_BASE + its dense credit, below every valid one."""
    if ex.valid:
        unit = min(max(_finite(ex.unit, "unit"), 0.0), 1.0)
        return acegrpo_reward(unit, parent_score, alpha) if shaping == "acegrpo" else unit
    return INVALID_BASE + dense_credit(ex)


def session_reward(
    spec: TaskSpec | Task, score: float | None, format_ratio: float, steps: Sequence[Execution]
) -> float:
    """A whole session's milestone reward; without a valid submission, plus a little for the
    furthest any of its programs got (below the "valid" milestone)."""
    reward = milestone_reward_for(spec, score, format_ratio)
    if score is None and steps:
        reward += SESSION_DENSE_WEIGHT * max(dense_credit(ex) for ex in steps)
    return reward
