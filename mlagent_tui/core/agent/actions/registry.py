"""The action registry: each action's input schema, the description the model reads, its handler.

`action(...)` registers a handler; `run_action` validates the model's input and runs it.
Handlers raise ActionError for anything the model should hear about; they never crash a session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ...llm import ChatModel
from ...sandbox import Executor, OutputCallback
from ...tasks import Task
from ...workspace import Workspace, WorkspaceError
from ..memory import Memory

Kind = Literal["file", "exec", "llm", "memory", "final"]


class ActionError(Exception):
    """The action could not be done; the message is the model's observation."""


class Observation(BaseModel):
    text: str
    ok: bool = True
    ends_session: bool = False
    score: float | None = None
    valid: bool | None = None


@dataclass
class ActionContext:
    """What a handler may touch: the workspace through its guard, never the private area."""

    workspace: Workspace
    task: Task
    private: Path
    executor: Executor
    model: ChatModel | None
    memory: Memory
    step: int = 0
    on_output: OutputCallback | None = None
    record: Callable[[BaseModel], Any] = lambda payload: None
    extras: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[ActionContext, Any], Observation]


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    input_model: type[BaseModel]
    handler: Handler
    kind: Kind = "file"
    hidden: bool = False  # internal actions (the solve agent's) are not shown to the model

    def example(self) -> str:
        fields = self.input_model.model_fields
        parts = [f'"{n}": {_example_value(f.annotation)}' for n, f in fields.items()]
        return "{" + ", ".join(parts) + "}"


def _example_value(annotation: Any) -> str:
    return {int: "1", bool: "true", float: "0.5"}.get(annotation, '"..."')


REGISTRY: dict[str, ActionSpec] = {}


def action(
    name: str,
    description: str,
    input_model: type[BaseModel],
    kind: Kind = "file",
    hidden: bool = False,
) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        REGISTRY[name] = ActionSpec(name, description, input_model, fn, kind, hidden)
        return fn

    return register


def visible_actions() -> list[ActionSpec]:
    return [spec for spec in REGISTRY.values() if not spec.hidden]


def lookup(name: str) -> ActionSpec:
    """Find an action by name, forgiving case and spacing."""
    wanted = " ".join(name.split()).lower()
    for spec in REGISTRY.values():
        if spec.name.lower() == wanted:
            return spec
    names = ", ".join(s.name for s in visible_actions())
    raise ActionError(f"Unknown action {name!r}. Valid actions are: {names}.")


def run_action(ctx: ActionContext, name: str, raw_input: dict[str, Any]) -> Observation:
    """Validate the input against the action's schema and run its handler."""
    try:
        spec = lookup(name)
        try:
            args = spec.input_model.model_validate(raw_input)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors()
            )
            raise ActionError(
                f"Invalid Action Input for {spec.name}: {problems}. Expected: {spec.example()}"
            ) from exc
        return spec.handler(ctx, args)
    except (ActionError, WorkspaceError) as exc:
        return Observation(text=f"Error: {exc}", ok=False)
    except OSError as exc:  # the file system's answer (no space, too long, ...) is the model's
        name = f" ({exc.filename})" if exc.filename else ""
        return Observation(text=f"Error: {exc.strerror or exc}{name}", ok=False)
