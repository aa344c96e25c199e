"""The timeline: one row per step (action, outcome); selecting a row selects that step."""

from __future__ import annotations

from rich.markup import escape
from textual.events import Resize
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..view import SessionView, StepView
from .running import running_row

_STYLE = {"ok": "green", "error": "red", "rejected": "yellow", "failed": "bold red"}


def row_text(s: StepView, width: int = 0) -> str:
    """One line whatever the step number: within `width` columns (0: no limit) the action
    name gives way, cut with an ellipsis, so the number and the outcome always show."""
    outcome = s.outcome or ("…" if not s.done else "")
    style = _STYLE.get(outcome, "red" if outcome.endswith("invalid") else "")
    style = style or ("cyan" if outcome.startswith(("validate", "submit")) else "")
    shown = f"[{style}]{escape(outcome)}[/]" if style else escape(outcome)
    action = s.action or ("(no action)" if s.outcome == "failed" else "(thinking)")
    number = f"{s.step:>3}"
    room = width - len(number) - 4 - len(outcome)  # two spaces either side of the action
    if width and len(action) > room:
        action = action[: room - 1] + "…" if room > 1 else "…"
    return f"{number}  {escape(action)}  {shown}"


class Timeline(OptionList):
    # a stable gutter: rows are cut to one width whether or not the scrollbar shows; a thin
    # scrollbar and no padding leave an 80x24 pane room for the action's name
    DEFAULT_CSS = """
    Timeline { width: 36; padding: 0; scrollbar-gutter: stable; scrollbar-size-vertical: 1; }
    """

    class StepSelected(Message):
        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    def __init__(self, **kwargs) -> None:  # noqa: ANN003
        super().__init__(**kwargs)
        self._rows: dict[int, str] = {}
        self._quiet = False
        self._shown: tuple[SessionView, int | None] | None = None

    def on_mount(self) -> None:
        self.border_title = "Steps"

    def show(self, view: SessionView, selected: int | None) -> None:
        """Add or rewrite rows that changed; highlight `selected` without re-announcing it."""
        self._shown = (view, selected)
        width = self.scrollable_content_region.width
        rows = {n: row_text(s, width) for n, s in sorted(view.steps.items()) if n > 0}
        if (running := running_row(view, width)) is not None:
            rows[running[0]] = running[1]  # the step in progress: spinner and elapsed time
        if list(rows) != list(self._rows):
            self.clear_options()
            self.add_options([Option(text, id=str(n)) for n, text in rows.items()])
        else:
            for n, text in rows.items():
                if self._rows.get(n) != text:
                    self.replace_option_prompt(str(n), text)
        self._rows = rows
        if selected is not None and str(selected) in {o.id for o in self.options}:
            index = self.get_option_index(str(selected))
            if self.highlighted != index:
                self._quiet = True
                self.highlighted = index

    def on_resize(self, event: Resize) -> None:
        if self._shown is not None:  # rows are cut to the width: cut them again
            self.show(*self._shown)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if self._quiet:
            self._quiet = False
            return
        if event.option.id is not None:
            self.post_message(self.StepSelected(int(event.option.id)))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.StepSelected(int(event.option.id)))
