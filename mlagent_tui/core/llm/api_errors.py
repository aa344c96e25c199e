"""How a litellm error reads: which failures a retry can help, and the texts that tell a
refused key or a prompt too long for the context apart from a server's own 500."""

from __future__ import annotations

# Class names (anywhere in an exception's chain) that mean "the server could not be reached".
CONNECT_NAMES = {"ConnectError", "APIConnectionError", "ConnectionError", "RemoteProtocolError"}

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
# Texts by which an error that litellm reports as a 500 is in truth a missing or refused key.
AUTH_TEXTS = (
    "missing credentials",
    "api_key client option",
    "incorrect api key",
    "invalid api key",
)
# Texts of a prompt that does not fit the server's context (llama.cpp, vLLM, OpenAI).
CONTEXT_TEXTS = ("exceed context window", "context length", "context_length_exceeded")
CONTEXT_HINT = (
    "start the server with a larger context (python -m llama_cpp.server --n_ctx 8192; "
    "llama-server -c 8192)"
)


def chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes, outermost first (litellm wraps openai wraps httpx)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 12:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def connection_failure(exc: BaseException) -> tuple[str, str] | None:
    """(what, why) when the connection to the server failed: ("cannot reach", "[Errno 111]
    Connection refused") or ("lost the connection to", ...); None for anything else (time-outs
    are their own case)."""
    links = chain(exc)
    names = [{k.__name__ for k in type(e).__mro__} for e in links]
    if any("Timeout" in n for kinds in names for n in kinds):
        return None
    hits = [e for e, kinds in zip(links, names, strict=True) if kinds & CONNECT_NAMES]
    if not hits:
        return None
    never = any(n & {"ConnectError", "ConnectionRefusedError", "gaierror"} for n in names)
    why = short(hits[-1]) if str(hits[-1]).strip() else type(hits[-1]).__name__
    return ("cannot reach" if never else "lost the connection to"), why


def status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        return float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None


def short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:400] or type(exc).__name__
