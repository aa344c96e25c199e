"""One run: task + workspace + sandbox + agent + store, with hooks for the person watching.

Every step is durable when it completes (its ActionFinished event is committed); the
workspace is snapshotted after each step, so resume and fork restore exactly that state.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..agent import Agent, AgentState, Memory, Note, make_agent
from ..events import (
    ApprovalModeChanged,
    Event,
    EventBus,
    FileChanged,
    HintGiven,
    Paused,
    PlanEdited,
    Recorder,
    Resumed,
    SessionEnded,
    SessionStarted,
)
from ..home import Home, new_session_id
from ..llm import ChatModel, ModelError, ModelExhausted
from ..sandbox import Executor, make_executor, release_workspace
from ..store import Store
from ..tasks import Task, find_task
from ..workspace import Workspace, WorkspaceError
from .budget import (
    BUDGET_KEY,
    Budget,
    BudgetLimits,
    budget_reason,
    limits_of,
    refuse_ended,
    resumed_budget,
)
from .config import (
    ApprovalMode,
    Approver,
    SessionConfig,
    SessionResult,
    config_and_task,
    configured_model,
    latest_snapshot,
    resumed_model,
    snapshot_name,
    solve_preview,
)
from .end import end_after_crash, end_interrupted, ends_if_raises, finish, session_result
from .fork_plan import copy_parent, plan_fork
from .lock import SessionLock
from .searching import SearchHost, search_calls
from .state import LoadedState, SessionError, load_state
from .step import execute_step, undo_edit


class Session(SearchHost):
    def __init__(
        self,
        *,
        home: Home,
        store: Store,
        task: Task,
        config: SessionConfig,
        session_id: str,
        model: ChatModel,
        loaded: LoadedState | None = None,
        start_seq: int = 1,
        lock: SessionLock | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.home, self.store, self.task, self.config = home, store, task, config
        self.id = session_id
        self.lock = lock or SessionLock(home.snapshots(session_id), session_id)
        self.lock.acquire()
        self.model = model
        search = config.agent == "search"
        options = config.agent_options()  # the search driver (below) is a search's agent
        self.agent: Agent = None if search else make_agent(config.agent, model, **options)  # type: ignore[assignment]
        self.bus = EventBus()
        self.bus.subscribe(store.append)
        self.bus.subscribe(self._account)
        self.recorder = Recorder(session_id, self.bus, start_seq=start_seq)
        self.private = home.private(session_id)
        self.workspace = Workspace(
            home.workspace(session_id), home.snapshots(session_id), read_only=task.spec.read_only
        )
        loaded = loaded or LoadedState()
        self.state = AgentState(
            task=task,
            step=loaded.last_step + 1,
            plan=loaded.plan,
            memory=Memory([Note(**n) for n in loaded.notes]),
            hints=list(loaded.hints),
            history=list(loaded.history),
            record=self.recorder.emit,
        )
        if config.agent in ("solve", "search"):
            self.state.preview = solve_preview(task, config.seed)
        self.completed = loaded.last_step
        self.best = loaded.best
        self.submitted = loaded.submitted
        self.tokens_in, self.tokens_out = loaded.tokens_in, loaded.tokens_out
        self.cost_usd, self.parse_errors = loaded.cost_usd, loaded.parse_errors
        self.cost_known, self.tokens_estimated = loaded.cost_known, loaded.tokens_estimated
        self.approver: Approver | None = None
        # e.g. the trainer's progress instrumentation (trainer.instrument): wraps what runs
        self.wrap_executor: Callable[[Executor], Executor] | None = None
        self.approval: ApprovalMode = config.approval
        self.budget = budget or limits_of(config).starting(task.spec.limits.max_steps)
        self._run_lock = threading.Lock()
        self._step_lock = threading.Lock()
        self._unpaused = threading.Event()
        self._unpaused.set()
        self._stop_reason: str | None = None
        self._started = time.monotonic()
        self._executor = None
        self.ended: SessionEnded | None = None
        self.search = self.start_search(resumed=start_seq > 1) if search else None

    @property
    def max_steps(self) -> int:
        """The last step the budget lets this session run (a step count for a new session)."""
        return self.budget.last_step

    @max_steps.setter
    def max_steps(self, last_step: int) -> None:
        """Let the session run up to `last_step` (counted as the budget counts)."""
        steps = max(1, last_step - self.budget.from_step)
        self.budget = self.budget.model_copy(update={"max_steps": steps})

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def create(
        cls, home: Home, store: Store, config: SessionConfig, model: ChatModel | None = None
    ) -> Session:
        task = find_task(config.task, config.task_dir)
        model = model or configured_model(config)
        sid = new_session_id()
        session = cls(home=home, store=store, task=task, config=config, session_id=sid, model=model)
        session._start(parent=None)
        with ends_if_raises(session, "preparing the task"):
            task.prepare(session.workspace.root, session.private, seed=config.seed)
            session.workspace.snapshot(snapshot_name(0))
        return session

    @classmethod
    def resume(
        cls,
        home: Home,
        store: Store,
        session_id: str,
        model: ChatModel | None = None,
        limits: BudgetLimits | None = None,
        ended_needs_budget: bool = False,
    ) -> Session:
        """Go on from the last completed step. With `limits`, a new budget counts from here;
        without, the session's own budget goes on (refused when spent, or with
        `ended_needs_budget` when it ended `stopped`: see refuse_ended)."""
        row = store.session(session_id)
        if row is None:
            raise SessionError(f"no session {session_id!r} (see `mlagent sessions list`)")
        if row["status"] == "finished":
            raise SessionError(
                f"session {session_id} is finished (it submitted); "
                f"fork it instead: mlagent fork {session_id} --step N"
            )
        if ended_needs_budget:
            refuse_ended(row, limits)
        lock = SessionLock(home.snapshots(session_id), session_id)
        lock.acquire()  # before anything runs: a second resume of a running session stops here
        try:
            config, task = config_and_task(store, session_id)
            higher = task.spec.metric.higher_is_better
            loaded = load_state(store, session_id, higher_is_better=higher)
            if config.agent == "search":  # its steps are its model calls
                loaded.last_step = loaded.llm_calls = search_calls(store, session_id)
            budget, new_budget = resumed_budget(store, session_id, config, task, loaded, limits)
            model = model or resumed_model(config, loaded.llm_calls, max_cost=budget.max_cost)
            session = cls(
                home=home,
                store=store,
                task=task,
                config=config,
                session_id=session_id,
                model=model,
                loaded=loaded,
                start_seq=store.next_seq(session_id),
                lock=lock,
                budget=budget,
            )
            if config.sandbox == "docker":
                # a killed docker session leaves its container running and the files its own
                release_workspace(session.workspace.root)
            session.workspace.restore(latest_snapshot(session.workspace, loaded.last_step))
        except BaseException:
            lock.release()
            raise
        session.recorder.step = loaded.last_step
        session.recorder.emit(Resumed(budget=budget.model_dump() if new_budget else None))
        return session

    @classmethod
    def fork(
        cls,
        home: Home,
        store: Store,
        session_id: str,
        step: int,
        model: ChatModel | None = None,
        model_spec: str | None = None,
        **overrides: Any,
    ) -> Session:
        """A new session from the state after `step`; `model_spec` (a --model string) runs it
        with another model, `overrides` change other settings (budgets count new steps)."""
        plan = plan_fork(store, session_id, step, model, model_spec, overrides)
        session = cls(
            home=home,
            store=store,
            task=plan.task,
            config=plan.config,
            session_id=new_session_id(),
            model=plan.model,
            loaded=plan.loaded,
            budget=plan.budget,
        )
        session._start(parent=(session_id, step))
        with ends_if_raises(session, "copying the parent's files"):
            copy_parent(home, session_id, step, session.workspace, session.private)
        session.recorder.step = step
        return session

    def _start(self, parent: tuple[str, int] | None) -> None:
        self.workspace.root.mkdir(parents=True, exist_ok=True)
        self.recorder.emit(
            SessionStarted(
                task=self.task.name,
                model=self.model.name,
                agent=self.config.agent,
                sandbox=self.config.sandbox,
                workspace=str(self.workspace.root),
                config={
                    **self.config.model_dump(),
                    "task_folder": str(self.task.folder),
                    BUDGET_KEY: self.budget.model_dump(),
                },
                parent_session_id=parent[0] if parent else None,
                parent_step=parent[1] if parent else None,
            )
        )

    # -- hooks for a person (thread-safe) ----------------------------------------------------
    def pause(self) -> None:
        if self._unpaused.is_set():
            self._unpaused.clear()
            self.recorder.emit(Paused(), step=self.completed)

    def unpause(self) -> None:
        if not self._unpaused.is_set():
            self.recorder.emit(Resumed(), step=self.completed)
            self._unpaused.set()

    @property
    def step_running(self) -> bool:
        return self._step_lock.locked()

    @property
    def paused(self) -> bool:
        return not self._unpaused.is_set()

    def set_approval(self, mode: ApprovalMode) -> None:
        """Change the approval mode (recorded, so a replay shows when it changed)."""
        if mode not in ("auto", "confirm-exec", "confirm-all"):
            raise ValueError(f"unknown approval mode {mode!r}")
        self.approval = mode
        self.recorder.emit(ApprovalModeChanged(mode=mode), step=self.completed)

    def stop(self, reason: str = "stopped by the person") -> None:
        self._stop_reason = reason
        self._unpaused.set()

    def edit_plan(self, plan: str) -> None:
        if not plan.strip():
            raise ValueError("the plan cannot be empty")
        self.state.plan = plan
        self.recorder.emit(PlanEdited(author="human", plan=plan), step=self.completed)

    def add_hint(self, text: str) -> None:
        if not text.strip():
            raise ValueError("an empty hint is not given")
        self.state.hints.append(text.strip())
        self.recorder.emit(HintGiven(text=text.strip()), step=self.completed)

    def undo_last_edit(self) -> FileChanged:
        """Undo the last file edit; refused while a step runs (it may be editing files), or
        while another process runs this session."""
        if not self._step_lock.acquire(blocking=False):
            raise WorkspaceError("a step is running; undo once it has finished")
        try:
            self.lock.acquire()
            return undo_edit(self)
        finally:
            if self.ended is not None:
                self.lock.release()
            self._step_lock.release()

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        return self.bus.subscribe(listener)

    # -- running -----------------------------------------------------------------------------
    def run(self) -> SessionResult:
        with self._run_lock:
            self.lock.acquire()
            try:
                self._executor = make_executor(
                    self.config.sandbox,
                    workspace=self.workspace.root,
                    mem_mb=self.task.spec.limits.mem_mb,
                )
                if self.wrap_executor is not None:
                    self._executor = self.wrap_executor(self._executor)
                if self.search is not None:
                    self.search.run()  # it ends the session itself
                while self.ended is None:
                    self._unpaused.wait()
                    reason = budget_reason(self)
                    if reason:
                        self._finish(*reason)
                        break
                    self.run_step()
            except KeyboardInterrupt as exc:  # SIGINT, or SIGTERM as the CLI turns it into one
                end_interrupted(self, str(exc) or "SIGINT (Ctrl-C)")
                raise
            except ModelExhausted as exc:
                self._finish("stopped", f"model ran out: {exc}")
            except ModelError as exc:
                self._finish("failed", f"model error: {exc}")
            except Exception as exc:  # noqa: BLE001 - a bug must still end the session, recorded
                end_after_crash(self, exc)
            finally:
                if self._executor is not None:
                    self._executor.close()
                    self._executor = None
                if self.ended is not None:
                    self.lock.release()
        return self.result()

    def close(self) -> None:
        """Let another process resume this session (a live view keeps it until it closes)."""
        self.lock.release()

    def run_step(self) -> None:
        with self._step_lock:
            execute_step(self)

    def _account(self, event: Event) -> None:
        p = event.payload
        if p.kind == "llm_call":
            self.tokens_in += p.tokens_in
            self.tokens_out += p.tokens_out
            self.cost_usd += p.cost_usd
            self.cost_known = self.cost_known and p.cost_known
            self.tokens_estimated = self.tokens_estimated or p.tokens_estimated
        elif p.kind == "parse_error":
            self.parse_errors += 1

    # -- ending --------------------------------------------------------------------------
    def _finish(self, status: str, reason: str) -> None:
        finish(self, status, reason)

    def result(self) -> SessionResult:
        return session_result(self)
