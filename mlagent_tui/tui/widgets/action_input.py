"""An action's input as the person reads it, in the step pane and in the approval."""

from __future__ import annotations

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text


def input_parts(action_input: dict, agent: str) -> list[RenderableType]:
    """An action's input as the person reads it: short values inline, long text as a block
    (the solve agent's script and any `.py` file written with Python highlighting)."""
    parts: list[RenderableType] = []
    inline = Text()
    for key, value in action_input.items():
        text = value if isinstance(value, str) else repr(value)
        if "\n" not in text and len(text) <= 200:
            inline.append(f"  {key}: ", style="dim")
            inline.append(f"{text}\n")
            continue
        if inline:
            inline.rstrip()
            parts.append(inline)
            inline = Text()
        label = "script (solution.py)" if agent == "solve" and key == "content" else key
        parts.append(Text(f"  {label}:", style="dim"))
        name = str(action_input.get("file_name") or action_input.get("script_name") or "")
        if agent == "solve" or name.endswith(".py"):
            parts.append(Syntax(text, "python", word_wrap=True, background_color="default"))
        else:
            parts.append(Text(text))
    if inline:
        inline.rstrip()
        parts.append(inline)
    return parts
