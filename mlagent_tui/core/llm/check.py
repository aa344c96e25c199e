"""Whether a `--model` string can work, answered before any session exists.

A typo'd model, a missing key or a missing file should cost a second and one clear line, not a
session row, litellm's long text and retries at step 1. Checked here: the string parses; a local
GGUF or a replay file is there; for an API id, litellm knows its provider, the key is in the
environment (or in the variable that `api_key_env` names), and a cost budget has a price to count
against; a server given by URL (`api_base`) answers a TCP connection and then one request of one
token (a wrong path, a model it does not have, a refused key). Whether the prompt fits the
server's context is known only at the first step (its error says how to start a larger one).
"""

from __future__ import annotations

import difflib
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .base import ModelError, ModelSpec

LOCAL_NAMES = ("local", "smollm2")
EXAMPLES = "openai/gpt-4o-mini, anthropic/claude-sonnet-4-5, ollama/llama3"
# Missing variables that are credentials; others litellm lists (OLLAMA_API_BASE...) have defaults.
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "CREDENTIALS")
CONNECT_TIMEOUT_S = 3.0
_KINDS_WITH_TARGET = ("local", "replay")  # local:PATH.gguf, replay:PATH.jsonl
TYPO_CUTOFF = 0.75  # difflib ratio: `locl`, `lcoal`, `smolm2`, `replya` are typos; `llama` not


def check_model(spec: str, *, max_cost: float | None = None, **options: Any) -> None:
    """Raise a one-line ModelError unless `make_model(spec, **options)` can work.

    `options` are make_model's (`api_base`, `api_key_env`, `price_in`, `price_out`; others are
    ignored); `max_cost` is a cost budget, which needs a known price to be kept.
    """
    try:
        parsed = ModelSpec.parse(spec.strip())
    except ValueError as exc:
        raise ModelError(f"model {spec!r}: {exc}") from None
    refuse_malformed(spec)  # before litellm's import (seconds) for an id no one could mean
    if parsed.backend == "local":
        _check_local(spec, parsed.target)
    elif parsed.backend == "replay":
        _check_replay(spec, parsed.target)
    else:
        _check_api(
            spec,
            parsed.target,
            api_base=options.get("api_base") or options.get("base_url"),
            api_key_env=options.get("api_key_env"),
            price_in=options.get("price_in"),
            price_out=options.get("price_out"),
            max_cost=max_cost,
        )


def refuse_malformed(spec: str) -> None:
    """A ModelError for a typo of local, smollm2 or replay (`locl`, `relpay:run.jsonl`) or a
    string no provider id looks like (spaces, an empty part between slashes), answered without
    importing litellm: a typo costs well under a second, not litellm's import. Other forms
    (local, replay:PATH, ...) pass: `check_model` checks them."""
    text = spec.strip()
    try:
        if ModelSpec.parse(text).backend != "api":
            return
    except ValueError as exc:
        raise ModelError(f"model {spec!r}: {exc}") from None
    if any(c.isspace() or not c.isprintable() for c in text):
        raise ModelError(f"model {spec!r}: a model name has no spaces or control characters")
    if "" in text.split("/"):
        raise ModelError(f"model {spec!r}: an empty part between slashes (e.g. {EXAMPLES})")
    head, colon, rest = text.partition(":")
    if "/" in head:
        return  # provider/model, perhaps with a tag (ollama/llama3:8b): litellm decides
    kinds = _KINDS_WITH_TARGET if colon else (*LOCAL_NAMES, "replay")
    close = difflib.get_close_matches(head.lower(), kinds, n=1, cutoff=TYPO_CUTOFF)
    if close:
        meant = f"{close[0]}{colon}{rest}" if colon or close[0] != "replay" else "replay:PATH"
        raise ModelError(_unknown(spec, meant))


def _unknown(spec: str, meant: str | None) -> str:
    hint = f"; did you mean {meant!r}?" if meant else ""
    return (
        f"unknown model {spec!r}: not local, smollm2, local:PATH.gguf, replay:PATH.jsonl, "
        f"nor a provider/model id litellm knows (e.g. {EXAMPLES}){hint}"
    )


def _check_local(spec: str, target: str) -> None:
    if not target:
        from .local import bundled_model_path

        bundled_model_path()  # its ModelError says which package to install
        return
    path = Path(target).expanduser()
    if not path.is_file():
        raise ModelError(f"model {spec!r}: no GGUF file at {path}")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelError(f"model {spec!r}: cannot read {path}: {exc}") from None
    if magic != b"GGUF":
        raise ModelError(f"model {spec!r}: {path} is not a GGUF file")


def _check_replay(spec: str, target: str) -> None:
    from .replay import load_responses

    if not target:
        raise ModelError(f"model {spec!r}: replay needs a file: replay:PATH.jsonl")
    if not load_responses(Path(target).expanduser()):
        raise ModelError(f"model {spec!r}: the replay file {target} has no responses")


def _check_api(
    spec: str,
    target: str,
    *,
    api_base: str | None,
    api_key_env: str | None,
    price_in: float | None,
    price_out: float | None,
    max_cost: float | None,
) -> None:
    from .api import check_model_id, litellm_price, missing_credentials

    try:
        check_model_id(target, api_base)
    except ValueError:
        close = difflib.get_close_matches(spec.strip(), LOCAL_NAMES, n=1, cutoff=0.6)
        raise ModelError(_unknown(spec, close[0] if close else None)) from None
    if api_key_env:
        if not os.environ.get(api_key_env):
            raise ModelError(
                f"model {spec!r}: the API key variable {api_key_env} (--api-key-env) is not set"
            )
    elif not api_base:  # a server of one's own (--api-base) often needs no key at all
        secrets = [
            name
            for name in missing_credentials(target)
            if any(word in name.upper() for word in _SECRET_WORDS)
        ]
        if secrets:
            raise ModelError(
                f"model {spec!r}: no API key: set {' or '.join(secrets)} "
                "(or name the variable that holds it with --api-key-env)"
            )
    if api_base:
        _check_reachable(spec, api_base)
        _check_answers(spec, target, api_base, api_key_env)
    if (price_in is None) != (price_out is None):
        raise ModelError(f"model {spec!r}: give both prices, --price-in and --price-out")
    if price_in is not None and price_out is not None and min(price_in, price_out) < 0:
        raise ModelError(f"model {spec!r}: prices cannot be negative")
    if max_cost is not None and price_in is None and litellm_price(target) is None:
        raise ModelError(
            f"--max-cost cannot be kept: litellm has no price for {target}; give "
            "--price-in and --price-out (USD per million tokens)"
        )


def _check_answers(spec: str, target: str, api_base: str, api_key_env: str | None) -> None:
    """One request of one token to the server: a wrong path, a model it does not serve or a
    refused key is one line in seconds, not a failed session after retries."""
    from .api import ApiModel

    try:
        ApiModel(target, api_base=api_base, api_key_env=api_key_env, max_retries=0).probe()
    except ModelError as exc:
        raise ModelError(f"model {spec!r} at {api_base} does not answer: {exc}") from None


def _check_reachable(spec: str, api_base: str) -> None:
    """A TCP connection to the server's host and port: a wrong URL or a server that is not up
    is one line now, not four retries and a failed session later."""
    parts = urlsplit(api_base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelError(f"model {spec!r}: --api-base {api_base!r} is not an http(s) URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ModelError(f"model {spec!r}: --api-base {api_base!r} has a bad port") from None
    try:
        socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise ModelError(f"model {spec!r}: cannot reach {api_base}: {reason}") from None
