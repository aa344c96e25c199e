"""What end.py, step.py and budget.py use of a running Session.

Those modules hold the Session's own steps (split off run.py for size); naming this Protocol
instead of `run.Session` keeps run.py above them, for types too. `budget` is typed loosely so
that budget.py can use this module without a circle.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..agent import Agent, AgentState
    from ..events import Recorder, SessionEnded
    from ..home import Home
    from ..llm import ChatModel
    from ..sandbox import Executor
    from ..store import Store
    from ..tasks import Task
    from ..workspace import Workspace
    from .config import ApprovalMode, Approver, SessionConfig
    from .lock import SessionLock
    from .state import Best


class SessionParts(Protocol):
    id: str
    home: Home
    store: Store
    task: Task
    config: SessionConfig
    lock: SessionLock
    model: ChatModel
    agent: Agent
    recorder: Recorder
    private: Path
    workspace: Workspace
    state: AgentState
    completed: int
    best: Best | None
    submitted: bool
    tokens_in: int
    tokens_out: int
    cost_usd: float
    cost_known: bool
    tokens_estimated: bool
    parse_errors: int
    approver: Approver | None
    approval: ApprovalMode
    budget: Any  # a budget.Budget
    ended: SessionEnded | None
    _started: float
    _stop_reason: str | None
    _executor: Executor | None

    def _finish(self, status: str, reason: str) -> None: ...
