"""Running a benchmark: N sessions per task and model, P at a time, each a normal session.

Everything is checked before the first session starts (tasks exist, models can be built).
Runs go through a thread pool: a session spends its time in the model or in sandboxed
subprocesses, neither of which holds the GIL, so threads give real parallelism here. A run that
raises is recorded as crashed and the others go on; an interrupt stops the live sessions and
leaves their rows `interrupted`, and `resume` runs only what is missing (continuing interrupted
sessions where they stopped).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from ..events import Event
from ..home import Home, new_session_id
from ..llm import ModelError
from ..llm import check_model as check_model_spec
from ..session import Session, SessionConfig
from ..store import Store, bench_sessions, create_bench, get_bench, record_run, set_bench_status
from ..tasks import Task, TaskError, find_task, list_tasks

INTERRUPTED = "bench interrupted"
AgentName = Literal["research", "solve", "search"]


class BenchError(ValueError):
    """A bench that cannot start: an unknown task or model, a bad option, an unknown id."""


class TaskRef(BaseModel):
    name: str
    task_dir: str | None = None


class BenchConfig(BaseModel):
    tasks: list[TaskRef]
    models: list[str]
    agent: AgentName = "research"  # the first of `agents` (a record's older, single form)
    agents: list[AgentName] = Field(default_factory=list, description="compared at one budget")
    runs: int = Field(default=1, ge=1)
    max_steps: int | None = Field(default=None, ge=1)
    max_minutes: float | None = None
    parallel: int = Field(default=1, ge=1)
    sandbox: Literal["local", "docker"] = "local"
    seed: int = 0
    specs: dict[str, dict] = Field(default_factory=dict, description="task name -> TaskSpec")

    @model_validator(mode="after")
    def _one_or_more_agents(self) -> BenchConfig:
        """A record written before `agents` existed names one `agent`: it is the only one."""
        if not self.agents:
            self.agents = [self.agent]
        if len(set(self.agents)) != len(self.agents):
            raise ValueError("an agent appears twice in --agents")
        self.agent = self.agents[0]
        return self


class RunJob(BaseModel):
    task: str
    model: str
    run_index: int
    agent: str = "research"
    resume_session: str | None = None


# -- checks before anything runs ------------------------------------------------------------
def resolve_tasks(names: list[str] | None, task_dirs: list[Path] | None) -> list[Task]:
    """Bundled tasks by name (`all` = every bundled task) and task folders; unknown = error."""
    tasks: list[Task] = []
    try:
        for name in names or []:
            tasks.extend(list_tasks() if name == "all" else [find_task(name)])
        tasks.extend(find_task(task_dir=d) for d in task_dirs or [])
    except TaskError as exc:
        raise BenchError(str(exc)) from None
    if not tasks:
        raise BenchError("no tasks: pass --tasks NAMES|all or --task-dir DIR")
    seen: dict[str, Path] = {}
    for t in tasks:
        if t.name in seen and seen[t.name] != t.folder:
            raise BenchError(f"two different tasks are named {t.name!r}")
        seen[t.name] = t.folder
    unique = {t.name: t for t in tasks}
    return list(unique.values())


def check_model(spec: str) -> None:
    """Fail now, not mid-benchmark, on a model spec that cannot work (core.llm.check_model:
    the same one-line answer `mlagent run` gives)."""
    try:
        check_model_spec(spec)
    except ModelError as exc:
        raise BenchError(str(exc)) from None


def make_config(
    tasks: list[Task],
    models: list[str],
    *,
    agent: str = "research",
    agents: list[str] | None = None,
    runs: int = 1,
    max_steps: int | None = None,
    max_minutes: float | None = None,
    parallel: int = 1,
    sandbox: str = "local",
    seed: int = 0,
) -> BenchConfig:
    models = [m.strip() for m in models if m.strip()]
    if not models:
        raise BenchError("no models: pass --models M1,M2,...")
    if len(set(models)) != len(models):
        raise BenchError("a model appears twice in --models")
    for m in models:
        check_model(m)
    try:
        return BenchConfig(
            tasks=[TaskRef(name=t.name, task_dir=str(t.folder)) for t in tasks],
            models=models,
            agent=(agents or [agent])[0],  # type: ignore[arg-type]
            agents=agents or [agent],  # type: ignore[arg-type]
            runs=runs,
            max_steps=max_steps,
            max_minutes=max_minutes,
            parallel=parallel,
            sandbox=sandbox,  # type: ignore[arg-type]
            seed=seed,
            specs={t.name: t.spec.model_dump(by_alias=True) for t in tasks},
        )
    except ValueError as exc:
        raise BenchError(str(exc)) from None


def run_key(bench_id: str, job: RunJob) -> tuple[str, str, str, int]:
    """The positional part of `record_run`'s arguments for a job (its agent is a keyword)."""
    return (bench_id, job.task, job.model, job.run_index)


# -- running -----------------------------------------------------------------------------------
RunCallback = Callable[[RunJob, str, str | None], None]  # (job, status, session id)
EventCallback = Callable[[RunJob, Event], None]  # each event of a run's session


