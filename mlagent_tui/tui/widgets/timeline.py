"""The timeline: one row per step (action, outcome); selecting a row selects that step."""

from __future__ import annotations

from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..view import SessionView, StepView

_STYLE = {"ok": "green", "error": "red", "rejected": "yellow", "failed": "bold red"}


def row_text(s: StepView) -> str:
    outcome = s.outcome or ("…" if not s.done else "")
    style = _STYLE.get(outcome, "red" if outcome.endswith("invalid") else "")
    style = style or ("cyan" if outcome.startswith(("validate", "submit")) else "")
    shown = f"[{style}]{outcome}[/]" if style else outcome
    action = s.action or ("(no action)" if s.outcome == "failed" else "(thinking)")
    return f"{s.step:>3}  {action}  {shown}"


class Timeline(OptionList):
    DEFAULT_CSS = "Timeline { width: 36; }"

    class StepSelected(Message):
        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    def __init__(self, **kwargs) -> None:  # noqa: ANN003
        super().__init__(**kwargs)
        self._rows: dict[int, str] = {}
        self._quiet = False

    def on_mount(self) -> None:
        self.border_title = "Steps"

    def show(self, view: SessionView, selected: int | None) -> None:
        """Add or rewrite rows that changed; highlight `selected` without re-announcing it."""
        rows = {n: row_text(s) for n, s in sorted(view.steps.items()) if n > 0}
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
