"""The dense milestone reward (SandMLE): partial credit for each level a solution reaches.

It lives in core, not in trainer, because the Gym environment in core hands it out as its reward
and core never imports trainer; `trainer.rewards` re-exports it.

The weights sum to 1, so a gold solution whose every response parsed earns exactly 1. Valid and
above-median carry the most of the non-medal weight: they are what a small model can reach and
learn from; gold is worth more than each lower medal because it is the rarest signal.
"""

from __future__ import annotations

from types import MappingProxyType

from .spec import Task, TaskSpec

MILESTONE_WEIGHTS = MappingProxyType(
    {
        "format": 0.10,  # times the fraction of responses that followed the response format
        "valid": 0.20,  # the submission was graded
        "above_median": 0.20,
        "bronze": 0.15,
        "silver": 0.15,
        "gold": 0.20,
    }
)


def milestone_reward(
    format_ratio: float,
    valid: bool,
    above_median: bool,
    bronze: bool,
    silver: bool,
    gold: bool,
) -> float:
    """Sum of the weights of the milestones reached, plus format weight × format ratio.

    A higher milestone implies the lower ones (gold ⇒ silver ⇒ bronze ⇒ above median ⇒ valid),
    so a caller that only sets the highest level reached still gets the whole ladder.
    """
    if not 0.0 <= format_ratio <= 1.0:
        raise ValueError(f"format_ratio must be within [0, 1], got {format_ratio}")
    silver = silver or gold
    bronze = bronze or silver
    above_median = above_median or bronze
    valid = valid or above_median
    reached = {
        "valid": valid,
        "above_median": above_median,
        "bronze": bronze,
        "silver": silver,
        "gold": gold,
    }
    w = MILESTONE_WEIGHTS
    return w["format"] * format_ratio + sum(w[name] for name, hit in reached.items() if hit)


def milestone_reward_for(spec: TaskSpec | Task, score: float | None, format_ratio: float) -> float:
    """The milestone reward of a graded score (None: no valid submission) on a task."""
    task = spec.spec if isinstance(spec, Task) else spec
    medal = task.medal(score)
    return milestone_reward(
        format_ratio,
        valid=score is not None,
        above_median=task.above_median(score),
        bronze=medal in ("bronze", "silver", "gold"),
        silver=medal in ("silver", "gold"),
        gold=medal == "gold",
    )
