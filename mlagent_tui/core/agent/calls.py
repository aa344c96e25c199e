"""One model call, recorded as an LLMCall event whatever the backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from ..events import LLMCall
from ..llm import ChatModel, Completion, Message, TokenCallback


def call_model(
    model: ChatModel,
    messages: list[dict[str, str]] | list[Message],
    record: Callable[[BaseModel], Any],
    *,
    purpose: str,
    grammar: str | None = None,
    max_tokens: int = 1024,
    temperature: float = 0.7,
    on_token: TokenCallback | None = None,
) -> Completion:
    msgs = [m if isinstance(m, Message) else Message(**m) for m in messages]
    out = model.complete(
        msgs,
        grammar=grammar if model.supports_grammar else None,
        max_tokens=max_tokens,
        temperature=temperature,
        on_token=on_token,
    )
    record(
        LLMCall(
            model=model.name,
            purpose=purpose,
            tokens_in=out.tokens_in,
            tokens_out=out.tokens_out,
            cost_usd=out.cost_usd,
            cost_known=out.cost_known,
            tokens_estimated=out.tokens_estimated,
            latency_s=out.latency_s,
            text=out.text,
            token_ids=out.token_ids,
            logprobs=out.logprobs,
        )
    )
    return out
