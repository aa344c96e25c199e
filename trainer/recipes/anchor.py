"""The anchor: imitation of the demonstrations inside every RL optimiser step (InstructGPT's
PPO-ptx), so exploring does not unlearn what the warm start does well.

Measured before it existed: guided RL raised held-out mean reward but three of twelve held-out
sessions lost their valid Draft (valid 83% -> 58%); the policy drifted on the prompts the
update did not reward. `--anchor N` adds, to each optimiser step of an RL recipe, `--anchor-coef`
times the mean negative log-likelihood of N successful solve steps of the run's tasks (the same
steps `--recipe sft` imitates, drawn afresh each step), so the gradient that follows the reward
also keeps the demonstrated answers likely.

A recipe whose model serves more than the solve agent names the others (`agents`): distil's
model also drives the research agent, whose format drifted (valid 4/4 -> 1/4) while only solve
steps were anchored, and held at 2/4 with one of its steps drawn per optimiser step beside
four solve steps, each a fifth of the anchor. Each further agent's steps are a stratum of their
own: `OTHER_DRAWS` of them per optimiser step, their mean weighing `--anchor-coef` as the
solve steps' mean does, so its few demonstrations are neither outnumbered nor outweighed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from .common import NothingToTrain, RunContext, TrainItem
from .sft import answer_logprobs, imitation_items, prefixed, successful_samples

OTHER_DRAWS = 2  # steps drawn per optimiser step from each agent's stratum besides solve


class Anchor:
    """The demonstrations an RL run imitates as it learns, and their loss's backward pass."""

    def __init__(self, ctx: RunContext, agents: Sequence[str] = ("solve",)) -> None:
        self.count, self.coef = ctx.options.anchor, ctx.options.anchor_coef
        found: list[str] = []
        samples, self.training_data, _ = successful_samples(ctx, found)
        strata = {
            a: imitation_items(ctx, [s for s in samples if s.agent == a], found) for a in agents
        }
        self.items: list[TrainItem] = strata.pop("solve", [])  # the RL recipes' agent
        self.others = {a: items for a, items in strata.items() if items}
        if not self.items:
            raise NothingToTrain(
                f"--anchor {self.count}: no successful solve steps of the run's tasks in "
                f"{ctx.store.path} to imitate ({'; '.join(found) or 'it holds no sessions'}). "
                "Record demonstrations first: mlagent-train demos --tasks NAMES"
            )
        others = "".join(
            f" and {min(OTHER_DRAWS, len(v))} of {len(v)} {a} step(s)"
            for a, v in self.others.items()
        )
        self.notes = [
            f"anchored: each optimiser step also imitates {self.count} of {len(self.items)} "
            f"successful solve step(s){others} (coefficient {self.coef:g})"
        ]
        self.notes += [
            f"not anchored: no successful {a} step"
            + ("" if a in ctx.options.sft_agents else " (--sft-agents leaves them out)")
            for a in strata
            if a not in self.others
        ]
        self._step = (0, 0)  # (update, optimiser steps taken in it): what the draw depends on

    def draw(self, seed: int, update: int, k: int) -> list[tuple[TrainItem, float]]:
        """The items of optimiser step `k` of `update` (the same on a resumed run), each with
        its weight: every stratum's mean weighs `--anchor-coef`."""
        rng = random.Random(f"{seed}/{update}/{k}")
        strata = [rng.sample(self.items, min(self.count, len(self.items)))]
        strata += [rng.sample(v, min(OTHER_DRAWS, len(v))) for v in self.others.values()]
        return [(it, self.coef / len(picked)) for picked in strata for it in picked]

    def backward(self, ctx: RunContext) -> float:
        """Accumulate the anchor loss's gradient (before the optimiser step); its value."""
        update, k = self._step
        self._step = (ctx.update, k + 1 if update == ctx.update else 0)
        picked = self.draw(ctx.options.seed, ctx.update, self._step[1])
        total = 0.0
        for i, prefix in prefixed(ctx, [it for it, _ in picked]):  # shared starts run once
            item, weight = picked[i]
            loss = -answer_logprobs(ctx, item, prefix).mean() * weight
            loss.backward()
            total += float(loss.detach())
        ctx.policy.model.eval()
        if not math.isfinite(total):
            raise FloatingPointError(f"non-finite anchor loss: {total}")
        return total
