"""Merging the shipped LoRA adapter into the bundled GGUF once, into a cache, with numpy.

llama.cpp runs a merged GGUF at full speed (a runtime LoRA costs every token), and merging with
numpy keeps torch out of `mlagent`: the base's tensors are dequantized (Q4_1), the delta
scale * B @ A is added (permuted like llama.cpp's q/k rows), and every 2-D tensor is written
as Q8_0 (F16 where a row is not whole Q8_0 blocks) beside a copy of all the base's key/values.
The file is keyed by the base's and the adapter's hashes (a changed adapter is a new file), made
in a temporary file renamed into place, under a file lock so two first uses make it once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import gguf
import numpy as np
from gguf import GGMLQuantizationType, LlamaFileType

from ...atomic import write_atomic
from ..ggufio import (
    GGUFLayoutError,
    GGUFMeta,
    copy_metadata,
    encode_tensor,
    hf_to_gguf_names,
    llama_permute,
    read_gguf_meta,
    tensor_array,
    tensor_float32,
)
from .files import WEIGHTS_FILE, Adapter, AdapterError

CACHE_ENV = "MLAGENT_CACHE_DIR"
MERGED_DIR = "merged"
SECONDS_PER_MB = 0.03  # measured on the shared 2-core box: 2-3 s for the 98 MB SmolLM2-135M

Progress = Callable[[str], None]


def cache_root() -> Path:
    """$MLAGENT_CACHE_DIR, else $XDG_CACHE_HOME/mlagent, else ~/.cache/mlagent."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "mlagent"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def file_digest(path: Path, memo_dir: Path) -> str:
    """sha256 of a (large) file, remembered beside the cache by its size and mtime: the bundled
    base is 98 MB, and hashing it on every start would cost half a second."""
    stat = path.stat()
    stamp = {"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    memo = memo_dir / f".{path.name}.sha256.json"
    with contextlib.suppress(OSError, ValueError):
        saved = json.loads(memo.read_text())
        if {k: saved.get(k) for k in stamp} == stamp and isinstance(saved.get("sha256"), str):
            return saved["sha256"]
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    stamp["sha256"] = digest.hexdigest()
    with contextlib.suppress(OSError):
        write_atomic(memo, json.dumps(stamp))
    return str(stamp["sha256"])


def merged_path(base: Path, adapter: Adapter, cache_dir: Path | None = None) -> Path:
    """Where the merge of `adapter` into `base` is cached (named by both hashes)."""
    folder = (cache_dir or cache_root()) / MERGED_DIR
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(f"{file_digest(base, folder)}|{adapter.digest}".encode()).hexdigest()
    return folder / f"{base.stem}+{adapter.tag}-{key[:12]}.gguf"


class LoraPlan(NamedTuple):
    """One base tensor's update: scale * B @ A, rows permuted into `heads` heads (q/k) or not."""

    a: np.ndarray  # [r, in]
    b: np.ndarray  # [out, r]
    heads: int | None

    def delta(self, scale: float) -> np.ndarray:
        delta = (scale * (self.b.astype(np.float64) @ self.a.astype(np.float64))).astype(np.float32)
        return delta if self.heads is None else llama_permute(delta, self.heads)


def lora_plan(meta: GGUFMeta, adapter: Adapter) -> dict[str, LoraPlan]:
    """GGUF tensor name -> its LoRA pair, each checked against the base tensor's shape, so a
    wrong adapter fails before anything is written (the deltas are made one at a time later:
    all at once they would be 400 MB for SmolLM2-135M)."""
    path = adapter.folder / WEIGHTS_FILE
    arch = meta.get(gguf.Keys.General.ARCHITECTURE)
    if arch != "llama":
        raise AdapterError(path, f"the base is a {arch!r} model; the merge knows llama only")
    n_layers = int(meta.get(f"{arch}.block_count"))
    n_head = int(meta.get(f"{arch}.attention.head_count"))
    try:
        n_kv = int(meta.get(f"{arch}.attention.head_count_kv"))
    except KeyError:
        n_kv = n_head
    pairs = adapter.lora_pairs()
    try:
        names = hf_to_gguf_names([f"{m}.weight" for m in pairs], arch, n_layers)
    except GGUFLayoutError as exc:
        raise AdapterError(path, f"a module the base does not have: {exc}") from None
    infos = {t.name: t for t in meta.tensors}
    plan: dict[str, LoraPlan] = {}
    for module, (a, b) in pairs.items():
        name = names[f"{module}.weight"]
        info = infos.get(name)
        if info is None or len(info.shape) != 2:
            raise AdapterError(path, f"{module}: the base has no 2-D tensor {name}")
        out_dim, in_dim = info.shape
        if a.shape[1] != in_dim or b.shape[0] != out_dim:
            raise AdapterError(
                path,
                f"{module}: lora_A {list(a.shape)} and lora_B {list(b.shape)} do not fit the "
                f"base's {name} [{out_dim}, {in_dim}] (an adapter for another model?)",
            )
        heads = None
        if name.endswith("attn_q.weight"):
            heads = n_head
        elif name.endswith("attn_k.weight"):
            heads = n_kv
        plan[name] = LoraPlan(a, b, heads)
    return plan


def merge_adapter(
    base: Path, adapter: Adapter, out: Path, plan: dict[str, LoraPlan] | None = None
) -> int:
    """Write base + adapter to `out` as a Q8_0 GGUF; returns the number of tensors written.

    Tensors the adapter leaves alone and that are already Q8_0 or F32 are copied byte for byte
    (re-quantizing Q8_0 as Q8_0 would give the same bytes, slower)."""
    meta = read_gguf_meta(base)
    plan = lora_plan(meta, adapter) if plan is None else plan
    scale = adapter.config.scale
    writer = gguf.GGUFWriter(str(out), meta.get(gguf.Keys.General.ARCHITECTURE))
    copy_metadata(meta, writer, LlamaFileType.MOSTLY_Q8_0)
    keep = (GGMLQuantizationType.Q8_0, GGMLQuantizationType.F32)
    for info in meta.tensors:
        if info.name not in plan and info.qtype in keep:
            raw = np.asarray(tensor_array(base, meta, info))
            writer.add_tensor(info.name, raw, raw_dtype=info.qtype)
            continue
        weight = tensor_float32(base, meta, info)
        if info.name in plan:
            weight = weight + plan[info.name].delta(scale)
        data, qtype = encode_tensor(np.ascontiguousarray(weight), "q8_0")
        writer.add_tensor(info.name, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return len(meta.tensors)


def _complete(path: Path) -> bool:
    """The file's header reads and its size covers every tensor (not a cut-off copy)."""
    try:
        meta = read_gguf_meta(path)
    except (OSError, ValueError):
        return False
    end = max((t.offset + t.nbytes for t in meta.tensors), default=0)
    return path.stat().st_size >= meta.data_offset + end


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def merged_gguf(
    adapter: Adapter,
    base: Path | None = None,
    *,
    cache_dir: Path | None = None,
    progress: Progress | None = _stderr,
) -> Path:
    """The cached merge of `adapter` into `base` (default: the bundled SmolLM2), made on first
    use. A cached file cut short (by hand: ours are renamed into place whole) is made again;
    older merges of the same base (a previous adapter) are removed once the new one is in place.
    """
    from ..local import bundled_model_path

    base = Path(base) if base is not None else bundled_model_path()
    final = merged_path(base, adapter, cache_dir)
    if _complete(final):
        return final
    say = progress or (lambda line: None)
    plan = lora_plan(read_gguf_meta(base), adapter)  # a damaged adapter fails here, silently
    with _locked(final.with_name(f".{final.name}.lock")):
        if _complete(final):  # another process made it while this one waited
            return final
        label = base.stem.split(".")[0]
        guess = max(1, round(base.stat().st_size / 1e6 * SECONDS_PER_MB))
        say(f"merging the mlagent adapter into {label} (first use, ~{guess} s) ...")
        start = time.perf_counter()
        fd, tmp_name = tempfile.mkstemp(prefix=".merge-", suffix=".tmp", dir=final.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            merge_adapter(base, adapter, tmp, plan)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            tmp.replace(final)
        finally:
            tmp.unlink(missing_ok=True)
        for old in final.parent.glob(f"{base.stem}+mlagent-*.gguf"):
            if old != final:
                old.unlink(missing_ok=True)
                old.with_name(f".{old.name}.lock").unlink(missing_ok=True)
        say(f"cached at {final} ({time.perf_counter() - start:.0f} s)")
    return final
