"""What no training phase may use: the held-out bundled tasks, the task seeds evaluations run
at, and the procedural generator seeds whose tasks are kept for evaluation.

The shipped model's figures (docs/training.md) come from these lists: `make adapter` keeps the
three tasks out of demonstrations, sft and RL, and evaluates at seeds 100-101 (102-109 for the
further checks). Distillation and its procedural breadth read the same lists, so a figure
measured on them stays held out whatever recipe trained the model.
"""

from __future__ import annotations

import re

HELD_OUT_TASKS: tuple[str, ...] = ("text-sentiment", "noisy-shapes", "customer-churn")
# The bundled tasks whose starter already writes a CSV submission (the game and code tasks'
# starter is an evaluator, where "valid" says nothing): what the shipped model trained on.
TRAIN_TASKS: tuple[str, ...] = (
    "breast-cancer",
    "citation-graph",
    "diabetes",
    "digits",
    "house-prices",
    "sales-forecast",
)
EVAL_SEEDS: tuple[int, ...] = tuple(range(100, 110))  # task seeds evaluations run at
# `mlagent-train procedural --seed S` writes proc-S-<i>-<domain>: these generator seeds' tasks
# are evaluation tasks, never training ones
PROCEDURAL_EVAL_SEEDS: tuple[int, ...] = (1000,)
_PROC = re.compile(r"^proc-(\d+)-")


def procedural_seed(task_name: str) -> int | None:
    """The generator seed of a procedural task's name, None for any other task."""
    match = _PROC.match(task_name)
    return int(match.group(1)) if match else None


def held_out_reason(task: str, seed: int | None = None) -> str | None:
    """Why (task, seed) may not be trained on, or None when it may."""
    if task in HELD_OUT_TASKS:
        return f"{task} is a held-out task"
    proc = procedural_seed(task)
    if proc is not None and proc in PROCEDURAL_EVAL_SEEDS:
        return f"{task} comes from procedural seed {proc}, kept for evaluation"
    if seed is not None and seed in EVAL_SEEDS:
        return f"seed {seed} of {task} is an evaluation seed ({EVAL_SEEDS[0]}-{EVAL_SEEDS[-1]})"
    return None
