"""The loop's sft or distil phase on a GPU: `run_training` on a store of demonstrations or searches.

The same recipe, data and settings as `make adapter`'s sft (LoRA r=16, lr 1e-3, the
demonstrations of `--home`), or with `--recipe distil` the distil recipe on the search
sessions `--home` holds (the improvements they found, 4 demonstrations as its anchor, lr 3e-4),
on bf16 models of SmolLM2-135M's, SmolLM2-1.7B's or a 7B llama's shape with random weights (the
device machine reaches no weights; the time and memory of an update do not depend on their
values, the loss does: ignore it). Prints, per shape, seconds per update (the first, which
warms the kernels up, apart), the peak GPU memory and the engine that trained (`--backend auto`
takes unsloth where it imports; `SHAPE:4bit` loads NF4 weights).

    python benchmarks/gpu_sft.py --home build/adapter/home --tokenizer HF_FOLDER --steps 4 \
        --shapes 135m,1.7b,7b,7b:4bit [--recipe sft|distil] [--backend auto|unsloth|hf] [--out DIR]

Through the device tool: carry a copy of the home without `workspaces/` (sft reads the store
and snapshots), the tokenizer files of the cached HF folder (`$MLAGENT_CACHE_DIR/hf-from-gguf`,
without the weights) and wheels of pydantic, gguf and sqlite-utils, which its image lacks; for
unsloth, its wheels too, cut to fit the carry limit. `benchmarks/gpu_carry.py` packs all of it
into `.whl/` and `.gpu/` (with `.gpu/run.sh`, the command to run there).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).parent))
from gpu_update import random_model_folder  # noqa: E402

from trainer.defaults import RECIPE_DEFAULTS  # noqa: E402
from trainer.recipes.common import RunOptions  # noqa: E402
from trainer.recipes.loop import run_training  # noqa: E402


def one_shape(spec: str, a: argparse.Namespace, root: Path) -> dict[str, Any]:
    shape, _, mode = spec.partition(":")
    folder = random_model_folder(shape, a.tokenizer, root, "cuda")
    torch.cuda.reset_peak_memory_stats()
    defaults = RECIPE_DEFAULTS[a.recipe]  # the settings `mlagent-train run` takes by default
    options = RunOptions.model_validate(
        {
            "recipe": a.recipe,
            "base_model": str(folder),
            "steps": a.steps,
            "lora_r": defaults["lora_r"],
            "lr": defaults["lr"],
            "anchor": defaults.get("anchor", 0),  # distil also imitates 4 demonstrations
            "backend": a.backend,
            "load_in_4bit": mode == "4bit",
            "exclude_tasks": a.exclude_tasks.split(","),
            "home": str(a.home),
            "out": str(root / f"run-{shape}-{mode or 'bf16'}"),
        }
    )
    started = time.perf_counter()
    result = run_training(options)
    wall = time.perf_counter() - started
    secs = result.seconds_per_update
    return {
        "shape": spec,
        "recipe": a.recipe,
        "engine": result.engine,
        "weights": "nf4 (bitsandbytes), bf16 compute" if mode == "4bit" else "bf16",
        "updates": result.updates_done,
        "seconds_per_update": secs,
        "after_the_first_mean_s": round(sum(secs[1:]) / max(1, len(secs) - 1), 2),
        "wall_s": round(wall, 1),
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "gpu": torch.cuda.get_device_name(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--home", type=Path, required=True, help="a home holding demonstrations")
    p.add_argument("--tokenizer", type=Path, required=True, help="an HF folder's tokenizer")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--recipe", default="sft", choices=["sft", "distil"])
    p.add_argument("--shapes", default="135m,1.7b", help="SHAPE[:4bit],...")
    p.add_argument("--backend", default="auto", help="auto | unsloth | hf")
    p.add_argument("--exclude-tasks", default="text-sentiment,noisy-shapes,customer-churn")
    p.add_argument("--out", type=Path, help="write the figures here as JSON too")
    a = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_sft.py needs a CUDA GPU (the device tool, where a task is lent one)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for shape in a.shapes.split(","):
            try:
                rows.append(one_shape(shape, a, Path(tmp)))
            except Exception as exc:  # one shape's failure (memory, a missing kernel) is a row
                rows.append({"shape": shape, "error": f"{type(exc).__name__}: {exc}"[:600]})
            print(json.dumps(rows[-1]), flush=True)
            if a.out:  # after each shape: a run stopped at its time limit keeps what it measured
                a.out.mkdir(parents=True, exist_ok=True)
                (a.out / "gpu_sft.json").write_text(json.dumps(rows, indent=2) + "\n")
            gc.collect()
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
