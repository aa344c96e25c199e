"""The shipped adapter: `--model local` = SmolLM2 + adapter merged once into a cached GGUF.

The merge is numpy (core has no torch); the trainer's torch merge is the reference it must
match through llama.cpp. Cache behaviour (reuse, stale, cut short, two first uses at once) runs
on a tiny llama GGUF made here, so each merge takes a fraction of a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from mlagent_tui.core.llm import ModelError, ModelSpec, make_model
from mlagent_tui.core.llm.adapter import (
    ADAPTER_ENV,
    CONFIG_FILE,
    WEIGHTS_FILE,
    base_identity,
    load_adapter,
    merged_gguf,
    merged_path,
    package_adapter_dir,
    read_card,
    write_safetensors,
)
from mlagent_tui.core.llm.adapter import merge as merge_module
from mlagent_tui.core.llm.ggufio import llama_permute, read_gguf_meta, tensor_float32
from mlagent_tui.core.llm.local import bundled_model_path

ROOT = Path(__file__).resolve().parents[1]
TINY_HP = {
    "llama.block_count": 2,
    "llama.embedding_length": 64,
    "llama.feed_forward_length": 128,
    "llama.attention.head_count": 4,
    "llama.attention.head_count_kv": 2,
    "llama.rope.dimension_count": 16,
}
TINY_MODULES = {
    "self_attn.q_proj": (64, 64),
    "self_attn.k_proj": (32, 64),
    "self_attn.v_proj": (32, 64),
    "mlp.down_proj": (64, 128),
}
SMOL_MODULES = {"self_attn.q_proj": (576, 576), "self_attn.k_proj": (192, 576)}


def write_adapter(
    folder: Path, modules: dict[str, tuple[int, int]], layers: int, *, r: int = 4, seed: int = 0
) -> Path:
    """A LoRA adapter as peft saves it (names, shapes, config), with random A and B."""
    rng = np.random.default_rng(seed)
    tensors = {}
    for i in range(layers):
        for module, (out_dim, in_dim) in modules.items():
            key = f"base_model.model.model.layers.{i}.{module}"
            tensors[f"{key}.lora_A.weight"] = rng.standard_normal((r, in_dim), np.float32) * 0.1
            tensors[f"{key}.lora_B.weight"] = rng.standard_normal((out_dim, r), np.float32) * 0.1
    folder.mkdir(parents=True, exist_ok=True)
    write_safetensors(folder / WEIGHTS_FILE, tensors)
    targets = sorted({m.split(".")[-1] for m in modules})
    config = {"peft_type": "LORA", "r": r, "lora_alpha": 2 * r, "target_modules": targets}
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    return folder


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer llama GGUF with SmolLM2's tokenizer: Q4_1 weights, a Q8_0 embedding."""
    meta = read_gguf_meta(bundled_model_path())
    path = tmp_path_factory.mktemp("tiny") / "tiny-llama.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    for f in meta.fields:
        if f.key not in ("general.architecture", "general.file_type"):
            writer.add_key_value(f.key, TINY_HP.get(f.key, f.value), f.vtype, sub_type=f.sub_type)
    rng = np.random.default_rng(0)

    def add(name: str, shape: tuple[int, ...], qtype: Q | None = Q.Q4_1) -> None:
        x = rng.standard_normal(shape, np.float32) * 0.1
        if len(shape) == 1 or qtype is None:
            writer.add_tensor(name, x)
        else:
            writer.add_tensor(name, gguf.quants.quantize(x, qtype), raw_dtype=qtype)

    add("token_embd.weight", (len(meta.get("tokenizer.ggml.tokens")), 64), Q.Q8_0)
    for i in range(2):
        add(f"blk.{i}.attn_norm.weight", (64,))
        add(f"blk.{i}.attn_q.weight", (64, 64))
        add(f"blk.{i}.attn_k.weight", (32, 64))
        add(f"blk.{i}.attn_v.weight", (32, 64))
        add(f"blk.{i}.attn_output.weight", (64, 64))
        add(f"blk.{i}.ffn_gate.weight", (128, 64))
        add(f"blk.{i}.ffn_up.weight", (128, 64))
        add(f"blk.{i}.ffn_down.weight", (64, 128))
        add(f"blk.{i}.ffn_norm.weight", (64,))
    add("output_norm.weight", (64,))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _leftovers(cache: Path) -> list[str]:
    """Anything in the merged cache but lock and hash-memo files."""
    folder = cache / "merged"
    return sorted(
        p.name for p in folder.iterdir() if not p.name.endswith((".lock", ".sha256.json"))
    )


