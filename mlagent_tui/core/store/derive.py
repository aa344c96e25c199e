"""The rows each event kind implies besides the event itself (sessions, steps, executions,
scores, file versions, plans), written in the transaction that appends the event.

Only the store package writes SQL; the tables come from migrations.py.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

from ..events import Event


def _no_derived(conn: sqlite3.Connection, event: Event) -> None:
    return None


def _session_started(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "INSERT OR REPLACE INTO sessions (id, task, model, agent, sandbox, workspace, status,"
        " started_at, parent_session_id, parent_step, config) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            event.session_id,
            p.task,
            p.model,
            p.agent,
            p.sandbox,
            p.workspace,
            "running",
            event.ts,
            p.parent_session_id,
            p.parent_step,
            json.dumps(p.config),
        ),
    )


def _session_ended(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "UPDATE sessions SET status=?, ended_at=?, end_reason=?, final_score=?, valid=?, medal=?"
        " WHERE id=?",
        (p.status, event.ts, p.reason, p.final_score, int(p.valid), p.medal, event.session_id),
    )


def _agent_response(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "INSERT OR REPLACE INTO steps (session_id, step, action, action_input, reflection, plan,"
        " fact_check, thought, completed) VALUES (?,?,?,?,?,?,?,?,0)",
        (
            event.session_id,
            event.step,
            p.action,
            json.dumps(p.action_input),
            p.reflection,
            p.plan,
            p.fact_check,
            p.thought,
        ),
    )


def _action_finished(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "INSERT INTO steps (session_id, step, action, observation, ok, duration_s, completed)"
        " VALUES (?,?,?,?,?,?,1) ON CONFLICT(session_id, step) DO UPDATE SET"
        " observation=excluded.observation, ok=excluded.ok, duration_s=excluded.duration_s,"
        " completed=1",
        (event.session_id, event.step, p.action, p.observation, int(p.ok), p.duration_s),
    )


def _append_row(table: str, fields: tuple[str, ...]) -> Callable[[sqlite3.Connection, Event], None]:
    """A derived row that copies payload fields (booleans as 0/1) beside session, seq, step."""
    columns = ", ".join(("session_id", "seq", "step", *fields))
    sql = f"INSERT INTO {table} ({columns}) VALUES ({','.join('?' * (len(fields) + 3))})"

    def insert(conn: sqlite3.Connection, event: Event) -> None:
        values = [getattr(event.payload, f) for f in fields]
        values = [int(v) if isinstance(v, bool) else v for v in values]
        conn.execute(sql, (event.session_id, event.seq, event.step, *values))

    return insert


_exec_finished = _append_row(
    "executions",
    (
        "command",
        "exit_code",
        "duration_s",
        "peak_rss_mb",
        "timed_out",
        "killed_reason",
        "output_truncated",
    ),
)
_score_recorded = _append_row(
    "scores", ("split", "score", "valid", "error", "medal", "above_median")
)
_file_changed = _append_row(
    "file_versions", ("path", "before_hash", "after_hash", "diff", "author")
)
_plan_edited = _append_row("plans", ("author", "plan"))


def _paused_or_resumed(conn: sqlite3.Connection, event: Event) -> None:
    status = "paused" if event.payload.kind == "paused" else "running"
    conn.execute("UPDATE sessions SET status=? WHERE id=?", (status, event.session_id))


def _node_created(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "INSERT OR REPLACE INTO nodes (session_id, node, parents, operator, form, status, tokens,"
        " pinned, pruned, chosen) VALUES (?,?,?,?,?,'running',?,0,"
        " (SELECT COALESCE(MAX(pruned), 0) FROM nodes WHERE session_id=? AND node=?),0)",
        (
            event.session_id,
            p.node,
            json.dumps(p.parents),
            p.operator,
            p.form,
            p.tokens,
            event.session_id,
            p.parents[0] if p.parents else -1,
        ),
    )


def _node_finished(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "UPDATE nodes SET status=?, score=?, seconds=?, snapshot=? WHERE session_id=? AND node=?",
        (p.status, p.score, p.seconds, p.snapshot, event.session_id, p.node),
    )


def _node_pinned(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "UPDATE nodes SET pinned=? WHERE session_id=? AND node=?",
        (int(p.pinned), event.session_id, p.node),
    )


def _node_pruned(conn: sqlite3.Connection, event: Event) -> None:
    """The node and every node below it (children name their parents in JSON)."""
    conn.execute(
        "WITH RECURSIVE below(n) AS (SELECT ? UNION SELECT nodes.node FROM nodes, below"
        " WHERE nodes.session_id=? AND json_extract(nodes.parents, '$[0]') = below.n)"
        " UPDATE nodes SET pruned=1 WHERE session_id=? AND node IN (SELECT n FROM below)",
        (event.payload.node, event.session_id, event.session_id),
    )


def _selection_made(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    for cand in p.candidates:
        conn.execute(
            "UPDATE nodes SET hidden_score=? WHERE session_id=? AND node=?",
            (cand.hidden_score, event.session_id, cand.node),
        )
    conn.execute(
        "UPDATE nodes SET chosen=(node IS ?) WHERE session_id=?", (p.node, event.session_id)
    )


_DERIVE: dict[str, Callable[[sqlite3.Connection, Event], None]] = {
    "session_started": _session_started,
    "session_ended": _session_ended,
    "agent_response": _agent_response,
    "action_finished": _action_finished,
    "exec_finished": _exec_finished,
    "score_recorded": _score_recorded,
    "file_changed": _file_changed,
    "plan_edited": _plan_edited,
    "paused": _paused_or_resumed,
    "resumed": _paused_or_resumed,
    "node_created": _node_created,
    "node_finished": _node_finished,
    "node_pinned": _node_pinned,
    "node_pruned": _node_pruned,
    "selection_made": _selection_made,
}


def derive(conn: sqlite3.Connection, event: Event) -> None:
    """Write the rows `event` implies (none for most kinds), in the caller's transaction."""
    _DERIVE.get(event.payload.kind, _no_derived)(conn, event)
