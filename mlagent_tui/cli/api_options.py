"""The options of an API model (litellm): which server, which key variable, what a token costs.

What they give is stored in the session's config (`model_options`), so resume and fork reach
the same server with the same prices. The key itself is never stored: only the name of the
environment variable that holds it.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

ApiBaseOpt = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        help="The server of an API model, e.g. http://127.0.0.1:8000/v1 for a local "
        "OpenAI-compatible server (use --model openai/NAME).",
        show_default=False,
    ),
]
ApiKeyEnvOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        help="The environment variable that holds the API key (its name is stored, never the "
        "key). Default: the provider's own, e.g. OPENAI_API_KEY.",
        show_default=False,
    ),
]
PriceInOpt = Annotated[
    float | None,
    typer.Option(
        "--price-in",
        min=0,
        help="USD per million prompt tokens, for a model litellm has no price for "
        "(needed by --max-cost then). Give --price-out too.",
        show_default=False,
    ),
]
PriceOutOpt = Annotated[
    float | None,
    typer.Option(
        "--price-out",
        min=0,
        help="USD per million completion tokens (with --price-in).",
        show_default=False,
    ),
]


def api_model_options(
    api_base: str | None,
    api_key_env: str | None,
    price_in: float | None,
    price_out: float | None,
) -> dict[str, Any]:
    """The model options a session stores, without the unset ones."""
    given = {
        "api_base": api_base,
        "api_key_env": api_key_env,
        "price_in": price_in,
        "price_out": price_out,
    }
    return {key: value for key, value in given.items() if value is not None}
