"""The store's schema: every table's named migrations, in order, and the derived rows each
event kind implies.

Only the store package writes SQL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable

import sqlite_utils

from ..events import Event

Migration = Callable[[sqlite_utils.Database], None]


def m001_initial(db: sqlite_utils.Database) -> None:
    db["sessions"].create(
        {
            "id": str,
            "task": str,
            "model": str,
            "agent": str,
            "sandbox": str,
            "workspace": str,
            "status": str,
            "started_at": float,
            "ended_at": float,
            "end_reason": str,
            "final_score": float,
            "valid": int,
            "medal": str,
            "parent_session_id": str,
            "parent_step": int,
            "config": str,
        },
        pk="id",
    )
    db["events"].create(
        {"session_id": str, "seq": int, "ts": float, "step": int, "kind": str, "payload": str},
        pk=("session_id", "seq"),
    )
    db["events"].create_index(["session_id", "kind"])
    db["steps"].create(
        {
            "session_id": str,
            "step": int,
            "action": str,
            "action_input": str,
            "reflection": str,
            "plan": str,
            "fact_check": str,
            "thought": str,
        },
        pk=("session_id", "step"),
    )
    db["executions"].create(
        {
            "session_id": str,
            "seq": int,
            "step": int,
            "command": str,
            "exit_code": int,
            "duration_s": float,
            "peak_rss_mb": float,
            "timed_out": int,
            "killed_reason": str,
            "output_truncated": int,
        },
        pk=("session_id", "seq"),
    )
    db["scores"].create(
        {
            "session_id": str,
            "seq": int,
            "step": int,
            "split": str,
            "score": float,
            "valid": int,
            "error": str,
            "medal": str,
            "above_median": int,
        },
        pk=("session_id", "seq"),
    )
    db["file_versions"].create(
        {
            "session_id": str,
            "seq": int,
            "step": int,
            "path": str,
            "before_hash": str,
            "after_hash": str,
            "diff": str,
            "author": str,
        },
        pk=("session_id", "seq"),
    )
    db["plans"].create(
        {"session_id": str, "seq": int, "step": int, "author": str, "plan": str},
        pk=("session_id", "seq"),
    )


def m002_step_observations(db: sqlite_utils.Database) -> None:
    """Steps carry their observation and whether they completed (resume starts after those)."""
    db["steps"].add_column("observation", str)
    db["steps"].add_column("ok", int)
    db["steps"].add_column("duration_s", float)
    db["steps"].add_column("completed", int)


def m003_full_text_search(db: sqlite_utils.Database) -> None:
    """Sessions and their steps searchable by text (the home screen's filter)."""
    db["sessions"].enable_fts(
        ["id", "task", "model", "agent", "status", "end_reason"], create_triggers=True
    )
    db["steps"].enable_fts(["action", "plan", "thought", "observation"], create_triggers=True)


# The trainer's tables (store/training.py reads and writes them).
def m004_training(db: sqlite_utils.Database) -> None:
    """A row per training run and a row per policy update (the learning curve)."""
    db["training_runs"].create(
        {
            "id": str,
            "recipe": str,
            "base_model": str,
            "config": str,
            "out_dir": str,
            "status": str,
            "started_at": float,
            "ended_at": float,
        },
        pk="id",
    )
    db["training_updates"].create(
        {
            "run_id": str,
            "update": int,
            "reward_mean": float,
            "reward_std": float,
            "valid_rate": float,
            "loss": float,
            "kl": float,
            "exec_seconds_mean": float,
            "tokens_per_s": float,
            "seconds": float,
            "extra": str,
        },
        pk=("run_id", "update"),
    )


# The benchmark's tables (store/bench.py reads and writes them).
def m005_bench_tables(db: sqlite_utils.Database) -> None:
    """A bench run (its configuration) and one row per (task, model, run index) it runs."""
    db["bench_runs"].create(
        {
            "id": str,
            "created_at": float,
            "finished_at": float,
            "status": str,
            "config": str,
        },
        pk="id",
    )
    db["bench_sessions"].create(
        {
            "bench_id": str,
            "task": str,
            "model": str,
            "run_index": int,
            "session_id": str,
            "status": str,  # running | done | crashed
            "error": str,
            "started_at": float,
            "finished_at": float,
            "run_wall_s": float,
        },
        pk=("bench_id", "task", "model", "run_index"),
    )
    db["bench_sessions"].create_index(["session_id"])


# Order of application; a migration's name is recorded in `_migrations` and never changes.
MIGRATIONS: list[tuple[str, Migration]] = [
    (fn.__name__, fn)
    for fn in (
        m001_initial,
        m002_step_observations,
        m003_full_text_search,
        m004_training,
        m005_bench_tables,
    )
]


# -- derived rows, one function per event kind --------------------------------------------
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
}
