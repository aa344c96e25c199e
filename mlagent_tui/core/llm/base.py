"""The ChatModel protocol every backend (api, local, replay, the trainer's policy) implements."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from pydantic import BaseModel, Field

TokenCallback = Callable[[str], None]


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


class Completion(BaseModel):
    text: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    note: str | None = None  # e.g. "cost unknown for this model"
    finish_reason: str | None = None
    stop_token_id: int | None = None  # the end-of-generation token a local model sampled
    stop_logprob: float | None = None  # its log-probability (temperature 1), as `logprobs`
    # False when no price is known for the model: cost_usd is then 0 but not "free", and a
    # cost budget cannot be enforced (the session says "cost unknown" rather than "$0").
    cost_known: bool = True
    # True when the backend did not report token counts and they were estimated from text.
    tokens_estimated: bool = False


class ModelError(Exception):
    """A model call failed for good (auth, bad request, retries exhausted)."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class ModelExhausted(ModelError):
    """A replay model has no responses left: a clear, normal end of a session."""


class ChatModel(Protocol):
    name: str
    supports_grammar: bool

    def complete(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        on_token: TokenCallback | None = None,
    ) -> Completion: ...


class ModelSpec(BaseModel):
    """Parsed `--model` string: `local` (SmolLM2-135M plus the shipped adapter, if any),
    `smollm2` (always the bare SmolLM2-135M), `local:PATH.gguf`, `replay:PATH.jsonl`, or an
    API id."""

    backend: Literal["local", "replay", "api"]
    target: str = ""
    bare: bool = False  # `smollm2`: the bundled base without the shipped adapter
    options: dict[str, str | int | float] = Field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str) -> ModelSpec:
        if spec == "local":
            return cls(backend="local")
        if spec == "smollm2":
            return cls(backend="local", bare=True)
        if spec.startswith("local:"):
            return cls(backend="local", target=spec.split(":", 1)[1])
        if spec.startswith("replay:"):
            return cls(backend="replay", target=spec.split(":", 1)[1])
        if spec.startswith("policy:"):
            raise ValueError(
                f"{spec!r} is a trainer's policy checkpoint, not a model mlagent can load: export"
                " it with `mlagent-train export --run DIR --to OUT.gguf` and use local:OUT.gguf"
            )
        if spec.startswith("api:"):
            spec = spec.split(":", 1)[1]
        if not spec:
            raise ValueError("empty model name")
        return cls(backend="api", target=spec)
