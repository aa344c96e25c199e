"""Plan, fact check, execution log and diff panes: each shows one step of a SessionView."""

from __future__ import annotations

import re
from itertools import islice

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Markdown, RichLog, Static

from ..view import StepView
from .action_input import input_parts

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

    def show(self, plan: str, agent: str = "research") -> None:
        # the solve agent writes a short plan, not MLAgentBench's Research Plan and Status
        self.border_title = "Plan" if agent == "solve" else "Research Plan and Status"
        if plan != self._shown:
            self._shown = plan
            self.query_one(Markdown).update(highlight_updates(plan) or "_no plan yet_")


SOLVE_MODES = ("draft", "debug", "improve")


def step_text(s: StepView, agent: str) -> tuple[str, list[RenderableType]]:
    """The pane's title and body for a step, labelled as the step's agent writes it."""
    parts: list[RenderableType] = []
    head = Text()
    if agent == "solve":
        mode, _, rest = s.thought.partition(": ")  # "draft: write solution.py, run it ..."
        known = mode in SOLVE_MODES
        title = f"Step {s.step}: {f'{mode} · ' if known else ''}{s.action or 'no answer'}"
        if s.thought:
            head.append("Mode: " if known else "Thought: ", style="bold")
            head.append(f"{mode} — {rest}\n" if known else f"{s.thought}\n")
    else:
        title = f"Step {s.step}: Reflection · Fact Check · Thought"
        for label, value in (
            ("Reflection", s.reflection),
            ("Fact Check", s.fact_check),
            ("Thought", s.thought),
        ):
            head.append(f"{label}: ", style="bold")
            head.append(f"{value or '-'}\n")
    head.append("Action: ", style="bold")
    head.append(f"{s.action or '-'}\n")
    head.rstrip()
    parts.append(head)
    parts.extend(input_parts(s.action_input, agent))
    if s.notes:
        notes = Text()
        for note in s.notes:
            notes.append(f"• {note}\n", style="yellow")
        notes.rstrip()
        parts.append(notes)
    return title, parts


class FactCheckPane(VerticalScroll):
    """The step's own words: Reflection, Fact Check, Thought and Action (research agent), or
    the mode and the script (solve agent); notes such as errors and hints below."""

    DEFAULT_CSS = "FactCheckPane { border: round $secondary; }"

    def compose(self):  # noqa: ANN201
        yield Static("", id="factcheck")

    def on_mount(self) -> None:
        self.border_title = "Step"

    def show(
        self,
        s: StepView | None,
        agent: str = "research",
        waiting: dict | None = None,
        workspace: object = None,
    ) -> None:
        """The step; when its action waits for approval, what `y` runs comes first."""
        if s is None:
            self.query_one("#factcheck", Static).update("")
            return
        title, parts = step_text(s, agent)
        if waiting is not None and waiting.get("step") == s.step:
            from .approval import approval_parts, script_for  # approval imports this module

            title = f"Step {s.step}: approve {waiting.get('action') or '?'}? (y/n)"
            if waiting is not getattr(self, "_waiting", None):
                self._waiting = waiting
                self.scroll_home(animate=False)
            parts = [*approval_parts(waiting, agent, script_for(workspace, waiting)), *parts]
        self.border_title = title
        self.query_one("#factcheck", Static).update(Group(*parts))


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
            if diff:
                parts.append(Syntax(diff, "diff", word_wrap=False))
            else:  # e.g. an undo that put back the same text, or an empty file
                parts.append(
                    Text(
                        "(no text difference: an empty file, or the same text as before)",
                        style="dim",
                    )
                )
        self.border_title = f"Files changed · {len(diffs)}"
        self.query_one("#diffs", Static).update(Group(*parts) if parts else "no file changes")
