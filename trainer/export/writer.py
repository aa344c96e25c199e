"""Writing a merged llama-family model as GGUF, with the base GGUF as the metadata template.

Every key/value of the base file (architecture hyper-parameters, the whole tokenizer, the chat
template) is copied as it is; only `general.file_type` changes. The numpy pieces (header reader,
HF -> GGUF names, llama.cpp's q/k permutation, Q8_0 encoding) live in mlagent_tui.core.llm.ggufio,
shared with the local model's adapter merge; this module adds what needs torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf
import numpy as np
import torch

from mlagent_tui.core.llm.ggufio import (
    FILE_TYPES,
    GGUFLayoutError,
    copy_metadata,
    encode_tensor,
    hf_to_gguf_names,
    llama_permute,
    read_gguf_meta,
)

__all__ = [
    "FILE_TYPES",
    "ExportError",
    "gguf_architecture",
    "hf_to_gguf_names",
    "llama_permute",
    "write_llama_gguf",
]

# HF model_type -> GGUF architecture, for the models that share llama's layout and permutation.
LLAMA_FAMILY = {"llama": "llama", "mistral": "llama"}


class ExportError(GGUFLayoutError):
    """The model or the base file cannot be exported (wrong architecture, missing tensors)."""


def gguf_architecture(config: Any) -> str:
    """The GGUF architecture of an HF config, or a clear error for one we cannot write."""
    model_type = getattr(config, "model_type", None)
    arch = LLAMA_FAMILY.get(str(model_type))
    if arch is None:
        raise ExportError(
            f"GGUF export supports llama-family models only (llama, mistral); this model's "
            f"architecture is {model_type!r}"
        )
    return arch


def write_llama_gguf(
    state: dict[str, torch.Tensor],
    config: Any,
    base_gguf: str | Path,
    out_path: str | Path,
    quant: str,
) -> int:
    """Write `state` (a merged HF state dict) as GGUF; returns the number of tensors written."""
    if quant not in FILE_TYPES:
        raise ExportError(f"direct GGUF writing supports {sorted(FILE_TYPES)}, not {quant!r}")
    arch = gguf_architecture(config)
    meta = read_gguf_meta(base_gguf)
    base_arch = meta.get(gguf.Keys.General.ARCHITECTURE)
    if base_arch != arch:
        raise ExportError(
            f"the base GGUF {base_gguf} is a {base_arch!r} model, but this model is {arch!r}"
        )
    base_order = meta.tensor_names
    names = hf_to_gguf_names(list(state), arch, int(config.num_hidden_layers))
    by_gguf = {g: h for h, g in names.items()}
    missing = [n for n in base_order if n not in by_gguf]
    if missing:
        raise ExportError(f"the model has no tensor for {missing[:3]} of the base GGUF")
    extra = sorted(set(by_gguf) - set(base_order) - {"output.weight"})
    if extra:
        raise ExportError(f"the base GGUF has no place for {extra[:3]}")
    # Tied embeddings: where the base file has no output.weight, llama.cpp reuses token_embd.
    if "output.weight" not in base_order and not getattr(config, "tie_word_embeddings", False):
        raise ExportError("the model has its own lm_head but the base GGUF has no output.weight")
    n_head = int(config.num_attention_heads)
    n_kv = int(getattr(config, "num_key_value_heads", None) or n_head)

    out_path = Path(out_path)
    writer = gguf.GGUFWriter(str(out_path), arch)
    copy_metadata(meta, writer, FILE_TYPES[quant])
    for gguf_name in base_order:
        array = state[by_gguf[gguf_name]].detach().to("cpu", torch.float32).numpy()
        if gguf_name.endswith("attn_q.weight"):
            array = llama_permute(array, n_head)
        elif gguf_name.endswith("attn_k.weight"):
            array = llama_permute(array, n_kv)
        data, raw_dtype = encode_tensor(np.ascontiguousarray(array), quant)
        writer.add_tensor(gguf_name, data, raw_dtype=raw_dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return len(base_order)
