"""The agent's actions: MLAgentBench's (same names and arguments) plus ours, in one registry."""

# Importing the action modules registers their actions: the file actions first, then those
# that run things (run.py imports files.py), which is the order the model sees them in.
from . import files, run
from .registry import (
    REGISTRY,
    ActionContext,
    ActionError,
    ActionSpec,
    Observation,
    action,
    lookup,
    run_action,
    visible_actions,
)
from .run import SOLUTION_FILE

__all__ = [
    "REGISTRY",
    "SOLUTION_FILE",
    "ActionContext",
    "ActionError",
    "ActionSpec",
    "Observation",
    "action",
    "files",
    "lookup",
    "run",
    "run_action",
    "visible_actions",
]
