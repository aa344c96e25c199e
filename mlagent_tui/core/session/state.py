"""Rebuilding a session's state from the store: for resume, fork, and (later) replay.

Nothing here is kept on the side: history, plan, hints, memory, the best validated
submission and the replay position all come from the events of completed steps, following
the parent chain of forks.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from ..agent import Memory, StepRecord
from ..events import Event
from ..store import Store


class SessionError(Exception):
    """A session that does not exist, cannot be resumed, or a step that is not there."""


class SessionSetupError(SessionError):
    """Setting a new session up failed after it was recorded: it is stored, ended `failed`."""

    def __init__(self, message: str, session_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id


class Best(BaseModel):
    score: float
    step: int
    session_id: str


class LoadedState(BaseModel):
    history: list[StepRecord] = Field(default_factory=list)
    plan: str = ""
    hints: list[str] = Field(default_factory=list)
    notes: list[dict[str, Any]] = Field(default_factory=list)
    best: Best | None = None
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    tokens_estimated: bool = False
    parse_errors: int = 0
    last_step: int = 0
    submitted: bool = False


def response_text(row: dict[str, Any]) -> str:
    """The step's response as the model wrote it (rebuilt from the parsed fields)."""
    if row.get("action") == "Run Solution":
        script = json.loads(row.get("action_input") or "{}").get("content", "")
        return f"Plan: {row.get('plan') or ''}\n```python\n{script}\n```"
    return (
        f"Reflection: {row.get('reflection') or ''}\n"
        f"Research Plan and Status: {row.get('plan') or ''}\n"
        f"Fact Check: {row.get('fact_check') or ''}\nThought: {row.get('thought') or ''}\n"
        f"Action: {row.get('action') or ''}\nAction Input: {row.get('action_input') or '{}'}"
    )


def completed_steps(store: Store, session_id: str) -> list[int]:
    rows = store.fetch(
        "SELECT step FROM steps WHERE session_id = ? AND completed = 1 ORDER BY step", [session_id]
    )
    return [r[0] for r in rows]


def chain(store: Store, session_id: str, upto: int | None = None) -> list[tuple[str, int | None]]:
    """(session, last step to take) from the oldest ancestor down to this session."""
    links: list[tuple[str, int | None]] = [(session_id, upto)]
    row = store.session(session_id)
    seen = {session_id}
    while row and row.get("parent_session_id"):
        parent = row["parent_session_id"]
        if parent in seen:
            break
        seen.add(parent)
        links.append((parent, row["parent_step"]))
        row = store.session(parent)
    return list(reversed(links))


def load_state(
    store: Store, session_id: str, *, higher_is_better: bool = True, upto: int | None = None
) -> LoadedState:
    """The state after step `upto` (default: the last completed step) of a session."""
    state = LoadedState()
    memory = Memory()
    for sid, limit in chain(store, session_id, upto):
        done = set(completed_steps(store, sid))
        if limit is not None:
            done = {s for s in done if s <= limit}
        cap = limit if limit is not None else max(done, default=0)
        for row in store.rows("steps", sid):
            if row["step"] not in done:
                continue
            record = StepRecord(
                step=row["step"],
                action=row["action"] or "",
                action_input=json.loads(row["action_input"] or "{}"),
                response_text=response_text(row),
                observation=row["observation"] or "",
                ok=bool(row["ok"]),
            )
            state.history.append(record)
            if record.action == "Memory Write" and record.ok:
                memory.write(record.action_input.get("content", ""), record.step)
        for event in store.events(sid):
            if event.step <= cap:
                _absorb(state, event, sid, done, higher_is_better)
        state.last_step = max(state.last_step, cap)
    state.notes = [n.model_dump() for n in memory.notes]
    return state


def _absorb(
    state: LoadedState, event: Event, session_id: str, done: set[int], higher: bool
) -> None:
    p = event.payload
    counted = event.step in done
    if p.kind == "plan_edited":
        state.plan = p.plan
    elif p.kind == "hint_given":
        state.hints.append(p.text)
    elif p.kind == "llm_call" and counted:
        state.llm_calls += 1
        state.tokens_in += p.tokens_in
        state.tokens_out += p.tokens_out
        state.cost_usd += p.cost_usd
        state.cost_known = state.cost_known and p.cost_known
        state.tokens_estimated = state.tokens_estimated or p.tokens_estimated
    elif p.kind == "parse_error" and counted:
        state.parse_errors += 1
    elif p.kind == "score_recorded" and counted and p.valid and p.score is not None:
        if p.split == "submit":
            state.submitted = True
        elif p.split == "validate":
            new = Best(score=p.score, step=event.step, session_id=session_id)
            old = state.best
            if old is None or (p.score > old.score if higher else p.score < old.score):
                state.best = new
