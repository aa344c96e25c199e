"""The status bar: task, model, agent, state, step n of max, time, tokens, cost, best, approval."""

from __future__ import annotations

from textual.events import Resize
from textual.widgets import Static

from ..status_text import fit_status, status_parts
from ..view import SessionView


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: auto; max-height: 2; background: $panel; padding: 0 1; }
    StatusBar.-waiting { background: $warning; color: $text; }
    """

    _shown: tuple[SessionView, str, str] | None = None

    def show(self, view: SessionView, note: str = "", lead: str = "") -> None:
        """Two rows at most: at 80 columns the parts that matter least give way."""
        self._shown = (view, note, lead)
        self.set_class(view.state == "waiting for you", "-waiting")
        width = self.content_region.width or self.app.size.width - 2
        self.update(fit_status(status_parts(view, note, lead), width))

    def on_resize(self, event: Resize) -> None:
        if self._shown is not None:
            self.show(*self._shown)
