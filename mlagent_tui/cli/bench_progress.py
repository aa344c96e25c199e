"""`mlagent bench`'s progress on stderr: each run's start, each of its steps, and its end.

The runs of a bench run in worker threads; each line is printed under the lock that a model
load holds while it points stdout and stderr elsewhere (core.llm.local.STDIO_LOCK), so a line
waits for the load instead of vanishing, and no load can leave the process without output.
"""

from __future__ import annotations

import time
from typing import Any

from rich.markup import escape

from ..core.safe_text import visible
from .options import err


class BenchProgress:
    """Callbacks for a bench runner: `on_run(job, status, session_id)`, `on_event(job, event)`."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def _print(self, job: Any, text: str) -> None:
        from ..core.llm.stdio import STDIO_LOCK

        clock = f"[dim]{time.monotonic() - self.started:7.1f}s[/] "
        who = escape(visible(f"{job.task} {job.model} {job.agent} #{job.run_index}"))
        with STDIO_LOCK:
            err.print(f"{clock}{who}: {text}", highlight=False, soft_wrap=True)

    def on_run(self, job: Any, status: str, session_id: str | None) -> None:
        if status == "running":
            self._print(job, f"started ({session_id})")
        else:
            self._print(job, f"{escape(status)} ({session_id or 'no session'})")

    def on_event(self, job: Any, event: Any) -> None:
        p = event.payload
        if p.kind == "action_finished":
            outcome = "ok" if p.ok else "error"
            self._print(job, escape(visible(f"step {event.step} {p.action} [{outcome}]")))
