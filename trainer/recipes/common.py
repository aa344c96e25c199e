"""What every recipe shares: run options, the Recipe protocol, the items a recipe hands the
update, and the update. The loop (loop.py) picks a recipe by name; no recipe imports the loop.

A recipe collects `TrainItem`s (prompt ids, the answer's ids, the sampler's log-probabilities
where known, a reward, a group, a weight); the shared update turns rewards into group advantages
and takes one clipped-GRPO optimiser step over them in micro-batches.
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field

from mlagent_tui.core.home import Home
from mlagent_tui.core.llm.adapter import base_identity
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task, find_task

from .distil_options import DistilOptions

if TYPE_CHECKING:
    import torch

    from trainer.policy import Policy

UNBOUNDED_STEPS = 1_000_000  # --minutes without --steps: the clock ends the run

RecipeName = Literal["sft", "offline", "single-step", "trajectory", "acegrpo", "distil"]


class RunOptions(BaseModel):
    """Everything a training run is configured with (saved in run.json; --resume reuses it)."""

    recipe: RecipeName
    base_model: str = "smollm2"  # the bare base: training from scratch never starts from an adapter
    tasks: list[str] = Field(default_factory=list)
    task_dirs: list[str] = Field(default_factory=list)
    steps: int = Field(default=1, ge=1, description="policy updates")
    minutes: float | None = Field(
        default=None, gt=0, description="wall-clock budget: no update starts after it"
    )
    exclude_tasks: list[str] = Field(default_factory=list)
    init: str | None = Field(default=None, description="start from this run's latest weights")
    sft_filter: Literal["beats-baseline", "valid"] = "beats-baseline"
    sft_batch: int = Field(default=8, ge=1, description="sft: steps imitated per update")
    sft_agents: list[Literal["solve", "research"]] = Field(
        default_factory=lambda: ["solve", "research"], description="sft: whose sessions"
    )
    sft_max_tokens: int = Field(default=4096, ge=64, description="sft: longest item kept")
    sft_prompt_grad: bool = Field(default=False, description="sft: backward through prompts")
    sft_loss: Literal["step", "token"] = Field(
        default="step", description="sft: every answer weighs the same, or every token"
    )
    group_size: int = Field(default=4, ge=1)
    db: str | None = None
    home: str | None = None
    out: str | None = None
    plots: str | None = None
    max_new_tokens: int = Field(default=256, ge=1)
    lr: float = Field(default=1e-4, gt=0)
    seed: int = 0
    temperature: float = Field(default=1.0, ge=0)
    clip_low: float = 0.2
    clip_high: float = 0.28
    kl_coef: float = Field(default=0.0, ge=0)
    lora_r: int = Field(default=8, ge=1)
    backend: Literal["auto", "unsloth", "hf"] = "auto"
    load_in_4bit: bool = Field(default=False, description="NF4 base weights (a CUDA GPU only)")
    sampler: Literal["auto", "hf", "llama"] = Field(
        default="auto", description="rollouts: llama.cpp on a CPU (auto), or transformers"
    )
    micro_batch: int = Field(default=4, ge=1)
    precision: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto",
        description="forward passes on the CPU: bfloat16 autocast (auto: where the CPU has "
        "native bf16; an sft step 1.5x faster) or float32; weights stay float32",
    )
    workers: int = Field(default_factory=lambda: max(1, os.cpu_count() or 1), ge=1)
    exec_timeout_s: float | None = None
    ray: str | None = Field(
        default=None, description="rollouts as Ray tasks on this cluster (HOST:PORT|auto|local)"
    )
    instrument_model: str = Field(
        default="structure",
        description="progress for failed programs: structure (markers after each top-level "
        "statement), local or an API model string (a frozen model's prints), or none",
    )
    improve_prob: float = Field(default=0.5, ge=0, le=1)
    parents: Literal["run", "store"] = Field(
        default="run",
        description="single-step: improve prompts fork the run's earlier answers (run), or the "
        "store's valid Drafts of the task at --seed and the run's valid answers (store)",
    )
    guide: Literal["none", "median", "bronze", "silver", "gold"] = Field(
        default="none",
        description="single-step: each improve group gets the task's reference solution of this "
        "level as one more, off-policy member (its ratio against the current policy), so a policy "
        "that never samples an improvement still sees one",
    )
    task_seeds: list[int] = Field(
        default_factory=list,
        description="single-step: task seeds its prompts and sessions take in turn (default: "
        "--seed alone); many seeds teach the task rather than one seed's prompt",
    )
    inner_steps: int = Field(
        default=1, ge=1, description="optimiser steps per collected batch (GRPO's mu)"
    )
    anchor: int = Field(
        default=0, ge=0, description="RL: successful solve steps imitated in each optimiser step"
    )
    anchor_coef: float = Field(default=1.0, gt=0, description="RL: the anchor loss's weight")
    max_session_steps: int = Field(default=3, ge=1)
    max_minutes: float = Field(default=5.0, gt=0)
    groups_per_update: int = Field(default=4, ge=1)
    states_per_update: int = Field(default=2, ge=1)
    distil: DistilOptions = Field(default_factory=DistilOptions, description="distil's own")
    torch_threads: int | None = Field(
        default=None,
        description="CPU threads for torch (default: every core; half for trajectory, whose "
        "sessions run programs while the policy answers, and oversubscribed torch threads run "
        "several times slower)",
    )


def set_torch_threads(options: RunOptions) -> int:
    import torch

    cores = os.cpu_count() or 2
    # Only trajectory runs the policy while sandboxed programs run (its sessions call it); the
    # others sample, then execute, then update, so torch has every core when it works (on 2
    # cores: rescoring 1.9x, backward passes 1.7x faster than on one)
    shared = options.recipe == "trajectory"
    n = options.torch_threads or (max(1, cores // 2) if shared else cores)
    torch.set_num_threads(n)
    return n


@dataclass
class TrainItem:
    """One answer to learn from. `old_logprobs` None: the policy before the update stands in
    (its log-probs from the update's first optimiser step, the base of later steps' ratio)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    reward: float
    group: str
    old_logprobs: list[float] | None = None
    weight: float = 1.0
    masked: bool = False  # e.g. a timed-out session: no loss, no say in its group's baseline
    valid: bool = False
    exec_seconds: float = 0.0
    token_mask: list[int] | None = None
    unit_id: str | None = None  # items of one trajectory share one reward and one advantage


