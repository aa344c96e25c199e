"""`mlagent-train export`: merge the LoRA into the base, write a GGUF the local backend runs, and
check it with llama.cpp against the torch model.

Q8_0 (the default) and F16/F32 are written directly with gguf-py; every other llama.cpp type
(q4_k_m, q5_0, ...) goes through `llama_model_quantize` from an F16 file, as llama.cpp's own
tools do. The bundled base is Q4_1: its dequantized weights, re-quantized to Q8_0, lose little.
"""

from __future__ import annotations

import copy
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel

from mlagent_tui.core.llm import Message, quiet_stderr

from ..policy import Policy
from .verify import Verification, verify_gguf
from .writer import FILE_TYPES, ExportError, gguf_architecture, write_llama_gguf

__all__ = ["DEFAULT_PROBE", "ExportError", "ExportReport", "export_gguf", "merged_model"]

DEFAULT_PROBE = "Write a Python function that returns the mean of a list of numbers."

# Types llama.cpp makes from an F16 file (name -> llama_cpp constant).
LLAMA_CPP_QUANTS = {
    "q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0",
    "q4_1": "LLAMA_FTYPE_MOSTLY_Q4_1",
    "q5_0": "LLAMA_FTYPE_MOSTLY_Q5_0",
    "q5_1": "LLAMA_FTYPE_MOSTLY_Q5_1",
    "q2_k": "LLAMA_FTYPE_MOSTLY_Q2_K",
    "q3_k_m": "LLAMA_FTYPE_MOSTLY_Q3_K_M",
    "q4_k_s": "LLAMA_FTYPE_MOSTLY_Q4_K_S",
    "q4_k_m": "LLAMA_FTYPE_MOSTLY_Q4_K_M",
    "q5_k_s": "LLAMA_FTYPE_MOSTLY_Q5_K_S",
    "q5_k_m": "LLAMA_FTYPE_MOSTLY_Q5_K_M",
    "q6_k": "LLAMA_FTYPE_MOSTLY_Q6_K",
}
QUANTS = sorted([*FILE_TYPES, *LLAMA_CPP_QUANTS])


class ExportReport(BaseModel):
    out: str
    quant: str
    seconds_write: float  # merge + write (+ llama.cpp quantization)
    seconds_verify: float | None = None  # load with llama.cpp + compare
    max_logit_diff: float | None = None  # over all probe positions
    last_logit_diff: float | None = None
    greedy_match: bool | None = None
    greedy_agree: int | None = None
    tensor_count: int
    size_bytes: int
    base_gguf: str


def merged_model(policy: Policy) -> Any:
    """A float32 CPU copy of the policy with its LoRA merged in (the policy is left as it is)."""
    model = copy.deepcopy(policy.model).to("cpu", torch.float32)
    merged = model.merge_and_unload()
    merged.eval()
    return merged


def _cpu_policy(source: str | Path | Policy) -> Policy:
    """The policy as transformers + peft in float32 on the CPU, where merging is exact.

    A live unsloth policy (maybe a 4-bit base on a GPU) goes through its saved adapter.
    """
    if isinstance(source, Policy):
        if source.backend == "hf" and not source.config.load_in_4bit:
            return source
        with tempfile.TemporaryDirectory(prefix="mlagent-export-") as tmp:
            source.save(tmp)
            return Policy.load(tmp, device="cpu", backend="hf", dtype="float32")
    return Policy.load(source, device="cpu", backend="hf", dtype="float32")


def _llama_cpp_quantize(f16_path: Path, out_path: Path, quant: str) -> None:
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, LLAMA_CPP_QUANTS[quant])
    with quiet_stderr() as caught:
        code = llama_cpp.llama_model_quantize(
            str(f16_path).encode(), str(out_path).encode(), params
        )
    if code != 0:
        detail = caught[0][-500:] if caught else ""
        raise ExportError(f"llama.cpp could not quantize to {quant} (code {code}): {detail}")


def export_gguf(
    adapter_dir_or_policy: str | Path | Policy,
    out_path: str | Path,
    *,
    quant: str = "q8_0",
    base_gguf: str | Path | None = None,
    verify: bool = True,
    probe: str = DEFAULT_PROBE,
    n_threads: int | None = None,
) -> ExportReport:
    """Write the merged policy to `out_path` as GGUF and (by default) check it with llama.cpp.

    `adapter_dir_or_policy` is a directory written by `Policy.save` or a live Policy.
    `base_gguf` is the metadata template; by default the GGUF the policy's base came from.
    """
    quant = quant.lower()
    if quant not in QUANTS:
        raise ExportError(f"unknown quantization {quant!r}; choose one of {', '.join(QUANTS)}")
    policy = _cpu_policy(adapter_dir_or_policy)
    gguf_architecture(policy.model.config)
    template = base_gguf or policy.config.base_gguf
    if not template or not Path(template).is_file():
        raise ExportError(
            "export needs the base model's GGUF as its metadata template (tokenizer, chat "
            f"template); the policy's base is {policy.base_name!r}: pass base_gguf=PATH.gguf"
        )
    out_path = Path(out_path).expanduser()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    model = merged_model(policy)
    state = model.state_dict()
    fd, tmp_name = tempfile.mkstemp(prefix=".export-", suffix=".gguf", dir=out_path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        direct = quant if quant in FILE_TYPES else "f16"
        count = write_llama_gguf(state, model.config, template, tmp, direct)
        if quant in LLAMA_CPP_QUANTS:
            quantized = tmp.with_name(tmp.name + f".{quant}")
            try:
                _llama_cpp_quantize(tmp, quantized, quant)
                quantized.replace(tmp)
            finally:
                quantized.unlink(missing_ok=True)
        tmp.replace(out_path)
    finally:
        tmp.unlink(missing_ok=True)
    seconds_write = time.perf_counter() - start
    report = ExportReport(
        out=str(out_path),
        quant=quant,
        seconds_write=seconds_write,
        tensor_count=count,
        size_bytes=out_path.stat().st_size,
        base_gguf=str(template),
    )
    if not verify:
        return report
    start = time.perf_counter()
    prompt = policy.chat_prompt_ids([Message(role="user", content=probe)])
    check: Verification = verify_gguf(model, prompt, out_path, policy.eos_ids, n_threads)
    return report.model_copy(
        update={
            "seconds_verify": time.perf_counter() - start,
            "max_logit_diff": check.max_logit_diff,
            "last_logit_diff": check.last_logit_diff,
            "greedy_match": check.greedy_match,
            "greedy_agree": check.greedy_agree,
        }
    )
