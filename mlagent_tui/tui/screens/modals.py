"""Small modal screens: a line of text (hint, rejection reason), the plan editor, yes/no."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, TextArea

MODAL_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{ width: 80%; max-width: 100; height: auto; max-height: 90%;
    border: thick $primary; background: $surface; padding: 1 2; }}
{name} TextArea {{ height: 12; }}
{name} Label {{ width: 100%; }}
{name} #error {{ color: $error; }}
{name} Horizontal {{ height: auto; }}
"""


class TextPrompt(ModalScreen[str | None]):
    """Ask for one line of text; Enter gives it, Escape cancels (None)."""

    DEFAULT_CSS = MODAL_CSS.format(name="TextPrompt")
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, placeholder: str = "") -> None:
        super().__init__()
        self.title_text, self.placeholder = title, placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text)
            yield Input(placeholder=self.placeholder, id="text")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PlanEditor(ModalScreen[str | None]):
    """Edit the Research Plan and Status; an empty plan is refused with a message.

    ctrl+a selects the whole text (so typing replaces it) and ctrl+l or the Clear button
    empties it to write a new plan; ctrl+z undoes either. The footer and `?` list the keys.
    """

    DEFAULT_CSS = MODAL_CSS.format(name="PlanEditor") + "PlanEditor TextArea { height: 10; }"
    BINDINGS = [
        # priority: the focused text area binds ctrl+a and ctrl+e itself (to the line's start
        # and end, which home and end still do); the footer lists priority keys in this order
        Binding("ctrl+s", "save", "Save plan", id="plan.save", priority=True),
        Binding("ctrl+a", "select_all", "Select all", id="plan.select_all", priority=True),
        Binding("ctrl+l", "clear", "Clear", id="plan.clear", priority=True),
        Binding("ctrl+e", "external_editor", "Open in $EDITOR", id="plan.editor", priority=True),
        Binding("escape", "cancel", "Cancel", id="plan.cancel"),
    ]

    def __init__(self, plan: str) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical():
            # one line, so that the buttons fit 80x24; the footer lists every key
            yield Label("Edit the plan: ctrl+s saves, esc cancels (keys below)")
            yield TextArea(self.plan, id="plan")
            yield Label("", id="error")
            with Horizontal():
                yield Button("Save", variant="primary", id="save")
                yield Button("Clear", id="clear")
                yield Button("Cancel", id="cancel")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        # the person usually adds to the plan or updates its last item: start at the end
        area = self.query_one(TextArea)
        area.move_cursor(area.document.end)
        area.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        elif event.button.id == "clear":
            self.action_clear()
        else:
            self.action_cancel()

    def action_external_editor(self) -> None:
        """Edit the text in $EDITOR (or $VISUAL, else vi) with the app suspended."""
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        area = self.query_one(TextArea)
        with tempfile.TemporaryDirectory(prefix="mlagent-plan-") as tmp:
            path = Path(tmp) / "plan.md"
            path.write_text(area.text)
            try:
                with self.app.suspend():
                    done = subprocess.run([*shlex.split(editor), str(path)], check=False)
            except Exception as exc:  # noqa: BLE001 - no terminal to hand over, editor missing
                self.query_one("#error", Label).update(f"cannot run {editor!r}: {exc}")
                return
            if done.returncode != 0:
                self.query_one("#error", Label).update(
                    f"{editor} exited with {done.returncode}; the text is unchanged"
                )
                return
            area.text = path.read_text()
        self.query_one("#error", Label).update("")

    def action_select_all(self) -> None:
        self.query_one(TextArea).select_all()

    def action_clear(self) -> None:
        """Empty the text (undoable: the text area records it) and keep typing there."""
        area = self.query_one(TextArea)
        area.clear()
        area.focus()

    def action_save(self) -> None:
        text = self.query_one(TextArea).text
        if not text.strip():
            self.query_one("#error", Label).update("The plan cannot be empty; write one or cancel.")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """A yes/no question."""

    DEFAULT_CSS = MODAL_CSS.format(name="Confirm")
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question)
            with Horizontal():
                yield Button("Yes (y)", variant="error", id="yes")
                yield Button("No (n)", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
