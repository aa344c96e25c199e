"""Any hosted or served model through litellm (`anthropic/...`, `openai/...`, `ollama/...`).

litellm is imported on first use: it takes seconds to import and the TUI should not wait for it
when the session runs a local model. Transient failures (rate limits, time-outs, lost connections,
5xx) are retried with exponential back-off; mistakes that a retry cannot fix (a bad key, an
unknown model, a bad request) fail at once with a message saying what to check. A server the
client cannot reach is named by its URL (litellm reports it as an InternalServerError).

Cost: the person's own prices (`price_in`/`price_out`, USD per million tokens) win; else
litellm's price map; else the cost is *unknown* (recorded so, never silently $0).
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable
from typing import Any

from .api_errors import (
    AUTH_TEXTS,
    CONTEXT_HINT,
    CONTEXT_TEXTS,
    RETRY_STATUS,
    connection_failure,
    retry_after,
    short,
    status_of,
)
from .base import Completion, Message, ModelError, TokenCallback

RetryCallback = Callable[[int, float, str], None]  # (attempt, delay_s, reason)
PER_MILLION = 1_000_000
# A server given by URL with no key variable named gets this key: the openai client refuses to
# send a request without one ("Missing credentials"), and a key from the environment
# (OPENAI_API_KEY) is never handed to a server the person did not name it for.
NO_KEY = "sk-no-key"
PROBE_TIMEOUT_S = 60.0
_litellm: Any = None


def _import_litellm() -> Any:
    """Import litellm once, quietly and offline (no cost-map download, no "Give Feedback")."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)
        _litellm = litellm
    return _litellm


def check_model_id(target: str, api_base: str | None = None) -> str:
    """The provider litellm routes `target` to (e.g. `openai` for openai/gpt-4o-mini); a
    ValueError where it knows none."""
    try:
        return str(_import_litellm().get_llm_provider(target, api_base=api_base)[1])
    except Exception as exc:  # noqa: BLE001 - litellm raises its own types for an unknown id
        raise ValueError(f"litellm knows no provider for {target!r}") from exc


def missing_credentials(target: str) -> list[str]:
    """The environment variables litellm says calling `target` needs and are not set."""
    try:
        found = _import_litellm().validate_environment(model=target)
    except Exception:  # noqa: BLE001 - a provider litellm cannot check: the call will tell
        return []
    return [str(name) for name in found.get("missing_keys") or []]


def litellm_price(target: str) -> tuple[float, float] | None:
    """litellm's (input, output) USD per token for `target`, or None where it has no price."""
    try:
        info = _import_litellm().get_model_info(target)
    except Exception:  # noqa: BLE001 - "This model isn't mapped yet" and kin
        return None
    price_in, price_out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if price_in is None or price_out is None:
        return None
    return float(price_in), float(price_out)


def _stream_reported_usage(stream: Any) -> bool:
    """Whether the server sent usage in a stream. litellm hands every caller a final usage
    chunk, counted with its own tokenizer where the server sent none; only its record of the
    raw chunks (`chunks`, usage-only chunks included) tells the two apart. Where that record is
    missing (another litellm), the counts are taken as reported."""
    raw = getattr(stream, "chunks", None)
    if not isinstance(raw, list):
        return True
    return any(getattr(chunk, "usage", None) is not None for chunk in raw)


