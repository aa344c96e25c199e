"""LocalModel speed against a bare llama-cpp-python call on the same prompt.

Tokens per second (completion tokens / wall time of the call, prompt cache warm on both sides),
greedy so both produce the same tokens; calls interleaved and the median taken, because the
machine is shared. Targets: ratio >= 0.95 without a grammar, >= 0.85 with the research grammar.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_grammar_parse import research_actions, research_prompt  # noqa: E402
from llama_cpp import Llama, LlamaGrammar  # noqa: E402

from mlagent_tui.core.agent.grammar import response_grammar  # noqa: E402
from mlagent_tui.core.llm.base import Message  # noqa: E402
from mlagent_tui.core.llm.local import LocalModel, bundled_model_path  # noqa: E402

RUNS = 9
MAX_TOKENS = 160
THREADS = 2


def tokens_per_s(fn) -> float:  # noqa: ANN001
    start = time.perf_counter()
    n = fn()
    return n / (time.perf_counter() - start)


def main() -> None:
    messages = research_prompt(0)
    grammar = response_grammar(research_actions())
    bare = Llama(str(bundled_model_path()), n_ctx=4096, n_threads=THREADS, seed=0, verbose=False)
    ours = LocalModel(n_ctx=4096, n_threads=THREADS, seed=0)
    as_dicts = [m.model_dump() for m in messages]
    compiled = LlamaGrammar.from_string(grammar, verbose=False)

    def bare_call(with_grammar: bool) -> int:
        out = bare.create_chat_completion(
            as_dicts,
            max_tokens=MAX_TOKENS,
            temperature=0.0,
            grammar=compiled if with_grammar else None,
        )
        return out["usage"]["completion_tokens"]

    def our_call(with_grammar: bool, msgs: list[Message] = messages) -> int:
        c = ours.complete(
            msgs, max_tokens=MAX_TOKENS, temperature=0.0, grammar=grammar if with_grammar else None
        )
        return c.tokens_out

    samples: dict[str, list[float]] = {k: [] for k in ("bare", "ours", "bare+g", "ours+g")}
    for _ in range(2):  # warm-up: prompt caches, grammar compile, page cache
        bare_call(False), our_call(False), bare_call(True), our_call(True)
    for i in range(RUNS):
        order = [("bare", False), ("ours", False), ("bare+g", True), ("ours+g", True)]
        if i % 2:
            order.reverse()
        for key, with_grammar in order:
            fn = bare_call if key.startswith("bare") else our_call
            samples[key].append(tokens_per_s(lambda fn=fn, g=with_grammar: fn(g)))
    med = {k: statistics.median(v) for k, v in samples.items()}
    n_plain, n_gram = our_call(False), our_call(True)
    print(
        f"prompt {len(ours.tokenize(ours.format_prompt(messages)))} tokens, "
        f"max_tokens {MAX_TOKENS}, {RUNS} interleaved runs, {THREADS} threads, medians"
    )
    print(
        f"  no grammar : bare {med['bare']:.1f} tok/s, LocalModel {med['ours']:.1f} tok/s "
        f"({n_plain} tokens)  ratio {med['ours'] / med['bare']:.2f} (target >= 0.95)"
    )
    print(
        f"  grammar    : bare {med['bare+g']:.1f} tok/s, LocalModel {med['ours+g']:.1f} tok/s "
        f"({n_gram} tokens)  ratio {med['ours+g'] / med['bare+g']:.2f} (target >= 0.85)"
    )
    print(
        f"  LocalModel with grammar vs bare without: {med['ours+g'] / med['bare']:.2f}; "
        f"bare with grammar vs bare without: {med['bare+g'] / med['bare']:.2f}"
    )
    ratios = [o / b for o, b in zip(samples["ours"], samples["bare"], strict=True)]
    print(f"  per-run ratios (no grammar): {', '.join(f'{r:.2f}' for r in ratios)}")
    ours.close()


if __name__ == "__main__":
    main()
