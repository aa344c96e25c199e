"""Run an untrusted Python submission in a worker process, for the graders of code tasks.

The submission's prints, crashes, exits and hangs must not break the grader's one JSON line, so
it runs in its own process that talks JSON lines over a private copy of stdin/stdout; whatever it
prints goes to stderr. Every failure (and running past the total time limit) becomes a
SubmissionError.

A worker's source is `WORKER_PRELUDE` plus the task's own code, whose `main()` calls
`load_submission(function)` and then answers one request per line read from `requests` with one
`send(...)` each (a dict, or an already serialised JSON string).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from mlagent_tui.core.grading import SubmissionError

# Runs inside the worker: argv is [path of the file to import, name shown in its messages].
WORKER_PRELUDE = r"""
import importlib.util, json, os, random, sys


def load_submission(function):
    # Returns (fn, requests, send), or None after sending the reason it cannot run.
    proto_in = os.fdopen(os.dup(0), "r")
    proto_out = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # whatever the submission prints goes to stderr
    path, name = sys.argv[1], sys.argv[2]
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))

    def send(obj):
        proto_out.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        proto_out.flush()

    try:
        spec = importlib.util.spec_from_file_location("submission", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = mod
        spec.loader.exec_module(mod)
    except BaseException as exc:
        send({"error": "importing %s failed: %s: %s" % (name, type(exc).__name__, exc)})
        return None
    fn = getattr(mod, function, None)
    if not callable(fn):
        send({"error": "%s defines no function %s()" % (name, function)})
        return None
    send({"ready": True})
    return fn, proto_in, send

"""


class Worker:
    """One Python file in its own process, driven one JSON request per line over a pipe.

    `label` names it in the grader's own messages, `name` (default: the file's name) inside the
    worker's; `cpu` pins it to one core and `env` replaces its environment.
    """

    def __init__(
        self,
        source: str,
        path: Path,
        *,
        label: str,
        name: str | None = None,
        cpu: int | None = None,
        env: dict[str, str] | None = None,
    ):
        self.label = label
        resolved = path.resolve()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", source, str(resolved), name or resolved.name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(resolved.parent),
            env=env,
            text=True,
            bufsize=1,
        )
        if cpu is not None:
            try:
                os.sched_setaffinity(self.proc.pid, {cpu})
            except OSError:
                pass

    def garbage(self) -> SubmissionError:
        """The error for a reply that breaks the protocol."""
        return SubmissionError(f"{self.label}'s process sent garbage")

    def start(self) -> None:
        """Wait until the file is imported and its function found."""
        first = self._read()
        if "error" in first:
            raise SubmissionError(first["error"])

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise SubmissionError(f"{self.label}'s process ended unexpectedly (exit code {code})")
        try:
            msg = json.loads(line)
        except ValueError as exc:
            raise self.garbage() from exc
        if not isinstance(msg, dict):
            raise self.garbage()
        return msg

    def request(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return the reply; a reply with an "error" raises it."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(msg) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise SubmissionError(f"{self.label}'s process ended unexpectedly") from exc
        reply = self._read()
        if "error" in reply:
            raise SubmissionError(str(reply["error"]))
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class _Timeout(Exception):
    pass


@contextmanager
def worker_pool(time_limit_s: float, timeout_message: str) -> Iterator[list[Worker]]:
    """Yield a list to add workers to; all of them together get `time_limit_s` of wall time.

    Past the limit the block ends with SubmissionError(timeout_message); every worker in the
    list is killed on the way out, whatever happened.
    """

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise _Timeout

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit_s)
    workers: list[Worker] = []
    try:
        yield workers
    except _Timeout:
        raise SubmissionError(timeout_message) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        for w in workers:
            w.close()
