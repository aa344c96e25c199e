"""trainer.export: the merged policy as GGUF, read back by llama.cpp and by `mlagent run`."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("peft")
gguf = pytest.importorskip("gguf")

from mlagent_tui.core.llm.local import bundled_model_path  # noqa: E402
from trainer.export import (  # noqa: E402
    DEFAULT_PROBE,
    ExportError,
    export_gguf,
    gguf_architecture,
    llama_permute,
    merged_model,
    read_gguf_meta,
)
from trainer.policy import Policy, build_batch, load_policy  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).resolve().parents[1]


def test_meta_reader_matches_gguf_reader() -> None:
    path = bundled_model_path()
    meta = read_gguf_meta(path)
    reader = gguf.GGUFReader(str(path))
    theirs = {k: f for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert [f.key for f in meta.fields] == list(theirs)
    for field in meta.fields:
        other = theirs[field.key]
        assert field.vtype == other.types[0], field.key
        expected = other.contents()
        if isinstance(expected, float):
            assert math.isclose(field.value, expected, rel_tol=1e-7), field.key
        else:
            assert field.value == expected, field.key
    assert meta.tensor_names == [t.name for t in reader.tensors]
    with pytest.raises(ValueError, match="not a GGUF"):
        read_gguf_meta(Path(__file__))


def test_permutation_is_the_inverse_of_transformers_unpermute() -> None:
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    undo = LlamaTensorProcessor(config={"num_attention_heads": 9, "num_key_value_heads": 3})
    rng = np.random.default_rng(0)
    q = rng.standard_normal((576, 576)).astype(np.float32)
    k = rng.standard_normal((192, 576)).astype(np.float32)
    assert np.array_equal(undo.process(llama_permute(q, 9), "blk.0.attn_q.weight").weights, q)
    assert np.array_equal(undo.process(llama_permute(k, 3), "blk.0.attn_k.weight").weights, k)
    assert not np.array_equal(llama_permute(q, 9), q)


def test_non_llama_architecture_is_refused(policy: Policy, tmp_path: Path) -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    with pytest.raises(ExportError, match="'gpt2'"):
        gguf_architecture(type("Cfg", (), {"model_type": "gpt2"})())
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    folder = tmp_path / "tiny-qwen2"
    Qwen2ForCausalLM(config).save_pretrained(folder)
    policy.tokenizer.save_pretrained(folder)
    tiny = load_policy(str(folder), backend="hf")
    with pytest.raises(ExportError, match="architecture is 'qwen2'"):
        export_gguf(tiny, tmp_path / "out.gguf", base_gguf=bundled_model_path())
    assert not (tmp_path / "out.gguf").exists()


def test_unknown_quant_and_missing_template_are_clear_errors(
    policy: Policy, tmp_path: Path
) -> None:
    with pytest.raises(ExportError, match="unknown quantization 'q9'"):
        export_gguf(policy, tmp_path / "x.gguf", quant="q9")
    with pytest.raises(ExportError, match="template"):
        export_gguf(policy, tmp_path / "x.gguf", base_gguf=tmp_path / "none.gguf")


def test_export_untouched_policy_f16_and_q8_0(policy: Policy, tmp_path: Path) -> None:
    f16 = export_gguf(policy, tmp_path / "f16.gguf", quant="f16", n_threads=1)
    assert f16.greedy_match is True and f16.greedy_agree and f16.greedy_agree > 0
    assert f16.max_logit_diff is not None and f16.max_logit_diff < 0.5
    assert f16.last_logit_diff is not None and f16.last_logit_diff < 0.2
    assert f16.tensor_count == 272  # SmolLM2 ties its output to token_embd: no output.weight

    q8 = export_gguf(policy, tmp_path / "q8.gguf", n_threads=1)
    assert q8.quant == "q8_0" and q8.size_bytes < 0.6 * f16.size_bytes
    # llama.cpp also quantizes activations for Q8_0 matmuls: small but not zero.
    assert q8.max_logit_diff is not None and 0 < q8.max_logit_diff < 5.0
    assert q8.greedy_agree is not None

    base, out = read_gguf_meta(bundled_model_path()), read_gguf_meta(q8.out)
    assert out.tensor_names == base.tensor_names and "output.weight" not in out.tensor_names
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.chat_template"):
        assert out.get(key) == base.get(key)
    assert out.get("general.file_type") == int(gguf.LlamaFileType.MOSTLY_Q8_0)
    assert read_gguf_meta(f16.out).get("general.file_type") == int(gguf.LlamaFileType.MOSTLY_F16)


def test_export_after_a_lora_update_carries_the_update(tmp_path: Path) -> None:
    trained = load_policy("local", backend="hf", seed=3)
    samples = trained.generate([{"role": "user", "content": DEFAULT_PROBE}], n=2, max_new_tokens=8)
    input_ids, attention, mask = build_batch(samples, trained.pad_id)
    optimizer = torch.optim.SGD(trained.trainable_parameters(), lr=0.5)
    for _ in range(2):
        logprobs, _ = trained.sequence_logprobs(input_ids, attention)
        (-(logprobs * mask).sum() / mask.sum()).backward()
        optimizer.step()
        optimizer.zero_grad()
    adapter = trained.save(tmp_path / "adapter")

    report = export_gguf(adapter, tmp_path / "trained.gguf", quant="f16", n_threads=1)
    assert report.greedy_match is True
    assert report.max_logit_diff is not None and report.max_logit_diff < 0.5

    # The merge mattered: the merged model is far from the base it started from.
    ids = torch.tensor([trained.chat_prompt_ids([{"role": "user", "content": DEFAULT_PROBE}])])
    with torch.no_grad():
        merged = merged_model(trained)(input_ids=ids).logits
        with trained.model.disable_adapter():
            base = trained.model(input_ids=ids).logits
    assert float((merged - base).abs().max()) > 1.0


def test_mlagent_run_loads_an_export_quantized_by_llama_cpp(policy: Policy, tmp_path: Path) -> None:
    out = export_gguf(policy, tmp_path / "run.gguf", quant="q4_k_m", verify=False).out
    assert read_gguf_meta(out).get("general.file_type") == int(gguf.LlamaFileType.MOSTLY_Q4_K_M)
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "mlagent"),
            "run",
            "--task",
            "breast-cancer",
            "--model",
            f"local:{out}",
            "--max-steps",
            "1",
            "--home",
            str(tmp_path / "home"),
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # 0 or 3: the one-step budget ended with or without a valid submission; the model ran
    assert result.returncode in (0, 3), result.stderr[-2000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["steps"] == 1 and summary["tokens_out"] > 0
