"""The safetensors format read and written with numpy alone.

The format is an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and byte range, then the raw bytes. Reading it here (rather than with the `safetensors`
package, which core does not depend on) lets a damaged file say exactly what is wrong with it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

_DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2")}
_NAMES = {np.dtype("<f4"): "F32", np.dtype("<f2"): "F16"}
MAX_HEADER = 100 << 20


class SafetensorsError(ValueError):
    """The bytes are not a readable safetensors file (the message says why)."""


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file's bytes, as float32 arrays (BF16/F16 widened)."""
    if len(data) < 8:
        raise SafetensorsError(f"truncated: {len(data)} bytes, no header")
    (n,) = struct.unpack_from("<Q", data, 0)
    if n > min(MAX_HEADER, len(data) - 8):
        raise SafetensorsError(f"truncated or not safetensors: header of {n} bytes in {len(data)}")
    try:
        header = json.loads(data[8 : 8 + n])
    except (ValueError, UnicodeDecodeError) as exc:
        raise SafetensorsError(f"header is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise SafetensorsError("header is not a JSON object")
    body = memoryview(data)[8 + n :]
    out: dict[str, np.ndarray] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _DTYPES[entry["dtype"]]
            shape = tuple(int(d) for d in entry["shape"])
            begin, end = (int(x) for x in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise SafetensorsError(f"tensor {name!r}: unsupported or malformed entry") from None
        expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if end > len(body) or begin < 0 or end - begin != expected:
            raise SafetensorsError(
                f"tensor {name!r} {list(shape)}: bytes {begin}..{end} do not fit the file's "
                f"{len(body)} data bytes (truncated?)"
            )
        raw = np.frombuffer(body[begin:end], dtype=dtype).reshape(shape)
        if entry["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        out[name] = raw.astype(np.float32)
    return out


def write_safetensors(
    path: str | Path, tensors: dict[str, np.ndarray], metadata: dict[str, str] | None = None
) -> int:
    """Write float16/float32 arrays in sorted name order; returns the file's size in bytes."""
    header: dict[str, object] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    arrays = []
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        kind = _NAMES.get(array.dtype.newbyteorder("<"))
        if kind is None:
            raise SafetensorsError(f"tensor {name!r}: dtype {array.dtype} is not F16 or F32")
        header[name] = {
            "dtype": kind,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
        arrays.append(array.astype(array.dtype.newbyteorder("<"), copy=False))
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the spec pads the header to 8 bytes
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        for array in arrays:
            fh.write(array.tobytes())
    return 8 + len(raw) + offset
