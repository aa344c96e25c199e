"""The session screen's modes: which keys work (live or replay, waiting, ended) and the layout
(wide: every pane side by side; narrow, e.g. 80x24: plan/step and log/files share a slot each).

A mixin of SessionScreen. Every list of keys (footer, command palette, help) asks
`check_action` or `binding_applies`, so none shows a key that does nothing on this screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.actions import parse
from textual.widgets import Footer

if TYPE_CHECKING:
    from ..view import SessionView

LIVE_RUNNING = {"pause", "hint", "edit_plan", "cycle_approval", "undo", "stop"}
WAITING = {"approve", "reject", "approve_all"}
REPLAY_ONLY = {"play", "speed"}
NARROW_ONLY = {"swap_top", "swap_bottom"}
TOP = ("factcheck-pane", "plan")  # the narrow top slot shows one of these, step first
BOTTOM = ("log", "diff")


def action_name(action: str) -> str:
    """`speed(1)` -> `speed`: the method a binding's action string calls."""
    return parse(action)[1]


class SessionModes:
    """Key availability and the narrow/wide layout; reads the screen's mode and view."""

    replay: bool
    view: SessionView
    narrow: bool = False
    top_choice: str | None = None  # narrow: None shows the step, else the pane picked with `t`
    bottom_choice: str | None = None  # narrow: None picks log or files by the step's content
    _key_state: tuple[Any, ...] | None = None

    # -- keys ----------------------------------------------------------------------------------
    def binding_applies(self, action: str) -> bool:
        """Whether a key belongs on this kind of screen (live or replay, narrow or wide)."""
        name = action_name(action)
        if name in REPLAY_ONLY:
            return self.replay
        if name in LIVE_RUNNING or name in WAITING:
            return not self.replay
        if name in NARROW_ONLY:
            return self.narrow
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Textual's hook: False hides (and disables) a key that does nothing right now."""
        if not self.binding_applies(action):
            return False
        if action in LIVE_RUNNING:
            return self.running  # type: ignore[attr-defined]
        if action in WAITING:
            return self.view.waiting is not None
        return True

    def sync_keys(self) -> None:
        """Refresh the footer when what the keys can do has changed (cheap otherwise)."""
        state = (self.replay, self.running, self.view.waiting is not None, self.narrow)  # type: ignore[attr-defined]
        if state != self._key_state:
            self._key_state = state
            self.refresh_bindings()  # type: ignore[attr-defined]

    # -- layout --------------------------------------------------------------------------------
    def set_narrow(self, narrow: bool) -> None:
        self.narrow = narrow
        self.set_class(narrow, "-narrow")  # type: ignore[attr-defined]
        # narrow, the footer's room goes to keys (ctrl+p still opens the palette)
        self.query_one(Footer).show_command_palette = not narrow  # type: ignore[attr-defined]
        self.apply_slots()
        self.sync_keys()

    def apply_slots(self, has_log: bool = True, has_diffs: bool = False) -> None:
        """Show every pane (wide) or one pane per slot (narrow)."""
        query = self.query_one  # type: ignore[attr-defined]
        if not self.narrow:
            for pane in (*TOP, *BOTTOM):
                query(f"#{pane}").display = True
            return
        top = self.top_choice or TOP[0]
        bottom = self.bottom_choice or ("diff" if has_diffs and not has_log else "log")
        for pane in TOP:
            query(f"#{pane}").display = pane == top
            query(f"#{pane}").border_subtitle = "t: plan" if pane == TOP[0] else "t: step"
        for pane in BOTTOM:
            query(f"#{pane}").display = pane == bottom
            query(f"#{pane}").border_subtitle = "d: files" if pane == "log" else "d: log"

    def action_swap_top(self) -> None:
        shown = self.top_choice or TOP[0]
        self.top_choice = TOP[1] if shown == TOP[0] else TOP[0]
        self.refresh_panes()  # type: ignore[attr-defined]

    def action_swap_bottom(self) -> None:
        shown = "log" if self.query_one("#log").display else "diff"  # type: ignore[attr-defined]
        self.bottom_choice = "diff" if shown == "log" else "log"
        self.refresh_panes()  # type: ignore[attr-defined]
