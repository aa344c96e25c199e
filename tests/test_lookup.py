"""Prompt-lookup decoding in the local model: guesses copied from the context are checked in one
batch and kept only where they equal what the model sampled, so the output is plain decoding's."""

from __future__ import annotations

import pytest

from mlagent_tui.core.llm import make_model
from mlagent_tui.core.llm.base import Message
from mlagent_tui.core.llm.local import LocalModel, bundled_model_path
from mlagent_tui.core.llm.lookup import MAX_DRAFT, MIN_DRAFT, LookupDrafter

SCRIPT = """import pandas as pd
from sklearn.linear_model import LogisticRegression

train = pd.read_csv("train.csv")
test = pd.read_csv("test.csv")
features = [c for c in train.columns if c not in ("id", "target")]
model = LogisticRegression(max_iter=1000).fit(train[features], train["target"])
pd.DataFrame({"id": test["id"], "target": model.predict(test[features])}).to_csv(
    "submission.csv", index=False
)
"""
COPY = [Message(role="user", content=f"Repeat this script exactly:\n\n{SCRIPT}\nThe script:\n")]


def test_drafter_proposes_what_followed_and_adapts() -> None:
    d = LookupDrafter([5, 6, 7, 8, 9, 10, 11, 1, 2, 5, 6, 7])
    assert d.propose(100) == [8, 9, 10, 11]  # after the latest earlier "5 6 7", up to size 4
    d.verdict(4, 4)  # all kept: the next guess is longer and continues the same run
    d.extend([8, 9, 10, 11, 1])
    assert d.size == 8 and d.propose(100) == [2, 5, 6, 7, 8, 9, 10, 11]
    assert d.propose(3) == [2, 5, 6]  # never past the caller's limit
    d.verdict(8, 1)  # a miss: shorter guesses, and the run is looked up again
    assert d.size == 4 and d.follow is None
    d.extend([2, 99])
    assert d.propose(100) == []  # "2 99" and "99" never occurred before: no guess
    for _ in range(10):
        d.verdict(1, 0)
    assert d.size == MIN_DRAFT
    for _ in range(10):
        d.verdict(d.size, d.size)
    assert d.size == MAX_DRAFT
    assert LookupDrafter([]).propose(5) == [] and LookupDrafter([1, 2]).propose(0) == []


@pytest.fixture(scope="module")
def pair():
    on = LocalModel(str(bundled_model_path()), n_ctx=2048, n_threads=2)
    off = LocalModel(str(bundled_model_path()), n_ctx=2048, n_threads=2, lookup=False)
    yield on, off
    on.close()
    off.close()


def test_greedy_output_is_plain_decodings_and_guesses_were_used(pair) -> None:  # noqa: ANN001
    on, off = pair
    fast = on.complete(COPY, max_tokens=160, temperature=0.0)
    slow = off.complete(COPY, max_tokens=160, temperature=0.0)
    assert fast.tokens_out == len(fast.logprobs) == len(fast.token_ids)
    # Batched and single-token kernels round differently (by ~0.05 nats on the Q4_1 base), so
    # greedy decoding agrees up to the first near-tie between the two best tokens, no further.
    same = 0
    while same < min(fast.tokens_out, slow.tokens_out) and (
        fast.token_ids[same] == slow.token_ids[same]
    ):
        same += 1
    assert same >= 40, (same, fast.text, slow.text)
    gaps = [abs(a - b) for a, b in zip(fast.logprobs[:same], slow.logprobs[:same], strict=True)]
    assert max(gaps) < 0.2
    if same < min(fast.tokens_out, slow.tokens_out):  # a near-tie: both choices were close
        assert abs(fast.logprobs[same] - slow.logprobs[same]) < 0.3
    assert on.guessed > 0 and off.guessed == 0
    # the cache the guesses left behind serves the next call like a fresh model's would
    hello = [Message(role="user", content="Say hello.")]
    assert (
        on.complete(hello, max_tokens=20, temperature=0.0).token_ids
        == off.complete(hello, max_tokens=20, temperature=0.0).token_ids
    )


def test_sampling_with_guesses_keeps_the_contract(pair) -> None:  # noqa: ANN001
    on, _ = pair
    for budget in (1, 7, 64):
        c = on.complete(COPY, max_tokens=budget, temperature=0.8)
        assert c.tokens_out == len(c.token_ids) == len(c.logprobs) <= budget
        assert on.llm.detokenize(c.token_ids).decode() == c.text
        assert all(lp <= 0.0 for lp in c.logprobs)
    grammar = 'root ::= "Answer: " ("yes" | "no") "."'
    c = on.complete(COPY, grammar=grammar, max_tokens=20, temperature=1.0)
    assert c.text in ("Answer: yes.", "Answer: no.") and c.finish_reason == "stop"


def test_complete_ids_samples_the_plain_distribution_and_names_the_stop(pair) -> None:  # noqa: ANN001
    on, _ = pair
    prompt = on.tokenize(on.format_prompt([Message(role="user", content="Say hi.")]))
    c = on.complete_ids(prompt, max_tokens=40, temperature=0.0)
    assert c.finish_reason == "stop" and c.stop_token_id is not None
    assert on.llm.token_eos() == c.stop_token_id or c.stop_token_id not in c.token_ids
    assert make_model("smollm2").name == "smollm2"
