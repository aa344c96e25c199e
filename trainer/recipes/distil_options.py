"""Distillation's own options (`--recipe distil`), kept apart from the shared RunOptions."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from trainer.defaults import RECIPE_DEFAULTS


class DistilOptions(BaseModel):
    """How distil finds its data: stored search sessions only, or `rounds` of search on the
    training tasks (fresh seeds each round) alternating with `round_updates` updates on what
    was found."""

    rounds: int | None = Field(
        default=None, ge=1, description="search/train rounds (None: the stored sessions only)"
    )
    round_updates: int = Field(
        default=RECIPE_DEFAULTS["distil"]["round_updates"], ge=1, description="updates per round"
    )
    search_model: str = Field(
        default="policy",
        description="who searches in a round: policy (the model being trained, as llama.cpp "
        "runs it) or a --model string (an API model's search distilled into the local one)",
    )
    search_steps: int = Field(default=12, ge=1, description="model calls per search session")
    search_policy: Literal["greedy", "mcts", "evolutionary"] = "greedy"
    search_workers: int = Field(default=2, ge=1, description="candidates in flight")
    procedural: int = Field(
        default=RECIPE_DEFAULTS["distil"]["procedural"],
        ge=0,
        description="procedural training tasks added to the tasks (0: none)",
    )
    procedural_seed: int = Field(default=0, ge=0, description="their generator seed")
    sweep_seeds: int = Field(
        default=3,
        ge=0,
        description="before round 1, every one-setting change of each task's starter is run "
        "at this many training seeds (recipes.distil_sweep; 0: no sweep)",
    )
    eval_tasks: list[str] = Field(
        default_factory=list, description="held-out figures at each round's start: these tasks"
    )
    eval_seeds: list[int] = Field(default_factory=list, description="... at these task seeds")
    eval_max_steps: int = Field(default=2, ge=1, description="... with this many steps each")
