"""The status bar: task, model, agent, state, step n of max, time, tokens, cost, best, approval."""

from __future__ import annotations

from textual.widgets import Static

from ..view import SessionView


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: auto; max-height: 2; background: $panel; padding: 0 1; }
    StatusBar.-waiting { background: $warning; color: $text; }
    """

    def show(self, view: SessionView, note: str = "", lead: str = "") -> None:
        self.set_class(view.state == "waiting for you", "-waiting")
        head = f"[b]{lead}[/b] · " if lead else ""
        self.update(head + view.status_line() + (f" · {note}" if note else ""))
