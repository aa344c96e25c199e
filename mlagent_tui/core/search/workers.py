"""Running nodes: each in a workspace of its own (a copy of the prepared task plus its
script), in the session's sandbox backend, several at once.

A node's folder is bound as the sandbox's whole workspace, so a script sees no sibling's
files. The local backend keeps one executor per worker (reused); docker starts one per node,
bound to that node's folder. A script that hangs is killed at the task's time-out (timed out),
one that fills the disk at its limit (buggy); the other nodes go on.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path

from ..agent.actions import SOLUTION_FILE
from ..agent.prompts import cut_middle
from ..sandbox import Executor, make_executor
from ..search_events import NodeFinished
from ..tasks import Task
from ..workspace import Workspace
from .selection import Split

STORED_OUTPUT_CHARS = 3_000
SCRIPT_THREADS = 2  # a session's scripts run with 2 (LocalExecutor's default)


def snapshot_name(node: int) -> str:
    return f"node-{node:04d}"


def copy_tree(src: Path, dest: Path) -> None:
    """`dest` as a copy of `src`: reflinked where the file system can, else copied (never
    hard-linked: a node writing a file in place would change its siblings' copies)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        shutil.rmtree(dest)
    proc = subprocess.run(
        ["cp", "-a", "--reflink=auto", f"{src}/.", str(dest)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:  # e.g. a cp without --reflink
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, dest, symlinks=True)


class NodeRunner:
    """Prepares, runs, grades and snapshots nodes; thread-safe (a pool of workers calls it)."""

    def __init__(
        self,
        *,
        task: Task,
        backend: str,
        base: Path,
        nodes_root: Path,
        meta: Path,
        split: Split,
        workers: int,
    ) -> None:
        self.task, self.backend, self.base = task, backend, base
        self.nodes_root, self.meta, self.split = nodes_root, meta, split
        self._executors: queue.Queue[Executor] = queue.Queue()
        self._all: list[Executor] = []
        self._made = 0
        self._workers = workers
        # a script's BLAS/OpenMP threads: its worker's share of the cores (two workers' scripts
        # of two threads each beside the model's generation oversubscribe two cores)
        self.threads = max(1, min(SCRIPT_THREADS, (os.cpu_count() or 1) // max(workers, 1)))
        self._lock = threading.Lock()
        self._snap_lock = threading.Lock()  # the object store is written by one at a time

    def folder(self, node: int) -> Path:
        return self.nodes_root / f"{node:04d}"

    def _executor(self, folder: Path) -> Executor:
        if self.backend == "docker":  # a container is bound to one workspace
            return make_executor("docker", workspace=folder, mem_mb=self.task.spec.limits.mem_mb)
        with self._lock:
            if self._executors.empty() and self._made < self._workers:
                self._made += 1
                ex = make_executor("local", threads=self.threads)
                self._all.append(ex)
                return ex
        return self._executors.get()

    def _release(self, ex: Executor) -> None:
        if self.backend == "docker":
            ex.close()
        else:
            self._executors.put(ex)

    def run(self, node: int, script: str, on_start: callable = None) -> NodeFinished:  # type: ignore[valid-type]
        """Copy the prepared task, write the script, run it, grade the search part, snapshot."""
        t0 = time.perf_counter()
        folder = self.folder(node)
        copy_tree(self.base, folder)
        ws = Workspace(folder, self.meta)
        ws.put(SOLUTION_FILE, script.encode())
        overhead = time.perf_counter() - t0
        limits = self.task.spec.limits
        ex = self._executor(folder)
        try:
            if on_start is not None:
                on_start()
            start = time.time()
            res = ex.run(
                ["python", SOLUTION_FILE],
                cwd=folder,
                timeout_s=limits.exec_timeout_s,
                mem_mb=limits.mem_mb,
                disk_mb=limits.disk_mb,
                read_only=self.task.spec.read_only,
            )
            end = time.time()
        finally:
            self._release(ex)
        output = cut_middle(res.output, STORED_OUTPUT_CHARS)
        score, error = None, None
        if res.killed_reason == "timeout":
            status = "timed_out"
            error = f"killed: time limit of {limits.exec_timeout_s:.0f} s reached"
        elif not res.ok:
            status = "buggy"
            why = f"killed: {res.killed_reason} limit" if res.killed_reason else "failed"
            error = f"{why} (exit code {res.exit_code})"
        else:
            graded = self.task.grade(
                folder, self.split.search_private, "validate", sandbox=self.backend
            )
            status = "valid" if graded.valid and graded.score is not None else "buggy"
            score, error = (graded.score, None) if status == "valid" else (None, graded.error)
        t1 = time.perf_counter()
        if res.killed_reason == "disk":  # what filled the disk is not kept, nor copied on
            shutil.rmtree(folder, ignore_errors=True)
            copy_tree(self.base, folder)
            ws = Workspace(folder, self.meta)
            ws.put(SOLUTION_FILE, script.encode())
        with self._snap_lock:
            ws.snapshot(snapshot_name(node))
        overhead += time.perf_counter() - t1
        return NodeFinished(
            node=node,
            status=status,  # type: ignore[arg-type]
            score=score,
            output=output,
            error=error,
            seconds=round(end - start, 3),
            exec_start=start,
            exec_end=end,
            snapshot=snapshot_name(node),
            overhead_ms=round(overhead * 1000, 2),
        )

    def grade(self, node: int, private: Path, split: str) -> float | None:
        """A node's score on another part (hidden) or split (test); None when not valid."""
        result = self.task.grade(self.folder(node), private, split, sandbox=self.backend)
        return result.score if result.valid else None

    def close(self) -> None:
        for ex in self._all:
            ex.close()
