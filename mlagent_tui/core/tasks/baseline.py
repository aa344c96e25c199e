"""Run a task's baseline as a small recorded session: prepare, execute in the sandbox, grade."""

from __future__ import annotations

import time
from collections.abc import Callable

from pydantic import BaseModel

from ..events import (
    EventBus,
    ExecFinished,
    LineBatcher,
    Recorder,
    ScoreRecorded,
    SessionEnded,
    SessionStarted,
)
from ..home import Home, new_session_id
from ..sandbox import make_executor
from ..store import Store
from .spec import Task


class BaselineResult(BaseModel):
    task: str
    session_id: str
    score: float | None
    valid: bool
    error: str | None = None
    medal: str | None = None
    above_median: bool = False
    exit_code: int | None = None
    exec_seconds: float
    total_seconds: float
    killed_reason: str | None = None
    workspace: str


def run_baseline(
    task: Task,
    home: Home,
    store: Store,
    *,
    sandbox: str = "local",
    seed: int = 0,
    echo: Callable[[str], None] | None = None,
) -> BaselineResult:
    started = time.perf_counter()
    session_id = new_session_id()
    workspace, private = home.workspace(session_id), home.private(session_id)
    bus = EventBus()
    bus.subscribe(store.append)
    rec = Recorder(session_id, bus)
    rec.emit(
        SessionStarted(
            task=task.name,
            agent="baseline",
            sandbox=sandbox,
            workspace=str(workspace),
            config={"seed": seed, "command": task.spec.baseline.command},
        )
    )
    try:
        task.prepare(workspace, private, seed=seed)
        executor = make_executor(sandbox, workspace=workspace, mem_mb=task.spec.limits.mem_mb)
        batcher = LineBatcher(rec, echo)
        try:
            result = executor.run(
                task.spec.baseline.command,
                cwd=workspace,
                timeout_s=task.spec.limits.exec_timeout_s,
                mem_mb=task.spec.limits.mem_mb,
                on_output=batcher,
            )
        finally:
            batcher.flush()
            executor.close()
    except Exception as exc:
        rec.emit(SessionEnded(reason=f"error: {exc}", status="failed"))
        raise
    rec.emit(ExecFinished.of(result))
    grade = task.grade(workspace, private, split="test", sandbox=sandbox)
    medal, above = task.medal(grade.score), task.above_median(grade.score)
    rec.emit(
        ScoreRecorded(
            split="baseline",
            score=grade.score,
            valid=grade.valid,
            error=grade.error,
            medal=medal,
            above_median=above,
        )
    )
    rec.emit(
        SessionEnded(
            reason="baseline finished",
            status="finished" if grade.valid else "failed",
            final_score=grade.score,
            valid=grade.valid,
            medal=medal,
        )
    )
    return BaselineResult(
        task=task.name,
        session_id=session_id,
        score=grade.score,
        valid=grade.valid,
        error=grade.error,
        medal=medal,
        above_median=above,
        exit_code=result.exit_code,
        exec_seconds=result.duration_s,
        total_seconds=round(time.perf_counter() - started, 3),
        killed_reason=result.killed_reason,
        workspace=str(workspace),
    )
