"""Finding and loading the policy's base model: the bundled GGUF, a local HF folder or a .gguf.

transformers reads a GGUF slowly (it parses the 49k-token vocabulary several times and rebuilds
the tensor-name map per module: ~25 s for SmolLM2-135M on two cores), so the first load of a GGUF
is converted once to a plain HF folder in a cache, keyed by the file's path, size and mtime;
later loads read that folder (~1 s). Nothing is ever downloaded: anything that is not the
bundled model or an existing local path is a clear error.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel

from mlagent_tui.core.llm import bundled_model_path
from mlagent_tui.core.llm.adapter import BARE_NAME, cache_root, default_local_model

log = logging.getLogger(__name__)

Backend = Literal["auto", "unsloth", "hf"]
Precision = Literal["auto", "float32", "bfloat16"]
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


class BaseSource(BaseModel):
    """Where a base model's weights come from: an HF folder to load, and the GGUF it came from
    (the export uses that GGUF as its metadata template)."""

    spec: str
    hf_dir: str | None = None  # an HF folder the user gave
    gguf: str | None = None  # the GGUF file, when the base is one


def resolve_base(base_model: str) -> BaseSource:
    """`smollm2` (the bare bundled SmolLM2 GGUF), `local` (the same plus the project's shipped
    adapter, merged once into a cached GGUF; the bare base where none is shipped), a local HF
    folder, or a local .gguf file."""
    if base_model == BARE_NAME:
        return BaseSource(spec=base_model, gguf=str(bundled_model_path()))
    if base_model == "local":
        path, _ = default_local_model()
        return BaseSource(spec=base_model, gguf=str(path))
    path = Path(base_model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return BaseSource(spec=base_model, gguf=str(path.resolve()))
    if path.is_dir() and (path / "config.json").is_file():
        return BaseSource(spec=base_model, hf_dir=str(path.resolve()))
    if path.is_dir():
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return BaseSource(spec=base_model, gguf=str(ggufs[0].resolve()))
    raise ValueError(
        f"unknown base model {base_model!r}: use 'smollm2' (the bundled SmolLM2-135M-Instruct), "
        "'local' (the same plus the project's shipped adapter), a local Hugging Face folder "
        "(with config.json) or a local .gguf file; nothing is downloaded"
    )


def _quiet_transformers() -> Any:
    """Turn off transformers' own progress bars (returns a function that restores them). The
    one-time GGUF conversion keeps its plain tqdm bar: it is 30 s worth watching."""
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    return hf_logging.enable_progress_bar if was_enabled else (lambda: None)


def gguf_as_hf_folder(gguf_path: str | Path, cache_dir: Path | None = None) -> Path:
    """The GGUF's dequantized weights, config and tokenizer as an HF folder (made once, cached).

    Loading goes through transformers' own GGUF support (`gguf_file=` with
    `GgufConfig(dequantize=True)`), which also un-permutes llama's q/k rows.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:  # transformers >= 5 can keep GGUF blocks packed; ask for plain dense weights
        from transformers import GgufConfig

        dequantize: dict[str, Any] = {"quantization_config": GgufConfig(dequantize=True)}
    except ImportError:  # older transformers always dequantize
        dequantize = {}
    gguf_path = Path(gguf_path).resolve()
    stat = gguf_path.stat()
    key = hashlib.sha256(f"{gguf_path}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    root = (cache_dir or cache_root()) / "hf-from-gguf"
    target = root / f"{gguf_path.stem}-{key[:16]}"
    if (target / "config.json").is_file():
        return target
    log.info("converting %s to an HF folder in %s (once; later loads are fast)", gguf_path, target)
    root.mkdir(parents=True, exist_ok=True)
    restore = _quiet_transformers()
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf_path.parent),
            gguf_file=gguf_path.name,
            dtype=torch.float32,
            **dequantize,
        )
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
        try:
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            try:
                tmp.rename(target)
            except OSError:  # another process made it first: theirs is as good as ours
                if not (target / "config.json").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    finally:
        restore()
    return target


