"""The trainer's GPU path on larger models: seconds per GRPO update and peak GPU memory.

For a lent GPU machine (the `device` tool). Nothing can be downloaded there and only 64 MiB
travels, so each model has SmolLM2's tokenizer and a real model's shapes but random weights:
an update's time and memory do not depend on the weights' values (its results do; no learning
figure comes from here). Each shape is saved as an HF folder and loaded through
`trainer.policy.load_policy` (backend auto: unsloth where it imports, else transformers + peft;
bf16, or NF4 weights through bitsandbytes with `:4bit`), then G samples of T new tokens from one
prompt (`Policy.generate`) and one forward/backward/AdamW step with the GRPO loss over them
(bench_train_update.timed_update). One JSON line per run, also appended to --out.

    python benchmarks/gpu_update.py --tokenizer DIR --runs 135m,1.7b,1.7b:4bit,7b:4bit
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import torch
from bench_train_update import PROMPT, synchronize, timed_update

from trainer.policy import load_policy

# SmolLM2-135M / -360M / -1.7B, and a 7B llama (Llama-2-7B's shapes) on the same vocabulary
SHAPES: dict[str, dict[str, Any]] = {
    "135m": {"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
             "num_attention_heads": 9, "num_key_value_heads": 3, "tie_word_embeddings": True},
    "360m": {"hidden_size": 960, "intermediate_size": 2560, "num_hidden_layers": 32,
             "num_attention_heads": 15, "num_key_value_heads": 5, "tie_word_embeddings": True},
    "1.7b": {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24,
             "num_attention_heads": 32, "num_key_value_heads": 32, "tie_word_embeddings": True},
    "7b": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 32, "tie_word_embeddings": False},
}  # fmt: skip


class Peak:
    """Peak GPU memory since the last `take` (0 on the CPU)."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")
        self.take()

    def allocated(self) -> float:
        return torch.cuda.memory_allocated() / 2**30 if self.cuda else 0.0

    def take(self) -> float:
        if not self.cuda:
            return 0.0
        got = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.reset_peak_memory_stats()
        return got


def empty_cache(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def random_model_folder(shape: str, tokenizer: Path, root: Path, device: str) -> Path:
    """An HF folder of `shape` with random bf16 weights (made on the GPU: fast) and the
    tokenizer's files."""
    from transformers import AutoConfig, AutoModelForCausalLM

    folder = root / shape
    if (folder / "config.json").is_file():
        return folder
    config = AutoConfig.from_pretrained(str(tokenizer))
    for key, value in SHAPES[shape].items():
        setattr(config, key, value)
    config.head_dim = config.hidden_size // config.num_attention_heads
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(folder)
    del model
    empty_cache(device)
    for f in tokenizer.iterdir():
        if f.is_file() and not f.name.endswith(".safetensors") and f.name != "config.json":
            shutil.copy(f, folder / f.name)
    return folder


def one_run(spec: str, a: argparse.Namespace, root: Path) -> dict[str, Any]:
    shape, _, mode = spec.partition(":")
    group, tokens, device = a.group, a.tokens, a.device
    folder = random_model_folder(shape, a.tokenizer, root, device)
    peak = Peak(device)
    start = time.perf_counter()
    policy = load_policy(
        str(folder),
        device=device,
        dtype="bfloat16",
        lora_r=a.lora_r,
        load_in_4bit=mode == "4bit",
        gradient_checkpointing=True,
    )
    load_s = time.perf_counter() - start
    weights_gib = peak.allocated()
    synchronize(device)
    start = time.perf_counter()
    samples = policy.generate(
        PROMPT, n=group, max_new_tokens=tokens, min_new_tokens=tokens, temperature=1.0
    )
    synchronize(device)
    gen_s = time.perf_counter() - start
    generate_peak = peak.take()
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-5)
    first_s, batch, which = timed_update(policy, samples, optimizer)  # kernels warm up here
    update_s, _, _ = timed_update(policy, samples, optimizer)
    params = sum(p.numel() for p in policy.model.parameters())
    return {
        "run": spec,
        "backend": policy.backend,
        "dtype": "nf4 weights, bf16 compute" if mode == "4bit" else "bf16",
        "parameters_m": round(params / 1e6, 1),
        "lora_r": a.lora_r,
        "trainable_m": round(sum(p.numel() for p in policy.trainable_parameters()) / 1e6, 2),
        "load_s": round(load_s, 1),
        "weights_gib": round(weights_gib, 2),
        "generate": f"{group} x {tokens} tokens",
        "generate_s": round(gen_s, 2),
        "generate_tok_s": round(group * tokens / gen_s, 1),
        "generate_peak_gib": round(generate_peak, 2),
        "batch": list(batch),
        "loss": which,
        "first_update_s": round(first_s, 2),
        "update_s": round(update_s, 2),
        "update_peak_gib": round(peak.take(), 2),
        "seconds_per_rl_update": round(gen_s + update_s, 2),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokenizer", type=Path, required=True, help="an HF folder's tokenizer")
    p.add_argument("--runs", default="135m,1.7b,1.7b:4bit,7b:4bit,7b", help="SHAPE[:4bit],...")
    p.add_argument("--group", type=int, default=4)
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument("--out", type=Path, default=None, help="append each JSON line here too")
    p.add_argument("--device", default="cuda", help="cpu: a smoke test of this script")
    a = p.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_update.py needs a CUDA GPU (the device machine)")
    name = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
    print(json.dumps({"device": name, "torch": torch.__version__}))
    with tempfile.TemporaryDirectory(prefix="gpu-update-") as tmp:
        for spec in a.runs.split(","):
            try:
                row = one_run(spec, a, Path(tmp))
            except Exception as exc:  # one shape failing (memory, a missing kernel) is a row
                row = {"run": spec, "error": f"{type(exc).__name__}: {exc}"}
                traceback.print_exc()
            gc.collect()
            empty_cache(a.device)
            line = json.dumps(row)
            print(line, flush=True)
            if a.out:
                with a.out.open("a") as fh:
                    fh.write(line + "\n")


if __name__ == "__main__":
    main()
