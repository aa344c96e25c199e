"""Prompt-lookup decoding (core.llm.lookup) against plain decoding, on the agents' real prompts.

The default model (`local`: the bundled base with the shipped adapter) answers the solve agent's
Draft prompt of four tasks (seed 100) and the research agent's first prompt, sampling at the
agents' temperature 0.7 with the same seed on both sides; calls interleaved, medians of RUNS.
Prints completion tokens per second (prompt cache warm; decoding on every core, as eval
does), the share of tokens that came from a kept guess, and the wall time per call. No
target: the figure is what eval and RL sampling gain.

    .venv/bin/python benchmarks/bench_lookup.py [--runs 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from mlagent_tui.core.agent import AgentState
from mlagent_tui.core.llm import make_model
from mlagent_tui.core.llm.base import Message
from mlagent_tui.core.llm.local import LocalModel
from mlagent_tui.core.session import solve_preview
from mlagent_tui.core.tasks.spec import find_task
from trainer.prompts import agent_messages

TASKS = ("breast-cancer", "diabetes", "house-prices", "digits")
MAX_TOKENS = 640


def prompts() -> dict[str, list[Message]]:
    out = {}
    for name in TASKS:
        task = find_task(name)
        state = AgentState(task=task, step=1, preview=solve_preview(task, 100))
        out[f"solve draft {name}"] = agent_messages(task, "solve", state)
    task = find_task(TASKS[0])
    out["research step 1"] = agent_messages(task, "research", AgentState(task=task, step=1))
    return {k: [Message(**m) for m in v] for k, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    path = str(make_model("local").path)  # the shipped adapter merged into the cached GGUF
    threads = os.cpu_count() or 1  # what eval decodes on (its --threads default)
    models = {
        name: LocalModel(path, n_threads=threads, lookup=name == "lookup")
        for name in ("plain", "lookup")
    }
    rows = {}
    for label, messages in prompts().items():
        got: dict[str, list[tuple[float, int, int]]] = {k: [] for k in models}
        for run in range(args.runs + 1):  # run 0 warms the prompt cache
            for name, model in models.items():
                model.seed, model.calls, before = 1000 + run, 0, model.guessed
                started = time.perf_counter()
                c = model.complete(messages, max_tokens=MAX_TOKENS, temperature=0.7)
                if run:
                    took = time.perf_counter() - started
                    got[name].append((took, c.tokens_out, model.guessed - before))
        row = {}
        for name, runs in got.items():
            row[name] = {
                "tokens_per_s": round(statistics.median(n / t for t, n, _ in runs), 1),
                "seconds_per_call": round(statistics.median(t for t, _, _ in runs), 2),
                "guessed_share": round(
                    sum(g for *_, g in runs) / max(1, sum(n for _, n, _ in runs)), 3
                ),
            }
        row["speedup"] = round(row["lookup"]["tokens_per_s"] / row["plain"]["tokens_per_s"], 2)
        rows[label] = row
        if not args.json:
            print(
                f"{label:28s} plain {row['plain']['tokens_per_s']:6.1f} tok/s  lookup "
                f"{row['lookup']['tokens_per_s']:6.1f} tok/s  ({row['speedup']}x, "
                f"{row['lookup']['guessed_share']:.0%} guessed)",
                flush=True,
            )
    if args.json:
        print(json.dumps({"model": path, "runs": args.runs, "prompts": rows}, indent=1))


if __name__ == "__main__":
    main()
