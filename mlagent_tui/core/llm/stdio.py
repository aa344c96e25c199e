"""Quieting what C code prints: llama.cpp writes to fd 2 and to its log callback directly."""

from __future__ import annotations

import contextlib
import ctypes
import os
import tempfile
import threading
from collections.abc import Iterator

# Held while fds 1 and 2 point elsewhere (quiet_stderr, and llama.cpp's own suppression while a
# model loads): two threads that each save and restore them in turn (a bench's parallel runs)
# would otherwise restore each other's /dev/null, and the process's output is gone for good.
# Whoever prints from a worker thread takes it too, so its line waits instead of vanishing.
STDIO_LOCK = threading.RLock()


@contextlib.contextmanager
def quiet_stderr() -> Iterator[list[str]]:
    """Send fd 2 to a file for the block (C code writes there directly); yields what it caught."""
    with STDIO_LOCK, _quiet_stderr() as caught:
        yield caught


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[list[str]]:
    caught: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as sink:
        try:
            saved = os.dup(2)
        except OSError:  # no stderr at all (daemonised): nothing to silence
            yield caught
            return
        os.dup2(sink.fileno(), 2)
        try:
            yield caught
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            caught.append(sink.read().decode("utf-8", "replace"))


@contextlib.contextmanager
def captured_llama_log() -> Iterator[list[str]]:
    """Collect llama.cpp log lines for the block (e.g. a grammar's parse error), printing none."""
    import llama_cpp

    lines: list[str] = []

    @llama_cpp.llama_log_callback
    def collect(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        lines.append(text.decode("utf-8", "replace"))

    llama_cpp.llama_log_set(collect, ctypes.c_void_p(0))
    try:
        yield lines
    finally:
        try:
            from llama_cpp._logger import llama_log_callback as default_callback

            llama_cpp.llama_log_set(default_callback, ctypes.c_void_p(0))
        except ImportError:  # pragma: no cover - older layouts
            llama_cpp.llama_log_set(ctypes.cast(None, llama_cpp.llama_log_callback), None)


__all__ = ["STDIO_LOCK", "captured_llama_log", "quiet_stderr"]
