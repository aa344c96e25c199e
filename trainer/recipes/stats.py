"""What an update reports about its items: all-equal groups and the rewards' mean and spread."""

from __future__ import annotations

import math
from collections import defaultdict

from .common import TrainItem


def all_equal_groups(items: list[TrainItem]) -> tuple[int, int]:
    """(groups whose rewards are all equal, groups), over groups of two or more unmasked
    answers (trajectories): the all-equal ones have zero advantage and teach nothing."""
    by_group: dict[str, dict[str, float]] = defaultdict(dict)
    for i, item in enumerate(items):
        if not item.masked:
            by_group[item.group][item.unit_id or f"#{i}"] = item.reward
    sized = [list(units.values()) for units in by_group.values() if len(units) >= 2]
    equal = sum(max(r) - min(r) <= 1e-9 for r in sized)
    return equal, len(sized)


def reward_stats(items: list[TrainItem]) -> tuple[float, float]:
    rewards = [it.reward for it in items if not it.masked]
    if not rewards:
        return 0.0, 0.0
    mean = sum(rewards) / len(rewards)
    return mean, math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
