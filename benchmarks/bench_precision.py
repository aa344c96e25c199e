"""Forward passes in float32 against bfloat16 autocast (`--precision`) for the trainer's updates.

The shape of an sft or RL step: an improve-sized prompt (2,200 tokens) run once without
gradient, then G=4 answers of 500 tokens after it with gradient (the recipes' cached path),
on every core. Prints each precision's seconds for the 4 backward passes and how far
bfloat16's answer log-probabilities and LoRA gradient are from float32's. `auto` picks
bfloat16 only where the CPU multiplies it natively (AVX512-BF16 or AMX): elsewhere oneDNN
emulates it, slower than float32.

    .venv/bin/python benchmarks/bench_precision.py [--run RUN_FOLDER] [--repeats 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_torch_threads import improve_shape, trainable_policy  # noqa: E402


def one_pass(policy: Any, prompt: list[int], answers: list[list[int]]) -> tuple[float, Any, Any]:
    """Seconds for the prompt cache and the answers' backward passes; their log-probs and the
    LoRA gradient they left."""
    import torch

    from trainer.recipes.common import answer_logprobs, prompt_cache

    params = policy.trainable_parameters()
    for p in params:
        p.grad = None
    started = time.perf_counter()
    with torch.no_grad():
        cache = prompt_cache(policy, prompt)
    logprobs = []
    for answer in answers:
        lp = answer_logprobs(policy, prompt, answer, cache)
        (-lp.mean()).backward()
        logprobs.append(lp.detach())
    seconds = time.perf_counter() - started
    return seconds, torch.cat(logprobs), torch.cat([p.grad.flatten() for p in params])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--run", type=Path, help="a training run folder (default: the bundled model)")
    p.add_argument("--repeats", type=int, default=2, help="timed passes per precision")
    a = p.parse_args()
    import torch

    from trainer.policy.load import cpu_has_bf16

    policy = trainable_policy(a.run)
    prompt, answers = improve_shape()
    print(f"native bf16 on this CPU: {cpu_has_bf16()}; torch threads {torch.get_num_threads()}")
    got: dict[str, tuple[Any, Any]] = {}
    for precision in ("float32", "bfloat16"):
        compute = policy.set_precision(precision)  # type: ignore[arg-type]
        times = []
        for _ in range(a.repeats):
            seconds, logprobs, grad = one_pass(policy, prompt, answers)
            times.append(seconds)
        got[precision] = (logprobs, grad)
        shown = ", ".join(f"{t:.1f}" for t in times)
        print(f"{compute:>18}: prompt cache + 4 x 500-token backward passes {shown} s", flush=True)
    (lp32, g32), (lp16, g16) = got["float32"], got["bfloat16"]
    gap = (lp16 - lp32).abs()
    cosine = torch.nn.functional.cosine_similarity(g32, g16, dim=0)
    print(
        f"bfloat16 against float32: log-prob gap mean {gap.mean():.4f}, max {gap.max():.3f}; "
        f"gradient cosine {cosine:.4f}, norm ratio {g16.norm() / g32.norm():.3f}"
    )


if __name__ == "__main__":
    main()
