"""Writing a merged llama-family model as GGUF, with the base GGUF as the metadata template.

Every key/value of the base file (architecture hyper-parameters, the whole tokenizer, the chat
template; read by meta.py) is copied as it is; only `general.file_type` changes. Tensor names
go from HF back to GGUF names through gguf-py's own name map, in the base file's order.
llama.cpp's converter permutes the rows of q and k (rotary halves interleaved per head) and
transformers undoes that when it loads a GGUF, so the permutation is done again here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf
import numpy as np
import torch
from gguf import GGMLQuantizationType, LlamaFileType

from .meta import GGUFMeta, read_gguf_meta

# HF model_type -> GGUF architecture, for the models that share llama's layout and permutation.
LLAMA_FAMILY = {"llama": "llama", "mistral": "llama"}

FILE_TYPES = {
    "q8_0": LlamaFileType.MOSTLY_Q8_0,
    "f16": LlamaFileType.MOSTLY_F16,
    "f32": LlamaFileType.ALL_F32,
}


class ExportError(ValueError):
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


def llama_permute(weight: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's row order for q/k: within each head, interleave the two rotary halves.

    The inverse of transformers' `LlamaTensorProcessor._reverse_permute_weights`.
    """
    rows = weight.shape[0]
    if rows % (2 * n_head):
        raise ExportError(f"cannot permute {weight.shape} into {n_head} heads")
    return (
        weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:])
        .swapaxes(1, 2)
        .reshape(weight.shape)
    )


def hf_to_gguf_names(state_names: list[str], arch: str, n_layers: int) -> dict[str, str]:
    """HF parameter name -> GGUF tensor name, built from one gguf-py name map."""
    arch_id = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch)
    name_map = gguf.get_tensor_name_map(arch_id, n_layers)
    out: dict[str, str] = {}
    for name in state_names:
        stem, suffix = name, ""
        if name.endswith((".weight", ".bias")):
            stem, suffix = name.rsplit(".", 1)
            suffix = "." + suffix
        mapped = name_map.get_name(stem)
        if mapped is None:
            raise ExportError(f"no GGUF name for the tensor {name!r}")
        out[name] = mapped + suffix
    return out


def _encode(array: np.ndarray, quant: str) -> tuple[np.ndarray, GGMLQuantizationType | None]:
    """The tensor's bytes in the file: 1-D (norms) stay F32; 2-D weights in the chosen type."""
    if array.ndim < 2 or quant == "f32":
        return array.astype(np.float32), None
    if quant == "q8_0" and array.shape[-1] % 32 == 0:
        qtype = GGMLQuantizationType.Q8_0
        return gguf.quants.quantize(array.astype(np.float32), qtype), qtype
    return array.astype(np.float16), None  # f16, or a row that Q8_0 blocks do not divide


def copy_metadata(meta: GGUFMeta, writer: gguf.GGUFWriter, file_type: int) -> int:
    """All key/values of the base file except the architecture (the writer adds it), with
    `general.file_type` set to what this file holds."""
    copied = 0
    for field in meta.fields:
        if field.key in (gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.FILE_TYPE):
            continue
        writer.add_key_value(field.key, field.value, field.vtype, sub_type=field.sub_type)
        copied += 1
    writer.add_uint32(gguf.Keys.General.FILE_TYPE, int(file_type))
    return copied


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
        data, raw_dtype = _encode(np.ascontiguousarray(array), quant)
        writer.add_tensor(gguf_name, data, raw_dtype=raw_dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return len(base_order)
