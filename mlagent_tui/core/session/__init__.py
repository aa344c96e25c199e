"""Sessions: one agent run on a task, its steps, its end, resume and fork, and its report."""

from .budget import Budget, BudgetLimits
from .config import (
    Approval,
    ApprovalMode,
    Approver,
    SessionConfig,
    SessionResult,
    improvement_pct,
    snapshot_name,
    solve_preview,
)
from .diagnose import error_line, score_text
from .end import SUCCESS_IMPROVEMENT_PCT
from .fork_node import fork_node
from .orphans import end_orphans
from .report import session_report
from .run import Session
from .state import LoadedState, SessionError, SessionSetupError, load_state

__all__ = [
    "SUCCESS_IMPROVEMENT_PCT",
    "Approval",
    "ApprovalMode",
    "Approver",
    "Budget",
    "BudgetLimits",
    "LoadedState",
    "Session",
    "SessionConfig",
    "SessionError",
    "SessionResult",
    "SessionSetupError",
    "end_orphans",
    "error_line",
    "fork_node",
    "improvement_pct",
    "load_state",
    "score_text",
    "session_report",
    "snapshot_name",
    "solve_preview",
]
