"""Training recipes (offline, single-step, trajectory, acegrpo) and the loop they share."""

from __future__ import annotations

from .checkpoint import CheckpointError, latest_checkpoint
from .common import NothingToTrain, RunOptions
from .loop import RunResult, run_training

RECIPES = ("offline", "single-step", "trajectory", "acegrpo")

__all__ = [
    "RECIPES",
    "CheckpointError",
    "NothingToTrain",
    "RunOptions",
    "RunResult",
    "latest_checkpoint",
    "run_training",
]
