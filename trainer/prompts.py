"""The exact prompt an agent sent at a logged step, rebuilt from the store.

The store keeps what a model wrote (LLMCall text, token ids, log-probabilities) but not the prompt,
because the prompt is a function of the state the session can rebuild (history, plan, hints,
memory, the previous script). Rather than copying the agents' prompt code, we run the agent itself
on the rebuilt state with a model that only records the messages it is sent, so a prompt change in
core is picked up here for free.
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

from mlagent_tui.core.agent import (
    FORMAT_REMINDER,
    SOLVE_REMINDER,
    AgentState,
    Memory,
    Note,
    make_agent,
)
from mlagent_tui.core.agent.actions import SOLUTION_FILE
from mlagent_tui.core.agent.agents import EDIT_REMINDER, VALUE_REMINDER
from mlagent_tui.core.agent.menu import MENU_FORMAT
from mlagent_tui.core.agent.tweak import VALUE_FORMAT, columns_of
from mlagent_tui.core.llm import Completion, Message
from mlagent_tui.core.session import load_state, solve_preview
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task, find_task

Messages = list[dict[str, str]]


class _Captured(Exception):
    def __init__(self, messages: list[Message]) -> None:
        super().__init__("prompt captured")
        self.messages = messages


class PromptCapture:
    """A ChatModel that raises with the messages it was given instead of answering."""

    name = "prompt-capture"

    def __init__(self, supports_grammar: bool = False) -> None:
        self.supports_grammar = supports_grammar

    def complete(self, messages: list[Message], **_: Any) -> Completion:
        raise _Captured(messages)


def agent_messages(task: Task, agent: str, state: AgentState, **options: Any) -> Messages:
    """The messages `agent` sends for `state` (its first attempt at the step)."""
    built = make_agent(agent, PromptCapture(), **options)  # type: ignore[arg-type]
    try:
        built.step(state)
    except _Captured as caught:
        return [{"role": m.role, "content": m.content} for m in caught.messages]
    raise RuntimeError(f"agent {agent!r} answered without calling its model")


def session_task(config: dict[str, Any]) -> Task:
    """The task a session ran, from its recorded configuration (the folder wins)."""
    folder = config.get("task_folder")
    if folder and Path(folder).is_dir():
        return find_task(task_dir=folder)
    return find_task(config.get("task"), config.get("task_dir"))


def step_prompt(
    store: Store, session_id: str, step: int, task: Task, config: dict[str, Any]
) -> Messages:
    """The prompt of the first model call of `step`, rebuilt from the state after `step - 1`."""
    loaded = load_state(
        store, session_id, higher_is_better=task.spec.metric.higher_is_better, upto=step - 1
    )
    agent = config.get("agent") or "research"
    runs = [r for r in loaded.history if r.action == "Run Solution" and r.action_input]
    seed = int(config.get("seed") or 0)
    edits = config.get("solve_edits")  # absent in sessions that predate it: as solve_starter
    edits = agent == "solve" and bool(config.get("solve_starter") if edits is None else edits)
    state = AgentState(
        task=task,
        step=step,
        plan=loaded.plan,
        memory=Memory([Note(**n) for n in loaded.notes]),
        hints=list(loaded.hints),
        history=list(loaded.history),
        previous_script=runs[-1].action_input.get("content") if runs else None,
        preview=solve_preview(task, seed) if agent == "solve" else "",
        edits=edits,
        columns=prepared_columns(str(task.folder), seed) if edits else [],
        menu=bool(config.get("solve_menu", False)),  # absent: stored before the menu
        seed=seed,
    )
    options = {"k_recent": int(config.get("k_recent", 3))} if agent == "research" else {}
    return agent_messages(task, agent, state, **options)


@functools.lru_cache(maxsize=64)
def prepared_columns(folder: str, seed: int) -> list[str]:
    """The columns an edit could add in `folder`'s task prepared with `seed`, as the session
    saw them in its workspace (prepared once per process)."""
    task = find_task(task_dir=folder)
    with tempfile.TemporaryDirectory(prefix="mlagent-columns-") as tmp:
        ws, private = Path(tmp) / "ws", Path(tmp) / "private"
        task.prepare(ws, private, seed=seed)
        return columns_of(ws)


def retry_prompt(base: Messages, agent: str, failures: list[tuple[str, str]]) -> Messages:
    """The prompt of a re-ask after parse errors: each bad answer and the reminder that followed."""
    reminder = SOLVE_REMINDER if agent == "solve" else FORMAT_REMINDER
    last = base[-1]["content"] if base else ""
    if agent == "solve" and last.endswith(MENU_FORMAT):
        reminder = EDIT_REMINDER  # an edit's re-ask (core.agent.solve_edit)
    elif agent == "solve" and last.endswith(VALUE_FORMAT):  # stored before the menu
        reminder = VALUE_REMINDER
    messages = list(base)
    for raw, error in failures:
        messages += [
            {"role": "assistant", "content": raw},
            {"role": "user", "content": reminder.format(error=error)},
        ]
    return messages


def solve_response(plan: str, script: str) -> str:
    """A solve-agent answer in the format its parser reads."""
    return f"Plan: {plan.strip()}\n```python\n{script.rstrip()}\n```\n"


def previous_solution(store: Store, session_id: str) -> str | None:
    """The last script a session's solve agent wrote (the `improve` prompt's subject)."""
    rows = [r for r in store.rows("steps", session_id) if r["action"] == "Run Solution"]
    if not rows:
        return None
    return json.loads(rows[-1]["action_input"] or "{}").get("content")


__all__ = [
    "SOLUTION_FILE",
    "Messages",
    "PromptCapture",
    "agent_messages",
    "previous_solution",
    "retry_prompt",
    "session_task",
    "solve_response",
    "step_prompt",
]
