"""SQLite store (through sqlite-utils): the only module that writes SQL.

Every event is appended in one transaction together with the derived rows it implies
(sessions, steps, executions, scores, file versions, plans), so a crash never leaves a
derived table ahead of or behind the event log.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import sqlite_utils

from .events import PAYLOAD_ADAPTER, Event

Migration = Callable[[sqlite_utils.Database], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    """Register a migration; order of definition is order of application, names never change."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
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


_INSERT_EVENT = "INSERT INTO events (session_id, seq, ts, step, kind, payload) VALUES (?,?,?,?,?,?)"


class StoreError(Exception):
    """The database cannot be opened or is not ours."""


class Store:
    """One SQLite file in WAL mode; safe to share between the threads of one process."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open database {self.path}: {exc}") from exc
        self.db = sqlite_utils.Database(conn)
        self._lock = threading.RLock()
        self.migrate()

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply the migrations not yet recorded in `_migrations`; return their names.

        Runs under BEGIN IMMEDIATE so two processes opening a new file do not race.
        """
        conn = self.db.conn
        with self._lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS _migrations"
                    " (name TEXT PRIMARY KEY, applied_at TEXT)"
                )
                done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
                applied = []
                for name, fn in MIGRATIONS:
                    if name in done:
                        continue
                    fn(self.db)
                    conn.execute(
                        "INSERT INTO _migrations (name, applied_at) VALUES (?, datetime('now'))",
                        [name],
                    )
                    applied.append(name)
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
            return applied

    def migrations(self) -> list[str]:
        return [row["name"] for row in self.db["_migrations"].rows]

    # -- writing ------------------------------------------------------------------------
    def append(self, event: Event) -> None:
        """Append one event and its derived rows in a single transaction."""
        payload = event.payload
        row = (
            event.session_id,
            event.seq,
            event.ts,
            event.step,
            payload.kind,
            payload.model_dump_json(),
        )
        with self._lock, self.db.conn:
            self.db.conn.execute(_INSERT_EVENT, row)
            _DERIVE.get(payload.kind, _no_derived)(self.db.conn, event)

    def next_seq(self, session_id: str) -> int:
        row = self.db.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", [session_id]
        ).fetchone()
        return int(row[0]) + 1

    # -- reading ------------------------------------------------------------------------
    def events(self, session_id: str, kinds: list[str] | None = None) -> list[Event]:
        """A session's events in order, as typed objects."""
        sql = "SELECT seq, ts, step, payload FROM events WHERE session_id = ?"
        params: list[Any] = [session_id]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params += kinds
        rows = self.db.execute(sql + " ORDER BY seq", params).fetchall()
        validate = PAYLOAD_ADAPTER.validate_json
        return [
            Event.model_construct(
                session_id=session_id, seq=seq, ts=ts, step=step, payload=validate(payload)
            )
            for seq, ts, step, payload in rows
        ]

    def session(self, session_id: str) -> dict[str, Any] | None:
        rows = list(self.db["sessions"].rows_where("id = ?", [session_id]))
        return rows[0] if rows else None

    def sessions(self, limit: int = 100) -> list[dict[str, Any]]:
        return list(self.db["sessions"].rows_where(order_by="started_at desc", limit=limit))

    def rows(self, table: str, session_id: str) -> Iterator[dict[str, Any]]:
        return self.db[table].rows_where("session_id = ?", [session_id], order_by="rowid")

    def status(self) -> dict[str, Any]:
        counts = {t: self.db[t].count for t in ("sessions", "events", "executions", "scores")}
        return {
            "path": str(self.path.resolve()),
            "size_bytes": self.path.stat().st_size if self.path.exists() else 0,
            "journal_mode": self.db.journal_mode,
            "migrations": self.migrations(),
            **counts,
        }

    def backup(self, dest: Path) -> Path:
        """Consistent copy through SQLite's online backup API (safe while sessions write)."""
        dest = Path(dest)
        if dest.is_dir():
            dest = dest / self.path.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        target = sqlite3.connect(str(dest))
        try:
            with self._lock:
                self.db.conn.backup(target)
        finally:
            target.close()
        return dest

    def close(self) -> None:
        self.db.conn.close()


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
        " fact_check, thought) VALUES (?,?,?,?,?,?,?,?)",
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


def _exec_finished(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "INSERT INTO executions (session_id, seq, step, command, exit_code, duration_s,"
        " peak_rss_mb, timed_out, killed_reason, output_truncated) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (
            event.session_id,
            event.seq,
            event.step,
            p.command,
            p.exit_code,
            p.duration_s,
            p.peak_rss_mb,
            int(p.timed_out),
            p.killed_reason,
            int(p.output_truncated),
        ),
    )


def _score_recorded(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "INSERT INTO scores (session_id, seq, step, split, score, valid, error, medal,"
        " above_median) VALUES (?,?,?,?,?,?,?,?,?)",
        (
            event.session_id,
            event.seq,
            event.step,
            p.split,
            p.score,
            int(p.valid),
            p.error,
            p.medal,
            int(p.above_median),
        ),
    )


def _file_changed(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "INSERT INTO file_versions (session_id, seq, step, path, before_hash, after_hash, diff,"
        " author) VALUES (?,?,?,?,?,?,?,?)",
        (
            event.session_id,
            event.seq,
            event.step,
            p.path,
            p.before_hash,
            p.after_hash,
            p.diff,
            p.author,
        ),
    )


def _plan_edited(conn: sqlite3.Connection, event: Event) -> None:
    p = event.payload
    conn.execute(
        "INSERT INTO plans (session_id, seq, step, author, plan) VALUES (?,?,?,?,?)",
        (event.session_id, event.seq, event.step, p.author, p.plan),
    )


def _paused_or_resumed(conn: sqlite3.Connection, event: Event) -> None:
    status = "paused" if event.payload.kind == "paused" else "running"
    conn.execute("UPDATE sessions SET status=? WHERE id=?", (status, event.session_id))


_DERIVE: dict[str, Callable[[sqlite3.Connection, Event], None]] = {
    "session_started": _session_started,
    "session_ended": _session_ended,
    "agent_response": _agent_response,
    "exec_finished": _exec_finished,
    "score_recorded": _score_recorded,
    "file_changed": _file_changed,
    "plan_edited": _plan_edited,
    "paused": _paused_or_resumed,
    "resumed": _paused_or_resumed,
}
