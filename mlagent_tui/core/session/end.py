"""How a session ends: the auto-submit, a crash recorded as a failure, and its result."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..events import SessionEnded
from .config import SessionResult, improvement_pct
from .diagnose import diagnose
from .state import SessionSetupError
from .step import auto_submit

if TYPE_CHECKING:
    from .parts import SessionParts

SUCCESS_IMPROVEMENT_PCT = 10.0
log = logging.getLogger(__name__)


def finish(s: SessionParts, status: str, reason: str) -> None:
    """End the session, auto-submitting the best validated submission (MLGym)."""
    score, valid, medal = own_submission(s) or auto_submit(s)
    s.ended = SessionEnded(
        reason=reason, status=status, final_score=score, valid=valid, medal=medal
    )
    s.recorder.emit(s.ended, step=s.completed)


def end_after_crash(s: SessionParts, exc: BaseException) -> None:
    """An unexpected error inside a step: record the session as failed (so it can be
    resumed), auto-submitting where that still works."""
    log.exception("session %s crashed", s.id, exc_info=exc)
    reason = f"crashed: {type(exc).__name__}: {exc}"[:2_000]
    try:
        finish(s, "failed", reason)
    except Exception:  # noqa: BLE001 - the end itself must be recorded, graded or not
        log.exception("auto-submit after the crash of %s failed", s.id)
        s.ended = SessionEnded(reason=reason, status="failed")
        s.recorder.emit(s.ended, step=s.completed)


def own_submission(s: SessionParts) -> tuple[float | None, bool, str | None] | None:
    """This session's own last submission (a fork's parent's does not count), if any."""
    events = s.store.events(s.id, kinds=["score_recorded"])
    subs = [e.payload for e in events if e.payload.split == "submit"] if s.submitted else []
    return (subs[-1].score, subs[-1].valid, subs[-1].medal) if subs else None


def session_result(s: SessionParts) -> SessionResult:
    events = s.store.events(s.id, kinds=["action_finished", "score_recorded", "session_ended"])
    why, error = diagnose(s.ended, events)
    ended = s.ended or SessionEnded(reason="not finished", status="stopped")
    improvement = improvement_pct(ended.final_score if ended.valid else None, s.task.spec)
    return SessionResult(
        session_id=s.id,
        task=s.task.name,
        steps=s.completed,
        status=ended.status,
        reason=ended.reason,
        final_score=ended.final_score,
        valid=ended.valid,
        medal=ended.medal,
        improvement_pct=improvement,
        success=improvement is not None and improvement >= SUCCESS_IMPROVEMENT_PCT,
        parse_errors=s.parse_errors,
        tokens_in=s.tokens_in,
        tokens_out=s.tokens_out,
        cost_usd=round(s.cost_usd, 6),
        cost_known=s.cost_known,
        tokens_estimated=s.tokens_estimated,
        wall_seconds=round(time.monotonic() - s._started, 3),
        why=why,
        last_error=error,
    )


def end_interrupted(s: SessionParts, what: str) -> None:
    """SIGINT or SIGTERM: record the end as `interrupted`, ungraded (it is resumable)."""
    s.ended = SessionEnded(reason=f"interrupted by {what}", status="interrupted")
    s.recorder.emit(s.ended, step=s.completed)


@contextmanager
def ends_if_raises(s: SessionParts, what: str) -> Iterator[None]:
    """A failure while setting a new session up ends it, recorded, before it is raised (as a
    SessionSetupError: the session exists, so it is no usage error)."""
    try:
        yield
    except BaseException as exc:
        cause = str(exc) or type(exc).__name__  # e.g. KeyboardInterrupt
        s.ended = SessionEnded(reason=f"failed {what}: {cause}", status="failed")
        s.recorder.emit(s.ended, step=s.completed)
        s.lock.release()
        if isinstance(exc, Exception):
            raise SessionSetupError(f"session {s.id} failed {what}: {exc}", s.id) from exc
        raise
