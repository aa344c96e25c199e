"""Rollouts sampled by llama.cpp from the merged policy, with the Q8_0 copy's log-probs."""

from __future__ import annotations

import pytest
import torch

from trainer.policy import build_batch
from trainer.recipes.sampler import LlamaSampler, wants_llama

MESSAGES = [{"role": "user", "content": "Write one line of python that prints 42."}]


def test_sampler_logprobs_are_the_q8_copys_of_the_policys(policy) -> None:  # noqa: ANN001
    """Each sampled token's log-prob (the end-of-turn token's too) is llama.cpp's Q8_0 copy's,
    close to the policy's own; the trainer bases the GRPO ratio on the policy's, not these."""
    sampler = LlamaSampler(policy, n_ctx=2048)
    try:
        samples = sampler.generate(MESSAGES, version=1, n=4, max_new_tokens=24, temperature=1.0)
    finally:
        sampler.close()
    assert any(s.finish_reason == "stop" for s in samples)
    gaps: list[float] = []
    for s in samples:
        ids, attention, mask = build_batch([(s.prompt_ids, s.completion_ids)], policy.pad_id)
        with torch.no_grad():
            whole, _ = policy.sequence_logprobs(ids, attention)
        expected = whole[mask > 0].tolist()
        assert len(s.logprobs) == len(expected) and all(lp <= 0 for lp in s.logprobs)
        gaps += [abs(a - b) for a, b in zip(s.logprobs, expected, strict=True)]
    assert sum(gaps) / len(gaps) < 0.1 and max(gaps) < 0.6  # Q8_0 rounds unlikely tokens most


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
