"""Rollout sampling with llama.cpp: the policy's answers on a CPU at llama.cpp's speed.

transformers' `generate` runs SmolLM2-135M with its LoRA at ~18 tokens/s on this project's
2-core CPU (4 answers of 256 tokens: 58 s), which makes one RL update on a task's Draft prompt
take minutes of sampling alone. llama.cpp runs the same weights, merged and written as Q8_0,
several times faster. The sampler re-exports the policy once per update (merge + write, seconds)
and samples there. Its samples carry the Q8_0 copy's log-probabilities (what a session records);
the GRPO ratio does not start from them but from the policy's own, which the update's first
optimiser step computes anyway (a separate rescoring pass cost ~50 s of every 6-task update).

`--sampler auto` uses it on a CPU when the base has a GGUF (the bundled model's case) and keeps
transformers (or unsloth's fast generation) on a GPU.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from mlagent_tui.core.llm import Message

from ..policy import Policy, Sample

SamplerName = Literal["auto", "hf", "llama"]


def wants_llama(name: SamplerName, policy: Policy) -> bool:
    if name == "llama":
        if not policy.config.base_gguf:
            raise ValueError("--sampler llama needs a base with a GGUF (e.g. smollm2)")
        return True
    return name == "auto" and str(policy.device) == "cpu" and bool(policy.config.base_gguf)


class LlamaSampler:
    """`generate` like `Policy.generate`, from a llama.cpp copy of the policy at `version`."""

    def __init__(self, policy: Policy, *, threads: int | None = None, n_ctx: int = 8192) -> None:
        self.policy = policy
        self.threads = threads or os.cpu_count() or 1  # nothing else runs while it samples
        self.n_ctx = n_ctx
        self.folder = Path(tempfile.mkdtemp(prefix="mlagent-sampler-"))
        weakref.finalize(self, shutil.rmtree, self.folder, ignore_errors=True)
        self.version: int | None = None
        self.llm: Any = None  # a LocalModel over the exported copy
        self.export_seconds = 0.0
        self.draws = 0

    def close(self) -> None:
        if self.llm is not None:
            self.llm.close()
        self.llm = None
        shutil.rmtree(self.folder, ignore_errors=True)

    def refresh(self, version: int) -> None:
        """Export the policy's current weights unless `version` is already the one loaded."""
        if self.version == version and self.llm is not None:
            return
        from mlagent_tui.core.llm.local import LocalModel
        from trainer.export import export_gguf

        started = time.perf_counter()
        if self.llm is not None:
            self.llm.close()
        self.llm = None
        path = self.folder / "policy.gguf"
        export_gguf(self.policy, path, quant="q8_0", verify=False)
        self.llm = LocalModel(str(path), n_ctx=self.n_ctx, n_threads=self.threads)
        self.version = version
        self.export_seconds += time.perf_counter() - started

    def generate(
        self,
        messages: Sequence[Message | dict[str, str]],
        *,
        version: int,
        n: int = 1,
        max_new_tokens: int = 256,
        temperature: float = 1.0,
        top_p: float = 1.0,
    ) -> list[Sample]:
        if n < 1 or max_new_tokens < 1:
            raise ValueError("n and max_new_tokens must be at least 1")
        if top_p < 1.0:
            raise ValueError("the llama.cpp sampler draws from the plain distribution (top_p 1)")
        self.refresh(version)
        prompt = self.policy.chat_prompt_ids(messages)
        if len(prompt) + max_new_tokens > self.n_ctx:
            raise ValueError(
                f"prompt is {len(prompt)} tokens; with {max_new_tokens} new ones it passes the "
                f"sampler's context of {self.n_ctx}"
            )
        started = time.perf_counter()
        answers: list[tuple[list[int], list[float], Literal["stop", "length"]]] = []
        for _ in range(n):  # the prompt's cache is reused: only the first sample evaluates it
            self.draws += 1  # each draw seeds its sampler anew
            self.llm.seed = self.policy.seed * 1_000_003 + self.draws
            self.llm.calls = 0
            done = self.llm.complete_ids(prompt, max_tokens=max_new_tokens, temperature=temperature)
            tokens, logprobs = list(done.token_ids or []), list(done.logprobs or [])
            finish: Literal["stop", "length"] = "length"
            if done.finish_reason == "stop" and done.stop_token_id is not None:
                tokens.append(done.stop_token_id)
                logprobs.append(done.stop_logprob if done.stop_logprob is not None else 0.0)
                finish = "stop"
            answers.append((tokens, logprobs, finish))
        seconds = time.perf_counter() - started
        return [
            Sample(
                text=self.policy.tokenizer.decode(
                    tokens[:-1] if finish == "stop" else tokens, skip_special_tokens=False
                ),
                prompt_ids=prompt,
                completion_ids=tokens,
                logprobs=lps,
                finish_reason=finish,
                seconds=seconds,
            )
            for tokens, lps, finish in answers
        ]
