"""What `mlagent sessions show` prints: a session's row, steps, scores and plan history."""

from __future__ import annotations

from typing import Any

from ..store import Store
from .diagnose import diagnose


def session_report(store: Store, session_id: str) -> dict[str, Any] | None:
    row = store.session(session_id)
    if row is None:
        return None
    events = store.events(session_id, kinds=["llm_call", "parse_error"])
    calls = [e.payload for e in events if e.kind == "llm_call"]
    ends = store.events(session_id, kinds=["action_finished", "score_recorded", "session_ended"])
    last_end = [e.payload for e in ends if e.kind == "session_ended"][-1:]
    why, error = diagnose(last_end[0] if last_end else None, ends)
    return {
        "session": {
            **row,
            "tokens_in": sum(c.tokens_in for c in calls),
            "tokens_out": sum(c.tokens_out for c in calls),
            "cost_usd": round(sum(c.cost_usd for c in calls), 6),
            "parse_errors": sum(1 for e in events if e.kind == "parse_error"),
            "why": why,
            "last_error": error,
        },
        "steps": [
            {k: r[k] for k in ("step", "action", "action_input", "ok", "observation", "completed")}
            for r in store.rows("steps", session_id)
        ],
        "scores": list(store.rows("scores", session_id)),
        "plans": list(store.rows("plans", session_id)),
        "executions": list(store.rows("executions", session_id)),
    }
