"""What `y` runs, shown first in the step pane while an action waits for the person.

The step's Reflection and Thought come after it: in confirm-exec mode the person approves a
command, so the command, its whole input and the script it runs are what the pane opens with.
"""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text

from ...core.agent.actions import ActionError, lookup
from .action_input import input_parts

SCRIPT_PREVIEW_BYTES = 200_000


def what_runs(action: str, action_input: dict[str, Any]) -> str:
    """The command an action runs, in words the person can check."""
    if action == "Execute Script":
        return f"python {action_input.get('script_name', '?')} (in the sandbox)"
    if action == "Run Solution":
        return "write solution.py (below), run python solution.py, then validate"
    try:
        return lookup(action).description
    except ActionError:
        return "an unknown action (it fails with an error)"


def approval_parts(
    waiting: dict[str, Any], agent: str, script: str | None = None
) -> list[RenderableType]:
    """The action awaiting approval, its full input, and the script file it would run."""
    action = str(waiting.get("action") or "?")
    action_input = dict(waiting.get("action_input") or {})
    head = Text()
    head.append(" Approve? y runs ", style="bold reverse")
    head.append(f" {action}\n", style="bold")
    head.append("  runs: ", style="dim")
    head.append(what_runs(action, action_input), style="bold")
    parts: list[RenderableType] = [head, *input_parts(action_input, agent)]
    if script is not None:
        name = str(action_input.get("script_name") or "")
        parts.append(Text(f"  {name} as it is now (what python runs):", style="dim"))
        parts.append(Syntax(script, "python", word_wrap=True, background_color="default"))
    parts.append(Text("y approves · n rejects (with a reason) · a approves all of this kind\n"))
    return parts


_cache: dict[int, tuple[dict[str, Any], str | None]] = {}


def script_for(workspace: Any, waiting: dict[str, Any]) -> str | None:
    """`read_script` once per waiting action (the pane repaints often while it waits)."""
    hit = _cache.get(id(workspace))
    if hit is None or hit[0] is not waiting:
        action, action_input = waiting.get("action", ""), waiting.get("action_input") or {}
        hit = _cache[id(workspace)] = (waiting, read_script(workspace, action, action_input))
    return hit[1]


def read_script(workspace: Any, action: str, action_input: dict[str, Any]) -> str | None:
    """The text of the script an Execute Script would run, or None (no such file, binary)."""
    name = action_input.get("script_name")
    if action != "Execute Script" or not isinstance(name, str) or workspace is None:
        return None
    try:
        data = workspace.read_bytes(name, limit=SCRIPT_PREVIEW_BYTES)
        return data.decode()
    except Exception:  # noqa: BLE001 - a missing or unreadable script runs as an error
        return None
