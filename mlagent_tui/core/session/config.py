"""What a session is configured with and returns, and how a stored one is found again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..events import AgentResponse
from ..llm import ChatModel, make_model
from ..store import Store
from ..tasks import Task, TaskSpec, find_task
from ..workspace import Workspace, WorkspaceError
from .state import SessionError

ApprovalMode = Literal["auto", "confirm-exec", "confirm-all"]


LOCAL_TEMPERATURE = 0.2


class SessionConfig(BaseModel):
    task: str | None = None
    task_dir: str | None = None
    model: str = "local"
    agent: Literal["research", "solve"] = "research"
    sandbox: Literal["local", "docker"] = "local"
    max_steps: int | None = None
    max_minutes: float | None = None
    max_cost: float | None = None
    max_tokens: int | None = None
    approval: ApprovalMode = "auto"
    seed: int = 0
    k_recent: int = 3
    model_options: dict[str, Any] = Field(default_factory=dict)
    temperature: float | None = Field(default=None, ge=0, le=2)

    def sampling_temperature(self) -> float | None:
        """The agent's sampling temperature: as configured, else LOCAL_TEMPERATURE for a local
        GGUF (the 135M model's scripts break at the agents' usual 0.7), else the agent's own."""
        if self.temperature is not None:
            return self.temperature
        from ..llm import ModelSpec

        try:
            local = ModelSpec.parse(self.model).backend == "local"
        except ValueError:
            return None
        return LOCAL_TEMPERATURE if local else None


class Approval(BaseModel):
    approved: bool
    reason: str = ""


class SessionResult(BaseModel):
    session_id: str
    task: str
    steps: int
    status: str
    reason: str
    final_score: float | None
    valid: bool
    medal: str | None
    improvement_pct: float | None
    success: bool
    parse_errors: int
    tokens_in: int
    tokens_out: int
    cost_usd: float
    wall_seconds: float


Approver = Callable[[AgentResponse], Approval]


def snapshot_name(step: int) -> str:
    return f"step-{step:04d}"


def config_and_task(store: Store, session_id: str) -> tuple[SessionConfig, Task]:
    started = store.events(session_id, kinds=["session_started"])
    if not started:
        raise SessionError(f"session {session_id} has no start event")
    raw = dict(started[0].payload.config)
    folder = raw.pop("task_folder", None)
    config = SessionConfig.model_validate(raw)
    task = find_task(task_dir=folder) if folder else find_task(config.task, config.task_dir)
    return config, task


def resumed_model(config: SessionConfig, consumed: int) -> ChatModel:
    """A replay model continues at its first response not yet consumed."""
    if config.model.startswith("replay:"):
        return make_model(config.model, start=consumed)
    return make_model(config.model, **config.model_options)


def latest_snapshot(ws: Workspace, step: int) -> str:
    names = [n for n in ws.snapshots() if n.startswith("step-") and int(n[5:]) <= step]
    if not names:
        raise WorkspaceError(f"no snapshot at or before step {step}")
    return names[-1]


def step_ranges(steps: list[int]) -> str:
    return f"{steps[0]}-{steps[-1]}" if steps else ""


def improvement_pct(score: float | None, spec: TaskSpec) -> float | None:
    """MLAgentBench's improvement over the baseline, in percent, signed by metric direction."""
    base = spec.baseline.score
    if score is None or not base:
        return None
    sign = 1 if spec.metric.higher_is_better else -1
    return round(sign * (score - base) / abs(base) * 100, 3)
