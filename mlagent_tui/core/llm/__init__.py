"""Chat models: one protocol, three backends, chosen by a `--model` string.

`local` (the bundled SmolLM2-135M plus the project's adapter where one is shipped, merged once
into a cached GGUF), `smollm2` (always the bare bundled model), `local:PATH.gguf`,
`replay:PATH.jsonl`, or any litellm id such as `anthropic/claude-sonnet-4-5`, `openai/gpt-4o`,
`ollama/llama3`. Backends are imported on demand so that choosing one never pays for loading
another (litellm and llama.cpp are both slow).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..lazy import lazy_exports
from .base import (
    ChatModel,
    Completion,
    Message,
    ModelError,
    ModelExhausted,
    ModelSpec,
    TokenCallback,
)
from .check import check_model

# Each backend's own names, loaded with their module on first use (as make_model does).
_BACKENDS = {
    "api": ("ApiModel", "check_model_id", "litellm_price"),
    "bundled": ("bundled_model_path",),
    "local": ("LocalModel",),
    "replay": ("ReplayModel", "estimate_tokens", "load_responses"),
    "stdio": ("quiet_stderr",),
}
_MODULE_OF = {name: module for module, names in _BACKENDS.items() for name in names}

if TYPE_CHECKING:
    from .api import ApiModel, check_model_id, litellm_price
    from .bundled import bundled_model_path
    from .local import LocalModel
    from .replay import ReplayModel, estimate_tokens, load_responses
    from .stdio import quiet_stderr

__all__ = [
    "ApiModel",
    "ChatModel",
    "Completion",
    "LocalModel",
    "Message",
    "ModelError",
    "ModelExhausted",
    "ModelSpec",
    "ReplayModel",
    "TokenCallback",
    "bundled_model_path",
    "check_model",
    "check_model_id",
    "estimate_tokens",
    "litellm_price",
    "load_responses",
    "make_model",
    "quiet_stderr",
]


__getattr__ = lazy_exports(__name__, _MODULE_OF)


# Options each backend takes; aliases map CLI-style names to constructor arguments.
_OPTIONS = {
    "local": {"n_ctx", "n_threads", "seed"},
    "replay": {"start"},
    "api": {
        "api_base",
        "api_key",
        "api_key_env",
        "price_in",
        "price_out",
        "max_retries",
        "timeout_s",
        "base_delay_s",
        "max_delay_s",
        "on_retry",
    },
}
_ALIASES = {"threads": "n_threads", "timeout": "timeout_s", "base_url": "api_base"}


def make_model(spec: str, **options: Any) -> ChatModel:
    """Build the model a `--model` string names. Options meant for another backend are ignored
    (the CLI passes all of its flags); an option no backend knows is a ValueError. None = unset."""
    parsed = ModelSpec.parse(spec)
    chosen: dict[str, Any] = {}
    for key, value in {**parsed.options, **options}.items():
        key = _ALIASES.get(key, key)
        if not any(key in names for names in _OPTIONS.values()):
            raise ValueError(f"unknown model option {key!r}")
        if value is not None and key in _OPTIONS[parsed.backend]:
            chosen[key] = value
    if parsed.backend == "local":
        from .local import LocalModel

        if parsed.target:
            return LocalModel(parsed.target, **chosen)
        from .adapter import default_local_model

        path, name = default_local_model(bare=parsed.bare)
        return LocalModel(str(path), name=name, **chosen)
    if parsed.backend == "replay":
        from .replay import ReplayModel

        if not parsed.target:
            raise ModelError("replay needs a file: replay:PATH.jsonl")
        return ReplayModel(parsed.target, **chosen)
    from .api import ApiModel

    return ApiModel(parsed.target, **chosen)
