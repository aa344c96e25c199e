"""The benchmark's tables (bench runs and the sessions they ran): queries.

Part of the store: only store modules write SQL (the tables come from m005, m007 and m009
in migrations.py).
A bench's per-run metrics are not stored twice: they are read back from the sessions' own rows
and events (`session_facts`), so a report re-rendered later says exactly what the sessions
logged.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import Store


def _write(store: Store, sql: str, params: list[Any]) -> None:
    with store._lock, store.db.conn:
        store.db.conn.execute(sql, params)


def create_bench(store: Store, bench_id: str, config: dict[str, Any]) -> None:
    _write(
        store,
        "INSERT INTO bench_runs (id, created_at, status, config) VALUES (?,?,?,?)",
        [bench_id, time.time(), "running", json.dumps(config)],
    )


def set_bench_status(store: Store, bench_id: str, status: str) -> None:
    finished = time.time() if status != "running" else None
    _write(
        store,
        "UPDATE bench_runs SET status=?, finished_at=? WHERE id=?",
        [status, finished, bench_id],
    )


def get_bench(store: Store, bench_id: str) -> dict[str, Any] | None:
    rows = store.fetch_dicts("SELECT * FROM bench_runs WHERE id=?", [bench_id])
    if not rows:
        return None
    scale = rows[0].get("scale")
    return {
        **rows[0],
        "config": json.loads(rows[0]["config"]),
        "scale": json.loads(scale) if scale else None,
    }


def list_benches(store: Store, limit: int = 50) -> list[dict[str, Any]]:
    """Recent bench runs, with how many of their runs are done and crashed."""
    return store.fetch_dicts(
        "SELECT b.id, b.created_at, b.finished_at, b.status, b.config,"
        " SUM(s.status='done') AS done, SUM(s.status='crashed') AS crashed,"
        " COUNT(s.run_index) AS started"
        " FROM bench_runs b LEFT JOIN bench_sessions s ON s.bench_id = b.id"
        " GROUP BY b.id ORDER BY b.created_at DESC LIMIT ?",
        [limit],
    )


def record_run(
    store: Store,
    bench_id: str,
    task: str,
    model: str,
    run_index: int,
    *,
    status: str,
    session_id: str | None = None,
    error: str | None = None,
    run_wall_s: float | None = None,
    node: str | None = None,
    attempts: int | None = None,
    agent: str = "research",
) -> None:
    """Insert or update one run's row (one per task, model, agent and run index); a later
    call keeps the fields it does not set."""
    now = time.time()
    _write(
        store,
        "INSERT INTO bench_sessions (bench_id, task, model, agent, run_index, session_id, status,"
        " error, started_at, finished_at, run_wall_s, node, attempts)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT(bench_id, task, model, agent, run_index) DO UPDATE SET"
        " session_id=COALESCE(excluded.session_id, session_id), status=excluded.status,"
        " error=excluded.error, finished_at=excluded.finished_at,"
        " run_wall_s=COALESCE(excluded.run_wall_s, run_wall_s),"
        " node=COALESCE(excluded.node, node), attempts=COALESCE(excluded.attempts, attempts)",
        [
            bench_id,
            task,
            model,
            agent,
            run_index,
            session_id,
            status,
            error,
            now,
            now if status != "running" else None,
            run_wall_s,
            node,
            attempts,
        ],
    )


def set_bench_scale(store: Store, bench_id: str, scale: dict[str, Any]) -> None:
    """The cluster's account of a `--ray` bench (nodes probed, left out, lost; retries)."""
    _write(store, "UPDATE bench_runs SET scale=? WHERE id=?", [json.dumps(scale), bench_id])


def bench_sessions(store: Store, bench_id: str) -> list[dict[str, Any]]:
    return store.fetch_dicts(
        "SELECT * FROM bench_sessions WHERE bench_id=? ORDER BY task, model, agent, run_index",
        [bench_id],
    )


def session_facts(store: Store, session_id: str) -> dict[str, Any] | None:
    """What a bench needs to know of one session, from its derived rows and events."""
    row = store.session(session_id)
    if row is None:
        return None
    scores = store.fetch_dicts(
        "SELECT step, split, score, valid, medal, above_median FROM scores"
        " WHERE session_id=? ORDER BY seq",
        [session_id],
    )
    execs = store.fetch_dicts(
        "SELECT COUNT(*) AS n, COALESCE(SUM(duration_s), 0) AS seconds,"
        " COALESCE(SUM(timed_out), 0) AS timeouts,"
        " COALESCE(SUM(exit_code IS NOT 0 AND NOT timed_out), 0) AS errors"
        " FROM executions WHERE session_id=?",
        [session_id],
    )[0]
    calls = store.fetch_dicts(
        "SELECT COUNT(*) AS n,"
        " COALESCE(SUM(json_extract(payload, '$.tokens_in')), 0) AS tokens_in,"
        " COALESCE(SUM(json_extract(payload, '$.tokens_out')), 0) AS tokens_out,"
        " COALESCE(SUM(json_extract(payload, '$.cost_usd')), 0.0) AS cost_usd,"
        " COALESCE(SUM(json_extract(payload, '$.latency_s')), 0.0) AS latency_s"
        " FROM events WHERE session_id=? AND kind='llm_call'",
        [session_id],
    )[0]
    parse_errors = store.fetch_dicts(
        "SELECT COUNT(*) AS n FROM events WHERE session_id=? AND kind='parse_error'",
        [session_id],
    )[0]["n"]
    steps = store.fetch_dicts(
        "SELECT COUNT(*) AS n, COALESCE(SUM(duration_s), 0.0) AS seconds FROM steps"
        " WHERE session_id=? AND completed=1",
        [session_id],
    )[0]
    nodes = store.fetch_dicts(  # a search session's candidates, in order
        "SELECT node, status, score FROM nodes WHERE session_id=? ORDER BY node", [session_id]
    )
    selection = store.fetch_dicts(
        "SELECT payload FROM events WHERE session_id=? AND kind='selection_made'"
        " ORDER BY seq DESC LIMIT 1",
        [session_id],
    )
    return {
        "session": row,
        "scores": scores,
        "executions": execs,
        "llm": calls,
        "parse_errors": parse_errors,
        "steps": steps["n"] if not nodes else calls["n"],  # a search's steps: its model calls
        "action_seconds": steps["seconds"],
        "nodes": nodes,
        "selection": json.loads(selection[0]["payload"]) if selection else None,
    }
