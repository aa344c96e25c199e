"""Sessions whose process is gone: shown `interrupted` (and resumable), never `running`.

A process killed with SIGKILL, or a machine that stopped, records no end. Every session that
runs steps holds its lock (lock.py) while its process lives, and the kernel drops the lock with
the process, so a `running` or `paused` session whose lock is free has no process left. Opening
the store (any `mlagent` command, the app) records those as ended `interrupted`, as an event,
so the store, a replay and the trainer all agree.
"""

from __future__ import annotations

import time

from ..events import Event, SessionEnded
from ..home import Home
from ..store import Store
from .lock import LOCK_NAME, SessionLock
from .state import SessionError, completed_steps

ORPHAN_REASON = "interrupted: its process ended without recording an end (killed or crashed)"


def end_orphans(home: Home, store: Store) -> list[str]:
    """Record `interrupted` for each running or paused session that no process holds; their ids.

    A session recorded without a lock (a task's baseline run) cannot be told from a live one
    and is left as it is.
    """
    ended = []
    for sid in store.session_ids(["running", "paused"]):
        folder = home.snapshots(sid)
        if not (folder / LOCK_NAME).exists():
            continue
        lock = SessionLock(folder, sid)
        try:
            lock.acquire()
        except (SessionError, OSError):
            continue  # alive (or not ours to judge)
        try:
            row = store.session(sid)  # it may have ended between the query and the lock
            if row is None or row["status"] not in ("running", "paused"):
                continue
            done = completed_steps(store, sid)
            step = done[-1] if done else int(row.get("parent_step") or 0)
            payload = SessionEnded(reason=ORPHAN_REASON, status="interrupted")
            store.append(
                Event(
                    session_id=sid,
                    seq=store.next_seq(sid),
                    ts=time.time(),
                    step=step,
                    payload=payload,
                )
            )
            ended.append(sid)
        finally:
            lock.release()
    return ended
