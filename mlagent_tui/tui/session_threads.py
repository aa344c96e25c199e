"""The live sessions' threads, known app-wide so that the interpreter's exit waits for them.

They are daemons: closing the app must not wait for a step in progress (a script can run to
its time-out). Yet the interpreter must not finalise under a thread still writing its session's
end to the store: at exit, each one not left on purpose (Ctrl-C while `run_app` waited) gets a
bounded wait; it was asked to stop when its screen closed.
"""

from __future__ import annotations

import atexit
import threading
import weakref

SESSION_THREADS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
EXIT_WAIT_S = 120.0


@atexit.register
def _join_at_exit() -> None:
    for thread in list(SESSION_THREADS):
        thread.join(timeout=EXIT_WAIT_S)
