"""sft: supervised warm start on successful logged sessions of any model.

RL cannot start from a policy that never succeeds (every reward equal, every advantage zero), so
the loop first imitates sessions that worked: the reference demonstrations `mlagent-train demos`
records, API-model sessions, sessions a person steered (their plan edits and hints are in the
rebuilt prompts). A session counts when it ended with a valid submission, by default one better
than the task's baseline (`--sft-filter valid` relaxes that). Each of its steps whose action
succeeded becomes one item: the prompt the agent was sent (rebuilt from the store) and the answer
it gave, with the loss on the answer's tokens only. Items come shortest first in the first epoch
(short scripts before long ones), shuffled after.
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

from mlagent_tui.core.store import trainable_session_rows
from mlagent_tui.core.tasks import TaskError

from ..data import StepSample, session_samples, unit_score
from ..prompts import session_task
from ..provenance import TrainingData
from .common import Collected, NothingToTrain, RunContext, TrainItem, answer_ids, fits


def _beats(spec: Any, score: float | None) -> bool:
    if score is None:
        return False
    base = spec.baseline.score
    return score > base if spec.metric.higher_is_better else score < base


def successful_samples(
    ctx: RunContext, notes: list[str]
) -> tuple[list[StepSample], TrainingData, Counter[str]]:
    """The steps to imitate, where they came from, and how many sessions each filter dropped."""
    opts = ctx.options
    wanted = {t.name for t in ctx.tasks}
    excluded = set(opts.exclude_tasks)
    dropped: Counter[str] = Counter()
    samples: list[StepSample] = []
    data = TrainingData(runs=[])
    for row in trainable_session_rows(ctx.store):
        if row.get("task") in excluded:
            dropped["excluded task"] += 1
            continue
        if wanted and row.get("task") not in wanted:
            dropped["another task"] += 1
            continue
        if row.get("agent") not in opts.sft_agents:
            dropped["another agent"] += 1
            continue
        if not row.get("valid"):
            dropped["no valid submission"] += 1
            continue
        config = json.loads(row.get("config") or "{}")
        try:
            task = session_task(config or {"task": row["task"]})
        except TaskError:
            dropped["task folder gone"] += 1
            continue
        if task.name in excluded:
            dropped["excluded task"] += 1
            continue
        if opts.sft_filter == "beats-baseline" and not _beats(task.spec, row.get("final_score")):
            dropped["not better than the baseline"] += 1
            continue
        steps = [s for s in session_samples(ctx.store, row) if s.parsed and s.ok]
        if not steps:
            dropped["no successful step"] += 1
            continue
        samples += steps
        data.add(task.name, int(config.get("seed") or 0))
    for reason, n in sorted(dropped.items()):
        notes.append(f"left out {n} session(s): {reason}")
    return samples, data, dropped


def imitation_items(
    ctx: RunContext, samples: list[StepSample], notes: list[str]
) -> list[TrainItem]:
    """The steps as items to imitate (prompt rebuilt, answer ending with end-of-turn), without
    those longer than --sft-max-tokens or the context (counted in `notes`)."""
    items: list[TrainItem] = []
    too_long = 0
    for s in samples:
        item = TrainItem(
            prompt_ids=ctx.policy.chat_prompt_ids(s.messages),
            completion_ids=answer_ids(ctx.policy, s.response),
            reward=unit_score(_spec(s), s.score, s.valid) if s.agent == "solve" else 1.0,
            group=f"{s.task}/{s.agent}",
            valid=s.valid or s.agent != "solve",
        )
        if len(item.prompt_ids) + len(item.completion_ids) > ctx.options.sft_max_tokens or (
            not fits(ctx.policy, item)
        ):
            too_long += 1
            continue
        items.append(item)
    if too_long:
        notes.append(f"left out {too_long} step(s) longer than {ctx.options.sft_max_tokens} tokens")
    return items


class SftRecipe:
    name = "sft"

    def __init__(self, ctx: RunContext) -> None:
        self.notes: list[str] = []
        samples, self.training_data, _ = successful_samples(ctx, self.notes)
        if not samples:
            raise NothingToTrain(
                f"no successful sessions to learn from in {ctx.store.path} "
                f"({'; '.join(self.notes) or 'it holds no sessions'}). Record demonstrations "
                "first: mlagent-train demos --tasks NAMES (or run sessions with an API model)"
            )
        self.items = imitation_items(ctx, samples, self.notes)
        if not self.items:
            raise NothingToTrain(
                "every successful step is too long to train on; raise --sft-max-tokens"
            )
        agents = Counter(s.agent for s in samples)
        self.notes.append(
            f"learning from {len(self.items)} step(s) of "
            f"{len({s.session_id for s in samples})} session(s) "
            f"({', '.join(f'{n} {a}' for a, n in sorted(agents.items()))} steps) on "
            f"{len(self.training_data.tasks)} task(s)"
        )
        self.seed, self.batch = ctx.options.seed, ctx.options.sft_batch
        self.epoch, self.cursor = 0, 0
        self.order = self._order(0)

    def _order(self, epoch: int) -> list[list[int]]:
        """The epoch's batches. A batch holds answers of one task and agent, which share their
        prompt's start, so the update runs that start once (see `update`); the batches come in
        random order, and within a task the shorter scripts come first in the first epoch."""
        rng = random.Random(self.seed * 7919 + epoch)
        blocks: dict[str, list[int]] = {}
        for i, it in enumerate(self.items):
            blocks.setdefault(it.group, []).append(i)
        batches = []
        for members in blocks.values():
            if epoch == 0:
                members = sorted(members, key=lambda i: (len(self.items[i].completion_ids), i))
            else:
                rng.shuffle(members)
            parts = -(-len(members) // self.batch)  # as few batches as fit, of even sizes
            batches += [
                members[k::parts] if epoch else _even(members, parts, k) for k in range(parts)
            ]
        rng.shuffle(batches)
        return batches

    def state(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "cursor": self.cursor}

    def restore(self, state: dict[str, Any]) -> None:
        self.epoch, self.cursor = int(state.get("epoch", 0)), int(state.get("cursor", 0))
        self.order = self._order(self.epoch)

    def collect(self, ctx: RunContext, phase: Any) -> Collected:
        if self.cursor >= len(self.order):
            self.epoch, self.cursor = self.epoch + 1, 0
            self.order = self._order(self.epoch)
        batch = [self.items[i] for i in self.order[self.cursor]]
        self.cursor += 1
        phase(f"epoch {self.epoch + 1}, batch {self.cursor}/{len(self.order)}")
        out = Collected(items=batch, extra={"epoch": self.epoch, "group": batch[0].group})
        out.extra["tokens"] = sum(len(i.prompt_ids) + len(i.completion_ids) for i in batch)
        return out

    def update(self, ctx: RunContext, optimizer: Any, items: list[TrainItem]) -> dict[str, float]:
        """One optimiser step of the negative log-likelihood of the answers' tokens: by default
        the mean over answers of each answer's mean (`--sft-loss token`: over all tokens).

        The prompt is run without gradient and only the answer with it, attending to the
        prompt's cached keys and values: the prompt is most of every item's tokens (a task's
        description, columns and starter script), and skipping its backward pass makes a step
        about three times cheaper on the CPU, at the price of no gradient into how the prompt
        itself is encoded (`--sft-prompt-grad` keeps it).
        """
        import torch

        total = sum(len(it.completion_ids) for it in items)
        per_step = ctx.options.sft_loss == "step"
        optimizer.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for i, prefix in prefixed(ctx, items):
            logprobs = answer_logprobs(ctx, items[i], prefix)
            if per_step:  # each answer's mean: the opening decision weighs what a script does
                loss = -logprobs.mean() / len(items)
            else:
                loss = -logprobs.sum() / max(total, 1)
            loss.backward()
            loss_sum += float(loss.detach())
        torch.nn.utils.clip_grad_norm_(ctx.policy.trainable_parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        ctx.policy.model.eval()
        if not math.isfinite(loss_sum):
            raise FloatingPointError(f"non-finite supervised loss: {loss_sum}")
        return {
            "loss": round(loss_sum, 6),
            "kl": 0.0,
            "clip_frac": 0.0,
            "entropy": 0.0,
            "ratio_mean": 1.0,
            "items_with_signal": float(len(items)),
        }


def shared_prefix(ctx: RunContext, items: list[TrainItem]) -> tuple[int, Any] | None:
    """The keys and values of the prompt start every item of the batch shares (run once)."""
    import torch

    first = items[0].prompt_ids
    n = min(len(it.prompt_ids) for it in items) - 1
    for it in items[1:]:
        n = next((k for k in range(n) if it.prompt_ids[k] != first[k]), n)
    if n < 64:
        return None
    with torch.no_grad():
        ctx.policy.model.eval()
        ids = torch.tensor([first[:n]], device=ctx.policy.device)
        out = ctx.policy.forward(input_ids=ids, use_cache=True, logits_to_keep=1)
        return n, out.past_key_values


GROUP_SHARED = 256  # prompt tokens two items must share to reuse one prefix's keys and values


def prefixed(ctx: RunContext, items: list[TrainItem]) -> Iterator[tuple[int, Any]]:
    """Each item's index, with the keys and values of the prompt start it shares with its
    neighbours (or None): items are visited grouped by shared prompt start, each group's start
    run once. A batch mixes tasks, so the whole batch shares only the chat template's first
    tokens, while the steps of one task (its description and columns, ~650-1600 tokens) or of
    one agent (its system prompt) share much more; the prompt forward pass is most of a step's
    time on the CPU. The arithmetic is the same as running each prompt whole. With
    `--sft-prompt-grad` every prompt runs whole, with gradient (`answer_logprobs`): no prefix."""
    if ctx.options.sft_prompt_grad:
        yield from ((i, None) for i in range(len(items)))
        return
    order = sorted(range(len(items)), key=lambda i: items[i].prompt_ids)
    groups: list[list[int]] = []
    for i in order:
        last = items[groups[-1][-1]].prompt_ids if groups else []
        if _common(last, items[i].prompt_ids) >= GROUP_SHARED:
            groups[-1].append(i)
        else:
            groups.append([i])
    for group in groups:
        prefix = shared_prefix(ctx, [items[i] for i in group]) if len(group) > 1 else None
        for i in group:
            yield i, prefix


def _common(a: list[int], b: list[int]) -> int:
    """How many tokens two prompts share from their start."""
    same = (k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    return next(same, min(len(a), len(b)))


def answer_logprobs(ctx: RunContext, item: TrainItem, prefix: tuple[int, Any] | None = None) -> Any:
    """log p(answer token | prompt, earlier answer tokens), with gradient through the answer."""
    import copy

    import torch

    from trainer.policy import build_batch, token_logprobs

    policy, device = ctx.policy, ctx.policy.device
    if ctx.options.sft_prompt_grad:
        ids, attention, mask = build_batch([(item.prompt_ids, item.completion_ids)], policy.pad_id)
        logprobs, _ = policy.sequence_logprobs(ids, attention)
        return logprobs[mask.to(logprobs.device) > 0]
    start, cache = (prefix[0], copy.deepcopy(prefix[1])) if prefix else (0, None)
    rest = item.prompt_ids[start:-1]
    with torch.no_grad():
        policy.model.eval()
        if rest:  # the cache grows in place by the rest of this item's prompt
            out = policy.forward(
                input_ids=torch.tensor([rest], device=device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=1,  # the prompt's own next-token logits are never used
            )
            cache = out.past_key_values
    policy.model.train()
    step_in = torch.tensor([item.prompt_ids[-1:] + item.completion_ids[:-1]], device=device)
    logits = policy.forward(input_ids=step_in, past_key_values=cache, use_cache=False).logits
    return token_logprobs(logits, torch.tensor([item.completion_ids], device=device))[0]


def _even(members: list[int], parts: int, k: int) -> list[int]:
    """The k-th of `parts` consecutive, nearly equal slices (keeps short-before-long order)."""
    size, extra = divmod(len(members), parts)
    start = k * size + min(k, extra)
    return members[start : start + size + (k < extra)]


@functools.lru_cache(maxsize=256)
def _spec_of(folder: str) -> Any:
    from mlagent_tui.core.tasks import find_task

    return find_task(task_dir=folder).spec


def _spec(sample: StepSample) -> Any:
    return _spec_of(sample.task_folder)