class BenchRunner:
    """Runs the missing runs of one bench; `stop()` (from any thread) interrupts it."""

    def __init__(self, home: Home, store: Store, bench_id: str, config: BenchConfig) -> None:
        self.home, self.store, self.bench_id, self.config = home, store, bench_id, config
        self.folders = {t.name: t.task_dir for t in config.tasks}
        self._live: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.on_event: EventCallback | None = None  # e.g. a progress line per step

    def pending(self) -> list[RunJob]:
        """The runs not yet done: never started, or interrupted (continued where they stopped)."""
        rows = {
            (r["task"], r["model"], r["agent"], r["run_index"]): r
            for r in bench_sessions(self.store, self.bench_id)
        }
        jobs = []
        for t in self.config.tasks:
            for m in self.config.models:
                for a in self.config.agents:
                    for i in range(self.config.runs):
                        job = RunJob(task=t.name, model=m, agent=a, run_index=i)
                        row = rows.get((t.name, m, a, i))
                        if row is None:
                            jobs.append(job)
                        elif row["status"] in ("running", "interrupted"):
                            left = self._unfinished(job, row["session_id"])
                            if left is not None:
                                jobs.append(left)
        return jobs

    def _unfinished(self, job: RunJob, sid: str | None) -> RunJob | None:
        """How to finish a run left behind: continue its session, start anew, or just close it."""
        session = self.store.session(sid) if sid else None
        if session is None:
            return job
        if session["status"] in ("running", "paused", "interrupted") or (
            session["end_reason"] == INTERRUPTED
        ):
            return job.model_copy(update={"resume_session": sid})
        record_run(
            self.store,
            *run_key(self.bench_id, job),
            status="done",
            session_id=sid,
            agent=job.agent,
        )
        return None

    def run(self, on_run: RunCallback | None = None) -> str:
        """Run what is pending, P at a time; returns the bench's final status."""
        jobs = self.pending()
        set_bench_status(self.store, self.bench_id, "running")
        pool = ThreadPoolExecutor(max_workers=self.config.parallel, thread_name_prefix="bench")
        futures: set[Future[None]] = {pool.submit(self._one, j, on_run) for j in jobs}
        try:
            while futures:
                _, futures = wait(futures, timeout=0.5, return_when=FIRST_COMPLETED)
        except KeyboardInterrupt:
            self.stop()
            for f in futures:
                f.cancel()
            pool.shutdown(wait=True)
            set_bench_status(self.store, self.bench_id, "interrupted")
            raise
        pool.shutdown(wait=True)
        status = "interrupted" if self._stopping.is_set() else "finished"
        set_bench_status(self.store, self.bench_id, status)
        return status

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            for session in self._live.values():
                session.stop(INTERRUPTED)

    def _session(self, job: RunJob) -> Session:
        if job.resume_session:
            return Session.resume(self.home, self.store, job.resume_session)
        c = self.config
        config = SessionConfig(
            task_dir=self.folders[job.task],
            model=job.model,
            agent=job.agent,  # type: ignore[arg-type]
            sandbox=c.sandbox,
            max_steps=c.max_steps,
            max_minutes=c.max_minutes,
            seed=c.seed,
            solve_starter=True,  # as the search's first node: both start from the starter
        )
        return Session.create(self.home, self.store, config)

    def _one(self, job: RunJob, on_run: RunCallback | None) -> None:
        if self._stopping.is_set():
            return
        key = run_key(self.bench_id, job)
        started = time.perf_counter()
        session: Session | None = None
        status, error = "done", None
        try:
            session = self._session(job)
            record_run(self.store, *key, status="running", session_id=session.id, agent=job.agent)
            if on_run:
                on_run(job, "running", session.id)
            if self.on_event is not None:
                watch = self.on_event
                session.subscribe(lambda event: watch(job, event))
            with self._lock:
                self._live[session.id] = session
            if self._stopping.is_set():
                session.stop(INTERRUPTED)
            result = session.run()
            if result.reason == INTERRUPTED:
                status = "interrupted"
        except Exception as exc:  # noqa: BLE001 - a crashed run is data; the bench goes on
            status, error = "crashed", f"{type(exc).__name__}: {exc}"
        finally:
            if session is not None:
                with self._lock:
                    self._live.pop(session.id, None)
        record_run(
            self.store,
            *key,
            status=status,
            session_id=session.id if session else None,
            error=error,
            run_wall_s=round(time.perf_counter() - started, 4),
            agent=job.agent,
        )
        if on_run:
            on_run(job, status, session.id if session else None)


def start_bench(home: Home, store: Store, config: BenchConfig) -> str:
    bench_id = "bench-" + new_session_id()
    create_bench(store, bench_id, config.model_dump())
    return bench_id


def load_bench(store: Store, bench_id: str) -> BenchConfig:
    row = get_bench(store, bench_id)
    if row is None:
        raise BenchError(f"no bench {bench_id!r} (see `mlagent bench list`)")
    return BenchConfig.model_validate(row["config"])
