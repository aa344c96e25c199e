"""Text the agent or a model made, made safe to show on a terminal.

A terminal obeys what it is sent: ESC starts sequences that set the window title (OSC 0),
write the clipboard (OSC 52) or clear the screen, BEL rings, C1 controls (U+0080-U+009F) are
the same sequences in one byte on some terminals, a lone CR rewrites the line, and bidi
controls (U+202E, ...) make a name read backwards. File names, program output, action names and
answers are all the agent's, so every place that shows them passes them through `visible`,
which writes each such character as a visible escape (`\\x1b`, `\\u202e`) and keeps newlines
and tabs. It never renders markup: callers print the result as plain text (Rich's `Text`, or
`markup=False`, or `rich.markup.escape` where it joins markup of their own).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

# C0 but \t and \n, DEL, C1, and the bidi marks, embeddings, overrides and isolates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control and bidi character written as a visible escape."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_shown, text.replace("\r\n", "\n"))


def visible_deep(value: Any) -> Any:
    """`visible` through strings inside lists, tuples, dicts (keys too) and pydantic models."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, list | tuple):
        return type(value)(visible_deep(v) for v in value)
    if isinstance(value, dict):
        return {visible_deep(k): visible_deep(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        changed = {}
        for name, field in value:
            shown = visible_deep(field)
            if shown != field:
                changed[name] = shown
        return value.model_copy(update=changed) if changed else value
    return value


def one_line(text: str) -> str:
    """`visible`, and newlines and tabs shown too: for a cell or a label that is one line."""
    return visible(text).replace("\n", "\\n").replace("\t", "\\t")
