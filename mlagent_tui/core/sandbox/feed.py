"""Bytes handed to a sandboxed command on its stdin, through a FIFO only the host can open.

Why not a file: whatever lies in the workspace (or anywhere the sandbox mounts) can be read by
any process of the agent's, and a regular file's descriptor can be reopened from the start
through /proc. A pipe is read once: the command drains it and what was in it is gone. The FIFO
lives in the executor's own folder, outside every mount, and loses its name the moment the
command's end is open, so nothing but that one descriptor ever reaches the bytes.
"""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path


class InputFeed:
    """Writes `data` into a fresh FIFO in `folder` once the command opens its end."""

    def __init__(self, folder: Path, data: bytes) -> None:
        self.path = folder / f"stdin-{secrets.token_hex(8)}"
        os.mkfifo(self.path, 0o600)
        self._data = data
        self._thread = threading.Thread(target=self._write, daemon=True)
        self._thread.start()

    def _write(self) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY)  # waits for the command to open its end
        except OSError:
            return
        self.path.unlink(missing_ok=True)
        view = memoryview(self._data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError:  # the command ended (or closed stdin) before reading it all
            pass
        finally:
            os.close(fd)

    def close(self) -> None:
        """After the command: release a writer still waiting for a reader, drop the name."""
        if self._thread.is_alive():
            try:
                os.close(os.open(self.path, os.O_RDONLY | os.O_NONBLOCK))
            except OSError:
                pass
            self._thread.join(timeout=5)
        self.path.unlink(missing_ok=True)
