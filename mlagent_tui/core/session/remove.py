"""Removing a session for good: its rows (through the store), its workspace, its snapshots and
its private files. A session that may be running, or that a fork still reads its history
from, is refused."""

from __future__ import annotations

import shutil

from ..home import Home
from ..store import Store
from ..store.manage import LIVE_STATUSES, delete_session_rows
from .state import SessionError


def forks_of(store: Store, session_id: str) -> list[str]:
    rows = store.fetch("SELECT id FROM sessions WHERE parent_session_id = ?", [session_id])
    return [row[0] for row in rows]


def remove_session(home: Home, store: Store, session_id: str) -> None:
    """Delete one session; a SessionError (one line) says why not."""
    row = store.session(session_id)
    if row is None:
        raise SessionError(f"no session {session_id!r} (see `mlagent sessions list`)")
    if row["status"] in LIVE_STATUSES:
        raise SessionError(f"session {session_id} is {row['status']}; stop it first")
    children = forks_of(store, session_id)
    if children:
        raise SessionError(
            f"session {session_id} has forks that read its history ({', '.join(children)}); "
            "delete them first"
        )
    delete_session_rows(store, session_id)
    for folder in (home.workspace, home.snapshots, home.private):
        shutil.rmtree(folder(session_id), ignore_errors=True)
