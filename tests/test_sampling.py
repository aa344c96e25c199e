"""The local model's prose-only repetition penalty and n-gram guard: which text counts as prose,
which sampler chain each kind of call gets (llama.cpp's sampler API recorded by a stand-in), and
which tokens the guard bans."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mlagent_tui.core.llm import ModelError
from mlagent_tui.core.llm.sampling import (
    FREQUENCY_PENALTY,
    PENALTY_LAST_N,
    REPEAT_PENALTY,
    Chains,
    NgramGuard,
    ProseTracker,
    WordKeys,
)


def _feed(pieces: list[str]) -> list[bool]:
    tracker = ProseTracker()
    seen = []
    for piece in pieces:
        tracker.feed(piece)
        seen.append(tracker.prose)
    return seen


def test_prose_ends_at_a_code_fence_or_the_action_input() -> None:
    assert _feed(["Plan: run it", "\n\n`", "``python\n", "x = 1\n", "``", "`", "\nok"]) == [
        True,
        True,
        False,
        False,
        False,
        True,
        True,
    ]
    research = ["Thought: look\nAct", "ion: Write File\nAction ", 'Input: {"content": "a"}']
    assert _feed(research) == [True, False, False]
    assert _feed(["Thought: take no action: look"]) == [True]  # only the line that starts one
    assert _feed(["```"] * 4) == [False, True, False, True]
    edit = ["Plan: swap it\n<<<<<<", "< SEARCH\nx = 1\n", "=======\nx = 2\n>>>>>>> REP", "LACE\n"]
    assert _feed(edit) == [True, False, False, True]  # a search edit's block is code


class FakeLib:
    """Records the samplers a chain is built of."""

    def __init__(self) -> None:
        self.chains: list[list[tuple[str, tuple[Any, ...]]]] = []
        self.freed = 0

    def llama_sampler_chain_default_params(self) -> None:
        return None

    def llama_sampler_chain_init(self, _params: Any) -> list[Any]:
        self.chains.append([])
        return self.chains[-1]

    def llama_sampler_chain_add(self, chain: list[Any], sampler: Any) -> None:
        chain.append(sampler)

    def llama_sampler_free(self, _chain: Any) -> None:
        self.freed += 1

    def __getattr__(self, name: str) -> Any:
        if name.startswith("llama_sampler_init_"):
            return lambda *args: (name.removeprefix("llama_sampler_init_"), args)
        raise AttributeError(name)


def test_only_prose_of_a_sampled_call_is_penalised() -> None:
    lib = FakeLib()
    chains = Chains(lib, 0.2, 7, plain=False, penalise=True)
    assert [s[0] for s in chains.plain] == ["top_k", "top_p", "min_p", "temp", "dist"]
    penalties = (
        "penalties",
        (PENALTY_LAST_N, PENALTY_LAST_N, REPEAT_PENALTY, FREQUENCY_PENALTY, 0.0),
    )
    assert chains.prose[0] == penalties and chains.prose[1:] == chains.plain
    assert chains.pick() is chains.prose
    chains.tracker.feed("Plan: x\n```python\n")
    assert chains.pick() is chains.plain
    chains.free()
    assert lib.freed == 2
    rl = Chains(lib, 1.0, 7, plain=True, penalise=False)  # the RL sampler: the plain distribution
    assert rl.prose is None and rl.pick() is rl.plain
    assert [s[0] for s in rl.plain] == ["temp", "dist"]
    greedy = Chains(lib, 0.0, 7, plain=False, penalise=True)
    assert [s[0] for s in greedy.prose] == ["penalties", "greedy"]


VOCAB = [b" the", b"The", b"(the", b" plan", b" names", b" it", b".", b"\n", b" code", b"x"]


def _ids(*pieces: bytes) -> list[int]:
    return [VOCAB.index(p) for p in pieces]


def test_word_keys_join_spellings_and_skip_punctuation() -> None:
    keys = WordKeys(VOCAB)
    assert keys.ids["the"] == _ids(b" the", b"The", b"(the")
    assert keys.of[VOCAB.index(b".")] is None and keys.of[VOCAB.index(b"\n")] is None


def test_a_three_word_phrase_is_banned_the_fourth_time_whatever_its_spelling() -> None:
    guard = NgramGuard(WordKeys(VOCAB))
    spellings = [b" the", b"The", b"(the"]
    for k in range(3):  # "the plan names." three times, "the" spelt three ways
        for t in _ids(spellings[k], b" plan", b" names", b"."):
            assert t not in guard.banned()
            guard.accept(t, prose=True)
    for t in _ids(b" the", b" plan"):
        guard.accept(t, prose=True)
    assert guard.banned() == _ids(b" names")  # a fourth "the plan names" is not sampled
    guard.accept(VOCAB.index(b" it"), prose=True)
    assert guard.banned() == []


def test_code_breaks_a_phrase_and_is_never_counted() -> None:
    guard = NgramGuard(WordKeys(VOCAB))
    for _ in range(5):  # a script repeats itself freely
        for t in _ids(b"x", b" code", b" it"):
            guard.accept(t, prose=False)
    assert guard.next == {}
    for t in _ids(b" the", b" plan"):
        guard.accept(t, prose=True)
    guard.accept(VOCAB.index(b"x"), prose=False)  # a code block between two prose words
    guard.accept(VOCAB.index(b" names"), prose=True)
    assert guard.next == {} and guard.run == ["names"]  # "the plan names" was never said


def test_ban_sets_logits_to_minus_infinity_in_place_and_unban_restores() -> None:
    chains = Chains(FakeLib(), 0.2, 7, plain=False, penalise=True, keys=WordKeys(VOCAB))
    assert chains.guard is not None
    for _ in range(3):
        for t in _ids(b" the", b" plan", b" names"):
            chains.accept(t, prose=True)
    for t in _ids(b" the", b" plan"):
        chains.accept(t, prose=True)
    logits = np.arange(len(VOCAB), dtype=np.float32)
    saved = chains.ban(logits)
    names = VOCAB.index(b" names")
    assert saved == {names: float(names)} and np.isneginf(logits[names])
    Chains.unban(logits, saved)
    assert np.array_equal(logits, np.arange(len(VOCAB), dtype=np.float32))
    chains.tracker.feed("```python\n")  # inside code nothing is banned
    assert chains.ban(logits) == {}
    plain = Chains(FakeLib(), 1.0, 7, plain=True, penalise=False, keys=WordKeys(VOCAB))
    assert plain.guard is None and plain.ban(logits) == {}  # RL samples keep their distribution


def test_a_grammar_that_allows_only_banned_tokens_gets_one_of_them_not_a_crash() -> None:
    """Where the n-gram guard bans every token the grammar allows, a sample over the masked
    vocabulary has no finite logit left: llama.cpp then picks an arbitrary token, and accepting
    it into the grammar aborts the process. The guard gives way instead."""
    from mlagent_tui.core.llm.local import LocalModel

    model = LocalModel(n_ctx=256, lookup=False)
    lib = model._lib
    grammar = lib.llama_sampler_clone(model.compile_grammar('root ::= "yes"'))
    chains = Chains(lib, 0.7, 0, plain=False, penalise=True)
    try:
        model._eval_prompt(model.tokenize("<|im_start|>user\nSay yes<|im_end|>\n"))
        logits = np.ctypeslib.as_array(
            lib.llama_get_logits_ith(model.llm.ctx, -1), shape=(model.n_vocab,)
        )
        before = logits.copy()
        allowed = [t for t in range(model.n_vocab) if model._grammar_allows(grammar, t, 0.0)]
        banned = {t: float(logits[t]) for t in allowed}
        logits[allowed] = -np.inf
        token = model._sample(chains.plain, grammar, logits, -1, banned)
        assert token in allowed, model._piece(token)
        assert np.array_equal(logits, before)  # the bans are put back
        with pytest.raises(ModelError, match="grammar sampling failed"):
            logits[allowed] = -np.inf  # no ban to lift: a clear error, not an abort
            model._sample(chains.plain, grammar, logits, -1, {})
    finally:
        chains.free()
        lib.llama_sampler_free(grammar)
        model.close()
