"""Run a code task's submission in the session's sandbox, driven from the host over named pipes.

Nothing of the agent's runs on the host: a grader that must run the agent's code (a strategy, a
heuristic, a program to time) starts it with `worker_pool(...)`'s `start(...)`. That copies the
submission and the worker's source into a fresh scratch folder -- nothing else: never the
answers, never the task's folder -- makes two named pipes there and opens both ends itself
*before* the sandboxed run starts, so the agent's code removing or swapping them later redirects
nothing on the host. `python worker.py` then runs through `make_executor(backend,
workspace=scratch)` in a thread; the host writes one JSON request per line and reads one JSON
reply per line, all under the pool's deadline. Whatever the submission prints goes to the run's
own output. A crash, garbage on the pipe, or running past the time limit is a SubmissionError.

A worker's source is `WORKER_PRELUDE` plus the task's own code, whose `main()` calls
`load_submission(function)` and then answers one request per line read from `requests` (a binary
file: `json.loads(line)`) with one `send(...)` each (a dict, or an already serialised JSON
string); the source ends `serve(main)`. Bulk data may travel as raw bytes after a line that says
how many (`"nbytes"`): `requests.read(msg["nbytes"])` in the worker, `send(obj, raw=...)` back.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..sandbox import ExecResult, make_executor
from .grading import SubmissionError, sandbox_backend

REQUESTS, REPLIES = "requests.pipe", "replies.pipe"
PIPE_BYTES = 1 << 20  # a large request or reply crosses in one write: fewer wake-ups to time
WORKER_MEM_MB = 1024
SCRATCH_DISK_MB = 256
MAX_REPLY_BYTES = 64 * 2**20  # a longer reply line is garbage
GRACE_S = 1.0  # past the deadline, the sandbox's own time limit ends the run

# Runs inside the sandbox: argv is [file to import, name shown in its messages, cpu or -1].
WORKER_PRELUDE = r"""
import importlib.util, json, os, random, sys


def load_submission(function):
    # Returns (fn, requests, send), or None after sending the reason it cannot run.
    path, name, cpu = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # the host holds the other ends open already; lines are bytes (json.loads takes them)
    proto_in = open("requests.pipe", "rb", buffering=1 << 20)
    proto_out = open("replies.pipe", "wb", buffering=1 << 20)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)  # whatever the submission prints goes to the run's output
    if cpu >= 0:
        try:
            os.sched_setaffinity(0, {cpu})
        except (AttributeError, OSError):
            pass
    sys.argv = [path]
    sys.path.insert(0, os.getcwd())

    def send(obj, raw=None):
        # raw bytes follow the line, which then says how many ("nbytes")
        if raw is not None:
            obj = dict(obj, nbytes=len(raw))
        proto_out.write(((obj if isinstance(obj, str) else json.dumps(obj)) + "\n").encode())
        if raw is not None:
            proto_out.write(raw)
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


def serve(main):
    # End at once when the requests end: threads the submission left behind hold nothing up.
    try:
        main()
    finally:
        sys.stderr.flush()
        os._exit(0)

