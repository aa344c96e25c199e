"""Samples and padded batches, aligned with the policy's shifted log-probabilities.

`Policy.sequence_logprobs(input_ids)` returns [B, T-1]: column t is log p(input_ids[:, t+1]).
`build_batch` gives the loss mask in that same frame (1 on completion tokens only), and
`batch_logprobs` puts the sampling-time log-probabilities there too, so the recipes can pass all
three straight to the loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from pydantic import BaseModel


class Sample(BaseModel):
    """One sampled completion. `logprobs[i]` is log p(completion_ids[i]) under the policy's
    unmodified distribution (temperature 1, no top-p), whatever the sampling temperature."""

    text: str
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    finish_reason: Literal["stop", "length"]
    seconds: float  # wall time of the (batched) generate call that produced it


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log_softmax(logits)[tokens] in float32, without keeping a second [B, T, V] tensor."""
    flat = logits.float()
    picked = flat.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(flat, dim=-1)


def _parts(item: object) -> tuple[list[int], list[int], list[int]]:
    if isinstance(item, Sample):
        return item.prompt_ids, item.completion_ids, [1] * len(item.completion_ids)
    if isinstance(item, tuple | list) and len(item) in (2, 3):
        prompt, completion = list(item[0]), list(item[1])
        mask = list(item[2]) if len(item) == 3 else [1] * len(completion)
        if len(mask) != len(completion):
            raise ValueError(
                f"mask has {len(mask)} entries for {len(completion)} completion tokens"
            )
        return prompt, completion, mask
    raise TypeError(f"expected a Sample or (prompt_ids, completion_ids[, mask]), got {item!r}")


def build_batch(
    items: Sequence[object], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded input_ids [B, T], attention_mask [B, T] (long) and loss_mask [B, T-1]
    (float32; 1 where the next token is a completion token whose mask is 1).

    A per-completion-token mask (third tuple element) lets a trajectory carry observation tokens
    in its completion without loss on them.
    """
    if not items:
        raise ValueError("an empty batch")
    rows = [_parts(item) for item in items]
    width = max(len(p) + len(c) for p, c, _ in rows)
    if width < 2:
        raise ValueError("every sequence needs at least two tokens")
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    loss_mask = torch.zeros((len(rows), width - 1), dtype=torch.float32)
    for b, (prompt, completion, mask) in enumerate(rows):
        if not prompt:
            raise ValueError("every item needs a prompt of at least one token")
        seq = prompt + completion
        input_ids[b, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        attention[b, : len(seq)] = 1
        start = len(prompt) - 1  # column t predicts token t+1: the first completion token
        if completion:
            loss_mask[b, start : start + len(completion)] = torch.tensor(mask, dtype=torch.float32)
    return input_ids, attention, loss_mask


def batch_logprobs(samples: Sequence[Sample], width: int | None = None) -> torch.Tensor:
    """The samples' own log-probabilities in build_batch's [B, T-1] frame (0 elsewhere)."""
    if not samples:
        raise ValueError("an empty batch")
    full = (
        width
        if width is not None
        else max(len(s.prompt_ids) + len(s.completion_ids) for s in samples)
    )
    out = torch.zeros((len(samples), full - 1), dtype=torch.float32)
    for b, s in enumerate(samples):
        if len(s.logprobs) != len(s.completion_ids):
            raise ValueError("a sample's logprobs and completion_ids differ in length")
        start = len(s.prompt_ids) - 1
        out[b, start : start + len(s.logprobs)] = torch.tensor(s.logprobs, dtype=torch.float32)
    return out
