"""Training recipes (sft, distil, offline, single-step, trajectory, acegrpo), their loop."""

from __future__ import annotations

from .checkpoint import CheckpointError, latest_checkpoint
from .common import UNBOUNDED_STEPS, NothingToTrain, RunOptions
from .loop import RunResult, run_training

RECIPES = ("sft", "offline", "single-step", "trajectory", "acegrpo", "distil")

__all__ = [
    "RECIPES",
    "UNBOUNDED_STEPS",
    "CheckpointError",
    "NothingToTrain",
    "RunOptions",
    "RunResult",
    "latest_checkpoint",
    "run_training",
]
