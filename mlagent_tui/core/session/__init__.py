"""Sessions: one agent run on a task, its steps, its end, resume and fork, and its report."""

from .config import (
    Approval,
    ApprovalMode,
    Approver,
    SessionConfig,
    SessionResult,
    improvement_pct,
    snapshot_name,
)
from .end import SUCCESS_IMPROVEMENT_PCT
from .report import session_report
from .run import Session, solve_preview
from .state import LoadedState, SessionError, load_state

__all__ = [
    "SUCCESS_IMPROVEMENT_PCT",
    "Approval",
    "ApprovalMode",
    "Approver",
    "LoadedState",
    "Session",
    "SessionConfig",
    "SessionError",
    "SessionResult",
    "improvement_pct",
    "load_state",
    "session_report",
    "snapshot_name",
    "solve_preview",
]