class ApiModel:
    """A litellm model id with retries, streaming, usage and cost."""

    supports_grammar = False
    concurrent = True  # a server takes several requests at once: the search overlaps them

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        max_retries: int = 4,
        timeout_s: float = 120,
        base_delay_s: float = 1.0,
        max_delay_s: float = 60.0,
        on_retry: RetryCallback | None = None,
        api_key_env: str | None = None,
        price_in: float | None = None,
        price_out: float | None = None,
    ) -> None:
        """`api_key_env` names the variable holding the key (what a session stores: never the
        key); `price_in`/`price_out` are USD per million tokens, both or neither."""
        if not model:
            raise ModelError("empty model name")
        self.model = model
        self.name = model
        self.api_base = api_base
        self.api_key_env = api_key_env
        if api_key is None and api_key_env:
            api_key = os.environ.get(api_key_env) or None
            if api_key is None:
                raise ModelError(f"{model}: the API key variable {api_key_env} is not set")
        elif api_key is None and api_base:
            api_key = NO_KEY
        self.api_key = api_key
        if (price_in is None) != (price_out is None):
            raise ModelError(f"{model}: give both prices, --price-in and --price-out")
        if price_in is not None and price_out is not None and min(price_in, price_out) < 0:
            raise ModelError(f"{model}: prices cannot be negative")
        self.price_in, self.price_out = price_in, price_out
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.on_retry = on_retry

    @property
    def price_known(self) -> bool:
        """Whether calls get a real cost (and so whether a cost budget can be kept)."""
        return self.price_in is not None or litellm_price(self.model) is not None

    def endpoint(self) -> str:
        """The URL calls go to, for messages: --api-base, else the provider's own default."""
        if self.api_base:
            return self.api_base
        try:
            _, provider, _, base = _import_litellm().get_llm_provider(self.model)
        except Exception:  # noqa: BLE001 - an unknown id fails elsewhere with its own message
            return "the provider's API"
        return str(base) if base else f"the {provider} API"

    # ------------------------------------------------------------------ errors
    def _classify(self, exc: BaseException) -> ModelError:
        """A ModelError whose `retryable` says whether trying again can help."""
        lib = _import_litellm()
        status = status_of(exc)
        detail = short(exc)
        provider = self.model.split("/", 1)[0] if "/" in self.model else "the provider"
        failed = connection_failure(exc)  # litellm may call it a 500 InternalServerError
        if failed is not None:
            what, why = failed
            return ModelError(f"{self.model}: {what} {self.endpoint()}: {why}", retryable=True)
        lowered = detail.lower()
        if (
            isinstance(exc, lib.AuthenticationError | lib.PermissionDeniedError)
            or status in (401, 403)
            or any(text in lowered for text in AUTH_TEXTS)
        ):
            key = self.api_key_env or (
                f"{provider.upper()}_API_KEY" if "/" in self.model else "the provider's API key"
            )
            return ModelError(
                f"{self.model}: authentication failed; check the API key ({key}): {detail}"
            )
        if isinstance(exc, lib.NotFoundError) or status == 404:
            return ModelError(
                f"{self.model}: model or endpoint not found; check the model name"
                f"{' and api_base ' + self.api_base if self.api_base else ''}: {detail}"
            )
        if isinstance(exc, lib.ContextWindowExceededError) or any(
            text in lowered for text in CONTEXT_TEXTS
        ):
            hint = f"; {CONTEXT_HINT}" if self.api_base else ""
            return ModelError(
                f"{self.model}: the prompt does not fit the model's context: {detail}{hint}"
            )
        transient = (
            lib.RateLimitError,
            lib.Timeout,
            lib.APIConnectionError,
            lib.InternalServerError,
            lib.ServiceUnavailableError,
            lib.BadGatewayError,
        )
        if isinstance(exc, transient) or (status is not None and status in RETRY_STATUS):
            return ModelError(f"{self.model}: {type(exc).__name__}: {detail}", retryable=True)
        if status is not None and status >= 500:
            return ModelError(f"{self.model}: server error {status}: {detail}", retryable=True)
        if isinstance(exc, lib.BadRequestError) or status == 400:
            return ModelError(f"{self.model}: bad request: {detail}")
        return ModelError(f"{self.model}: {type(exc).__name__}: {detail}")

    def _delay(self, attempt: int, exc: BaseException) -> float:
        backoff = self.base_delay_s * (2**attempt) * random.uniform(0.75, 1.25)
        hinted = retry_after(exc)
        if hinted is not None:
            backoff = max(backoff, hinted)
        return min(backoff, self.max_delay_s)

    # ------------------------------------------------------------------- calls
    def probe(self) -> None:
        """One request of one token, never retried: a wrong URL, a model the server does not
        have or a refused key is a ModelError now, in seconds, not at the first step."""
        lib = _import_litellm()
        payload = [{"role": "user", "content": "Say OK."}]
        saved, self.timeout_s = self.timeout_s, min(self.timeout_s, PROBE_TIMEOUT_S)
        try:
            self._call(lib, payload, 1, 0.0, None, [])
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001 - every provider error is mapped
            raise self._classify(exc) from exc
        finally:
            self.timeout_s = saved

    def complete(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        lib = _import_litellm()
        payload = [m.model_dump() for m in messages]
        attempt = 0
        while True:
            started = time.perf_counter()
            streamed: list[str] = []
            try:
                response, reported = self._call(
                    lib, payload, max_tokens, temperature, on_token, streamed
                )
                latency = time.perf_counter() - started
                return self._completion(lib, response, payload, latency, reported)
            except ModelError:
                raise
            except Exception as exc:  # noqa: BLE001 - every provider error is mapped below
                error = self._classify(exc)
                if streamed:  # the caller already showed part of an answer: do not repeat it
                    error = ModelError(
                        f"{error} (stream broke after {sum(map(len, streamed))} characters)",
                        retryable=error.retryable,
                    )
                if not error.retryable or streamed or attempt >= self.max_retries:
                    if error.retryable and not streamed:
                        tries = f"{attempt + 1} attempt{'s' if attempt else ''}"
                        error = ModelError(f"{error} (gave up after {tries})", retryable=True)
                    raise error from exc
                delay = self._delay(attempt, exc)
                attempt += 1
                if self.on_retry is not None:
                    self.on_retry(attempt, delay, str(error))
                time.sleep(delay)

    def _call(
        self,
        lib: Any,
        payload: list[dict],
        max_tokens: int,
        temperature: float,
        on_token: TokenCallback | None,
        streamed: list[str],
    ) -> tuple[Any, bool]:
        """The response, and whether the server itself reported its token usage."""
        kwargs: dict[str, Any] = dict(
            model=self.model,
            messages=payload,
            max_tokens=max_tokens,
            temperature=temperature,
            timeout=self.timeout_s,
            num_retries=0,  # retries are ours, so back-off and messages are ours too
            max_retries=0,
            drop_params=True,
        )
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if on_token is None:
            return lib.completion(**kwargs), True
        stream = lib.completion(stream=True, stream_options={"include_usage": True}, **kwargs)
        chunks = []
        for chunk in stream:
            chunks.append(chunk)
            choices = getattr(chunk, "choices", None) or []
            delta = getattr(choices[0], "delta", None) if choices else None
            text = getattr(delta, "content", None) if delta is not None else None
            if text:
                streamed.append(text)
                on_token(text)
        built = lib.stream_chunk_builder(chunks, messages=payload)
        if built is None:
            raise ModelError(f"{self.model}: the stream returned no data", retryable=True)
        return built, _stream_reported_usage(stream)

    def _completion(
        self, lib: Any, response: Any, payload: list[dict], latency: float, reported_usage: bool
    ) -> Completion:
        choice = response.choices[0] if response.choices else None
        message = getattr(choice, "message", None)
        text = (getattr(message, "content", None) or "") if message is not None else ""
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        notes = []
        estimated = usage is None or (tokens_in == 0 and tokens_out == 0)
        if estimated:
            tokens_in = sum(len(m["content"]) for m in payload) // 4
            tokens_out = len(text) // 4
            notes.append("token counts estimated (no usage reported)")
        elif not reported_usage:
            estimated = True  # litellm counted a stream's tokens with its own tokenizer
            notes.append("token counts estimated by litellm (the stream reported no usage)")
        cost, known = self._cost(lib, response, tokens_in, tokens_out)
        if not known:
            notes.append(
                f"cost unknown for {self.model}: litellm has no price for it "
                "(give --price-in/--price-out, USD per million tokens)"
            )
        return Completion(
            text=text,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=cost,
            cost_known=known,
            tokens_estimated=estimated,
            latency_s=latency,
            note="; ".join(notes) or None,
            finish_reason=getattr(choice, "finish_reason", None),
        )

    def _cost(self, lib: Any, response: Any, tokens_in: int, tokens_out: int) -> tuple[float, bool]:
        """(USD, known): the person's prices, else litellm's for this model id, else unknown."""
        if self.price_in is not None and self.price_out is not None:
            return (tokens_in * self.price_in + tokens_out * self.price_out) / PER_MILLION, True
        try:
            return float(lib.completion_cost(completion_response=response, model=self.model)), True
        except Exception:  # noqa: BLE001 - unpriced or local model: cost unknown, never fatal
            return 0.0, False
