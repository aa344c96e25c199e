"""Rollouts sampled by llama.cpp from the merged policy, scored by the policy itself."""

from __future__ import annotations

import pytest
import torch

from trainer.policy import build_batch
from trainer.recipes.sampler import LlamaSampler, completion_logprobs, wants_llama

MESSAGES = [{"role": "user", "content": "Write one line of python that prints 42."}]


def test_completion_logprobs_are_the_policys_own(policy) -> None:  # noqa: ANN001
    prompt = policy.chat_prompt_ids(MESSAGES)
    answers = [[28, 1674, 2], [504, 33, 12, 9, 2]]
    got = completion_logprobs(policy, prompt, [*answers, []])
    assert got[-1] == []
    for tokens, lps in zip(answers, got[:2], strict=True):
        ids, attention, mask = build_batch([(prompt, tokens)], policy.pad_id)
        with torch.no_grad():
            whole, _ = policy.sequence_logprobs(ids, attention)
        expected = whole[mask > 0].tolist()
        assert lps == pytest.approx(expected, abs=2e-4)


def test_llama_sampler_samples_scores_and_reexports_per_version(policy) -> None:  # noqa: ANN001
    assert wants_llama("auto", policy) and wants_llama("llama", policy)
    assert not wants_llama("hf", policy)
    sampler = LlamaSampler(policy, n_ctx=2048)
    try:
        samples = sampler.generate(MESSAGES, version=1, n=3, max_new_tokens=24, temperature=1.0)
        assert len(samples) == 3 and sampler.version == 1
        first_export = sampler.export_seconds
        for s in samples:
            assert 0 < len(s.completion_ids) <= 24 and len(s.logprobs) == len(s.completion_ids)
            assert all(lp <= 0 for lp in s.logprobs)
            assert s.prompt_ids == policy.chat_prompt_ids(MESSAGES)
            assert (s.finish_reason == "stop") == (s.completion_ids[-1] in policy.eos_ids)
        assert len({tuple(s.completion_ids) for s in samples}) > 1  # sampled, not greedy
        # Greedy: the same answer as the policy's own greedy decoding (Q8_0 rounds little).
        (greedy,) = sampler.generate(MESSAGES, version=1, n=1, max_new_tokens=12, temperature=0)
        assert sampler.export_seconds == first_export  # same version: no new export
        (hf,) = policy.generate(MESSAGES, n=1, max_new_tokens=12, temperature=0)
        assert greedy.completion_ids[:6] == hf.completion_ids[:6]
        sampler.generate(MESSAGES, version=2, n=1, max_new_tokens=4)
        assert sampler.export_seconds > first_export and sampler.version == 2
        with pytest.raises(ValueError, match="context"):
            sampler.generate(MESSAGES, version=2, n=1, max_new_tokens=4000)
    finally:
        sampler.close()
    assert not sampler.folder.exists()
