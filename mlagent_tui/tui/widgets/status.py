"""The status bar: task, model, agent, state, step n of max, time, tokens, cost, best, approval."""

from __future__ import annotations

from textual.widgets import Static

from ..view import SessionView


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: auto; max-height: 2; background: $panel; padding: 0 1; }
    StatusBar.-waiting { background: $warning; color: $text; }
    """

    def show(self, view: SessionView, note: str = "") -> None:
        self.set_class(view.state == "waiting for you", "-waiting")
        self.update(view.status_line() + (f" · {note}" if note else ""))
