"""Exit codes of `mlagent run | resume | fork | bench`, so scripts can tell how a run ended.

Signals become exceptions while a session runs: SIGINT is Python's KeyboardInterrupt already,
and SIGTERM (from `kill`, `timeout`, a scheduler) is turned into one, so the session records
its end as `interrupted` before the process leaves, instead of staying `running`.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

OK = 0  # a valid submission was graded: the agent's Final Answer, or the auto-submit at the end
FAILED = 1  # the session failed: model error, crash, setup failure; a bench run crashed
USAGE = 2  # a bad command line: unknown option, task, model or session; a refused budget
NO_SUBMISSION = 3  # it ended (a budget, a stop, an invalid Final Answer) with no valid submission
INTERRUPTED = 130  # SIGINT (Ctrl-C); 143 for SIGTERM (128 + the signal, as shells do)

EXIT_CODES_HELP = (
    "Exit codes: 0 finished with a valid submission graded (its Final Answer, or the best "
    "validated one when a budget ended); 1 failed (model error, crash); 2 usage error (nothing "
    "ran); 3 ended without a valid submission (a budget or stop, or an invalid Final Answer); "
    "130 interrupted (Ctrl-C; 143 for SIGTERM), resumable."
)
BENCH_EXIT_CODES_HELP = (
    "Exit codes: 0 every run ended and the report is written (failed sessions are part of "
    "the measurement); 1 a run crashed (the bench could not run it); 2 usage error; 130 "
    "interrupted (143 for SIGTERM): go on with --resume ID."
)


def session_exit_code(result: Any) -> int:
    """The exit code of a session's result (a SessionResult)."""
    if result.status == "interrupted":
        return INTERRUPTED
    if result.status == "failed":
        return FAILED
    return OK if result.valid and result.final_score is not None else NO_SUBMISSION


class Terminated(KeyboardInterrupt):
    """SIGTERM while a session runs (a KeyboardInterrupt, so it unwinds the same way)."""


def interrupt_code(exc: BaseException) -> int:
    return 128 + signal.SIGTERM if isinstance(exc, Terminated) else INTERRUPTED


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated("SIGTERM")


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM raises Terminated inside the block (main thread only; elsewhere a no-op)."""
    try:
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
