"""Why a session ended the way it did, in one line, and the last error it met.

The end reason alone ("step budget of 5 used") hides the cause a person needs: the script's
SyntaxError, "submission.csv does not exist". These read the stored events (so a result, a
progress line and the TUI say the same) and never print "score None".
"""

from __future__ import annotations

import re

from ..events import Event, SessionEnded

MAX_LINE_CHARS = 1_000  # a safety cap for a one-line message, far past any real error line
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b(:.*)?$")
_FRAME = re.compile(r'^File "([^"]+)", line (\d+)')
_EXECUTED = re.compile(r"^The script has been executed \((.*)\)\. Here is the output:$")


def _cap(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def error_line(text: str) -> str:
    """The line of an observation that says what went wrong: a traceback's exception (with
    the file and line it points at), a killed script's limit, else the first line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    status = _EXECUTED.match(lines[0])
    for i in range(len(lines) - 1, 0 if status else -1, -1):
        if _EXCEPTION.match(lines[i]):
            where = next(
                (m for m in (_FRAME.match(x) for x in reversed(lines[:i])) if m is not None), None
            )
            at = f" ({where.group(1).rsplit('/', 1)[-1]}, line {where.group(2)})" if where else ""
            tail = f" [{status.group(1)}]" if status else ""
            return _cap(lines[i] + at + tail)
    if status:
        return _cap(f"script ended: {status.group(1)}; last output: {lines[-1]}")
    return _cap(lines[0])


def last_error(events: list[Event]) -> str | None:
    """The most recent error: a failed step (its action and message; an invalid Validate or
    Final Answer is one) or the session's own failure (a model error, a crash)."""
    for event in reversed(events):
        p = event.payload
        if p.kind == "action_finished" and not p.ok:
            return f"step {event.step} ({p.action}): {error_line(p.observation)}"
        if p.kind == "session_ended" and p.status == "failed":
            return _cap(p.reason)
    return None


def score_text(score: float | None, valid: bool, medal: str | None = None) -> str:
    """A score for people: "0.8123 (bronze)", or "no valid score" (never "None")."""
    if not valid or score is None:
        return "no valid score"
    return f"{score:.4g}" + (f" ({medal})" if medal else "")


def diagnose(ended: SessionEnded | None, events: list[Event]) -> tuple[str, str | None]:
    """(why, last error): one line on how the session ended and what went wrong."""
    error = last_error(events)
    if ended is None:
        return "not finished", error
    why = _cap(ended.reason)
    cause = ""
    if ended.status in ("finished", "budget", "stopped"):
        if ended.valid and ended.final_score is not None:
            graded = "score" if ended.status == "finished" else "auto-submitted, score"
            return f"{why}; {graded} {score_text(ended.final_score, True, ended.medal)}", error
        submits = [e.payload for e in events if e.kind == "score_recorded"]
        submits = [p for p in submits if p.split == "submit"]
        cause = _cap(submits[-1].error or "invalid") if submits else "none graded"
        why += "; " + (
            cause if cause.startswith("no submission") else f"no valid submission: {cause}"
        )
    if error and error not in why and not (cause and cause in error):
        why += f"; last error at {error}"
    return why, error
