"""Degenerate repetition in the research agent's language: a step whose plan or thought says
one 3-word phrase more than 3 times ("1. Run the script. 2. Run the script. 3. Run the ...").

A small model at a low temperature falls into such loops and fills its token budget with them;
the share of research steps that do is the figure `mlagent-train eval --agent research` reports.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pydantic import BaseModel

PHRASE_WORDS = 3
MAX_REPEATS = 3  # more than this many times: degenerate
_WORD = re.compile(r"[a-z0-9_']+")


def repeated_phrase(
    text: str, words: int = PHRASE_WORDS, limit: int = MAX_REPEATS
) -> tuple[str, int] | None:
    """The most frequent `words`-word phrase of `text` (case and punctuation ignored) and how
    often it occurs, where that is more than `limit` times; None otherwise."""
    tokens = _WORD.findall(text.lower())
    grams = Counter(tuple(tokens[i : i + words]) for i in range(len(tokens) - words + 1))
    if not grams:
        return None
    phrase, count = grams.most_common(1)[0]
    return (" ".join(phrase), count) if count > limit else None


class Repetition(BaseModel):
    """Research steps whose plan or thought repeats a phrase, of all research steps."""

    steps: int = 0
    repetitive: int = 0
    share: float = 0.0
    examples: list[str] = []  # the phrases, a few

    def line(self) -> str:
        if not self.steps:
            return "repetition: no research steps"
        shown = "; ".join(f'"{e}"' for e in self.examples[:3])
        return (
            f"repetition: {self.repetitive} of {self.steps} research steps ({self.share:.0%}) "
            f"repeat a {PHRASE_WORDS}-word phrase more than {MAX_REPEATS} times in their plan or "
            f"thought" + (f" (e.g. {shown})" if shown else "")
        )


def step_repetition(rows: list[dict[str, Any]]) -> Repetition:
    """Over step rows (their `plan` and `thought`): how many repeat themselves."""
    out = Repetition()
    for row in rows:
        out.steps += 1
        hits = [repeated_phrase(row.get(k) or "") for k in ("plan", "thought")]
        found = [h for h in hits if h is not None]
        if found:
            out.repetitive += 1
            phrase, count = max(found, key=lambda h: h[1])
            if len(out.examples) < 5:
                out.examples.append(f"{phrase} x{count}")
    out.share = round(out.repetitive / out.steps, 4) if out.steps else 0.0
    return out


def session_repetition(store: Any, session_ids: list[str]) -> Repetition:
    """The research steps of these sessions (the store's steps rows)."""
    rows: list[dict[str, Any]] = []
    for sid in session_ids:
        rows += [dict(r) for r in store.rows("steps", sid)]
    return step_repetition(rows)
