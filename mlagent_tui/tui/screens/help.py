"""The help screen: every key of the screen it was opened from, read from its live bindings.

The rows come from the screen's and the app's binding maps (after the user's keymap is
applied), so the list stays true as keys are added or remapped. A screen that knows which keys
work (the session screen: live or replay) is asked, so no list shows a key that does nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial

from textual.actions import parse
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static


def help_title(screen: Screen) -> str:
    """The help screen's heading: the screen in words (its `help_name`, else its class name
    as words: PlanEditor -> plan editor)."""
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", type(screen).__name__.removesuffix("Screen"))
    name = getattr(screen, "help_name", "") or words.lower()
    return f"Keys: {name or 'this screen'}"


def key_rows(screen: Screen) -> list[tuple[str, str, str]]:
    """(keys, description, binding id) for the screen's own bindings, then the app's: the
    keys of this kind of screen (a live session's keys, or a replay's)."""
    return [row[:3] for row in key_actions(screen)]


def palette_commands(screen: Screen) -> Iterator[SystemCommand]:
    """The screen's keys that work now as command-palette entries (title, key, its action)."""
    for keys, text, _binding_id, action in key_actions(screen, app_too=False, now=True):
        yield SystemCommand(text, f"key: {keys}", partial(screen.run_action, action))


def works(screen: Screen, action: str, now: bool) -> bool:
    """Whether a screen's key does something: right now (`check_action`, as the footer asks),
    or on this kind of screen at all (`binding_applies`, where the screen defines it)."""
    if now:
        _, name, params = parse(action)
        return bool(screen.check_action(name, params))
    applies = getattr(screen, "binding_applies", None)
    return applies is None or bool(applies(action))


def key_actions(
    screen: Screen, app_too: bool = True, now: bool = False
) -> list[tuple[str, str, str, str]]:
    """(keys, description, binding id, action) for the screen's bindings, then the app's."""
    app = screen.app
    rows: list[tuple[str, str, str, str]] = []
    seen: set[tuple[int, str]] = set()
    for node in (screen, app) if app_too else (screen,):
        by_action: dict[str, list[Binding]] = {}
        bindings_map = node._bindings.copy()
        bindings_map.apply_keymap(app._keymap)  # as the keys really are, after keymap.toml
        for _key, binding in bindings_map:
            by_action.setdefault(binding.action, []).append(binding)
        for action, bindings in by_action.items():
            if (id(node), action) in seen or (node is screen and not works(screen, action, now)):
                continue
            seen.add((id(node), action))
            first = bindings[0]
            keys = " / ".join(dict.fromkeys(app.get_key_display(b) for b in bindings))
            text = first.description or first.tooltip or action.replace("_", " ")
            rows.append((keys, text, first.id or "", action))
    return rows


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "close", "Close", id="help.close"),
        Binding("q", "close", "Close", show=False, id="help.close_q"),
    ]

    def __init__(self, rows: list[tuple[str, str, str]], title: str = "Keys") -> None:
        super().__init__()
        self.rows = rows
        self.heading = title

    def compose(self) -> ComposeResult:
        yield Static(f"{self.heading} — escape or q closes", id="help-title")
        yield DataTable(id="help-keys", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("key", "what it does", "keymap id")
        for keys, text, binding_id in self.rows:
            table.add_row(keys, text, binding_id)
        table.focus()

    def action_close(self) -> None:
        self.dismiss()