# -- model strings -------------------------------------------------------------------------------


def test_model_strings_and_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ModelSpec.parse("smollm2").bare and ModelSpec.parse("smollm2").backend == "local"
    assert not ModelSpec.parse("local").bare
    assert ModelSpec.parse("local:/x/m.gguf").target == "/x/m.gguf"
    monkeypatch.setenv(ADAPTER_ENV, "none")  # as if none shipped: `local` is the bare base
    assert make_model("local", n_ctx=256, n_threads=1).name == "local"
    assert base_identity("local") == "smollm2"
    # with an adapter shipped, `smollm2` still runs the bare file and merges nothing
    monkeypatch.setenv(ADAPTER_ENV, str(write_adapter(tmp_path / "a", SMOL_MODULES, 1)))
    monkeypatch.setenv("MLAGENT_CACHE_DIR", str(tmp_path / "cache"))
    bare = make_model("smollm2", n_ctx=256, n_threads=1)
    assert bare.name == "smollm2" and bare.path == bundled_model_path()
    assert base_identity("local").startswith("local+mlagent-")
    assert not (tmp_path / "cache" / "merged").exists()


# -- the merge itself (tiny base) --------------------------------------------------------------


def test_merge_adds_the_permuted_delta(tiny_base: Path, tmp_path: Path) -> None:
    adapter = load_adapter(write_adapter(tmp_path / "a", TINY_MODULES, 2))
    assert adapter is not None and adapter.config.scale == 2.0
    out = merged_gguf(adapter, tiny_base, cache_dir=tmp_path / "cache", progress=None)
    base_meta, meta = read_gguf_meta(tiny_base), read_gguf_meta(out)
    assert meta.tensor_names == base_meta.tensor_names
    assert meta.get("general.file_type") == int(gguf.LlamaFileType.MOSTLY_Q8_0)
    for key in ("tokenizer.ggml.tokens", "tokenizer.chat_template", "llama.block_count"):
        assert meta.get(key) == base_meta.get(key)
    infos = {t.name: t for t in meta.tensors}
    base_infos = {t.name: t for t in base_meta.tensors}
    pairs = adapter.lora_pairs()
    for module, name, heads in [
        ("model.layers.1.self_attn.q_proj", "blk.1.attn_q.weight", 4),
        ("model.layers.1.self_attn.k_proj", "blk.1.attn_k.weight", 2),
        ("model.layers.0.self_attn.v_proj", "blk.0.attn_v.weight", None),
        ("model.layers.0.mlp.down_proj", "blk.0.ffn_down.weight", None),
    ]:
        a, b = pairs[module]
        delta = 2.0 * b @ a
        delta = llama_permute(delta, heads) if heads else delta
        expected = tensor_float32(tiny_base, base_meta, base_infos[name]) + delta
        got = tensor_float32(out, meta, infos[name])
        assert infos[name].qtype == Q.Q8_0
        assert np.abs(got - expected).max() <= np.abs(expected).max() / 127, name
        assert np.abs(delta).max() > 10 * np.abs(got - expected).max(), name
    # untouched: Q4_1 becomes Q8_0 of the same values; the Q8_0 embedding is copied as it is
    gate = tensor_float32(out, meta, infos["blk.0.ffn_gate.weight"])
    base_gate = tensor_float32(tiny_base, base_meta, base_infos["blk.0.ffn_gate.weight"])
    assert np.abs(gate - base_gate).max() <= np.abs(base_gate).max() / 127
    embd = tensor_float32(out, meta, infos["token_embd.weight"])
    assert np.array_equal(
        embd, tensor_float32(tiny_base, base_meta, base_infos["token_embd.weight"])
    )


