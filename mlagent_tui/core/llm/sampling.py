"""The local model's sampler chains, and a repetition penalty that applies to prose only.

At the low temperature a local model's sessions use (0.2), SmolLM2-135M falls into loops in
its free text ("1. Run the script. 2. Run the script. 3. Run the script ...") until the
grammar's section bound ends them. llama.cpp's repetition and frequency penalties break such
loops, but a script legitimately repeats its tokens (indentation, names, brackets), and copying
the starter script exactly is what makes a first Draft valid. So the penalised chain samples
only while the text is prose: outside a ``` code block or a search edit's SEARCH/REPLACE block,
and before the research format's "Action:" line (the action's name, then its JSON input, which
may hold a whole file); code, action and JSON tokens come from the plain chain and never enter
the penalty's history. An RL sampler (`plain`) keeps the model's own distribution: no penalty.

The penalty's window is short, and over a long session's research steps the model still
rewrote whole lines of its plan again and again ("done by name train.py (name of the new
submission)" four times in one answer). So prose also gets an n-gram guard over the whole
answer: a token that would make a 3-word prose sequence occur a fourth time is not sampled
(what `no_repeat_ngram_size` does in transformers, on words rather than tokens, so another
spelling of a word, " the" or "(the", is the same word, and with a count instead of a single
repeat: the degenerate repetition the trainer measures is a 3-word phrase said more than 3
times).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

# Sampling defaults of llama-cpp-python's create_completion, so results match a bare call.
TOP_K, TOP_P, MIN_P = 40, 0.95, 0.05
# The prose penalty: the last 64 prose tokens; a seen token's logit divided by 1.1 and lowered
# by 0.1 per occurrence. Measured on research steps (docs/training.md): 1.3 and 0.4 also ended
# the loops but turned the 135M model's plans into word salad.
PENALTY_LAST_N = 64
REPEAT_PENALTY = 1.1
FREQUENCY_PENALTY = 0.1
FENCE = "```"
# the research format's action and its JSON: a penalty there could turn the action the thought
# chose into another one (its name was just written) or corrupt a file's content
ACTION_MARKERS = ("\nAction:", "Action Input:")
# a search edit's SEARCH/REPLACE block is code too, though no fence opens it
EDIT_OPEN, EDIT_CLOSE = "<<<<<<< SEARCH", ">>>>>>> REPLACE"
# the n-gram guard: a prose sequence of NGRAM words may occur NGRAM_LIMIT times in one answer
NGRAM = 3
NGRAM_LIMIT = 3
KEEP = max(len(m) for m in (FENCE, EDIT_OPEN, EDIT_CLOSE, *ACTION_MARKERS)) - 1


def sampler_chain(
    lib: Any, temperature: float, seed: int, plain: bool = False, penalise: bool = False
) -> Any:
    """Greedy at temperature 0; else top-k/top-p/min-p (unless `plain`: the model's own
    distribution, what an RL sampler needs), temperature, then a seeded draw; `penalise`
    puts the repetition penalties first."""
    chain = lib.llama_sampler_chain_init(lib.llama_sampler_chain_default_params())
    if penalise:
        # the binding declares a leading n_vocab that llama.cpp's C function no longer takes:
        # the window goes in both places, so either reads it
        lib.llama_sampler_chain_add(
            chain,
            lib.llama_sampler_init_penalties(
                PENALTY_LAST_N, PENALTY_LAST_N, REPEAT_PENALTY, FREQUENCY_PENALTY, 0.0
            ),
        )
    if temperature <= 0:
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_greedy())
        return chain
    if not plain:
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_k(TOP_K))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_top_p(TOP_P, 1))
        lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_min_p(MIN_P, 1))
    lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_temp(temperature))
    lib.llama_sampler_chain_add(chain, lib.llama_sampler_init_dist(seed & 0xFFFFFFFF))
    return chain


class ProseTracker:
    """Whether the text generated so far ends in prose (True) or inside code or JSON."""

    def __init__(self) -> None:
        self.tail = ""  # the last few characters: a marker may span two pieces
        self.fences = 0
        self.edits = 0  # SEARCH/REPLACE blocks opened less those closed
        self.json = False

    @property
    def prose(self) -> bool:
        return self.fences % 2 == 0 and self.edits <= 0 and not self.json

    def feed(self, text: str) -> None:
        joined = self.tail + text

        def new(marker: str) -> int:
            # a marker that ends past the old tail is new (one inside it was counted already)
            return joined.count(marker, max(0, len(self.tail) - (len(marker) - 1)))

        self.fences += new(FENCE)
        self.edits += new(EDIT_OPEN) - new(EDIT_CLOSE)
        self.json = self.json or any(m in joined for m in ACTION_MARKERS)
        self.tail = joined[-KEEP:]


class WordKeys:
    """Each token's word key: its text in lower case without spaces or punctuation (None where
    nothing is left), so " the", "the" and "The" are one word to the n-gram guard."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.of: list[str | None] = []
        self.ids: dict[str, list[int]] = {}
        for token, piece in enumerate(pieces):
            key = "".join(c for c in piece.decode("utf-8", "ignore").lower() if c.isalnum())
            self.of.append(key or None)
            if key:
                self.ids.setdefault(key, []).append(token)


