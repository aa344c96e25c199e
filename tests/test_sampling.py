"""The local model's prose-only repetition penalty: which text counts as prose, and which
sampler chain each kind of call gets (llama.cpp's sampler API recorded by a stand-in)."""

from __future__ import annotations

from typing import Any

from mlagent_tui.core.llm.sampling import (
    FREQUENCY_PENALTY,
    PENALTY_LAST_N,
    REPEAT_PENALTY,
    Chains,
    ProseTracker,
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
