"""The workspace's disk limit: a poller of its size that kills the command past the limit."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path


def tree_mb(root: Path) -> float:
    """Disk space used under `root` (allocated blocks, links not followed), in MB."""
    total = 0
    stack = [str(root)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += st.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return total / 1024 / 1024


class DiskWatch(threading.Thread):
    """Polls a workspace's size while a command runs; past `limit_mb` it calls `kill` once.

    The limit counts what the workspace holds, starting files included, so a task's data
    must fit well under it.
    """

    def __init__(
        self, root: Path, limit_mb: int, kill: Callable[[], None], interval_s: float = 0.05
    ) -> None:
        super().__init__(daemon=True)
        self.root = Path(root)
        self.limit_mb = limit_mb
        self.kill = kill
        self.interval_s = interval_s
        self.exceeded = False
        self.peak_mb = 0.0
        self._stop_event = threading.Event()

    def run(self) -> None:
        wait = self.interval_s
        while not self._stop_event.wait(wait):
            start = time.perf_counter()
            if self.check():
                return
            # a workspace of many files costs a walk each time: never spend over ~10% of a core
            wait = max(self.interval_s, 10 * (time.perf_counter() - start))

    def check(self) -> bool:
        """Measure once; True (and the command killed) when over the limit."""
        used = tree_mb(self.root)
        self.peak_mb = max(self.peak_mb, used)
        if used > self.limit_mb and not self.exceeded:
            self.exceeded = True
            self.kill()
        return self.exceeded

    def stop(self) -> bool:
        """Stop polling; measure one last time (a burst between polls still counts)."""
        self._stop_event.set()
        return self.check()
