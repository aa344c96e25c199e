"""The anchor: imitation of the demonstrations inside every RL optimiser step (InstructGPT's
PPO-ptx), so exploring does not unlearn what the warm start does well.

Measured before it existed: guided RL raised held-out mean reward but three of twelve held-out
sessions lost their valid Draft (valid 83% -> 58%); the policy drifted on the prompts the
update did not reward. `--anchor N` adds, to each optimiser step of an RL recipe, `--anchor-coef`
times the mean negative log-likelihood of N successful solve steps of the run's tasks (the same
steps `--recipe sft` imitates, drawn afresh each step), so the gradient that follows the reward
also keeps the demonstrated answers likely.
"""

from __future__ import annotations

import math
import random

from .common import NothingToTrain, RunContext, TrainItem
from .sft import answer_logprobs, imitation_items, shared_prefix, successful_samples


class Anchor:
    """The demonstrations an RL run imitates as it learns, and their loss's backward pass."""

    def __init__(self, ctx: RunContext) -> None:
        self.count, self.coef = ctx.options.anchor, ctx.options.anchor_coef
        found: list[str] = []
        samples, self.training_data, _ = successful_samples(ctx, found)
        samples = [s for s in samples if s.agent == "solve"]  # the RL recipes' agent
        self.items: list[TrainItem] = imitation_items(ctx, samples, found)
        if not self.items:
            raise NothingToTrain(
                f"--anchor {self.count}: no successful solve steps of the run's tasks in "
                f"{ctx.store.path} to imitate ({'; '.join(found) or 'it holds no sessions'}). "
                "Record demonstrations first: mlagent-train demos --tasks NAMES"
            )
        self.notes = [
            f"anchored: each optimiser step also imitates {self.count} of {len(self.items)} "
            f"successful solve step(s) (coefficient {self.coef:g})"
        ]
        self._step = (0, 0)  # (update, optimiser steps taken in it): what the draw depends on

    def backward(self, ctx: RunContext) -> float:
        """Accumulate the anchor loss's gradient (before the optimiser step); its value."""
        update, k = self._step
        self._step = (ctx.update, k + 1 if update == ctx.update else 0)
        rng = random.Random(f"{ctx.options.seed}/{ctx.update}/{self._step[1]}")  # resumes alike
        picked = rng.sample(self.items, min(self.count, len(self.items)))
        picked.sort(key=lambda it: it.prompt_ids)  # shared prompt starts run once
        prefix = shared_prefix(ctx, picked)
        total = 0.0
        for item in picked:
            loss = -answer_logprobs(ctx, item, prefix).mean() * (self.coef / len(picked))
            loss.backward()
            total += float(loss.detach())
        ctx.policy.model.eval()
        if not math.isfinite(total):
            raise FloatingPointError(f"non-finite anchor loss: {total}")
        return total
