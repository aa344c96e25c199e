"""The Executor protocol, its result, and the output capture both backends share."""

from __future__ import annotations

import collections
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

OutputCallback = Callable[[str], None]

MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc")


class ExecResult(BaseModel):
    command: str
    exit_code: int | None
    duration_s: float
    peak_rss_mb: float = 0.0
    timed_out: bool = False
    # "timeout" | "memory" | "cpu" | "file_size" | "processes" | "disk"
    killed_reason: str | None = None
    output: str = ""
    output_truncated: bool = False
    isolation: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.killed_reason is None


DEFAULT_DISK_MB = 2048


class Executor(Protocol):
    """Runs one command of the agent (or of a grader on the agent's code) in the sandbox.

    `disk_mb` bounds the workspace's size while the command runs (killed with reason "disk"
    past it); its /tmp is a bounded tmpfs that counts against `mem_mb`. `read_only` names
    workspace files the command must not change (mounted read-only). No process of the
    command outlives the call.
    """

    name: str

    def run(
        self,
        command: str | list[str],
        *,
        cwd: Path,
        timeout_s: float = 60.0,
        mem_mb: int = 1024,
        on_output: OutputCallback | None = None,
        disk_mb: int = DEFAULT_DISK_MB,
        read_only: Sequence[str] = (),
    ) -> ExecResult: ...

    def close(self) -> None: ...


def as_shell(command: str | list[str]) -> str:
    return command if isinstance(command, str) else shlex.join(command)


class OutputCapture:
    """Splits a byte stream into lines, streams them, and keeps only a head and a tail.

    After `head_bytes` the middle is dropped (still drained, so the writer never blocks);
    the last `tail_bytes` are kept and streamed when the output ends.
    """

    def __init__(
        self,
        on_output: OutputCallback | None,
        head_bytes: int = 256_000,
        tail_bytes: int = 64_000,
        max_line: int = 4_000,
    ) -> None:
        self.on_output = on_output
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self.max_line = max_line
        self.head: list[str] = []
        self._head_size = 0
        self._partial = b""
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self.dropped_bytes = 0
        self.total_bytes = 0

    @property
    def truncated(self) -> bool:
        return self.dropped_bytes > 0

    def feed(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        if self._head_size >= self.head_bytes:
            self._keep_tail(chunk)
            return
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > self.max_line:
            lines.append(self._partial)
            self._partial = b""
        for i, raw in enumerate(lines):
            if self._head_size >= self.head_bytes:
                rest = b"\n".join(lines[i:]) + b"\n" + self._partial
                self._partial = b""
                self._keep_tail(rest)
                return
            self._emit_head(raw)

    def _emit_head(self, raw: bytes) -> None:
        for start in range(0, max(len(raw), 1), self.max_line):
            line = raw[start : start + self.max_line].decode("utf-8", "replace").rstrip("\r")
            self.head.append(line)
            self._head_size += len(line) + 1
            if self.on_output:
                self.on_output(line)

    def _keep_tail(self, chunk: bytes) -> None:
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail and self._tail_size - len(self._tail[0]) >= self.tail_bytes:
            self._tail_size -= len(self._tail[0])
            self.dropped_bytes += len(self._tail.popleft())

    def close(self) -> None:
        """Flush the last partial line and the kept tail."""
        if not self._tail:
            if self._partial:
                self._emit_head(self._partial)
                self._partial = b""
            return
        tail = b"".join(self._tail)
        if len(tail) > self.tail_bytes:
            self.dropped_bytes += len(tail) - self.tail_bytes
            tail = tail[-self.tail_bytes :]
        lines = tail.split(b"\n")
        if self.dropped_bytes:
            lines = lines[1:]  # the first one is cut
        if self.dropped_bytes:
            notice = f"[... {self.dropped_bytes} bytes of output cut ...]"
            self.head.append(notice)
            if self.on_output:
                self.on_output(notice)
        self._tail.clear()
        for raw in lines:
            if raw:
                self._emit_head_unbounded(raw)

    def _emit_head_unbounded(self, raw: bytes) -> None:
        line = raw[: self.max_line].decode("utf-8", "replace").rstrip("\r")
        self.head.append(line)
        if self.on_output:
            self.on_output(line)

    def text(self) -> str:
        return "\n".join(self.head)


def killed_reason_from(
    exit_code: int | None, output_tail: str, timed_out: bool, monitor_reason: str | None
) -> str | None:
    """Name why a process died: the monitor's verdict first, then signals and markers."""
    if timed_out:
        return "timeout"
    if monitor_reason:
        return monitor_reason
    if exit_code is None:
        return None
    if exit_code in (-24, 128 + 24):  # SIGXCPU
        return "cpu"
    if exit_code in (-25, 128 + 25):  # SIGXFSZ
        return "file_size"
    if exit_code != 0 and any(m in output_tail for m in MEMORY_MARKERS):
        return "memory"
    return None
