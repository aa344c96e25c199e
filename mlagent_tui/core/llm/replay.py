"""Responses from a JSONL file, served in order: for tests and for re-executing a logged session.

Each line is `{"content": "<whole response text>"}`. `position` counts the responses consumed, so
a resumed session starts a new ReplayModel at the first one it has not used yet.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .base import Completion, Message, ModelError, ModelExhausted, TokenCallback

CHUNK_CHARS = 16  # on_token gets the text in small pieces, like a streaming backend


def estimate_tokens(text: str) -> int:
    """About four characters a token: enough for budgets and the TUI's counters."""
    return max(1, len(text) // 4) if text else 0


def load_responses(path: Path) -> list[str]:
    """Every response of the file; a bad line is a ModelError naming its number."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelError(f"replay file not found: {path}") from None
    except OSError as exc:
        raise ModelError(f"cannot read replay file {path}: {exc}") from None
    responses = []
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ModelError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        if not isinstance(record, dict) or not isinstance(record.get("content"), str):
            raise ModelError(f'{path}:{number}: expected an object {{"content": "<text>"}}')
        responses.append(record["content"])
    return responses


class ReplayModel:
    """Serves the file's responses one per call, ignoring the prompt and any grammar."""

    supports_grammar = False
    concurrent = False  # scripted replies are read in order

    def __init__(self, path: str | Path, start: int = 0) -> None:
        self.path = Path(path)
        self.name = f"replay:{self.path}"
        self.responses = load_responses(self.path)
        if not 0 <= start <= len(self.responses):
            raise ModelError(
                f"replay start {start} is outside the {len(self.responses)} responses "
                f"in {self.path}"
            )
        self.position = start

    @property
    def remaining(self) -> int:
        return len(self.responses) - self.position

    def complete(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        started = time.perf_counter()
        if self.position >= len(self.responses):
            raise ModelExhausted(
                f"replay file {self.path} has no responses left "
                f"(all {len(self.responses)} were used)"
            )
        text = self.responses[self.position]
        self.position += 1
        if on_token is not None:
            for i in range(0, len(text), CHUNK_CHARS):
                on_token(text[i : i + CHUNK_CHARS])
        return Completion(
            text=text,
            tokens_in=sum(estimate_tokens(m.content) for m in messages),
            tokens_out=estimate_tokens(text),
            cost_usd=0.0,
            latency_s=time.perf_counter() - started,
            finish_reason="stop",
        )
