"""One GRPO update of SmolLM2-135M with LoRA r=8 on the CPU.

G=4 samples of exactly 256 new tokens (end-of-sequence held back) from one prompt, then one
forward/backward/optimizer step over the four sequences with the clipped GRPO loss
(trainer.grpo.policy_loss; a masked REINFORCE loss where that module is missing). Generation and
the update are timed apart. Target: the update <= 15 s. The machine may be shared: say so with
the figures.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch

from trainer.policy import batch_logprobs, build_batch, load_policy

PROMPT = [
    {
        "role": "user",
        "content": "Write a Python script that trains a logistic regression on train.csv "
        "and writes predictions for test.csv to submission.csv.",
    }
]


def loss_fn(logprobs, old, advantages, mask):  # noqa: ANN001, ANN201
    try:
        from trainer.grpo import policy_loss
    except ImportError:
        return -(advantages[:, None] * logprobs * mask).sum() / mask.sum(), "masked REINFORCE"
    return policy_loss(logprobs, old, advantages, mask).loss, "trainer.grpo.policy_loss"


def timed_update(
    policy: Any, samples: list[Any], optimizer: torch.optim.Optimizer
) -> tuple[float, tuple[int, ...], str]:
    """One GRPO step over `samples` (rewards alternating 0 and 1): the forward pass with
    gradient, the loss, backward, clipping and the AdamW step; seconds (the GPU synchronised),
    the batch's shape and which loss ran."""
    rewards = torch.tensor([float(i % 2) for i in range(len(samples))])
    advantages = (rewards - rewards.mean()) / (rewards.std(correction=0) + 1e-6)
    synchronize(policy.device)
    start = time.perf_counter()
    input_ids, attention, mask = build_batch(samples, policy.pad_id)
    old = batch_logprobs(samples, input_ids.shape[1])
    logprobs, _ = policy.sequence_logprobs(input_ids, attention)
    on = logprobs.device
    loss, which = loss_fn(logprobs, old.to(on), advantages.to(on), mask.to(on))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(policy.trainable_parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad()
    synchronize(policy.device)
    return time.perf_counter() - start, tuple(input_ids.shape), which


def synchronize(device: str) -> None:
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    start = time.perf_counter()
    policy = load_policy("smollm2", backend="hf", lora_r=8)
    load_s = time.perf_counter() - start

    start = time.perf_counter()
    samples = policy.generate(
        PROMPT,
        n=args.group,
        max_new_tokens=args.tokens,
        min_new_tokens=args.tokens,
        temperature=1.0,
    )
    gen_s = time.perf_counter() - start
    n_tokens = sum(len(s.completion_ids) for s in samples)

    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-5)
    update_s, shape, which = timed_update(policy, samples, optimizer)

    print(
        f"SmolLM2-135M, LoRA r=8 ({sum(p.numel() for p in policy.trainable_parameters())} "
        f"trainable), CPU, torch threads {torch.get_num_threads()}"
    )
    print(f"  load (cached HF folder)   : {load_s:6.1f} s")
    print(
        f"  generate {args.group} x {args.tokens} tokens  : {gen_s:6.1f} s "
        f"({n_tokens / gen_s:.1f} tok/s)"
    )
    print(f"  update (fwd+bwd+step, {shape}): {update_s:6.1f} s [{which}] (target <= 15 s)")


if __name__ == "__main__":
    main()
