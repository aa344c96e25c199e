"""Helpers for agent tests: research-format responses and replay files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def research(
    action: str,
    action_input: dict[str, Any] | str,
    plan: str = "1. look around",
    thought: str = "go",
) -> str:
    raw = action_input if isinstance(action_input, str) else json.dumps(action_input)
    return (
        f"Reflection: fine\nResearch Plan and Status: {plan}\nFact Check: none\n"
        f"Thought: {thought}\nAction: {action}\nAction Input: {raw}\n"
    )


def write_replay(path: Path, responses: list[str]) -> Path:
    path.write_text("".join(json.dumps({"content": r}) + "\n" for r in responses))
    return path


class Recording:
    """Wraps a ChatModel and keeps every prompt it was sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.supports_grammar = inner.supports_grammar
        self.prompts: list[str] = []

    def complete(self, messages, **kwargs):  # noqa: ANN001, ANN003, ANN201
        self.prompts.append("\n".join(m.content for m in messages))
        return self.inner.complete(messages, **kwargs)
