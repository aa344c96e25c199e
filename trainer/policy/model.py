"""The trainable policy: a base causal LM with LoRA, sampling with log-probabilities, and the
log-probabilities of given sequences (with gradient) and under the frozen base (reference).

One interface, two engines: unsloth on a GPU (4- or 16-bit base, its kernels, its gradient
checkpointing and fast generation) and transformers + peft everywhere else. unsloth is imported
only when chosen. Log-probabilities are always those of the unmodified next-token distribution
(temperature 1, no top-k/top-p), whatever the sampling settings: the same quantity the local
llama.cpp model logs, and what the GRPO ratio needs.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel

from mlagent_tui.core.llm import Message
from mlagent_tui.core.llm.adapter import BARE_NAME, base_identity

from .batch import Sample, token_logprobs
from .load import (
    LORA_TARGETS,
    Backend,
    Precision,
    choose_backend,
    gguf_as_hf_folder,
    load_hf,
    load_unsloth,
    pick_autocast,
    pick_device,
    pick_dtype,
    resolve_base,
)

__all__ = ["Policy", "PolicyConfig", "load_policy"]

log = logging.getLogger(__name__)
CONFIG_FILE = "policy.json"


class PolicyConfig(BaseModel):
    """What `policy.json` records beside the adapter: enough to rebuild the same policy."""

    base_model: str
    base_gguf: str | None = None
    # What `base_model` meant when the policy was made (`smollm2`, `local+mlagent-<hash>`):
    # `local` changes meaning when an adapter ships, a checkpoint's base must not.
    base_identity: str | None = None
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    target_modules: list[str] = list(LORA_TARGETS)
    backend: Literal["unsloth", "hf"] = "hf"
    dtype: str = "float32"
    load_in_4bit: bool = False


class Policy:
    """A LoRA policy. `.model` is the peft model; `.tokenizer` its tokenizer."""

    def __init__(self, model: Any, tokenizer: Any, config: PolicyConfig, device: str) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.config = config
        self.base_name = config.base_model
        self.backend = config.backend
        self.device = device
        self.calls = 0  # each generate call samples with seed + calls
        self.autocast: torch.dtype | None = None  # set_precision; float32 throughout by default
        self.seed = 0
        eos = tokenizer.eos_token_id
        self.eos_ids: list[int] = [eos] if isinstance(eos, int) else list(eos or [])
        self.pad_id: int = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_ids[0]
        )
        self.max_context: int = int(getattr(model.config, "max_position_embeddings", 8192))
        # Train mode only while computing with gradient (gradient checkpointing needs it); llama
        # has no dropout and LoRA's defaults to 0, so both modes give the same numbers.
        model.eval()

    def set_precision(self, precision: Precision) -> str:
        """Forward passes in bfloat16 autocast (`bfloat16`; `auto` where the CPU has native
        bf16) or float32; returns what was chosen. A run-time choice: policy.json keeps none."""
        model_dtype = next(self.model.parameters()).dtype
        self.autocast = pick_autocast(precision, self.device, model_dtype)
        return "bfloat16 autocast" if self.autocast else str(model_dtype).removeprefix("torch.")

    def _compute(self) -> Any:
        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type="cpu", dtype=self.autocast)

    def forward(self, **inputs: Any) -> Any:
        """The model's forward pass in the chosen precision: every caller that runs the model
        itself (prompt caches, answer log-probabilities) goes through here."""
        with self._compute():
            return self.model(**inputs)

    # -------------------------------------------------------------------------- prompts
    def chat_prompt_ids(self, messages: Sequence[Message | dict[str, str]]) -> list[int]:
        """Token ids of the chat template with the assistant turn opened."""
        dicts = [m.model_dump() if isinstance(m, Message) else dict(m) for m in messages]
        ids = self.tokenizer.apply_chat_template(
            dicts, add_generation_prompt=True, tokenize=True, return_dict=False
        )
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return [int(i) for i in ids]

    def _prompt_ids(self, prompt: Sequence[Message | dict[str, str]] | Sequence[int]) -> list[int]:
        if len(prompt) and isinstance(prompt[0], int):
            return [int(i) for i in prompt]  # type: ignore[arg-type]
        return self.chat_prompt_ids(prompt)  # type: ignore[arg-type]

    # ------------------------------------------------------------------------ sampling
    @torch.no_grad()
    def generate(
        self,
        messages_or_prompt_ids: Sequence[Message | dict[str, str]] | Sequence[int],
        *,
        n: int = 1,
        max_new_tokens: int = 256,
        temperature: float = 1.0,
        top_p: float = 1.0,
        grammar: str | None = None,
        streamer: Any = None,
        min_new_tokens: int = 0,
    ) -> list[Sample]:
        """n samples of one prompt, in one batched call. `grammar` is ignored (no GBNF here).

        A sample that ended on an end-of-sequence token keeps that token (and its log-prob) as
        its last completion id, so that training teaches stopping; `text` leaves it out.
        `min_new_tokens` holds the end-of-sequence back that long (fixed-length benchmarks).
        """
        del grammar
        from transformers import GenerationConfig

        if n < 1 or max_new_tokens < 1:
            raise ValueError("n and max_new_tokens must be at least 1")
        prompt = self._prompt_ids(messages_or_prompt_ids)
        if not prompt:
            raise ValueError("empty prompt")
        if len(prompt) + max_new_tokens > self.max_context:
            raise ValueError(
                f"prompt is {len(prompt)} tokens; with {max_new_tokens} new ones it passes the "
                f"model's context of {self.max_context}"
            )
        sampling = temperature > 0
        gen = GenerationConfig(
            max_new_tokens=max_new_tokens,
            min_new_tokens=min_new_tokens or None,
            do_sample=sampling,
            temperature=temperature if sampling else None,
            top_p=top_p if sampling else None,
            top_k=0 if sampling else None,
            num_return_sequences=n,
            pad_token_id=self.pad_id,
            eos_token_id=self.eos_ids,
            return_dict_in_generate=True,
            output_logits=True,
        )
        ids = torch.tensor([prompt], dtype=torch.long, device=self.device)
        self.model.eval()
        torch.manual_seed(self.seed + self.calls)
        self.calls += 1
        start = time.perf_counter()
        with self._inference_mode(), self._compute():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                generation_config=gen,
                streamer=streamer,
            )
        seconds = time.perf_counter() - start
        new = out.sequences[:, len(prompt) :]
        # One step at a time: no second [n, steps, vocab] copy of the logits transformers kept.
        lps = torch.stack(
            [token_logprobs(step, new[:, t]) for t, step in enumerate(out.logits)], dim=1
        ).cpu()
        samples = []
        for row in range(new.shape[0]):
            tokens = new[row].tolist()
            finish: Literal["stop", "length"] = "length"
            for i, tok in enumerate(tokens):
                if tok in self.eos_ids:
                    tokens, finish = tokens[: i + 1], "stop"
                    break
            text_ids = tokens[:-1] if finish == "stop" else tokens
            samples.append(
                Sample(
                    text=self.tokenizer.decode(text_ids, skip_special_tokens=False),
                    prompt_ids=prompt,
                    completion_ids=tokens,
                    logprobs=lps[row, : len(tokens)].tolist(),
                    finish_reason=finish,
                    seconds=seconds,
                )
            )
        return samples

    def _inference_mode(self) -> Any:
        """unsloth's fast generation path is switched on for the call and off after it."""
        policy = self

        class _Mode:
            def __enter__(self) -> None:
                if policy.backend == "unsloth":
                    from unsloth import FastLanguageModel

                    FastLanguageModel.for_inference(policy.model)

            def __exit__(self, *exc: object) -> None:
                if policy.backend == "unsloth":
                    from unsloth import FastLanguageModel

                    FastLanguageModel.for_training(policy.model)

        return _Mode()

    # ------------------------------------------------------------------- log-probabilities
    def sequence_logprobs(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        *,
        with_entropy: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """log p(input_ids[:, t+1] | ...) for t in 0..T-2, as [B, T-1] float32, with gradient;
        and the entropy of each of those next-token distributions when asked."""
        input_ids = input_ids.to(self.device)
        attention_mask = attention_mask.to(self.device)
        self.model.train(torch.is_grad_enabled())
        logits = self.forward(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=False
        ).logits[:, :-1]
        logprobs = token_logprobs(logits, input_ids[:, 1:])
        entropy = None
        if with_entropy:
            flat = logits.float()
            probs = torch.softmax(flat, dim=-1)
            entropy = torch.logsumexp(flat, dim=-1) - (probs * flat).sum(-1)
        return logprobs, entropy

    @torch.no_grad()
    def reference_logprobs(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> torch.Tensor:
        """The same log-probabilities under the frozen base model (LoRA switched off)."""
        with self.model.disable_adapter():
            logprobs, _ = self.sequence_logprobs(input_ids, attention_mask)
        return logprobs

    # ------------------------------------------------------------------------- weights
    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def save(self, directory: str | Path) -> Path:
        """The adapter (peft's files) and policy.json; the base stays where it is."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(directory))
        (directory / CONFIG_FILE).write_text(self.config.model_dump_json(indent=2) + "\n")
        return directory

    @classmethod
    def load(
        cls,
        directory: str | Path,
        *,
        device: str | None = None,
        backend: Backend | None = None,
        dtype: torch.dtype | str | None = None,
    ) -> Policy:
        """A policy saved by `save`: the same base, the same LoRA, its trained weights.
        `device`, `backend` and `dtype` override the saved ones (the export loads on the CPU)."""
        from peft import load_peft_weights, set_peft_model_state_dict

        directory = Path(directory)
        path = directory / CONFIG_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: not a directory written by Policy.save")
        config = PolicyConfig.model_validate(json.loads(path.read_text()))
        policy = load_policy(
            _saved_base(config, directory),
            lora_r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            device=device,
            backend=backend or config.backend,
            dtype=dtype or config.dtype,
            load_in_4bit=config.load_in_4bit,
        )
        weights = load_peft_weights(str(directory), device=policy.device)
        result = set_peft_model_state_dict(policy.model, weights)
        unexpected = [k for k in getattr(result, "unexpected_keys", []) if "lora" in k]
        if unexpected:
            raise ValueError(f"adapter in {directory} does not fit its base: {unexpected[:3]}")
        return policy


def _saved_base(config: PolicyConfig, directory: Path) -> str:
    """The base to rebuild a saved policy on. A `local` saved before adapters shipped (no
    identity recorded) or on the bare base is `smollm2`; one saved on an adapter that is no
    longer the shipped one cannot be rebuilt, and says so."""
    if config.base_model != "local":
        return config.base_model
    saved = config.base_identity or BARE_NAME
    if saved == BARE_NAME:
        return BARE_NAME
    now = base_identity("local")
    if saved != now:
        raise ValueError(
            f"the policy in {directory} was trained on {saved}, but `local` is now {now}: "
            "its base is gone"
        )
    return "local"


def load_policy(
    base_model: str = BARE_NAME,
    *,
    lora_r: int = 8,
    lora_alpha: int = 16,
    lora_dropout: float = 0.0,
    device: str | None = None,
    backend: Backend = "auto",
    dtype: torch.dtype | str | None = None,
    seed: int = 0,
    load_in_4bit: bool = False,
    gradient_checkpointing: bool = False,
    max_seq_length: int = 8192,
    cache_dir: Path | None = None,
) -> Policy:
    """A fresh LoRA policy on `base_model` (`smollm2`, `local`, an HF folder, or a .gguf file).

    LoRA B starts at zero, so the new policy equals its base until the first update.
    """
    if lora_r < 1:
        raise ValueError("lora_r must be at least 1")
    source = resolve_base(base_model)
    device = pick_device(device)
    torch_dtype = pick_dtype(dtype, device)
    chosen = choose_backend(backend, device)
    folder = (
        Path(source.hf_dir) if source.hf_dir else gguf_as_hf_folder(source.gguf or "", cache_dir)
    )
    if chosen == "unsloth":
        model, tokenizer = load_unsloth(
            folder,
            dtype=torch_dtype,
            lora_r=lora_r,
            lora_alpha=lora_alpha,
            lora_dropout=lora_dropout,
            load_in_4bit=load_in_4bit,
            max_seq_length=max_seq_length,
            seed=seed,
        )
    else:
        model, tokenizer = load_hf(
            folder,
            device=device,
            dtype=torch_dtype,
            lora_r=lora_r,
            lora_alpha=lora_alpha,
            lora_dropout=lora_dropout,
            gradient_checkpointing=gradient_checkpointing,
            seed=seed,
            load_in_4bit=load_in_4bit,
        )
    log.info("policy on %s: %s backend, %s, LoRA r=%d", base_model, chosen, torch_dtype, lora_r)
    config = PolicyConfig(
        base_model=base_model,
        base_gguf=source.gguf,
        base_identity=base_identity(base_model),
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        lora_dropout=lora_dropout,
        backend=chosen,
        dtype=str(torch_dtype).removeprefix("torch."),
        load_in_4bit=load_in_4bit,
    )
    policy = Policy(model, tokenizer, config, device)
    policy.seed = seed
    return policy
