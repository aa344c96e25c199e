"""The shipped adapter against the trainer: numpy merge == torch merge through llama.cpp, the
trainer's base-model strings, and `ship_adapter` (files, fp16, size refusal, atomic swap)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from mlagent_tui.core.llm import make_model, quiet_stderr  # noqa: E402
from mlagent_tui.core.llm.adapter import (  # noqa: E402
    ADAPTER_ENV,
    ADAPTER_NAME,
    WEIGHTS_FILE,
    load_adapter,
    merged_gguf,
    write_safetensors,
)
from mlagent_tui.core.llm.ggufio import read_gguf_meta, tensor_float32  # noqa: E402
from mlagent_tui.core.llm.local import bundled_model_path  # noqa: E402
from trainer.ship import ShipError, ship_adapter  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CARD: dict[str, Any] = {
    "training_data": {"tasks": {"breast-cancer": [0, 1], "diabetes": [0]}, "runs": ["run-test"]},
    "recipe": {"name": "sft", "lora_r": 8, "updates": 40},
    "seeds": {"train": [0, 1], "held_out": [100, 101]},
    "time": {"demos_s": 300, "sft_s": 1200},
    "held_out": {"seeds": {"valid_rate": 0.7}, "tasks": {"valid_rate": 0.4}},
    "command": "make adapter",
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """A policy on the bare base with random LoRA B (peft starts B at zero), saved as a run's
    checkpoint folder."""
    from trainer.policy import load_policy

    policy = load_policy("smollm2", backend="hf", seed=0)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=gen) * 0.05)
    folder = policy.save(tmp_path_factory.mktemp("run") / "update-0001")
    (folder / "state.json").write_text(json.dumps({"run_id": "run-test", "update": 1}))
    return policy, folder


def _logits(path: Path, ids: list[int]) -> np.ndarray:
    import llama_cpp

    with quiet_stderr():
        llm = llama_cpp.Llama(
            model_path=str(path), n_ctx=128, logits_all=True, n_threads=1, verbose=False
        )
    try:
        llm.eval(ids)
        return np.asarray(llm.scores[: len(ids)], dtype=np.float32)
    finally:
        llm.close()


def test_numpy_merge_matches_the_trainers_torch_merge(
    trained: tuple[Any, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    from trainer.export import export_gguf
    from trainer.policy import resolve_base

    policy, folder = trained
    adapter = load_adapter(folder)
    assert adapter is not None
    ours = merged_gguf(adapter, cache_dir=tmp_path / "cache", progress=None)
    reference = export_gguf(policy, tmp_path / "torch.gguf", quant="q8_0", verify=False)
    # the same weights: a handful of the 134M values a Q8_0 rounding step apart (float64 vs
    # float32 B @ A landing on either side of a step), nothing else
    mine, theirs = read_gguf_meta(ours), read_gguf_meta(reference.out)
    assert mine.tensor_names == theirs.tensor_names
    differ = 0
    for x_info, y_info in zip(mine.tensors, theirs.tensors, strict=True):
        assert x_info.qtype == y_info.qtype, x_info.name
        x, y = tensor_float32(ours, mine, x_info), tensor_float32(reference.out, theirs, y_info)
        step = np.abs(y).max() / 127 if y.ndim == 2 else 0.0
        assert np.abs(x - y).max() <= step * 1.01, x_info.name
        differ += int((x != y).sum())
    assert differ < 100, differ
    # llama.cpp on a few logits: the two files apart by far less than the adapter moved them
    # (one Q8_0 step can move a max logit by ~1 here: SmolLM2 has huge activations, so means)
    ids = policy.chat_prompt_ids([{"role": "user", "content": "Train a model on train.csv."}])
    a, b = _logits(ours, ids), _logits(Path(reference.out), ids)
    bare = _logits(bundled_model_path(), ids)
    gap, effect = float(np.abs(a - b).mean()), float(np.abs(a - bare).mean())
    assert effect > 0.3 and gap < effect / 3, (gap, effect)
    assert (a.argmax(-1) == b.argmax(-1)).mean() >= 0.8

    # `local` now runs the cached merge under the adapter's name; nothing merges again
    monkeypatch.setenv(ADAPTER_ENV, str(folder))
    monkeypatch.setenv("MLAGENT_CACHE_DIR", str(tmp_path / "cache"))
    capfd.readouterr()
    model = make_model("local", n_ctx=256, n_threads=1)
    assert model.name == adapter.name and model.path == ours
    assert "merging" not in capfd.readouterr().err
    assert resolve_base("local").gguf == str(ours)
    assert resolve_base("smollm2").gguf == str(bundled_model_path())


def test_ship_adapter_files(trained: tuple[Any, Path], tmp_path: Path) -> None:
    _, folder = trained
    dest = tmp_path / "pkg" / ADAPTER_NAME
    ship_adapter(folder, CARD, dest)
    raw = (dest / WEIGHTS_FILE).read_bytes()
    header = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])
    assert {e["dtype"] for k, e in header.items() if k != "__metadata__"} == {"F16"}
    card = json.loads((dest / "card.json").read_text())
    assert card["training_data"] == CARD["training_data"] and card["command"] == "make adapter"
    assert card["adapter"]["bytes"] == len(raw) < 10_000_000
    assert card["source"] == {"run_id": "run-test", "update": 1}
    shipped = load_adapter(dest)
    assert shipped is not None and card["adapter"]["model_name"] == shipped.name
    config = json.loads((dest / "adapter_config.json").read_text())
    assert str(Path.home()) not in json.dumps(config)  # no path of the trainer's disk ships
    source = load_adapter(folder)
    assert source is not None
    for module, (a, b) in source.lora_pairs().items():
        a16, b16 = shipped.lora_pairs()[module]
        assert np.allclose(a, a16, rtol=1e-3, atol=1e-6) and np.allclose(b, b16, atol=1e-4)
    text = (dest / "MODEL_CARD.md").read_text()
    for expected in ("breast-cancer | 0, 1", "make adapter", "valid_rate", shipped.name, "sft"):
        assert expected in text

    changed = {**CARD, "command": "make adapter SEED=2"}  # shipping again replaces it whole
    ship_adapter(folder, changed, dest)
    assert json.loads((dest / "card.json").read_text())["command"] == "make adapter SEED=2"
    assert sorted(p.name for p in dest.parent.iterdir()) == [ADAPTER_NAME]


def _checkpoint(folder: Path, r: int, layers: int, base: str = "smollm2") -> Path:
    """A checkpoint written with numpy: gate/up/down LoRA of rank r on `layers` layers."""
    rng = np.random.default_rng(0)
    shapes = {"gate_proj": (1536, 576), "up_proj": (1536, 576), "down_proj": (576, 1536)}
    tensors = {}
    for i in range(layers):
        for module, (out_dim, in_dim) in shapes.items():
            key = f"base_model.model.model.layers.{i}.mlp.{module}"
            tensors[f"{key}.lora_A.weight"] = rng.standard_normal((r, in_dim), np.float32) * 0.01
            tensors[f"{key}.lora_B.weight"] = rng.standard_normal((out_dim, r), np.float32) * 0.01
    folder.mkdir(parents=True)
    write_safetensors(folder / WEIGHTS_FILE, tensors)
    config = {"peft_type": "LORA", "r": r, "lora_alpha": 2 * r, "target_modules": list(shapes)}
    (folder / "adapter_config.json").write_text(json.dumps(config))
    (folder / "policy.json").write_text(json.dumps({"base_model": base}))
    return folder


def test_ship_adapter_refuses_and_leaves_the_old_one(tmp_path: Path) -> None:
    dest = tmp_path / "pkg" / ADAPTER_NAME
    run = tmp_path / "run"  # a run folder: its latest checkpoint ships
    _checkpoint(run / "checkpoints" / "update-0002", r=2, layers=2)
    (run / "latest").write_text("update-0002\n")
    assert ship_adapter(run, CARD, dest) == dest
    before = (dest / WEIGHTS_FILE).read_bytes()

    big = _checkpoint(tmp_path / "big", r=32, layers=30)  # 12.2 MB in float16
    with pytest.raises(ShipError, match=r"12\.2 MB in float16, more than the 10 MB.*r=32"):
        ship_adapter(big, CARD, dest)
    other = _checkpoint(tmp_path / "other", r=2, layers=1, base="/models/other.gguf")
    with pytest.raises(ShipError, match="trained on '/models/other.gguf'.*--base-model smollm2"):
        ship_adapter(other, CARD, dest)
    with pytest.raises(ShipError, match="training_data"):
        ship_adapter(run, {"recipe": "sft"}, dest)
    with pytest.raises(ShipError, match="holds no adapter"):
        ship_adapter(tmp_path, CARD, dest)
    assert (dest / WEIGHTS_FILE).read_bytes() == before
    assert sorted(p.name for p in dest.parent.iterdir()) == [ADAPTER_NAME]


def test_a_saved_policy_keeps_the_base_it_was_trained_on(
    trained: tuple[Any, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.policy import PolicyConfig
    from trainer.policy.model import _saved_base

    _, folder = trained
    adapter = load_adapter(folder)
    assert adapter is not None
    old = PolicyConfig(base_model="local")  # saved before adapters shipped: the bare base
    assert _saved_base(old, tmp_path) == "smollm2"
    assert _saved_base(PolicyConfig(base_model="local", base_identity="smollm2"), tmp_path) == (
        "smollm2"
    )
    assert _saved_base(PolicyConfig(base_model="/m/x.gguf"), tmp_path) == "/m/x.gguf"
    on_adapter = PolicyConfig(base_model="local", base_identity=adapter.name)
    expected = re.escape(f"trained on {adapter.name}, but `local` is now smollm2")
    with pytest.raises(ValueError, match=expected):
        _saved_base(on_adapter, tmp_path)
    monkeypatch.setenv(ADAPTER_ENV, str(folder))
    assert _saved_base(on_adapter, tmp_path) == "local"


def test_a_shipped_card_names_no_folder_of_the_training_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "build" / "home" / "mlagent.db"  # what `mlagent-train demos --json` reports
    card = {
        **CARD,
        "recipe": {"demos": {"solve": {"db": str(db), "sessions": 18}}, "lora_r": 2},
        "command": f"learning_curve.py --work {tmp_path / 'build'} --ship",
    }
    dest = tmp_path / "pkg" / ADAPTER_NAME
    ship_adapter(_checkpoint(tmp_path / "ckpt", r=2, layers=1), card, dest)
    shipped = json.loads((dest / "card.json").read_text())
    assert shipped["recipe"]["demos"]["solve"] == {"db": "mlagent.db", "sessions": 18}
    assert shipped["command"] == "learning_curve.py --work build --ship"
    for name in ("card.json", "MODEL_CARD.md"):
        assert str(tmp_path) not in (dest / name).read_text()
