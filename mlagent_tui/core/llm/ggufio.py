"""Reading and writing llama-family GGUF files with numpy and gguf-py (no torch).

Shared by the adapter merge here and the trainer's export, so there is one copy of each piece:
- a lean header reader: gguf-py's `GGUFReader` builds numpy views for every element of every
  array, which for a 49k-token vocabulary and its 49k merges takes 3-10 s on two shared cores;
  the header format is small (the GGUF spec: magic, version, counts, typed key/values, tensor
  infos), so it is read with `struct` in well under a second, and tensor data is memory-mapped;
- HF -> GGUF tensor names (gguf-py's own name map) and llama.cpp's q/k row permutation:
  llama.cpp's converter interleaves the rotary halves of each head and transformers undoes that
  when it loads a GGUF, so anything written from HF-ordered weights permutes them again;
- encoding a float tensor as Q8_0/F16/F32 and copying a base file's key/values.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, NamedTuple

import gguf
import numpy as np
from gguf import GGMLQuantizationType, GGUFValueType, LlamaFileType

_SCALARS: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "<B",
    GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I",
    GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f",
    GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT64: "<d",
    GGUFValueType.BOOL: "<?",
}

FILE_TYPES = {
    "q8_0": LlamaFileType.MOSTLY_Q8_0,
    "f16": LlamaFileType.MOSTLY_F16,
    "f32": LlamaFileType.ALL_F32,
}


class GGUFLayoutError(ValueError):
    """A tensor or file that does not fit the llama layout (names, shapes, types)."""


class MetaField(NamedTuple):
    key: str
    value: Any
    vtype: GGUFValueType
    sub_type: GGUFValueType | None


class TensorInfo(NamedTuple):
    name: str
    dims: tuple[int, ...]  # GGUF order: dims[0] is the length of a row
    qtype: GGMLQuantizationType
    offset: int  # from the start of the data section

    @property
    def shape(self) -> tuple[int, ...]:
        """numpy order (rows first), as gguf-py's reader and dequantize use."""
        return tuple(reversed(self.dims))

    @property
    def nbytes(self) -> int:
        block, size = gguf.GGML_QUANT_SIZES[self.qtype]
        return int(np.prod(self.dims)) // block * size


