"""GGUF export of the LoRA policy: time to write (merge + quantize + write) and to reload and
verify with llama.cpp, and the largest logit difference against the torch model.

Target: written + reloaded <= 10 s. For scale, the bundled Q4_1 file itself is compared with
its own dequantized weights in torch: llama.cpp quantizes activations for quantized matmuls, so
even identical weights give non-zero logit differences.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from mlagent_tui.core.llm.base import Message
from trainer.export import DEFAULT_PROBE, export_gguf, merged_model, verify_gguf
from trainer.policy import load_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch/llama.cpp threads")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    policy = load_policy("smollm2", backend="hf")
    with tempfile.TemporaryDirectory() as tmp:
        for quant in ("q8_0", "f16", "f32"):  # f32: the floor (llama.cpp keeps its KV in f16)
            start = time.perf_counter()
            r = export_gguf(
                policy, Path(tmp) / f"{quant}.gguf", quant=quant, n_threads=args.threads
            )
            total = time.perf_counter() - start
            print(
                f"{quant:5s}: write {r.seconds_write:5.1f} s, reload+verify "
                f"{r.seconds_verify:5.1f} s, total {total:5.1f} s (target <= 10 s); "
                f"{r.size_bytes / 2**20:.0f} MiB, {r.tensor_count} tensors; max |logit diff| "
                f"{r.max_logit_diff:.4f} (last position {r.last_logit_diff:.4f}); greedy "
                f"{'match' if r.greedy_match else f'agree on {r.greedy_agree} tokens'}"
            )
    prompt = policy.chat_prompt_ids([Message(role="user", content=DEFAULT_PROBE)])
    base = verify_gguf(
        merged_model(policy), prompt, policy.config.base_gguf, policy.eos_ids, args.threads
    )
    print(
        f"bundled Q4_1 vs its own weights in torch: max |logit diff| {base.max_logit_diff:.4f} "
        f"(last position {base.last_logit_diff:.4f}); greedy agree on {base.greedy_agree} tokens"
    )


if __name__ == "__main__":
    main()
