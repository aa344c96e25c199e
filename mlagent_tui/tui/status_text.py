"""The status line's parts, each with a priority and a short form, and the fitting that keeps
the line within its two rows at any width (80x24 included) without cutting what matters.

Whatever the width, the state, the step, the score, a non-default approval mode, a note (an
undo queued, what the keys do while waiting) and why the session stopped stay; the model, the
agent, the token count and the task's name give way first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.markup import escape

from ..core.safe_text import visible

SEP = " · "
ENDED = ("finished", "failed", "stopped", "budget", "interrupted")


@dataclass
class Part:
    """One item of the status line: lower `rank` stays longer; `short` replaces `text` when
    the line is too long."""

    rank: int
    text: str
    short: str = ""
    style: str = ""

    def plain(self, short: bool, width: int) -> str:
        text = (self.short or self.text) if short else self.text
        return text if cell_len(text) <= width else text[: max(width - 1, 0)] + "…"

    def markup(self, short: bool, width: int) -> str:
        text = escape(self.plain(short, width))
        return f"[{self.style}]{text}[/]" if self.style else text


def short_model(model: str, width: int) -> str:
    """A model name that fits `width` columns: a file path by its name, a long name cut in the
    middle (the provider and the end, e.g. the size, say the most)."""
    if ":" in model and "/" in model:  # replay:/a/b/x.jsonl, local:/a/m.gguf
        kind, path = model.split(":", 1)
        model = f"{kind}:{path.rsplit('/', 1)[-1]}"
    if len(model) <= width:
        return model
    head = (width - 1) // 2
    return f"{model[:head]}…{model[-(width - 1 - head) :]}"


def status_parts(view: Any, note: str = "", lead: str = "") -> list[Part]:
    """The parts in reading order, from a SessionView (not imported: the view imports this
    module). Names and reasons are text (shown, never markup)."""
    parts: list[Part] = []
    if lead:
        parts.append(Part(0, lead, style="b"))
    parts.append(Part(4, visible(view.task) or "?"))
    parts.append(
        Part(
            7,
            visible(short_model(view.model or "?", 28)),
            visible(short_model(view.model or "?", 14)),
        )
    )
    parts.append(Part(8, visible(view.agent) or "?"))
    parts.append(Part(0, view.state, style="b"))
    total = view.max_steps or "?"
    parts.append(Part(1, f"step {view.last_step} of {total}", f"{view.last_step}/{total}"))
    mins, secs = divmod(int(view.elapsed_s), 60)
    parts.append(Part(3, f"{mins}:{secs:02d}"))
    usage = view.usage_text()
    parts.append(Part(9, usage, usage.replace(" cost unknown", "")))
    parts.extend(_score_parts(view))
    mode = view.approval
    parts.append(Part(5 if mode == "auto" else 1, f"approval {mode}", f"appr {mode}"))
    if view.state in ("failed", "stopped", "budget", "interrupted") and view.ended_reason:
        style = "b red" if view.state == "failed" else "b yellow"
        parts.append(Part(0, visible(view.ended_reason), style=style))
    if view.speed:
        parts.append(Part(3, view.speed))
    if note:
        parts.append(Part(1, note, _short_note(note)))
    return parts


def _score_parts(view: Any) -> list[Part]:
    """The best validate score while the session runs; once it has ended, the graded final
    score (the session's result), which may differ from the best validate score."""
    base = (
        []
        if view.baseline is None
        else [Part(6, f"baseline {view.baseline:.4g}", f"base {view.baseline:.4g}")]
    )
    if view.state in ENDED and view.final_score is not None:
        return [Part(2, f"final {view.final_score:.4g}", style="b"), *base]
    best = "best -" if view.best is None else f"best {view.best:.4g}"
    return [Part(2, best), *base]


def _short_note(note: str) -> str:
    head = note.split(":", 1)[0]
    return head if len(head) < len(note) else note


def status_line(view: Any, note: str = "", lead: str = "") -> str:
    """Every part, long form, on one line (markup)."""
    return SEP.join(p.markup(False, 10_000) for p in status_parts(view, note, lead))


def fit_status(parts: list[Part], width: int, rows: int = 2) -> str:
    """The parts laid out in at most `rows` lines of `width` columns (markup, lines joined by
    newlines): first in their long forms, then short, then without the lowest-ranked ones."""
    width = max(width, 10)
    for short in (False, True):
        if len(_layout(parts, short, width)) <= rows:
            return _markup(parts, short, width)
    kept = list(parts)
    while len(kept) > 1 and len(_layout(kept, True, width)) > rows:
        worst = max(p.rank for p in kept)
        drop = max(i for i, p in enumerate(kept) if p.rank == worst)
        del kept[drop]
    return _markup(kept, True, width)


def _layout(parts: list[Part], short: bool, width: int) -> list[list[int]]:
    """Which parts go on which line, greedily; a line break replaces a separator."""
    lines: list[list[int]] = []
    used = 0
    for i, part in enumerate(parts):
        size = cell_len(part.plain(short, width))
        if lines and used + len(SEP) + size <= width:
            lines[-1].append(i)
            used += len(SEP) + size
        else:
            lines.append([i])
            used = size
    return lines


def _markup(parts: list[Part], short: bool, width: int) -> str:
    return "\n".join(
        SEP.join(parts[i].markup(short, width) for i in line)
        for line in _layout(parts, short, width)
    )
