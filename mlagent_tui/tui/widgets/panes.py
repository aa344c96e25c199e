"""Plan, fact check, execution log and diff panes: each shows one step of a SessionView."""

from __future__ import annotations

import re
from itertools import islice

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Markdown, RichLog, Static

from ..view import StepView

LOG_MAX_LINES = 10_000


def highlight_updates(plan: str) -> str:
    """The step's `**updates**` are bold in Markdown; mark them so they stand out more."""
    return re.sub(r"\*\*(.+?)\*\*", r"**\1** ◀", plan)


class PlanPane(VerticalScroll):
    DEFAULT_CSS = "PlanPane { border: round $primary; } PlanPane > Markdown { margin: 0; }"

    def compose(self):  # noqa: ANN201
        yield Markdown("")

    def on_mount(self) -> None:
        self.border_title = "Research Plan and Status"
        self._shown: str | None = None

    def show(self, plan: str) -> None:
        if plan != self._shown:
            self._shown = plan
            self.query_one(Markdown).update(highlight_updates(plan) or "_no plan yet_")


class FactCheckPane(VerticalScroll):
    DEFAULT_CSS = "FactCheckPane { border: round $secondary; }"

    def compose(self):  # noqa: ANN201
        yield Static("", id="factcheck")

    def on_mount(self) -> None:
        self.border_title = "Reflection · Fact Check · Thought"

    def show(self, s: StepView | None) -> None:
        text = Text()
        if s is not None:
            self.border_title = f"Step {s.step}: Reflection · Fact Check · Thought"
            for label, value in (
                ("Reflection", s.reflection),
                ("Fact Check", s.fact_check),
                ("Thought", s.thought),
                ("Action", f"{s.action} {s.action_input or ''}".strip()),
            ):
                text.append(f"{label}: ", style="bold")
                text.append(f"{value or '-'}\n")
            for note in s.notes:
                text.append(f"• {note}\n", style="yellow")
        self.query_one("#factcheck", Static).update(text)


class ExecLog(RichLog):
    """The running script's output; follows new lines unless the person scrolled up."""

    DEFAULT_CSS = "ExecLog { border: round $accent; }"

    def __init__(self, **kwargs) -> None:  # noqa: ANN003
        super().__init__(max_lines=LOG_MAX_LINES, wrap=False, markup=False, **kwargs)
        self.step: int | None = None
        self.count = 0

    def on_mount(self) -> None:
        self.border_title = "Execution log"

    def show(self, s: StepView | None) -> None:
        """Show a step's output, writing only what is new when it is the same step."""
        step = s.step if s is not None else None
        total = s.log_total if s is not None else 0
        if step != self.step or total < self.count:
            self.clear()
            self.step, self.count = step, 0
            self.border_title = f"Execution log · step {step}" if step else "Execution log"
        if s is not None and total > self.count:
            # follow the end unless the person has scrolled up
            self.auto_scroll = self.is_vertical_scroll_end or self.max_scroll_y == 0
            new = min(total - self.count, len(s.log))
            # one write per batch: RichLog trims its buffer on every write once it is full
            self.write("\n".join(islice(s.log, len(s.log) - new, None)))
            self.count = total


class DiffPane(VerticalScroll):
    DEFAULT_CSS = "DiffPane { border: round $success; }"

    def compose(self):  # noqa: ANN201
        yield Static("", id="diffs")

    def on_mount(self) -> None:
        self.border_title = "Files changed"
        self._key: tuple | None = None

    def show(self, s: StepView | None) -> None:
        diffs = s.diffs if s is not None else []
        key = (s.step if s else None, len(diffs))
        if key == self._key:
            return
        self._key = key
        parts = []
        for path, author, diff in diffs:
            parts.append(Text(f"{path} ({author})", style="bold"))
            parts.append(Syntax(diff or "(binary or empty)", "diff", word_wrap=False))
        self.border_title = f"Files changed · {len(diffs)}"
        self.query_one("#diffs", Static).update(Group(*parts) if parts else "no file changes")
