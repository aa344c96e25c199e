"""SQLite store (through sqlite-utils): the only module that writes SQL.

Every event is appended in one transaction together with the derived rows it implies
(sessions, steps, executions, scores, file versions, plans), so a crash never leaves a
derived table ahead of or behind the event log.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import sqlite_utils

from ..events import PAYLOAD_ADAPTER, Event, clean_payload
from .derive import derive
from .migrations import MIGRATIONS

_INSERT_EVENT = "INSERT INTO events (session_id, seq, ts, step, kind, payload) VALUES (?,?,?,?,?,?)"


class StoreError(Exception):
    """The database cannot be opened or is not ours."""


class Store:
    """One SQLite file in WAL mode; safe to share between the threads of one process.

    Every statement, read or write, runs under one lock, and `close` takes it too: a thread
    still reading while another closes the store (a TUI timer as a test's fixture tears down)
    gets a StoreError, never a statement stepped on a freed connection (a segfault).
    """

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
        self._closed = False
        self.migrate()

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> list[str]:
        """Apply the migrations not yet recorded in `_migrations`; return their names.

        Runs under BEGIN IMMEDIATE so two processes opening a new file do not race.
        """
        conn = self.db.conn
        if not self._pending():
            return []  # nothing to do: no write lock, so a busy writer never blocks a reader
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

    def _pending(self) -> list[str]:
        """Names of migrations not yet applied, read without taking the write lock (WAL)."""
        try:
            done = {row[0] for row in self.db.conn.execute("SELECT name FROM _migrations")}
        except sqlite3.OperationalError:  # a new file: no _migrations table yet
            done = set()
        return [name for name, _ in MIGRATIONS if name not in done]

    def migrations(self) -> list[str]:
        return [row[0] for row in self.fetch("SELECT name FROM _migrations ORDER BY rowid")]

    # -- the one way to read ------------------------------------------------------------
    def fetch(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """All rows of one query, under the store's lock."""
        return self.fetch_with_names(sql, params)[1]

    def fetch_dicts(self, sql: str, params: Any = ()) -> list[dict[str, Any]]:
        names, rows = self.fetch_with_names(sql, params)
        return [dict(zip(names, row, strict=True)) for row in rows]

    def _open(self) -> sqlite_utils.Database:
        """The database, or a StoreError once closed (the caller holds the lock)."""
        if self._closed:
            raise StoreError(f"the store {self.path} is closed")
        return self.db

    def fetch_with_names(self, sql: str, params: Any = ()) -> tuple[list[str], list[tuple]]:
        with self._lock:
            cursor = self._open().conn.execute(sql, params)
            names = [d[0] for d in cursor.description or ()]
            return names, cursor.fetchall()

    # -- writing ------------------------------------------------------------------------
    def append(self, event: Event) -> None:
        """Append one event and its derived rows in a single transaction."""
        with self._lock, self._open().conn:
            self._insert(event)

    def append_many(self, events: list[Event]) -> None:
        """Append a whole run's events and their rows in one transaction: a session that ran
        elsewhere (scale-out) lands whole or not at all, never half."""
        with self._lock, self._open().conn:
            for event in events:
                self._insert(event)

    def _insert(self, event: Event) -> None:
        payload = clean_payload(event.payload)
        if payload is not event.payload:
            event = event.model_copy(update={"payload": payload})
        row = (
            event.session_id,
            event.seq,
            event.ts,
            event.step,
            payload.kind,
            payload.model_dump_json(),
        )
        self.db.conn.execute(_INSERT_EVENT, row)
        derive(self.db.conn, event)

    def next_seq(self, session_id: str) -> int:
        rows = self.fetch(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session_id = ?", [session_id]
        )
        return int(rows[0][0]) + 1

    # -- reading ------------------------------------------------------------------------
    def events(self, session_id: str, kinds: list[str] | None = None) -> list[Event]:
        """A session's events in order, as typed objects."""
        sql = "SELECT seq, ts, step, payload FROM events WHERE session_id = ?"
        params: list[Any] = [session_id]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params += kinds
        rows = self.fetch(sql + " ORDER BY seq", params)
        validate = PAYLOAD_ADAPTER.validate_json
        return [
            Event.model_construct(
                session_id=session_id, seq=seq, ts=ts, step=step, payload=validate(payload)
            )
            for seq, ts, step, payload in rows
        ]

    def session(self, session_id: str) -> dict[str, Any] | None:
        rows = self.fetch_dicts("SELECT * FROM sessions WHERE id = ?", [session_id])
        return rows[0] if rows else None

    def sessions(self, limit: int = 100) -> list[dict[str, Any]]:
        return self.fetch_dicts("SELECT * FROM sessions ORDER BY started_at DESC LIMIT ?", [limit])

    def session_ids(self, statuses: list[str]) -> list[str]:
        """Ids of the sessions in any of these states (e.g. running or paused)."""
        marks = ",".join("?" * len(statuses))
        sql = f"SELECT id FROM sessions WHERE status IN ({marks}) ORDER BY started_at"
        return [row[0] for row in self.fetch(sql, statuses)]

    def search_sessions(self, text: str, limit: int = 100) -> list[dict[str, Any]]:
        """Sessions whose own fields or any step (plan, thought, observation) match `text`."""
        if not text.strip():
            return self.sessions(limit=limit)
        query = self.db.quote_fts(text)
        sql = (
            "SELECT * FROM sessions WHERE rowid IN (SELECT rowid FROM sessions_fts"
            " WHERE sessions_fts MATCH :q) OR id IN (SELECT s.session_id FROM steps s JOIN"
            " steps_fts f ON f.rowid = s.rowid WHERE steps_fts MATCH :q)"
            " ORDER BY started_at DESC LIMIT :limit"
        )
        return self.fetch_dicts(sql, {"q": query, "limit": limit})

    def rows(self, table: str, session_id: str) -> list[dict[str, Any]]:
        if table not in self.db.table_names():
            raise StoreError(f"no table {table!r} in {self.path}")
        sql = f'SELECT * FROM "{table}" WHERE session_id = ? ORDER BY rowid'
        return self.fetch_dicts(sql, [session_id])

    def status(self) -> dict[str, Any]:
        counts = {
            t: self.fetch(f"SELECT COUNT(*) FROM {t}")[0][0]
            for t in ("sessions", "events", "executions", "scores")
        }
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
        """Close once; waits for a statement another thread is running."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self.db.conn.close()
