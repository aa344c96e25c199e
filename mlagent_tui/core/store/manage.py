"""The person's view of the session list: costs, trainer rollouts kept apart, and removal.

A trainer's rollouts are sessions like any other (the trainer reads them back as data), named
by the policy that wrote them: their model is `policy:<base>...`. The list a person reads
leaves them out unless asked. Removal takes a session's rows out of every table that holds
them, in one transaction; a bench keeps its record of the run (its report counts the run).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import Store

TRAINER_MODEL_PREFIX = "policy:"
LIVE_STATUSES = ("running", "paused")  # a session some process may be running now
_KEPT_TABLES = {"bench_sessions"}  # a bench's own record of its runs


def listed_sessions(
    store: Store, limit: int = 50, include_trainer: bool = False
) -> list[dict[str, Any]]:
    """Recent sessions, newest first, each with its cost (`cost_usd`, summed over its model
    calls) and whether that cost is known (`cost_known`: every call had a price)."""
    where = "" if include_trainer else "WHERE s.model IS NULL OR s.model NOT LIKE :trainer"
    sql = (
        "SELECT s.*, (SELECT COALESCE(SUM(json_extract(e.payload, '$.cost_usd')), 0)"
        " FROM events e WHERE e.session_id = s.id AND e.kind = 'llm_call') AS cost_usd,"
        " (SELECT COALESCE(MIN(json_extract(e.payload, '$.cost_known')), 1)"
        " FROM events e WHERE e.session_id = s.id AND e.kind = 'llm_call') AS cost_known"
        f" FROM sessions s {where} ORDER BY s.started_at DESC LIMIT :limit"
    )
    rows = store.fetch_dicts(sql, {"trainer": TRAINER_MODEL_PREFIX + "%", "limit": limit})
    for row in rows:
        row["cost_known"] = bool(row["cost_known"])
    return rows


def prunable_sessions(
    store: Store,
    older_than_days: float | None = None,
    statuses: list[str] | None = None,
    include_trainer: bool = False,
) -> list[dict[str, Any]]:
    """Sessions matching every given filter, oldest first; a running or paused one never."""
    clauses = [f"status NOT IN ({','.join('?' * len(LIVE_STATUSES))})"]
    params: list[Any] = list(LIVE_STATUSES)
    if older_than_days is not None:
        clauses.append("started_at < ?")
        params.append(time.time() - older_than_days * 86_400)
    if statuses:
        clauses.append(f"status IN ({','.join('?' * len(statuses))})")
        params.extend(statuses)
    if not include_trainer:
        clauses.append("(model IS NULL OR model NOT LIKE ?)")
        params.append(TRAINER_MODEL_PREFIX + "%")
    sql = f"SELECT * FROM sessions WHERE {' AND '.join(clauses)} ORDER BY started_at"
    return store.fetch_dicts(sql, params)


def session_tables(store: Store) -> list[str]:
    """The tables whose rows belong to one session (a `session_id` column), FTS ones aside:
    their triggers follow the tables they index."""
    names = []
    for (table,) in store.fetch(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%_fts%'"
    ):
        columns = {row[1] for row in store.fetch(f'PRAGMA table_info("{table}")')}
        if "session_id" in columns and table not in _KEPT_TABLES:
            names.append(table)
    return names


def delete_session_rows(store: Store, session_id: str) -> int:
    """Remove one session's rows from every table, in one transaction; how many went."""
    tables = session_tables(store)
    removed = 0
    with store._lock, store.db.conn:
        for table in tables:
            cursor = store.db.conn.execute(
                f'DELETE FROM "{table}" WHERE session_id = ?', [session_id]
            )
            removed += cursor.rowcount
        cursor = store.db.conn.execute("DELETE FROM sessions WHERE id = ?", [session_id])
        removed += cursor.rowcount
    return removed
