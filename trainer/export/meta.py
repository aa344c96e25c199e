"""A lean reader of a GGUF file's key/values and tensor names (no tensor data).

gguf-py's `GGUFReader` builds numpy views for every element of every array, which for a 49k-token
vocabulary and its 49k merges takes 3-10 s on two shared cores, most of an export's budget. The
header format is small (see the GGUF spec: magic, version, counts, then typed key/values, then
tensor infos), so it is read here with `struct` in well under a second. tests/test_export.py
checks the result against `GGUFReader` field by field.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, NamedTuple

from gguf import GGUFValueType

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


class MetaField(NamedTuple):
    key: str
    value: Any
    vtype: GGUFValueType
    sub_type: GGUFValueType | None


class GGUFMeta(NamedTuple):
    version: int
    fields: list[MetaField]
    tensor_names: list[str]

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
    """The key/values (in file order, with their types) and the tensor names of a GGUF file."""
    with open(path, "rb") as fh:
        data = fh.read(max_header_bytes)
    cur = _Cursor(data)
    if data[:4] != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file")
    cur.pos = 4
    version = cur.unpack("<I")
    if version not in (2, 3):
        raise ValueError(f"{path}: unsupported GGUF version {version}")
    n_tensors = cur.unpack("<Q")
    n_kv = cur.unpack("<Q")
    fields: list[MetaField] = []
    try:
        for _ in range(n_kv):
            key = cur.string()
            vtype = GGUFValueType(cur.unpack("<I"))
            if vtype == GGUFValueType.ARRAY:
                values, sub = cur.array()
                fields.append(MetaField(key, values, vtype, sub))
            else:
                fields.append(MetaField(key, cur.value(vtype), vtype, None))
        names: list[str] = []
        for _ in range(n_tensors):
            names.append(cur.string())
            n_dims = cur.unpack("<I")
            cur.pos += 8 * n_dims + 4 + 8  # dims, ggml type, data offset
    except struct.error as exc:
        raise ValueError(f"{path}: truncated or corrupt GGUF header") from exc
    return GGUFMeta(version=version, fields=fields, tensor_names=names)
