"""Raw executions of sampled solutions, without a session or the store: what the rollout
benchmark times (trainer.rollout runs them as sessions)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel

from mlagent_tui.core.agent.actions import SOLUTION_FILE
from mlagent_tui.core.sandbox import LocalExecutor
from mlagent_tui.core.tasks import Task


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


# -- raw executions (no store): what the benchmark times ---------------------------------------
class ExecOutcome(BaseModel):
    exit_code: int | None
    seconds: float
    timed_out: bool
    output: str
    valid: bool = False
    score: float | None = None


def execute_solutions(
    task: Task,
    scripts: Sequence[str],
    *,
    workers: int | None = None,
    timeout_s: float | None = None,
    grade: bool = True,
    seed: int = 0,
) -> list[ExecOutcome]:
    """Run each script as the task's solution in a fresh workspace, `workers` at a time."""
    limits = task.spec.limits
    timeout = min(timeout_s or limits.exec_timeout_s, limits.exec_timeout_s)
    root = Path(tempfile.mkdtemp(prefix="mlagent-rollout-"))
    executor = LocalExecutor()
    try:

        def one(i: int) -> ExecOutcome:
            ws, private = root / f"ws-{i}", root / f"private-{i}"
            task.prepare(ws, private, seed=seed)
            (ws / SOLUTION_FILE).write_text(scripts[i])
            res = executor.run(
                ["python", SOLUTION_FILE], cwd=ws, timeout_s=timeout, mem_mb=limits.mem_mb
            )
            out = ExecOutcome(
                exit_code=res.exit_code,
                seconds=res.duration_s,
                timed_out=res.timed_out,
                output=res.output,
            )
            if grade and res.ok:
                graded = task.grade(ws, private, "validate", sandbox=executor.name)
                out.valid, out.score = graded.valid, graded.score
            return out

        with ThreadPoolExecutor(max_workers=workers or default_workers()) as pool:
            return list(pool.map(one, range(len(scripts))))
    finally:
        executor.close()
        shutil.rmtree(root, ignore_errors=True)