def pick_device(device: str | None) -> str:
    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(dtype: torch.dtype | str | None, device: str) -> torch.dtype:
    """float32 on the CPU (exact log-probabilities); bfloat16 (else float16) on a GPU."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str):
        value = getattr(torch, dtype, None)
        if not isinstance(value, torch.dtype):
            raise ValueError(f"unknown dtype {dtype!r} (float32, bfloat16, float16)")
        return value
    if device.startswith("cuda"):
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def cpu_has_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX). Elsewhere oneDNN
    emulates bf16, slower than float32; outside Linux the answer is no."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return False
    flags = next((ln for ln in text.splitlines() if ln.startswith("flags")), "").split()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def pick_autocast(precision: Precision, device: str, dtype: torch.dtype) -> torch.dtype | None:
    """The dtype a float32 policy on the CPU computes its forward passes in (autocast), or None.

    Weights, optimiser state and log-softmax stay float32; only the matrix products run in
    bfloat16: on a 2-core CPU with native bf16 an sft step took 12.9 s against float32's 19.3
    (`benchmarks/bench_precision.py`). A policy already in a 16-bit dtype (a GPU) needs none.
    """
    if precision not in ("auto", "float32", "bfloat16"):
        raise ValueError(f"unknown precision {precision!r} (auto, float32, bfloat16)")
    if precision == "float32" or dtype != torch.float32 or not device.startswith("cpu"):
        return None
    if precision == "bfloat16" or cpu_has_bf16():
        return torch.bfloat16
    return None


def choose_backend(backend: Backend, device: str) -> Literal["unsloth", "hf"]:
    """unsloth where asked for (or `auto` on a GPU) and importable; transformers + peft otherwise.

    unsloth is imported here, lazily: it patches transformers on import and needs a GPU.
    """
    if backend not in ("auto", "unsloth", "hf"):
        raise ValueError(f"unknown backend {backend!r} (auto, unsloth, hf)")
    if backend == "hf" or (backend == "auto" and not device.startswith("cuda")):
        return "hf"
    try:
        importlib.import_module("unsloth")
    except Exception as exc:  # ImportError, or unsloth's own errors without a usable GPU
        log.warning("unsloth is not available (%s); using transformers + peft instead", exc)
        return "hf"
    return "unsloth"


def lora_config(lora_r: int, lora_alpha: int, lora_dropout: float, seed: int) -> Any:
    from peft import LoraConfig

    del seed  # peft initialises B to zero and A from torch's RNG, seeded by the caller
    return LoraConfig(
        r=lora_r,
        lora_alpha=lora_alpha,
        lora_dropout=lora_dropout,
        target_modules=list(LORA_TARGETS),
        bias="none",
        task_type="CAUSAL_LM",
    )


def load_hf(
    folder: Path,
    *,
    device: str,
    dtype: torch.dtype,
    lora_r: int,
    lora_alpha: int,
    lora_dropout: float,
    gradient_checkpointing: bool,
    seed: int,
    load_in_4bit: bool = False,
) -> tuple[Any, Any]:
    """transformers + peft: the CPU path, and the GPU path where unsloth is missing (4-bit
    there through bitsandbytes: NF4 weights, LoRA and the computation in `dtype`)."""
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"dtype": dtype}
    if load_in_4bit:
        kwargs.update(quantization_4bit(device, dtype))
    restore = _quiet_transformers()
    try:
        base = AutoModelForCausalLM.from_pretrained(str(folder), **kwargs)
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    finally:
        restore()
    if not load_in_4bit:  # a quantized model is placed by its device_map
        base.to(device)
    if gradient_checkpointing:
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        base.enable_input_require_grads()
    torch.manual_seed(seed)
    with warnings.catch_warnings():  # peft asks transformers a question v5 calls deprecated
        warnings.filterwarnings("ignore", category=FutureWarning)
        model = get_peft_model(base, lora_config(lora_r, lora_alpha, lora_dropout, seed))
    return model, tokenizer


def quantization_4bit(device: str, dtype: torch.dtype) -> dict[str, Any]:
    """from_pretrained's arguments for NF4 weights on `device` (bitsandbytes needs a GPU)."""
    if not device.startswith("cuda"):
        raise ValueError("4-bit loading needs a CUDA GPU (bitsandbytes); the CPU path is 32-bit")
    try:
        from transformers import BitsAndBytesConfig

        importlib.import_module("bitsandbytes")
    except ImportError as exc:
        raise ValueError(f"4-bit loading needs bitsandbytes ({exc})") from exc
    config = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_compute_dtype=dtype,
        bnb_4bit_use_double_quant=True,
    )
    return {"quantization_config": config, "device_map": {"": device}}


def load_unsloth(
    folder: Path,
    *,
    dtype: torch.dtype,
    lora_r: int,
    lora_alpha: int,
    lora_dropout: float,
    load_in_4bit: bool,
    max_seq_length: int,
    seed: int,
) -> tuple[Any, Any]:
    """unsloth on a GPU: its fast kernels, its gradient checkpointing, its fast generation."""
    from unsloth import FastLanguageModel

    model, tokenizer = FastLanguageModel.from_pretrained(
        model_name=str(folder),
        max_seq_length=max_seq_length,
        dtype=dtype,
        load_in_4bit=load_in_4bit,
    )
    model = FastLanguageModel.get_peft_model(
        model,
        r=lora_r,
        lora_alpha=lora_alpha,
        lora_dropout=lora_dropout,
        target_modules=list(LORA_TARGETS),
        bias="none",
        use_gradient_checkpointing="unsloth",
        random_state=seed,
    )
    return model, tokenizer
