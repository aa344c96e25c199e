"""One process at a time per session: an exclusive lock held while a session may run steps.

Two `resume`s of one session would both execute scripts and both append events with the same
sequence numbers; the second is refused before it runs anything. The lock is an flock on a
file in the session's snapshots folder (host-only), so a crashed or kill -9'd process never
leaves it held.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path
from typing import IO

from .state import SessionError

LOCK_NAME = "session.lock"


class SessionLock:
    def __init__(self, folder: Path, session_id: str) -> None:
        self.path = Path(folder) / LOCK_NAME
        self.session_id = session_id
        self._fh: IO[str] | None = None

    @property
    def held(self) -> bool:
        return self._fh is not None

    def acquire(self) -> None:
        """Take the lock (a no-op when held); refuse, naming the holder, when another has it."""
        if self._fh is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the session's life
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise SessionError(
                f"session {self.session_id} is already running in {holder}; wait for it to "
                "end (or stop it) before resuming it again"
            ) from None
        fh.seek(0)
        fh.truncate()
        started = time.strftime("%Y-%m-%d %H:%M:%S")
        fh.write(f"process {os.getpid()} on {socket.gethostname()} (since {started})\n")
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            fh.truncate(0)
            fh.close()  # closing the file ends the flock
