"""How much two llama.cpp contexts generating at once gain over one, on this machine.

The search's `--workers 2` gives the local model one context per core (LocalModel.replicas)
(the search loop as a whole, with the scripts it runs: bench_workers.py).
Its prompts are long (about 2,000 tokens) and its answers short (an edit's value: 30-100
tokens), so a call's time is mostly prompt evaluation. This prints the wall time of one call
alone (llama.cpp's default threads: 1 to decode, all cores for the prompt) and of two calls at
once on two contexts, with 2 and with 1 prompt threads each: the throughput gain of a second
context bounds the search's nodes-per-minute gain from a second worker.

    python benchmarks/bench_contexts.py [--tokens 64]
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mlagent_tui.core.llm import Message
from mlagent_tui.core.llm.local import LocalModel

ROOT = Path(__file__).resolve().parents[1]


def prompt(tag: str) -> list[Message]:
    """About 1,750 tokens; `tag` first, so no call reuses another's cached prompt."""
    script = (ROOT / "tasks" / "breast-cancer" / "env" / "train.py").read_text()
    return [Message(role="user", content=f"{tag}: improve this script\n{script * 6}\nPlan:")]


def timed(model: LocalModel, tag: str, tokens: int, out: dict[str, float]) -> None:
    start = time.perf_counter()
    model.complete(prompt(tag), max_tokens=tokens, temperature=0.7)
    out[tag] = time.perf_counter() - start


def at_once(calls: list[tuple[Callable[..., Any], tuple[Any, ...]]]) -> float:
    """Run each call on its own thread, all at once: the wall seconds until the last ends."""
    jobs = [threading.Thread(target=fn, args=args) for fn, args in calls]
    start = time.perf_counter()
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--tokens", type=int, default=64, help="answer tokens per call at most")
    args = p.parse_args()
    a, b = LocalModel(n_ctx=8192), LocalModel(n_ctx=8192, seed=7)
    alone: dict[str, float] = {}
    timed(a, "alone", args.tokens, alone)
    print(f"one call alone (default threads): {alone['alone']:.2f} s")
    for batch in (2, 1):
        for m in (a, b):
            a._lib.llama_set_n_threads(m.llm.ctx, 1, batch)
        out: dict[str, float] = {}
        wall = at_once(
            [(timed, (m, f"pair{batch}-{i}", args.tokens, out)) for i, m in enumerate((a, b))]
        )
        gain = 2 * alone["alone"] / wall
        print(
            f"two calls at once, {batch} prompt thread(s) each: {wall:.2f} s wall "
            f"-> {gain:.2f}x the calls per second of one context"
        )
    a.close()
    b.close()


if __name__ == "__main__":
    main()
