"""Forking a session: what the new session starts from (settings, state, budget, model) and
the parent's files it copies, kept apart from running one (run.py)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..home import Home
from ..llm import ChatModel
from ..store import Store
from ..tasks import Task
from ..workspace import Workspace
from .budget import Budget, limits_of
from .config import (
    SessionConfig,
    config_and_task,
    configured_model,
    latest_snapshot,
    resumed_model,
    snapshot_name,
    step_ranges,
)
from .state import LoadedState, SessionError, completed_steps, load_state


@dataclass
class ForkPlan:
    """What `Session.fork` builds the new session from."""

    config: SessionConfig
    task: Task
    loaded: LoadedState
    budget: Budget
    model: ChatModel


def plan_fork(
    store: Store,
    session_id: str,
    step: int,
    model: ChatModel | None,
    model_spec: str | None,
    overrides: dict[str, Any],
) -> ForkPlan:
    """Check the parent and its step, then the fork's settings, state up to `step`, budget
    (counting its own new steps) and model; raises SessionError on a bad parent or step."""
    if store.session(session_id) is None:
        raise SessionError(f"no session {session_id!r} (see `mlagent sessions list`)")
    done = completed_steps(store, session_id)
    if step != 0 and step not in done:
        raise SessionError(
            f"session {session_id} has no completed step {step} "
            f"(completed: {step_ranges(done) or 'none'})"
        )
    config, task = config_and_task(store, session_id)
    given = {k: v for k, v in overrides.items() if v is not None}
    other_model = bool(model_spec) and model_spec != config.model
    if other_model:  # none of the old model's options, and its first response
        given.update(model=model_spec, model_options={})
    config = SessionConfig.model_validate({**config.model_dump(), **given})
    if other_model and model is None:
        model = configured_model(config)
    loaded = load_state(
        store, session_id, higher_is_better=task.spec.metric.higher_is_better, upto=step
    )
    budget = limits_of(config).starting(  # a fork's budget counts its own new steps
        task.spec.limits.max_steps,
        step=step,
        cost=loaded.cost_usd,
        tokens=loaded.tokens_in + loaded.tokens_out,
    )
    model = model or resumed_model(config, loaded.llm_calls)
    return ForkPlan(config=config, task=task, loaded=loaded, budget=budget, model=model)


def copy_parent(
    home: Home, session_id: str, step: int, workspace: Workspace, private: Path
) -> None:
    """The parent's workspace as it was after `step`, and its private files, into the fork."""
    parent = Workspace(home.workspace(session_id), home.snapshots(session_id))
    workspace.restore(latest_snapshot(parent, step), source=parent)
    shutil.copytree(home.private(session_id), private, dirs_exist_ok=True)
    workspace.snapshot(snapshot_name(step))
