"""The settings that produced the shipped model, as the commands' defaults.

`make adapter` (benchmarks/learning_curve.py) passes these; `mlagent-train demos`, `run
--recipe sft` and `run --recipe distil` take them when not told otherwise, so the plain
commands rebuild what ships rather than a weaker variant of it.
"""

from __future__ import annotations

from typing import Any

from .heldout import HELD_OUT_TASKS, TRAIN_TASKS

DEMO_LEVELS = ("silver",)
DEMO_SEEDS = {"solve": (0, 1, 2), "research": (0,)}  # research: one six-step session per task
DEMO_TASKS = TRAIN_TASKS
# per recipe: what `run` uses for an option left out (others: the RunOptions defaults)
RECIPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "sft": {"steps": 38, "lora_r": 16, "lr": 1e-3, "exclude_tasks": list(HELD_OUT_TASKS)},
    # distil improves the shipped model (sft + anchored RL) with the RL phase's step size and
    # anchor, so each round's updates keep its Drafts
    "distil": {
        "base_model": "local",
        "steps": 8,  # without --rounds: updates on the stored sessions
        "round_updates": 36,  # with --rounds: what benchmarks/distil_hour.py measures
        "procedural": 2,  # procedural training tasks beside the bundled ones, with --rounds
        "lora_r": 16,
        "lr": 3e-4,
        "anchor": 2,  # solve steps, beside 2 research steps (anchor.py): the cost of 4 alone
        "max_new_tokens": 640,
        "exclude_tasks": list(HELD_OUT_TASKS),
    },
}
FALLBACK = {"steps": 1, "lora_r": 8, "lr": 1e-4, "anchor": 0, "base_model": "smollm2"}


def recipe_default(recipe: str, name: str, given: Any) -> Any:
    """`given` where the option was passed, else the recipe's default, else the old one."""
    if given is not None:
        return given
    return RECIPE_DEFAULTS.get(recipe, {}).get(name, FALLBACK.get(name))
