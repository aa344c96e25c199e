"""trainer.policy on the CPU with the real bundled SmolLM2-135M (converted once to an HF folder
in the user cache, so only the first run pays ~30 s)."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("peft")

from mlagent_tui.core.agent.calls import call_model  # noqa: E402
from mlagent_tui.core.events import LLMCall  # noqa: E402
from mlagent_tui.core.llm.base import Completion, Message  # noqa: E402
from trainer.policy import (  # noqa: E402
    Policy,
    PolicyChatModel,
    Sample,
    batch_logprobs,
    build_batch,
    choose_backend,
    load_policy,
    resolve_base,
)
from trainer.policy.load import quantization_4bit  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PROMPT = [Message(role="user", content="Name one metric for a binary classifier.")]


def test_resolve_base_and_unknown_model_is_a_clear_error(tmp_path: Path) -> None:
    assert resolve_base("local").gguf.endswith(".gguf")
    for bad in ("HuggingFaceTB/SmolLM2-135M-Instruct", str(tmp_path / "missing.gguf")):
        with pytest.raises(ValueError, match="unknown base model.*nothing is downloaded"):
            load_policy(bad)


def test_unsloth_absent_falls_back_to_hf_with_a_log_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "unsloth", None)  # `import unsloth` now raises ImportError
    with caplog.at_level(logging.WARNING, logger="trainer.policy.load"):
        assert choose_backend("unsloth", "cpu") == "hf"
        assert choose_backend("auto", "cuda") == "hf"
    assert sum("unsloth is not available" in r.message for r in caplog.records) == 2
    assert choose_backend("auto", "cpu") == "hf"  # no GPU: not even tried
    with pytest.raises(ValueError, match="unknown backend"):
        choose_backend("vllm", "cpu")  # type: ignore[arg-type]


def test_4bit_without_a_gpu_or_bitsandbytes_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """NF4 weights are a GPU path (unsloth, or transformers with bitsandbytes); on the CPU it is
    refused in one line instead of silently training a 32-bit model."""
    with pytest.raises(ValueError, match="4-bit loading needs a CUDA GPU"):
        quantization_4bit("cpu", torch.float32)
    monkeypatch.setitem(sys.modules, "bitsandbytes", None)
    with pytest.raises(ValueError, match="4-bit loading needs bitsandbytes"):
        quantization_4bit("cuda", torch.bfloat16)


def test_lora_trainable_parameters_are_few(policy: Policy) -> None:
    trainable = policy.trainable_parameters()
    n_train = sum(p.numel() for p in trainable)
    n_total = sum(p.numel() for p in policy.model.parameters())
    names = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert all("lora_" in n for n in names)
    assert 0 < n_train < 0.05 * n_total
    # r=8 on q,k,v,o,gate,up,down of 30 layers (576 hidden, 192 kv, 1536 ffn)
    per_layer = 8 * (2 * 576 + 2 * (576 + 192) + 2 * 576 + 3 * (576 + 1536))
    assert n_train == 30 * per_layer


def test_chat_prompt_uses_the_gguf_chat_template(policy: Policy) -> None:
    ids = policy.chat_prompt_ids(PROMPT)
    text = policy.tokenizer.decode(ids)
    assert text.endswith("<|im_start|>assistant\n")
    assert "<|im_start|>user\nName one metric" in text


def test_generate_logprobs_match_a_forward_pass(policy: Policy) -> None:
    samples = policy.generate(PROMPT, n=2, max_new_tokens=12, temperature=1.0)
    assert len(samples) == 2
    for s in samples:
        assert isinstance(s, Sample)
        assert len(s.completion_ids) == len(s.logprobs) > 0
        assert s.prompt_ids == policy.chat_prompt_ids(PROMPT)
        assert all(lp <= 0 for lp in s.logprobs)
        if s.finish_reason == "stop":
            assert s.completion_ids[-1] in policy.eos_ids
        else:
            assert len(s.completion_ids) == 12
        body = s.completion_ids[:-1] if s.finish_reason == "stop" else s.completion_ids
        assert s.text == policy.tokenizer.decode(body)
    input_ids, attention, loss_mask = build_batch(samples, policy.pad_id)
    old = batch_logprobs(samples, input_ids.shape[1])
    with torch.no_grad():
        new, entropy = policy.sequence_logprobs(input_ids, attention, with_entropy=True)
    assert new.shape == loss_mask.shape == old.shape
    assert entropy is not None and entropy.shape == new.shape
    assert bool((entropy >= -1e-4).all())
    picked = loss_mask.bool()
    assert int(picked.sum()) == sum(len(s.completion_ids) for s in samples)
    torch.testing.assert_close(new[picked], old[picked], atol=1e-3, rtol=0)


def test_greedy_is_deterministic_and_too_long_prompt_is_refused(policy: Policy) -> None:
    a = policy.generate(PROMPT, n=1, max_new_tokens=6, temperature=0.0)[0]
    b = policy.generate(PROMPT, n=1, max_new_tokens=6, temperature=0.0)[0]
    assert a.completion_ids == b.completion_ids
    with pytest.raises(ValueError, match="context"):
        policy.generate([1] * policy.max_context, max_new_tokens=4)


def test_build_batch_aligns_masks_with_shifted_logprobs() -> None:
    items = [([5, 6], [7, 8, 9], [1, 0, 1]), ([5], [7])]
    input_ids, attention, loss_mask = build_batch(items, pad_id=0)
    assert input_ids.tolist() == [[5, 6, 7, 8, 9], [5, 7, 0, 0, 0]]
    assert attention.tolist() == [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    # column t scores token t+1: row 0 completion at tokens 2..4, the middle one masked out
    assert loss_mask.tolist() == [[0, 1, 0, 1], [1, 0, 0, 0]]
    with pytest.raises(ValueError, match="mask has 1 entries"):
        build_batch([([1], [2, 3], [1])], pad_id=0)
    with pytest.raises(TypeError):
        build_batch(["nonsense"], pad_id=0)


def test_update_reference_save_and_load(tmp_path: Path) -> None:
    fresh = load_policy("local", backend="hf", seed=1)
    samples = fresh.generate(PROMPT, n=2, max_new_tokens=8, temperature=1.0)
    input_ids, attention, loss_mask = build_batch(samples, fresh.pad_id)
    before, _ = fresh.sequence_logprobs(input_ids, attention)
    reference = fresh.reference_logprobs(input_ids, attention)
    assert not reference.requires_grad
    torch.testing.assert_close(reference, before.detach(), atol=1e-5, rtol=0)  # B starts at 0

    optimizer = torch.optim.AdamW(fresh.trainable_parameters(), lr=1e-2)
    loss = -(before * loss_mask).sum() / loss_mask.sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()

    after, _ = fresh.sequence_logprobs(input_ids, attention)
    after = after.detach()
    assert float(((after - before.detach()).abs() * loss_mask).max()) > 1e-3
    torch.testing.assert_close(fresh.reference_logprobs(input_ids, attention), reference)

    saved = fresh.save(tmp_path / "adapter")
    assert (saved / "policy.json").is_file() and (saved / "adapter_config.json").is_file()
    loaded = Policy.load(saved)
    # saved on a bare `local`, rebuilt on `smollm2`: the same base whatever adapter ships later
    assert loaded.config.base_model == "smollm2" and loaded.config.lora_r == 8
    assert fresh.config.base_identity == "smollm2"
    with torch.no_grad():
        again, _ = loaded.sequence_logprobs(input_ids, attention)
    torch.testing.assert_close(again, after, atol=1e-5, rtol=0)
    with pytest.raises(FileNotFoundError, match="policy.json"):
        Policy.load(tmp_path)


def test_policy_chat_model_answers_through_the_core_call_path(policy: Policy) -> None:
    model = PolicyChatModel(policy, name="policy-test")
    assert model.name == "policy-test" and model.supports_grammar is False
    pieces: list[str] = []
    recorded: list[object] = []
    out = call_model(
        model,
        [{"role": "user", "content": "Say hello."}],
        recorded.append,
        purpose="step",
        grammar="root ::= 'x'",  # ignored: this backend has no grammar
        max_tokens=10,
        temperature=0.7,
        on_token=pieces.append,
    )
    assert isinstance(out, Completion)
    assert out.text and "".join(pieces) == out.text
    assert out.token_ids is not None and out.logprobs is not None
    assert len(out.token_ids) == len(out.logprobs) == out.tokens_out <= 10
    assert not set(out.token_ids) & set(policy.eos_ids)
    assert out.tokens_in == len(
        policy.chat_prompt_ids([Message(role="user", content="Say hello.")])
    )
    assert out.finish_reason in ("stop", "length")
    (call,) = recorded
    assert isinstance(call, LLMCall) and call.model == "policy-test"
    assert call.token_ids == out.token_ids


def test_precision_follows_the_cpu_and_bfloat16_stays_close_to_float32(
    policy: Policy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.policy import load as load_mod

    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu avx2 avx512f\n")
    assert not load_mod.cpu_has_bf16(info)
    info.write_text("processor : 0\nflags : fpu avx2 avx512f avx512_bf16\n")
    assert load_mod.cpu_has_bf16(info)
    assert not load_mod.cpu_has_bf16(tmp_path / "missing")
    f32, bf16 = torch.float32, torch.bfloat16
    assert load_mod.pick_autocast("float32", "cpu", f32) is None
    assert load_mod.pick_autocast("bfloat16", "cpu", f32) is bf16
    assert load_mod.pick_autocast("bfloat16", "cuda", f32) is None  # a GPU: the dtype decides
    assert load_mod.pick_autocast("auto", "cpu", bf16) is None  # already 16-bit
    with pytest.raises(ValueError, match="unknown precision"):
        load_mod.pick_autocast("fp8", "cpu", f32)  # type: ignore[arg-type]
    for has in (False, True):
        monkeypatch.setattr(load_mod, "cpu_has_bf16", lambda has=has: has)
        assert load_mod.pick_autocast("auto", "cpu", f32) is (bf16 if has else None)

    samples = policy.generate(PROMPT, n=2, max_new_tokens=12, temperature=1.0)
    input_ids, attention, mask = build_batch(samples, policy.pad_id)
    picked = mask.bool()
    try:
        assert policy.set_precision("float32") == "float32"
        with torch.no_grad():
            exact, _ = policy.sequence_logprobs(input_ids, attention)
        assert policy.set_precision("bfloat16") == "bfloat16 autocast"
        new, _ = policy.sequence_logprobs(input_ids, attention)
        assert new.dtype == torch.float32 and new.requires_grad
        assert_bf16_close(new.detach()[picked], exact[picked])
        # the recipes' cached path (prompt once without gradient, then the answer) too
        from trainer.recipes.common import answer_logprobs, prompt_cache

        first = samples[0]
        cached = answer_logprobs(
            policy, first.prompt_ids, first.completion_ids, prompt_cache(policy, first.prompt_ids)
        )
        assert cached.requires_grad
        assert_bf16_close(cached.detach(), new.detach()[0][picked[0]])
        # sampling under the same autocast logs what the forward pass computes
        again = policy.generate(PROMPT, n=1, max_new_tokens=8, temperature=1.0)[0]
        ids, att, m = build_batch([again], policy.pad_id)
        with torch.no_grad():
            lp, _ = policy.sequence_logprobs(ids, att)
        assert_bf16_close(lp[m.bool()], torch.tensor(again.logprobs))
    finally:
        policy.set_precision("float32")


def assert_bf16_close(got: torch.Tensor, want: torch.Tensor) -> None:
    """bfloat16 keeps 8 bits of mantissa: log-probs agree to a few hundredths on average (a
    sampled token's, through a bfloat16 KV cache, to about 0.05)."""
    gap = (got - want).abs()
    assert float(gap.mean()) < 0.1 and float(gap.max()) < 0.5, gap