@dataclass
class Collected:
    """What one update's collection produced, and what to report about it."""

    items: list[TrainItem]
    generated_tokens: int = 0
    generation_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunContext:
    options: RunOptions
    policy: Policy
    store: Store
    home: Home
    tasks: list[Task]
    run_id: str
    out_dir: Path
    update: int = 0  # the update being collected (1-based)

    @property
    def model_name(self) -> str:
        """How rollout sessions name their sampler: the policy checkpoint they came from."""
        base = base_identity(self.options.base_model)  # what `local` means now, not later
        return f"policy:{base}@{self.run_id}/update-{self.update - 1:04d}"


Phase = Callable[[str], None]  # reports what a recipe is doing now


class NothingToTrain(Exception):
    """The run has no data to learn from (e.g. offline on a database with no usable sessions)."""


class Recipe(Protocol):
    name: str

    def collect(self, ctx: RunContext, phase: Phase) -> Collected: ...

    def state(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any]) -> None: ...


def resolve_tasks(options: RunOptions) -> list[Task]:
    tasks = [find_task(name) for name in options.tasks]
    tasks += [find_task(task_dir=folder) for folder in options.task_dirs]
    return [t for t in tasks if t.name not in options.exclude_tasks]


# -- the update --------------------------------------------------------------------------------
def item_advantages(items: list[TrainItem]) -> list[float]:
    """Group-relative advantages (GRPO), computed over each group's unmasked items; masked
    items and all-equal groups get 0 (never NaN)."""
    from trainer.grpo import group_advantages

    out = [0.0] * len(items)
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(items):
        if not item.masked:
            by_group[item.group].append(i)
    for members in by_group.values():
        units: dict[str, list[int]] = defaultdict(list)
        for i in members:
            units[items[i].unit_id or f"#{i}"].append(i)
        if len(units) < 2:
            continue
        keys = list(units)
        adv = group_advantages([items[units[k][0]].reward for k in keys]).tolist()
        for key, a in zip(keys, adv, strict=True):
            for i in units[key]:
                out[i] = float(a)
    return out


