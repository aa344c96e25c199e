"""Torch threads for an RL update on the CPU: scoring and backward passes at 1 thread vs all.

single-step's optimiser steps (the prompt run once without gradient, each answer after it)
run while nothing else does, so the trainer gives torch every core there (only the trajectory
recipe, whose sessions run programs while the policy answers, keeps half). This prints, for an
improve-sized prompt (2,200 tokens) and G=4 answers of 500 tokens, the time to score them
without gradient (what single-step's rescoring of llama.cpp's samples cost before an update's
first step took its place) and their 4 backward passes.

    .venv/bin/python benchmarks/bench_torch_threads.py [--run RUN_FOLDER]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path
from typing import Any


def trainable_policy(run: Path | None) -> Any:
    """A run's latest policy (default: a fresh LoRA on the bundled model), its LoRA trainable."""
    from trainer.policy import Policy, load_policy
    from trainer.recipes.checkpoint import latest_checkpoint

    policy = Policy.load(latest_checkpoint(run)) if run else load_policy("local", seed=0)
    for name, param in policy.model.named_parameters():
        if "lora_" in name:
            param.requires_grad_(True)
    return policy


def improve_shape() -> tuple[list[int], list[list[int]]]:
    """An improve-sized prompt (2,200 tokens) and G=4 answers of 500, seeded random tokens."""
    rng = random.Random(0)
    prompt = [rng.randrange(1000, 20000) for _ in range(2200)]
    return prompt, [[rng.randrange(1000, 20000) for _ in range(500)] for _ in range(4)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", type=Path, help="a training run folder (default: the bundled model)")
    a = p.parse_args()
    import torch

    from trainer.recipes.common import answer_logprobs, prompt_cache

    policy = trainable_policy(a.run)
    prompt, answers = improve_shape()
    for threads in sorted({1, os.cpu_count() or 1}):
        torch.set_num_threads(threads)
        started = time.perf_counter()
        with torch.no_grad():
            cache = prompt_cache(policy, prompt)
            for answer in answers:
                answer_logprobs(policy, prompt, answer, cache)
        score = time.perf_counter() - started
        started = time.perf_counter()
        with torch.no_grad():
            cache = prompt_cache(policy, prompt)
        for answer in answers:
            answer_logprobs(policy, prompt, answer, cache).sum().backward()
        backward = time.perf_counter() - started
        print(f"torch threads {threads}: scoring 4 x 500 tokens {score:.1f} s, "
              f"4 backward passes {backward:.1f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
