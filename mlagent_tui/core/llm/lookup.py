"""Prompt-lookup drafts: guesses of the next tokens, copied from earlier in the context.

An agent's answer repeats its prompt a lot: the solve agent's Draft copies the starter script
the prompt shows, an Improve step rewrites the previous script with a few changes, and the
research agent quotes file names and its own plan. On a CPU a small model decodes a batch of 8
tokens in about 3.5x the time of one (SmolLM2-135M, 2 cores: 16 ms for 1, 52-72 ms for 8), so
checking a guessed continuation in one batch is cheaper than generating it token by token.

The drafter only proposes; `LocalModel` samples every position from the model's own
distribution and keeps a drafted token only when it equals the sampled one, so what comes out is
distributed exactly as plain decoding (only faster where the guess was right).
"""

from __future__ import annotations

NGRAM = 3  # match the last 3 tokens (2 guessed too often wrong on the research prompt)
MIN_DRAFT, MAX_DRAFT = 2, 16


class LookupDrafter:
    """Keeps the context's n-gram index and proposes the tokens that followed the most recent
    earlier occurrence of the context's last n tokens, continuing a run of correct guesses."""

    def __init__(self, context: list[int]) -> None:
        self.tokens: list[int] = []
        self.index: dict[tuple[int, ...], int] = {}  # n-gram -> position just after it (latest)
        self.follow: int | None = None  # where the last accepted guess continues
        self.size = 4  # current draft length: grows on full acceptance, shrinks on a miss
        self.extend(context)

    def extend(self, new: list[int]) -> None:
        for token in new:
            self.tokens.append(token)
            end = len(self.tokens)
            if end > NGRAM:  # index the n-gram ending before the newest token
                self.index[tuple(self.tokens[end - NGRAM - 1 : end - 1])] = end - 1

    def propose(self, limit: int) -> list[int]:
        """Up to min(limit, the current size) tokens guessed to come next ([] without a match)."""
        limit = min(limit, self.size)
        if limit <= 0:
            return []
        end = len(self.tokens)
        start = self.follow
        if start is None or start >= end or self.tokens[start - 1] != self.tokens[-1]:
            start = self.index.get(tuple(self.tokens[end - NGRAM :])) if end >= NGRAM else None
        if start is None or start >= end:
            return []
        self.follow = start
        return self.tokens[start : min(start + limit, end)]

    def verdict(self, proposed: int, accepted: int) -> None:
        """Adapt the draft length to how much of the last guess the model kept."""
        if proposed == 0:
            return
        if accepted == proposed:
            self.size = min(MAX_DRAFT, self.size * 2)
            if self.follow is not None:
                self.follow += accepted + 1  # the model's next token follows the copied run
        else:
            self.size = max(MIN_DRAFT, self.size // 2)
            self.follow = None
