"""Checking a written GGUF against the torch model it came from, with llama.cpp itself.

Both models see the same token ids (no template or BOS added on either side); we compare the
logits at every probe position and a short greedy continuation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from pydantic import BaseModel

from mlagent_tui.core.llm import quiet_stderr

GREEDY_TOKENS = 16


class Verification(BaseModel):
    max_logit_diff: float  # largest |torch - llama.cpp| logit over the probe's positions
    last_logit_diff: float  # the same at the last probe position only
    greedy_match: bool
    greedy_agree: int  # leading greedy tokens the two agree on
    torch_tokens: list[int]
    gguf_tokens: list[int]


@torch.no_grad()
def _torch_greedy(model: Any, ids: list[int], steps: int, eos: set[int]) -> list[int]:
    seq = torch.tensor([ids], dtype=torch.long)
    out: list[int] = []
    past = None
    step_input = seq
    for _ in range(steps):
        result = model(input_ids=step_input, past_key_values=past, use_cache=True)
        past = result.past_key_values
        tok = int(result.logits[0, -1].argmax())
        if tok in eos:
            break
        out.append(tok)
        step_input = torch.tensor([[tok]], dtype=torch.long)
    return out


def verify_gguf(
    model: Any,
    prompt_ids: list[int],
    path: str | Path,
    eos_ids: list[int],
    n_threads: int | None = None,
) -> Verification:
    """Load `path` with llama-cpp-python and compare it with `model` (the merged torch model)."""
    import llama_cpp

    eos = set(eos_ids)
    n_ctx = max(64, len(prompt_ids) + GREEDY_TOKENS + 8)
    with quiet_stderr() as caught:
        try:
            llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                logits_all=True,
                n_threads=n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            detail = caught[0][-500:] if caught else ""
            raise RuntimeError(f"llama.cpp cannot load {path}: {exc} {detail}".strip()) from exc
    try:
        llm.eval(prompt_ids)
        ours = np.asarray(llm.scores[: len(prompt_ids)], dtype=np.float32)
        with torch.no_grad():
            ref = model(input_ids=torch.tensor([prompt_ids], dtype=torch.long)).logits[0]
        ref_np = ref.float().numpy()
        diff = np.abs(ours - ref_np)
        gguf_tokens: list[int] = []
        for _ in range(GREEDY_TOKENS):
            tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
            if tok in eos:
                break
            gguf_tokens.append(tok)
            llm.eval([tok])
    finally:
        llm.close()
    torch_tokens = _torch_greedy(model, prompt_ids, GREEDY_TOKENS, eos)
    agree = 0
    for a, b in zip(torch_tokens, gguf_tokens, strict=False):
        if a != b:
            break
        agree += 1
    return Verification(
        max_logit_diff=float(diff.max()),
        last_logit_diff=float(diff[-1].max()),
        greedy_match=torch_tokens == gguf_tokens,
        greedy_agree=agree,
        torch_tokens=torch_tokens,
        gguf_tokens=gguf_tokens,
    )
