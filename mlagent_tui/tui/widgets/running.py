"""The Steps list's row for the step in progress of a live session: a spinner, what it is
doing ("working…" during the model call, the action once chosen) and how long it has taken.

A model call can take minutes before the step has any event of its own; without this row the
list would show nothing happening.
"""

from __future__ import annotations

from rich.markup import escape

from ..view import SessionView

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def running_step(view: SessionView) -> tuple[int, float | None, str] | None:
    """(step, when it began, what it does) of the live step in progress, else None."""
    if not view.live or view.state not in ("running", "waiting for you"):
        return None
    last = view.steps.get(view.last_step)
    if last is not None and view.last_step > 0 and not last.done:
        doing = last.action or "working…"
        return last.step, last.started_ts or view.step_started_ts, doing
    if view.max_steps and view.completed >= view.max_steps:
        return None  # the last step is done: the session is ending
    return view.completed + 1, view.step_started_ts, "working…"


def running_row(view: SessionView, width: int = 0) -> tuple[int, str] | None:
    """The row (step number, markup) for the step in progress, within `width` columns."""
    running = running_step(view)
    if running is None:
        return None
    step, started, doing = running
    if view.state == "waiting for you":  # the action is chosen: the person's turn
        tail, shown = "y/n?", "[b yellow]y/n?[/]"
    else:
        now = view.clock or view.last_ts or 0.0
        secs = max(0, int(now - started)) if started else 0
        doing = f"{SPINNER[secs % len(SPINNER)]} {doing}"
        tail = f"{secs // 60}:{secs % 60:02d}"
        shown = f"[dim]{tail}[/]"
    number = f"{step:>3}"
    room = width - len(number) - 4 - len(tail)  # two spaces either side of what it does
    if width and len(doing) > room:
        doing = doing[: room - 1] + "…" if room > 1 else "…"
    return step, f"{number}  [b]{escape(doing)}[/b]  {shown}"