def test_cache_is_reused_rebuilt_when_stale_or_cut_short(tiny_base: Path, tmp_path: Path) -> None:
    cache, lines = tmp_path / "cache", []
    folder = write_adapter(tmp_path / "a", TINY_MODULES, 2, seed=1)
    first = merged_gguf(load_adapter(folder), tiny_base, cache_dir=cache, progress=lines.append)
    assert len(lines) == 2 and lines[0].startswith("merging the mlagent adapter into tiny-llama")
    assert "(first use, ~" in lines[0] and lines[1].startswith(f"cached at {first} (")
    stamp = first.stat().st_mtime_ns
    lines.clear()
    again = merged_gguf(load_adapter(folder), tiny_base, cache_dir=cache, progress=lines.append)
    assert again == first and lines == [] and first.stat().st_mtime_ns == stamp  # no re-merge

    write_adapter(folder, TINY_MODULES, 2, seed=2)  # the adapter changed: the cache is stale
    changed = load_adapter(folder)
    assert changed is not None
    second = merged_gguf(changed, tiny_base, cache_dir=cache, progress=lines.append)
    assert second != first and len(lines) == 2 and changed.tag in second.name
    assert _leftovers(cache) == [second.name]  # the stale merge is gone, no temporary left

    with open(second, "r+b") as fh:  # damaged by hand: made again, whole
        fh.truncate(second.stat().st_size // 2)
    lines.clear()
    assert merged_gguf(changed, tiny_base, cache_dir=cache, progress=lines.append) == second
    assert len(lines) == 2 and merge_module._complete(second)


def test_failed_merge_leaves_no_cache(
    tiny_base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = load_adapter(write_adapter(tmp_path / "a", TINY_MODULES, 2))
    assert adapter is not None
    real, calls = merge_module.encode_tensor, []

    def dies_midway(array: np.ndarray, quant: str):  # noqa: ANN202
        calls.append(1)
        if len(calls) > 3:
            raise OSError("disk full")
        return real(array, quant)

    monkeypatch.setattr(merge_module, "encode_tensor", dies_midway)
    with pytest.raises(OSError, match="disk full"):
        merged_gguf(adapter, tiny_base, cache_dir=tmp_path / "cache", progress=None)
    assert _leftovers(tmp_path / "cache") == []
    monkeypatch.setattr(merge_module, "encode_tensor", real)
    assert merge_module._complete(
        merged_gguf(adapter, tiny_base, cache_dir=tmp_path / "cache", progress=None)
    )


def _lock_waiters(lock: Path) -> int:
    inode = f":{os.stat(lock).st_ino}"
    lines = Path("/proc/locks").read_text().splitlines()
    return sum(1 for line in lines if "->" in line and any(t.endswith(inode) for t in line.split()))


def test_two_first_uses_at_once_merge_once(tiny_base: Path, tmp_path: Path) -> None:
    import fcntl

    folder, cache = write_adapter(tmp_path / "a", TINY_MODULES, 2), tmp_path / "cache"
    adapter = load_adapter(folder)
    assert adapter is not None
    final = merged_path(tiny_base, adapter, cache)
    lock = final.with_name(f".{final.name}.lock")
    code = (
        "import sys; from pathlib import Path\n"
        "from mlagent_tui.core.llm.adapter import load_adapter, merged_gguf\n"
        "a = load_adapter(Path(sys.argv[1])); print('ready', flush=True)\n"
        "print(merged_gguf(a, Path(sys.argv[2]), cache_dir=Path(sys.argv[3])))\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = [sys.executable, "-c", code, str(folder), str(tiny_base), str(cache)]
    with open(lock, "a+b") as held:  # hold the lock until both wait on it
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        procs = [
            subprocess.Popen(
                args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            )
            for _ in range(2)
        ]
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while _lock_waiters(lock) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        fcntl.flock(held.fileno(), fcntl.LOCK_UN)
    results = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], results
    assert {out.strip() for out, _ in results} == {str(final)}
    assert sum(err.count("merging the mlagent adapter") for _, err in results) == 1
    assert merge_module._complete(final) and _leftovers(cache) == [final.name]


# -- bad input -----------------------------------------------------------------------------------


def _truncate(folder: Path) -> None:
    data = (folder / WEIGHTS_FILE).read_bytes()
    (folder / WEIGHTS_FILE).write_bytes(data[: len(data) // 2])


def _wrong_shapes(folder: Path) -> None:
    write_adapter(folder, {"self_attn.q_proj": (576, 100)}, 1)


def _bad_json(folder: Path) -> None:
    (folder / CONFIG_FILE).write_text('{"r": 4, "lora_alpha": ')


def _wrong_rank(folder: Path) -> None:
    (folder / CONFIG_FILE).write_text(json.dumps({"r": 8, "lora_alpha": 16}))


def _garbage(folder: Path) -> None:
    (folder / WEIGHTS_FILE).write_bytes(b"\xff" * 64)


def _too_big(folder: Path) -> None:
    with open(folder / WEIGHTS_FILE, "ab") as fh:
        fh.truncate(10_000_001)


@pytest.mark.parametrize(
    ("damage", "file", "why"),
    [
        (_truncate, WEIGHTS_FILE, "truncated"),
        (_wrong_shapes, WEIGHTS_FILE, "do not fit the base's blk.0.attn_q.weight"),
        (_bad_json, CONFIG_FILE, "not valid JSON"),
        (_wrong_rank, WEIGHTS_FILE, "rank r=8"),
        (_garbage, WEIGHTS_FILE, "not safetensors"),
        (_too_big, WEIGHTS_FILE, "more than the 10,000,000"),
    ],
)
def test_a_damaged_adapter_is_one_clear_line(
    damage, file: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    folder = write_adapter(tmp_path / "adapter", SMOL_MODULES, 1)
    damage(folder)
    monkeypatch.setenv(ADAPTER_ENV, str(folder))
    monkeypatch.setenv("MLAGENT_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ModelError) as caught:
        make_model("local", n_ctx=256, n_threads=1)
    message = str(caught.value)
    assert "\n" not in message and str(folder / file) in message and why in message, message
    assert "`--model smollm2` runs the bare base" in message
    assert "merging" not in capfd.readouterr().err  # refused before any work starts
    merged = tmp_path / "cache" / "merged"
    assert not merged.exists() or _leftovers(tmp_path / "cache") == []


def test_an_unwritable_cache_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ADAPTER_ENV, str(write_adapter(tmp_path / "a", SMOL_MODULES, 1)))
    (tmp_path / "cache").write_text("a file where the cache folder should be")
    monkeypatch.setenv("MLAGENT_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ModelError, match="could not cache the merged local model.*smollm2"):
        make_model("local", n_ctx=256, n_threads=1)


def test_shipped_adapter_when_present_is_complete() -> None:
    folder = package_adapter_dir()
    if not (folder / WEIGHTS_FILE).is_file():
        pytest.skip("no adapter shipped yet: `local` is the bare base")
    adapter = load_adapter(folder)
    assert adapter is not None
    merge_module.lora_plan(read_gguf_meta(bundled_model_path()), adapter)
    card = read_card(folder)
    assert card.training_data.tasks and (folder / "MODEL_CARD.md").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"adapters/*/*"' in pyproject  # the folder ships with the package