"""


class Deadline:
    """One time limit shared by every worker of a grading, and the message for running past it."""

    def __init__(self, seconds: float, message: str) -> None:
        self.end = time.monotonic() + seconds
        self.message = message

    def left(self) -> float:
        return self.end - time.monotonic()

    def expired(self) -> SubmissionError:
        return SubmissionError(self.message)


class Worker:
    """One Python file run in the sandbox, driven one JSON request per line over named pipes.

    `label` names it in the grader's own messages, `name` (default: the file's name) inside the
    worker's; `cpu` pins the worker to one core (it pins itself, before the submission loads).
    """

    def __init__(
        self,
        source: str,
        submission: Path,
        *,
        sandbox: str,
        deadline: Deadline,
        label: str,
        name: str | None = None,
        cpu: int | None = None,
        mem_mb: int = WORKER_MEM_MB,
    ) -> None:
        self.label = label
        self.deadline = deadline
        self.result: ExecResult | None = None
        self.failure: BaseException | None = None
        self._buf = bytearray()
        self._scanned = 0
        self._closed = False
        self._fds: list[int] = []
        self._root = Path(tempfile.mkdtemp(prefix="mlagent-worker-"))  # 0700: the host's
        try:
            scratch = self._scratch(source, submission)
            self._req = self._open(scratch / REQUESTS)
            self._rep = self._open(scratch / REPLIES)
            self._done_r, self._done_w = os.pipe()
            self._fds += [self._done_r, self._done_w]
            os.set_blocking(self._done_r, False)
            # no overlay to hide the scratch path (it names no session): through one, the
            # pipes would be other pipes than the host's
            self.executor = make_executor(
                sandbox, workspace=scratch, mem_mb=mem_mb, hide_host_path=False
            )
        except BaseException:
            self._release()
            raise
        command = ["env", "PYTHONHASHSEED=0", "python", "-s", "-P", "worker.py"]
        command += [submission.name, name or submission.name, str(-1 if cpu is None else cpu)]
        self._thread = threading.Thread(
            target=self._run, args=(command, scratch, mem_mb), daemon=True
        )
        self._thread.start()

    def _scratch(self, source: str, submission: Path) -> Path:
        """The run's whole workspace: the worker, a copy of the submission, the two pipes."""
        if submission.name in ("worker.py", REQUESTS, REPLIES):
            raise ValueError(f"a submission may not be called {submission.name}")
        scratch = self._root / "scratch"
        scratch.mkdir(mode=0o755)
        os.chmod(scratch, 0o755)  # the sandbox's own uid reads it
        (scratch / "worker.py").write_text(source)
        shutil.copyfile(submission, scratch / submission.name)
        for entry in ("worker.py", submission.name):
            os.chmod(scratch / entry, 0o644)
        for pipe in (REQUESTS, REPLIES):
            os.mkfifo(scratch / pipe, 0o600)
            os.chmod(scratch / pipe, 0o666)
        return scratch

    def _open(self, pipe: Path) -> int:
        # read-write: opening never blocks, and the pipe never reads as ended while we hold it
        fd = os.open(pipe, os.O_RDWR | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        self._fds.append(fd)
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass  # the default (64 KiB) works, with a few more wake-ups
        return fd

    def _run(self, command: list[str], scratch: Path, mem_mb: int) -> None:
        try:
            self.result = self.executor.run(
                command,
                cwd=scratch,
                timeout_s=max(self.deadline.left(), 0.1) + GRACE_S,
                mem_mb=mem_mb,
                disk_mb=SCRATCH_DISK_MB,
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the reader
            self.failure = exc
        finally:
            os.write(self._done_w, b".")

    # -- the protocol --------------------------------------------------------------------------
    def garbage(self) -> SubmissionError:
        """The error for a reply that breaks the protocol."""
        return SubmissionError(f"{self.label}'s process sent garbage")

    def start(self) -> None:
        """Wait until the file is imported and its function found."""
        first = self._parse(self._take(None))
        if "error" in first:
            raise SubmissionError(str(first["error"]))

    def request(self, msg: dict[str, Any], raw: bytes | None = None) -> dict[str, Any]:
        """Send one request (and `raw` bytes after it) and return the reply, with the raw bytes
        that followed it, if any, under "raw"; a reply with an "error" raises it."""
        return self.timed_request(msg, raw)[0]

    def timed_request(
        self, msg: dict[str, Any], raw: bytes | None = None
    ) -> tuple[dict[str, Any], float]:
        """`request`, and the seconds from its first byte sent to its reply's last received."""
        if raw is not None:
            msg = {**msg, "nbytes": len(raw)}
        line = (json.dumps(msg) + "\n").encode() + (raw or b"")
        start = time.perf_counter()
        self._send(line)
        reply = self._parse(self._take(None))
        size = reply.get("nbytes")
        if size is not None:
            if type(size) is not int or not 0 <= size <= MAX_REPLY_BYTES:
                raise self.garbage()
            reply["raw"] = self._take(size)
        elapsed = time.perf_counter() - start
        if "error" in reply:
            raise SubmissionError(str(reply["error"]))
        return reply, elapsed

    def _send(self, line: bytes) -> None:
        view = memoryview(line)
        while view:
            try:
                view = view[os.write(self._req, view) :]
                continue
            except BlockingIOError:
                pass
            left = self.deadline.left()
            if left <= 0:
                raise self.deadline.expired()
            ended, _, _ = select.select([self._done_r], [self._req], [], left)
            if ended:
                raise self._ended()

    def _take(self, size: int | None) -> bytes:
        """The next reply line (without its newline), or the next `size` raw bytes."""
        while True:
            if size is None:
                nl = self._buf.find(b"\n", self._scanned)
                if nl >= 0:
                    return self._cut(nl, 1)
                self._scanned = len(self._buf)
                if len(self._buf) > MAX_REPLY_BYTES:
                    raise self.garbage()
            elif len(self._buf) >= size:
                return self._cut(size, 0)
            left = self.deadline.left()
            if left <= 0:
                raise self.deadline.expired()
            ready, _, _ = select.select([self._rep, self._done_r], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self._rep, 1 << 20)
            except BlockingIOError:
                chunk = b""
            if chunk:
                self._buf += chunk
            elif self._done_r in ready:
                raise self._ended()

    def _cut(self, end: int, skip: int) -> bytes:
        out = bytes(self._buf[:end])
        del self._buf[: end + skip]
        self._scanned = 0
        return out

    def _parse(self, raw: bytes) -> dict[str, Any]:
        try:
            msg = json.loads(raw)
        except ValueError as exc:
            raise self.garbage() from exc
        if not isinstance(msg, dict):
            raise self.garbage()
        return msg

    def _ended(self) -> Exception:
        """Why the worker stopped answering: its run ended."""
        self._thread.join(timeout=10)
        res = self.result
        if self.failure is not None or res is None:
            return RuntimeError(f"the sandbox could not run {self.label}: {self.failure}")
        if res.timed_out or self.deadline.left() <= 0:
            return self.deadline.expired()
        why = f", killed: {res.killed_reason}" if res.killed_reason else ""
        tail = res.output.strip().splitlines()[-1:] if res.output.strip() else []
        said = f"; its last output: {tail[0][:300]}" if tail else ""
        return SubmissionError(
            f"{self.label}'s process ended unexpectedly (exit code {res.exit_code}{why}){said}"
        )

    def close(self) -> None:
        """End the run (the requests end; a worker that lingers meets its time limit) and wait
        for it: nothing of it runs after this returns. Removes the scratch folder."""
        if self._closed:
            return
        self._closed = True
        for fd in (self._req, self._rep):
            self._fds.remove(fd)
            os.close(fd)
        self._thread.join()
        self.executor.close()
        self._release()

    def _release(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()
        shutil.rmtree(self._root, ignore_errors=True)


class WorkerPool:
    """The workers of one grading: one deadline, one sandbox backend, all closed at the end."""

    def __init__(self, deadline: Deadline, sandbox: str) -> None:
        self.deadline = deadline
        self.sandbox = sandbox
        self.workers: list[Worker] = []

    def start(
        self,
        source: str,
        submission: Path,
        *,
        label: str,
        name: str | None = None,
        cpu: int | None = None,
        mem_mb: int = WORKER_MEM_MB,
    ) -> Worker:
        """A new worker for `submission`, its file imported and its function found."""
        worker = Worker(
            source,
            submission,
            sandbox=self.sandbox,
            deadline=self.deadline,
            label=label,
            name=name,
            cpu=cpu,
            mem_mb=mem_mb,
        )
        self.workers.append(worker)
        worker.start()
        return worker

    def close(self) -> None:
        for worker in self.workers:
            worker.close()


@contextmanager
def worker_pool(
    time_limit_s: float, timeout_message: str, *, sandbox: str | None = None
) -> Iterator[WorkerPool]:
    """A pool whose workers run in `sandbox` and together get `time_limit_s` of wall time.

    Without `sandbox`, the session's backend from MLAGENT_SANDBOX (which every grader gets).
    Past the limit a request raises SubmissionError(timeout_message); every worker is closed
    on the way out, whatever happened.
    """
    pool = WorkerPool(Deadline(time_limit_s, timeout_message), sandbox or sandbox_backend())
    try:
        yield pool
    finally:
        pool.close()