def policy_update(
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    items: list[TrainItem],
    options: RunOptions,
    anchor: Callable[[], float] | None = None,
) -> dict[str, float]:
    """`inner_steps` optimiser steps of the clipped GRPO loss over `items`, each in micro-batches
    whose losses are weighted by their share of the batch's loss tokens (so a step equals one
    big batch); `anchor` adds its own loss's gradient to each step (recipes.anchor)."""
    adv = item_advantages(items)
    live = [(it, a) for it, a in zip(items, adv, strict=True) if not it.masked and a != 0.0]
    metrics = {"loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "entropy": 0.0, "ratio_mean": 1.0}
    metrics["items_with_signal"] = float(len(live))
    if not live:
        return metrics
    for _ in range(options.inner_steps):  # later passes: the ratio to the old log-probs
        metrics.update(_policy_step(policy, optimizer, live, options, anchor))
    return metrics


def _policy_step(
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    live: list[tuple[TrainItem, float]],
    options: RunOptions,
    anchor: Callable[[], float] | None = None,
) -> dict[str, float]:
    """One optimiser step over the items with signal; the loss metrics it saw."""
    import torch

    from trainer.grpo import policy_loss
    from trainer.policy import build_batch

    metrics: dict[str, float] = {}
    total_tokens = sum(sum(it.token_mask or [1] * len(it.completion_ids)) for it, _ in live)
    optimizer.zero_grad(set_to_none=True)
    sums: dict[str, float] = defaultdict(float)
    cached = options.kl_coef == 0 and _plain(live)
    if cached:  # answers to one prompt together: its cache is computed once per prompt
        live.sort(key=lambda pair: pair[0].prompt_ids)
    prefix: tuple[list[int], Any] | None = None
    for start in range(0, len(live), 1 if cached else options.micro_batch):
        chunk = live[start : start + (1 if cached else options.micro_batch)]
        if cached:  # the prompt ran once, without gradient: only the answer has one
            ((it, _),) = chunk
            if prefix is None or prefix[0] != it.prompt_ids:
                prefix = (it.prompt_ids, prompt_cache(policy, it.prompt_ids))
            logprobs = answer_logprobs(policy, it.prompt_ids, it.completion_ids, prefix[1])[None]
            mask = torch.ones_like(logprobs)
            old = logprobs.detach().clone()
            if it.old_logprobs is None:
                it.old_logprobs = old[0].tolist()
            old[0, : len(it.old_logprobs)] = torch.tensor(it.old_logprobs)
            ref = None
        else:
            rows = [
                (it.prompt_ids, it.completion_ids, it.token_mask or [1] * len(it.completion_ids))
                for it, _ in chunk
            ]
            input_ids, attention, mask = build_batch(rows, policy.pad_id)
            logprobs, _ = policy.sequence_logprobs(input_ids, attention)
            old = logprobs.detach().clone()
            for b, (it, _) in enumerate(chunk):
                s = len(it.prompt_ids) - 1
                if it.old_logprobs is None:
                    it.old_logprobs = old[b, s : s + len(it.completion_ids)].tolist()
                old[b, s : s + len(it.old_logprobs)] = torch.tensor(it.old_logprobs)
            ref = policy.reference_logprobs(input_ids, attention) if options.kl_coef > 0 else None
        out = policy_loss(
            logprobs,
            old,
            torch.tensor([a for _, a in chunk], dtype=torch.float32),
            mask.to(logprobs.device),
            clip_low=options.clip_low,
            clip_high=options.clip_high,
            ref_logprobs=ref,
            kl_coef=options.kl_coef,
            weights=torch.tensor([it.weight for it, _ in chunk], dtype=torch.float32),
        )
        share = float(mask.sum()) / max(total_tokens, 1)
        (out.loss * share).backward()
        sums["loss"] += float(out.loss.detach()) * share
        for key in ("kl", "clip_frac", "entropy", "ratio_mean"):
            sums[key] += out.metrics.get(key, 0.0) * share
    if anchor is not None:
        sums["anchor_loss"] = anchor()
    torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    policy.model.eval()
    metrics.update({k: round(v, 6) for k, v in sums.items()})
    if not all(math.isfinite(v) for v in metrics.values()):
        raise FloatingPointError(f"non-finite training metrics: {metrics}")
    return metrics


def _plain(live: list[tuple[TrainItem, float]]) -> bool:
    """Answers without a token mask (single-step groups, not trajectories) after a prompt:
    each prompt's keys and values can be computed once, without gradient."""
    return all(
        len(it.prompt_ids) > 1 and it.token_mask is None and it.completion_ids for it, _ in live
    )


def prompt_cache(policy: Policy, prompt: list[int]) -> Any:
    """The keys and values of all but the prompt's last token, without gradient.

    A Draft prompt is ~1,700 tokens and an answer ~500: a full forward and backward of four
    such sequences kept [4, heads, 2,300, 2,300] attention maps per layer and ran this 24 GB
    machine out of memory; the prompt run once, without gradient, costs a fraction.
    """
    import torch

    if len(prompt) < 2:
        return None
    with torch.no_grad():
        policy.model.eval()
        ids = torch.tensor([prompt[:-1]], device=policy.device)
        return policy.forward(input_ids=ids, use_cache=True, logits_to_keep=1).past_key_values


def answer_logprobs(policy: Policy, prompt: list[int], answer: list[int], cache: Any) -> Any:
    """log p(each answer token | prompt, earlier answer tokens), with gradient through the
    answer only (`cache`: prompt_cache of `prompt`, copied, so it serves every answer; also
    the llama.cpp sampler's rescoring, without gradient)."""
    import copy

    import torch

    from trainer.policy import token_logprobs

    policy.model.train(torch.is_grad_enabled())  # rescoring samples (no gradient): eval mode
    step_in = torch.tensor([prompt[-1:] + answer[:-1]], device=policy.device)
    logits = policy.forward(
        input_ids=step_in, past_key_values=copy.deepcopy(cache), use_cache=False
    ).logits
    return token_logprobs(logits, torch.tensor([answer], device=policy.device))[0]


def answer_ids(policy: Policy, text: str) -> list[int]:
    """Token ids of an answer whose sampler ids were not recorded, ending with end-of-turn."""
    ids = policy.tokenizer(text, add_special_tokens=False)["input_ids"]
    return [int(i) for i in ids] + policy.eos_ids[:1]


def fits(policy: Policy, item: TrainItem) -> bool:
    return len(item.prompt_ids) + len(item.completion_ids) <= policy.max_context
