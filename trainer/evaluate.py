"""`mlagent-train eval`: how often a model's sessions succeed, on tasks and seeds it never saw.

Each measured sample is a real session (either agent) on a task and seed, run like any other
and read back from the store, so `--home DIR` keeps them for `mlagent replay`. By default they
go to a temporary home deleted afterwards: an evaluation must never become training data by
accident. The held-out rule is enforced, not reported after the fact: a task any training data
came from is refused unless asked for by name with seeds it was never trained on.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mlagent_tui.core.home import Home
from mlagent_tui.core.llm import ChatModel, ModelError, ModelSpec, make_model
from mlagent_tui.core.session import Session
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task, run_baseline

from .eval_figures import (
    DEFINITIONS,
    Figures,
    SessionFigure,
    TaskFigures,
    figures,
    session_figure,
)
from .provenance import (
    HeldOut,
    NotHeldOut,
    ProvenanceError,
    held_out,
    training_record,
)
from .repetition import session_repetition
from .rollout import LockedModel, default_workers, new_session, run_session

AGENTS = ("solve", "research", "search")
DEFAULT_MAX_STEPS = {"solve": 3, "research": 15, "search": 24}


class EvalError(ValueError):
    """Input an evaluation cannot run with (the CLI exits 2 with this one line)."""


class EvalRequest(BaseModel):
    """What `mlagent-train eval` was asked, before any of it is checked."""

    model: str
    tasks: list[str] = Field(default_factory=list)
    task_dirs: list[Path] = Field(default_factory=list)
    seeds: list[str] = Field(default_factory=list)
    samples: int = 1
    agent: str = "solve"
    max_steps: int | None = None
    trained_on: Path | None = None
    home: Path | None = None
    workers: int | None = None
    threads: int | None = None  # a local model's decode threads (default: every core)
    starter: bool = True  # solve: the first step runs the task's starter as given


class EvalReport(Figures):
    model: str
    model_name: str  # what the sessions recorded (e.g. local+mlagent-<hash>)
    agent: str
    seeds: list[int]
    samples_per_seed: int
    max_steps: int
    starter: bool = False  # solve: each session's first step was the task's starter, as given
    tasks: dict[str, TaskFigures]
    held_out: HeldOut
    home: str | None  # where the sessions are kept; null: a temporary home, deleted
    seconds: float
    definitions: dict[str, str] = Field(default_factory=lambda: dict(DEFINITIONS))
    sessions: list[SessionFigure] = Field(default_factory=list)
    against: dict[str, Any] | None = None  # --against: trainer.eval_against.Against
    repetition: dict[str, Any] | None = None  # research: trainer.repetition.Repetition


class EvalPlan(BaseModel):
    """A checked request: everything an evaluation needs except the model instance."""

    model: str
    tasks: list[Any]  # Task
    seeds: list[int]
    samples: int
    agent: str
    max_steps: int
    workers: int
    threads: int
    held_out: HeldOut
    home: Path | None
    starter: bool = True


# -- checks: all of them before anything is created --------------------------------------------
def parse_seeds(values: list[str]) -> list[int]:
    raw = [v.strip() for value in values for v in value.split(",") if v.strip()]
    if not raw:
        raise EvalError("--seeds is required: task seeds to evaluate on, e.g. --seeds 100,101")
    try:
        seeds = [int(v) for v in raw]
    except ValueError:
        raise EvalError(
            f"--seeds takes whole numbers separated by commas, not {','.join(raw)!r}"
        ) from None
    if any(s < 0 for s in seeds):
        raise EvalError(f"--seeds must be 0 or more, got {','.join(raw)}")
    return list(dict.fromkeys(seeds))


def plan_eval(req: EvalRequest) -> EvalPlan:
    """Check every input (no file or folder is made here); an EvalError says what is wrong."""
    from mlagent_tui.core.bench.runner import BenchError, check_model, resolve_tasks

    if req.agent not in AGENTS:
        raise EvalError(f"unknown agent {req.agent!r}: --agent takes solve, research or search")
    for flag, value in (
        ("--samples", req.samples),
        ("--max-steps", req.max_steps),
        ("--workers", req.workers),
        ("--threads", req.threads),
    ):
        if value is not None and value < 1:
            raise EvalError(f"{flag} must be at least 1, not {value}")
    seeds = parse_seeds(req.seeds)
    names = [v.strip() for value in req.tasks for v in value.split(",") if v.strip()]
    if not names and not req.task_dirs:
        raise EvalError("no tasks: pass --tasks a,b (bundled names) or --task-dir DIR")
    try:
        tasks = resolve_tasks(names, req.task_dirs)
        check_model(req.model)
    except BenchError as exc:
        raise EvalError(str(exc)) from None
    try:
        data, source = training_record(req.model, req.trained_on)
        held = held_out([t.name for t in tasks], set(names), seeds, data, source)
    except ProvenanceError as exc:
        flag = "--trained-on: " if req.trained_on and not isinstance(exc, NotHeldOut) else ""
        raise EvalError(f"{flag}{exc}") from None
    return EvalPlan(
        model=req.model,
        tasks=tasks,
        seeds=seeds,
        samples=req.samples,
        agent=req.agent,
        max_steps=req.max_steps or DEFAULT_MAX_STEPS[req.agent],
        workers=req.workers or default_eval_workers(req.model),
        threads=req.threads or os.cpu_count() or 1,
        held_out=held,
        home=req.home,
        starter=req.starter,
    )


def default_eval_workers(spec: str) -> int:
    """Sessions at a time. One for a model in this process: its calls are serialised and it
    decodes on every core, so a second session's sandboxed script only contends with it (on
    2 cores, 6 sessions took 145 s one at a time and 232 s two at a time). An API or replay
    model leaves the CPU to the scripts: one session per core."""
    return 1 if ModelSpec.parse(spec).backend == "local" else default_workers()


def model_factory(spec: str, threads: int | None = None) -> Callable[[], ChatModel]:
    """What each session talks to: one shared instance, calls serialised; a replay model anew
    per session (it serves its responses in order, so sessions sharing one would split them).
    A local model decodes on `threads` threads: llama.cpp's default of half the cores leaves
    a core idle whenever no sandboxed script is running beside the generation."""
    try:
        first = make_model(spec, n_threads=threads)
    except (ModelError, ValueError, OSError) as exc:
        raise EvalError(f"model {spec!r}: {exc}") from None
    if spec.startswith("replay:"):
        return lambda: make_model(spec)
    shared = LockedModel(first)
    return lambda: shared


# -- running -------------------------------------------------------------------------------------
def run_eval(plan: EvalPlan, on_done: Callable[[SessionFigure], None] | None = None) -> EvalReport:
    """Run every (task, seed, sample) session, `plan.workers` at a time, and summarise them. The
    sessions go to plan.home, else to a temporary home removed afterwards (even on an error)."""
    started = time.monotonic()
    models = model_factory(plan.model, plan.threads)
    root = plan.home or Path(tempfile.mkdtemp(prefix="mlagent-eval-"))
    try:
        home = Home.at(root)
        store = Store(home.db_path)
        try:
            rows, name = _run_all(plan, home, store, models, on_done)
            said = session_repetition(store, [r.session_id for r in rows])
        finally:
            store.close()
    finally:
        if plan.home is None:
            _remove(root)
    by_task = {
        t.name: TaskFigures(
            **figures([r for r in rows if r.task == t.name]),
            metric=t.spec.metric.name,
            higher_is_better=t.spec.metric.higher_is_better,
            baseline_score=t.spec.baseline.score,
        )
        for t in plan.tasks
    }
    return EvalReport(
        **figures(rows),
        model=plan.model,
        model_name=name,
        agent=plan.agent,
        seeds=plan.seeds,
        samples_per_seed=plan.samples,
        max_steps=plan.max_steps,
        starter=plan.starter and plan.agent == "solve",
        tasks=by_task,
        held_out=plan.held_out,
        home=str(home.root) if plan.home is not None else None,
        seconds=round(time.monotonic() - started, 2),
        sessions=rows,
        repetition=said.model_dump() if plan.agent == "research" else None,
    )


def _run_all(
    plan: EvalPlan,
    home: Home,
    store: Store,
    models: Callable[[], ChatModel],
    on_done: Callable[[SessionFigure], None] | None,
) -> tuple[list[SessionFigure], str]:
    jobs = [(t, s, i) for t in plan.tasks for s in plan.seeds for i in range(plan.samples)]
    live: dict[int, Session] = {}
    lock = threading.Lock()
    names: set[str] = set()
    opts = {"agent": plan.agent, "max_steps": plan.max_steps, "model_spec": plan.model}
    if plan.agent == "solve":
        opts["solve_starter"] = plan.starter

    starters: dict[tuple[str, int], float | None] = {}
    starter_lock = threading.Lock()

    def starter_score(task: Task, seed: int) -> float | None:
        """The starter's test score at `seed`, run once per task and seed (a baseline session
        in this home): what "better than the starter" means for a session of that seed."""
        with starter_lock:
            if (task.name, seed) not in starters:
                try:
                    got = run_baseline(task, home, store, seed=seed)
                    starters[task.name, seed] = got.score if got.valid else None
                except Exception:  # noqa: BLE001 - a broken starter: nothing to beat
                    starters[task.name, seed] = None
            return starters[task.name, seed]

    def one(index: int) -> SessionFigure:
        task, seed, sample = jobs[index]
        starter = starter_score(task, seed)

        def make() -> Session:
            model = models()
            names.add(model.name)
            session = new_session(home, store, task, model, seed=seed, **opts)
            with lock:
                live[index] = session
            return session

        try:
            outcome = run_session(make, store, task, instrument="none")
        finally:
            with lock:
                live.pop(index, None)
        row = session_figure(store, task, seed, sample, outcome, starter)
        if on_done is not None:
            with lock:
                on_done(row)
        return row

    pool = ThreadPoolExecutor(max_workers=plan.workers)
    futures: list[Future[SessionFigure]] = [pool.submit(one, i) for i in range(len(jobs))]
    try:
        pending = set(futures)
        while pending:
            _, pending = wait(pending, return_when=FIRST_COMPLETED)
    except BaseException:
        with lock:
            for session in live.values():
                session.stop("evaluation interrupted")
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return [f.result() for f in futures], ", ".join(sorted(names)) or plan.model


def _remove(root: Path) -> None:
    """Remove the temporary home, read-only folders included (task files may be read-only)."""
    for folder, subdirs, _ in os.walk(root):
        for name in subdirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    os.chmod(path, stat.S_IRWXU)
    shutil.rmtree(root, ignore_errors=True)