class GGUFMeta(NamedTuple):
    version: int
    fields: list[MetaField]
    tensor_names: list[str]
    tensors: list[TensorInfo] = []
    data_offset: int = 0  # where tensor data starts in the file

    def get(self, key: str) -> Any:
        for f in self.fields:
            if f.key == key:
                return f.value
        raise KeyError(key)


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def unpack(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.unpack("<Q")
        if self.pos + n > len(self.data):
            raise struct.error("string past the end")
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        return raw.decode("utf-8")

    def value(self, vtype: GGUFValueType) -> Any:
        if vtype == GGUFValueType.STRING:
            return self.string()
        fmt = _SCALARS.get(vtype)
        if fmt is None:
            raise ValueError(f"unsupported GGUF value type {vtype}")
        return self.unpack(fmt)

    def array(self) -> tuple[list[Any], GGUFValueType]:
        sub = GGUFValueType(self.unpack("<I"))
        count = self.unpack("<Q")
        if sub == GGUFValueType.STRING:
            return [self.string() for _ in range(count)], sub
        fmt = _SCALARS.get(sub)
        if fmt is None:
            raise ValueError(f"unsupported GGUF array type {sub}")
        values = list(struct.unpack_from(f"<{count}{fmt[1]}", self.data, self.pos))
        self.pos += count * struct.calcsize(fmt)
        return values, sub


def read_gguf_meta(path: str | Path, max_header_bytes: int = 256 << 20) -> GGUFMeta:
    """The key/values (in file order, with their types) and the tensor infos of a GGUF file.

    Reads 16 MiB and more only where the header is longer (a 49k vocabulary is ~3 MiB), not
    the whole file."""
    size = 16 << 20
    while True:
        with open(path, "rb") as fh:
            data = fh.read(min(size, max_header_bytes))
        try:
            return _parse_header(path, data)
        except _ShortRead:
            if len(data) < min(size, max_header_bytes):  # the whole file: it is truncated
                raise ValueError(f"{path}: truncated or corrupt GGUF header") from None
            if size >= max_header_bytes:
                raise ValueError(f"{path}: header past {max_header_bytes} bytes") from None
            size *= 4


class _ShortRead(Exception):
    pass


def _parse_header(path: str | Path, data: bytes) -> GGUFMeta:
    cur = _Cursor(data)
    if data[:4] != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file")
    cur.pos = 4
    try:
        version = cur.unpack("<I")
        if version not in (2, 3):
            raise ValueError(f"{path}: unsupported GGUF version {version}")
        n_tensors = cur.unpack("<Q")
        n_kv = cur.unpack("<Q")
        fields: list[MetaField] = []
        for _ in range(n_kv):
            key = cur.string()
            vtype = GGUFValueType(cur.unpack("<I"))
            if vtype == GGUFValueType.ARRAY:
                values, sub = cur.array()
                fields.append(MetaField(key, values, vtype, sub))
            else:
                fields.append(MetaField(key, cur.value(vtype), vtype, None))
        tensors: list[TensorInfo] = []
        for _ in range(n_tensors):
            name = cur.string()
            n_dims = cur.unpack("<I")
            dims = tuple(cur.unpack("<Q") for _ in range(n_dims))
            qtype = GGMLQuantizationType(cur.unpack("<I"))
            tensors.append(TensorInfo(name, dims, qtype, cur.unpack("<Q")))
    except struct.error:
        raise _ShortRead from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: truncated or corrupt GGUF header") from exc
    align = next((f.value for f in fields if f.key == gguf.Keys.General.ALIGNMENT), 32)
    data_offset = -(-cur.pos // align) * align
    return GGUFMeta(version, fields, [t.name for t in tensors], tensors, data_offset)


def tensor_array(path: str | Path, meta: GGUFMeta, info: TensorInfo) -> np.ndarray:
    """The tensor's stored bytes, memory-mapped: F32/F16 as such, quantized types as uint8 rows
    (the layout `gguf.quants.dequantize` takes)."""
    start = meta.data_offset + info.offset
    if info.qtype == GGMLQuantizationType.F32:
        return np.memmap(path, np.float32, "r", start, info.shape)
    if info.qtype == GGMLQuantizationType.F16:
        return np.memmap(path, np.float16, "r", start, info.shape)
    block, size = gguf.GGML_QUANT_SIZES[info.qtype]
    return np.memmap(path, np.uint8, "r", start, (*info.shape[:-1], info.shape[-1] // block * size))


def tensor_float32(path: str | Path, meta: GGUFMeta, info: TensorInfo) -> np.ndarray:
    """The tensor dequantized to float32, in numpy order."""
    raw = tensor_array(path, meta, info)
    if info.qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
        return np.asarray(raw, dtype=np.float32)
    return gguf.quants.dequantize(np.asarray(raw), info.qtype).astype(np.float32, copy=False)


def llama_permute(weight: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's row order for q/k: within each head, interleave the two rotary halves.

    The inverse of transformers' `LlamaTensorProcessor._reverse_permute_weights`; linear, so a
    LoRA delta can be permuted on its own and added to an already permuted weight.
    """
    rows = weight.shape[0]
    if rows % (2 * n_head):
        raise GGUFLayoutError(f"cannot permute {weight.shape} into {n_head} heads")
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
            raise GGUFLayoutError(f"no GGUF name for the tensor {name!r}")
        out[name] = mapped + suffix
    return out


def encode_tensor(array: np.ndarray, quant: str) -> tuple[np.ndarray, GGMLQuantizationType | None]:
    """The tensor's bytes in the file: 1-D (norms) stay F32; 2-D weights in the chosen type,
    F16 where a row is not a whole number of Q8_0 blocks."""
    if array.ndim < 2 or quant == "f32":
        return array.astype(np.float32), None
    if quant == "q8_0" and array.shape[-1] % 32 == 0:
        qtype = GGMLQuantizationType.Q8_0
        return gguf.quants.quantize(array.astype(np.float32), qtype), qtype
    return array.astype(np.float16), None


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