class NgramGuard:
    """Which tokens would make a prose sequence of `n` word keys occur more than `limit` times
    in this answer (tokens without a key, spaces and punctuation, are skipped)."""

    def __init__(self, keys: WordKeys, n: int = NGRAM, limit: int = NGRAM_LIMIT) -> None:
        self.keys, self.n, self.limit = keys, n, limit
        self.run: list[str] = []  # the current stretch of prose (code or JSON breaks it)
        self.next: dict[tuple[str, ...], Counter[str]] = {}  # (n-1) keys -> keys after them

    def banned(self) -> list[int]:
        if len(self.run) < self.n - 1:
            return []
        after = self.next.get(tuple(self.run[len(self.run) - self.n + 1 :]))
        if not after:
            return []
        return [t for key, c in after.items() if c >= self.limit for t in self.keys.ids[key]]

    def accept(self, token: int, prose: bool) -> None:
        if not prose:
            self.run.clear()  # an n-gram never spans code: counts of earlier prose stay
            return
        key = self.keys.of[token] if 0 <= token < len(self.keys.of) else None
        if key is None:
            return
        self.run.append(key)
        if len(self.run) >= self.n:
            prefix = tuple(self.run[len(self.run) - self.n : -1])
            self.next.setdefault(prefix, Counter())[key] += 1


class Chains:
    """The plain chain and, where penalties apply, the prose chain; `pick` says which to use."""

    def __init__(
        self,
        lib: Any,
        temperature: float,
        seed: int,
        plain: bool,
        penalise: bool,
        keys: WordKeys | None = None,
    ):
        self.lib = lib
        self.plain = sampler_chain(lib, temperature, seed, plain)
        self.prose = sampler_chain(lib, temperature, seed, plain, True) if penalise else None
        self.tracker = ProseTracker()
        self.guard = NgramGuard(keys) if penalise and keys is not None else None

    def pick(self) -> Any:
        if self.prose is not None and self.tracker.prose:
            return self.prose
        return self.plain

    def ban(self, logits: np.ndarray) -> dict[int, float]:
        """Set the logits of tokens that would repeat a prose n-gram once too often to -inf
        (in place: llama.cpp's sampler reads the same buffer); the old values, for `unban`."""
        if self.guard is None or not self.tracker.prose:
            return {}
        saved = {t: float(logits[t]) for t in self.guard.banned()}
        for t in saved:
            logits[t] = -np.inf
        return saved

    @staticmethod
    def unban(logits: np.ndarray, saved: dict[int, float]) -> None:
        for t, value in saved.items():
            logits[t] = value

    def accept(self, token: int, prose: bool) -> None:
        """`token` was generated (`prose`: while the text was prose)."""
        if self.guard is not None:
            self.guard.accept(token, prose)

    def free(self) -> None:
        self.lib.llama_sampler_free(self.plain)
        if self.prose is not None:
            self.lib.llama_sampler_free(self.prose)
