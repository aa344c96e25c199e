"""What a session is configured with and returns, and how a stored one is found again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from ..events import AgentResponse
from ..llm import ChatModel, check_model, make_model
from ..store import Store
from ..tasks import Task, TaskError, TaskSpec, find_task, task_preview
from ..workspace import Workspace, WorkspaceError
from .state import SessionError

ApprovalMode = Literal["auto", "confirm-exec", "confirm-all"]


LOCAL_TEMPERATURE = 0.2


class SessionConfig(BaseModel):
    task: str | None = None
    task_dir: str | None = None
    model: str = "local"
    agent: Literal["research", "solve", "search"] = "research"
    sandbox: Literal["local", "docker"] = "local"
    max_steps: int | None = Field(default=None, ge=1)
    max_minutes: float | None = Field(default=None, gt=0)
    max_cost: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, ge=1)
    approval: ApprovalMode = "auto"
    seed: int = 0
    k_recent: int = 3
    # e.g. api_base, api_key_env (the variable's name), price_in/price_out: stored with the
    # session so resume and fork reach the same server; a secret itself is never stored.
    model_options: dict[str, Any] = Field(default_factory=dict)
    temperature: float | None = Field(default=None, ge=0, le=2)
    # the same action with the same input, failing or giving the same result, this many times
    # in a row ends the session (its best validated submission graded); 0: never
    stuck_after: int = Field(default=5, ge=0)
    # the search agent: its policy, candidates in flight, and a bound on the tree's nodes
    policy: Literal["greedy", "mcts", "evolutionary"] = "greedy"
    workers: int = Field(default=2, ge=1, le=32)
    max_nodes: int | None = Field(default=None, ge=1)
    from_starter: bool = True  # the first node is the task's starter script, run as given
    # the solve agent's first step runs the task's starter as given (no model call) and its
    # model calls improve on it. False where a stored session predates it, so a replay or a
    # resume of an older solve session runs as it did; `mlagent run`, the app and
    # `mlagent-train eval` set it from --starter/--no-starter (default on)
    solve_starter: bool = False
    # once a run is valid, each solve step changes one setting of the best valid script
    # (core.agent.solve_edit). None: as solve_starter, so stored sessions that predate it
    # run as they did and a session from the starter improves it by edits
    solve_edits: bool | None = None
    # an edit's setting is the model's choice from a menu (core.agent.menu). False where a
    # stored session predates it (every stored config holds every field, so one with
    # solve_edits and without solve_menu was stored before): its setting was drawn at random
    solve_menu: bool = True

    @model_validator(mode="before")
    @classmethod
    def _no_menu_before_it_existed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "solve_edits" in data and "solve_menu" not in data:
            return {**data, "solve_menu": False}
        return data

    @model_validator(mode="after")
    def _edits_follow_the_starter(self) -> SessionConfig:
        if self.solve_edits is None:
            self.solve_edits = self.solve_starter
        return self

    @field_validator("model_options")
    @classmethod
    def _no_secrets(cls, options: dict[str, Any]) -> dict[str, Any]:
        if options.get("api_key"):
            raise ValueError(
                "a session stores no API key: put it in an environment variable and pass "
                "its name (--api-key-env NAME)"
            )
        return options

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

    def agent_options(self) -> dict[str, Any]:
        """What `make_agent` takes beside the model: memory window, sampling temperature."""
        options: dict[str, Any] = {"k_recent": self.k_recent} if self.agent == "research" else {}
        if self.agent == "search":
            return options  # the search driver reads the temperature itself
        temperature = self.sampling_temperature()
        if temperature is not None:
            options["temperature"] = temperature
        return options


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
    cost_known: bool = True  # False: a call's model had no price, so cost_usd undercounts
    tokens_estimated: bool = False  # some token counts were estimated, not reported
    why: str = ""  # one line: how it ended and what went wrong, if anything
    last_error: str | None = None  # the last error the session met (a step's, or grading's)


Approver = Callable[[AgentResponse], Approval]


def snapshot_name(step: int) -> str:
    return f"step-{step:04d}"


def config_and_task(store: Store, session_id: str) -> tuple[SessionConfig, Task]:
    started = store.events(session_id, kinds=["session_started"])
    if not started:
        raise SessionError(f"session {session_id} has no start event")
    raw = dict(started[0].payload.config)
    folder = raw.pop("task_folder", None)
    raw.pop("budget", None)  # budget.py reads it
    for key in ("max_steps", "max_minutes", "max_cost", "max_tokens"):
        if raw.get(key) is not None and raw[key] <= 0:  # stored before 0 was refused: unset
            raw[key] = None
    config = SessionConfig.model_validate(raw)
    task = find_task(task_dir=folder) if folder else find_task(config.task, config.task_dir)
    return config, task


def configured_model(config: SessionConfig, max_cost: float | None = None) -> ChatModel:
    """The session's model, checked first (a typo, a missing key or file, a cost budget with no
    price: one line, before anything is recorded). `max_cost`: a budget other than the config's
    (a resumed session's new one)."""
    budget = config.max_cost if max_cost is None else max_cost
    check_model(config.model, max_cost=budget, **config.model_options)
    return make_model(config.model, **config.model_options)


def resumed_model(config: SessionConfig, consumed: int, max_cost: float | None = None) -> ChatModel:
    """A replay model continues at its first response not yet consumed."""
    if config.model.startswith("replay:"):
        return make_model(config.model, start=consumed)
    return configured_model(config, max_cost)


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


def solve_preview(task: Task, seed: int) -> str:
    """The prepared folder as the solve agent's prompt shows it (empty if it cannot be built:
    creating the session then reports the task's own error)."""
    from ..agent.actions import SOLUTION_FILE

    try:
        sub = task.spec.submission.file  # a script submission (strategy.py) is the starter
        skip = (SOLUTION_FILE,) if sub.endswith(".py") else (SOLUTION_FILE, sub)
        return task_preview(task, seed, skip=skip)
    except (TaskError, OSError):
        return ""
