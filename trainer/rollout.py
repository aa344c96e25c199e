"""Fresh on-policy rollouts, executed in the sandbox in parallel across cores.

Two kinds: single solutions (the policy's answers, each run as a one-step solve session, possibly
forked from an earlier session for an "improve" prompt) and whole solve sessions with the policy
as the ChatModel. Either way every rollout is a real session in the store (agent solve, model =
the policy checkpoint's name), so the TUI can replay what the trainer saw. Executions are
subprocesses, so a thread pool over sessions runs them in parallel; model calls (one policy in
this process) are serialised by a lock. `new_session` and `run_session` serve either agent
(trainer.evaluate runs held-out evaluations with them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import BaseModel

from mlagent_tui.core.agent import ResponseParseError, parse_solve_response
from mlagent_tui.core.home import Home
from mlagent_tui.core.llm import ChatModel, Completion, Message, TokenCallback
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task

from .data import TIME_BUDGET_PREFIX, unit_score

# raw executions (no session) live in executions.py; imported from here as before
from .executions import ExecOutcome as ExecOutcome
from .executions import default_workers
from .executions import execute_solutions as execute_solutions
from .instrument import ProgressLog, ProgressReport
from .rewards import Execution

Instrument = Literal["structure", "none"]  # how rollout sessions run their scripts


# -- models a rollout session talks to ---------------------------------------------------------
def sampled_completion(
    text: str,
    ids: Sequence[int],
    logprobs: Sequence[float],
    eos: Sequence[int],
    tokens_in: int = 0,
) -> Completion:
    """A policy sample as a Completion, recorded like the local model records one (no final
    end-of-sequence token), so later offline training can use its ratio."""
    ids, logprobs = list(ids), list(logprobs)
    if ids and ids[-1] in eos:
        ids, logprobs = ids[:-1], logprobs[:-1]
    return Completion(
        text=text,
        tokens_in=tokens_in,
        tokens_out=len(ids),
        token_ids=ids,
        logprobs=logprobs,
        finish_reason="stop",
    )


class FixedResponse:
    """A ChatModel that gives one prepared answer (the policy's sample), named as the policy."""

    supports_grammar = False

    def __init__(self, name: str, completion: Completion) -> None:
        self.name = name
        self.completion = completion

    def complete(
        self,
        messages: list[Message],
        *,
        grammar: str | None = None,
        max_tokens: int = 1024,
        temperature: float = 0.7,
        on_token: TokenCallback | None = None,
    ) -> Completion:
        return self.completion


class LockedModel:
    """Serialises calls to one in-process model shared by parallel sessions."""

    def __init__(self, inner: ChatModel, lock: threading.Lock | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.supports_grammar = inner.supports_grammar
        self.lock = lock or threading.Lock()

    def complete(self, messages: list[Message], **kwargs: Any) -> Completion:
        with self.lock:
            return self.inner.complete(messages, **kwargs)


# -- outcomes read back from the store ---------------------------------------------------------
class StepOutcome(BaseModel):
    """What one step of a rollout session did: execution, grading and its reward inputs."""

    step: int
    response: str = ""
    parsed: bool = True
    ok: bool = False
    valid: bool = False
    score: float | None = None
    unit: float = 0.0
    exec_seconds: float = 0.0
    timed_out: bool = False
    output: str = ""
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    exit_code: int | None = None
    script_parses: bool = False
    wrote_submission: bool = False
    stages: int = 0  # progress markers of the structural instrumentation (0: none)
    stages_reached: int = 0

    def execution(self) -> Execution:
        """The reward's view of this step (trainer.rewards.execution_reward)."""
        return Execution(
            answered=self.parsed and bool(self.response),
            parses=self.script_parses,
            exit_code=self.exit_code,
            wrote_submission=self.wrote_submission,
            stages=self.stages,
            stages_reached=self.stages_reached,
            valid=self.valid and self.score is not None,
            unit=self.unit,
        )


class SessionOutcome(BaseModel):
    session_id: str
    task: str
    status: str
    end_reason: str
    final_score: float | None
    valid: bool
    medal: str | None
    timed_out: bool
    steps: list[StepOutcome]
    wall_seconds: float


def session_outcome(
    store: Store,
    task: Task,
    session_id: str,
    wall: float = 0.0,
    progress: Sequence[ProgressReport] = (),
) -> SessionOutcome:
    """Read a finished session's steps back from its events; `progress` reports its last
    executions (one each, in order: a fork's copied steps ran before it)."""
    row = store.session(session_id) or {}
    steps: dict[int, StepOutcome] = {}
    lines: dict[int, list[str]] = {}
    executed: list[int] = []
    sub = task.spec.submission.file
    for event in store.events(session_id):
        p, n = event.payload, event.step
        if n <= 0 and p.kind != "exec_output":
            continue
        out = steps.setdefault(n, StepOutcome(step=n))
        if p.kind == "llm_call" and p.purpose == "step":
            out.response, out.token_ids, out.logprobs = p.text, p.token_ids, p.logprobs
        elif p.kind == "parse_error":
            out.parsed = False
        elif p.kind == "agent_response":
            out.parsed = bool(p.action)
        elif p.kind == "exec_output":
            lines.setdefault(n, []).extend(p.lines)
        elif p.kind == "exec_finished":
            out.exec_seconds += p.duration_s
            out.timed_out = out.timed_out or p.timed_out
            out.exit_code = p.exit_code
            executed.append(n)
        elif p.kind == "file_changed" and p.path == sub and p.author == "agent":
            out.wrote_submission = out.wrote_submission or p.after_hash is not None
        elif p.kind == "score_recorded" and p.split == "validate":
            out.valid, out.score = p.valid, p.score
        elif p.kind == "action_finished":
            out.ok = p.ok
    for n, out in steps.items():
        out.output = "\n".join(lines.get(n, []))[-8000:]
        out.unit = unit_score(task.spec, out.score, out.valid)
        out.script_parses = _script_parses(out.response) if out.parsed else False
    last = executed[max(0, len(executed) - len(progress)) :]
    for n, report in zip(last, progress[len(progress) - len(last) :], strict=True):
        steps[n].stages, steps[n].stages_reached = report.stages, report.reached
    reason = row.get("end_reason") or ""
    ordered = [steps[n] for n in sorted(steps) if n > 0]
    return SessionOutcome(
        session_id=session_id,
        task=task.name,
        status=row.get("status") or "",
        end_reason=reason,
        final_score=row.get("final_score"),
        valid=bool(row.get("valid")),
        medal=row.get("medal"),
        timed_out=reason.startswith(TIME_BUDGET_PREFIX) or any(s.timed_out for s in ordered),
        steps=ordered,
        wall_seconds=round(wall, 3),
    )


def _script_parses(response: str) -> bool:
    import ast

    try:
        _, script = parse_solve_response(response)
        ast.parse(script)
    except (ResponseParseError, SyntaxError, ValueError):
        return False
    return True


def _limit_exec(session: Session, timeout_s: float | None) -> None:
    """A rollout may cap a script's run time below the task's own limit."""
    if timeout_s is None:
        return
    spec = session.task.spec
    limits = spec.limits.model_copy(
        update={"exec_timeout_s": min(timeout_s, spec.limits.exec_timeout_s)}
    )
    session.task.spec = spec.model_copy(update={"limits": limits})


def _run_sessions(
    make: Callable[[int], Session],
    count: int,
    workers: int,
    store: Store,
    task: Task,
    instrument: Instrument = "structure",
) -> list[SessionOutcome]:
    """Run `count` sessions in parallel (see run_session)."""

    def one(i: int) -> SessionOutcome:
        return run_session(lambda: make(i), store, task, instrument)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, range(count)))


def run_session(
    make: Callable[[], Session], store: Store, task: Task, instrument: Instrument = "structure"
) -> SessionOutcome:
    """Create a session, run it to its end and read its outcome back (wall time includes
    preparing the task); with "structure" its scripts run instrumented (trainer.instrument:
    the workspace, the store and the agent keep the original program)."""
    import time

    started = time.monotonic()
    session = make()
    log = ProgressLog()
    if instrument == "structure":
        session.wrap_executor = log.wrap
    session.run()
    wall = time.monotonic() - started
    return session_outcome(store, task, session.id, wall, progress=log.reports)


def new_session(
    home: Home,
    store: Store,
    task: Task,
    model: ChatModel,
    *,
    exec_timeout_s: float | None = None,
    model_spec: str | None = None,
    **config: Any,
) -> Session:
    """A fresh session with `model`, `config` the SessionConfig fields (agent, max_steps, seed,
    ...); it records `model_spec` (the --model string a resume rebuilds; default the name)."""
    cfg = SessionConfig(task_dir=str(task.folder), model=model_spec or model.name, **config)
    session = Session.create(home, store, cfg, model=model)
    _limit_exec(session, exec_timeout_s)
    return session


def solution_sessions(
    home: Home,
    store: Store,
    task: Task,
    completions: Sequence[Completion],
    *,
    model_name: str,
    parent: tuple[str, int] | None = None,
    workers: int | None = None,
    exec_timeout_s: float | None = None,
    seed: int = 0,
    instrument: Instrument = "structure",
) -> list[SessionOutcome]:
    """Each completion (a solve answer: plan + script) becomes one step of its own session —
    fresh, or forked from `parent` (session, step) for an improve/debug prompt — run in
    parallel (trainer.remote runs the same as Ray tasks). The step's outcome is the last entry
    of each returned session's steps."""

    def make(i: int) -> Session:
        model = FixedResponse(model_name, completions[i])
        return solution_session(home, store, task, model, parent, exec_timeout_s, seed)

    n = len(completions)
    return _run_sessions(make, n, workers or default_workers(), store, task, instrument)


def solution_session(
    home: Home,
    store: Store,
    task: Task,
    model: ChatModel,
    parent: tuple[str, int] | None,
    exec_timeout_s: float | None,
    seed: int,
) -> Session:
    """One sampled answer's session: fresh, or forked from `parent` after its step."""
    if parent is None:
        config = SessionConfig(
            task_dir=str(task.folder), model=model.name, agent="solve", max_steps=1, seed=seed
        )
        session = Session.create(home, store, config, model=model)
    else:
        session = Session.fork(home, store, parent[0], parent[1], model=model)
        session.max_steps = parent[1] + 1
    _limit_exec(session, exec_timeout_s)
    return session


def solve_sessions(
    home: Home,
    store: Store,
    task: Task,
    model: ChatModel,
    count: int,
    *,
    max_steps: int,
    max_minutes: float | None = None,
    workers: int | None = None,
    exec_timeout_s: float | None = None,
    seed: int = 0,
    instrument: Instrument = "structure",
) -> list[SessionOutcome]:
    """`count` whole solve sessions with `model` (the policy), each within a step and a time
    limit, run in parallel (trainer.remote: as Ray tasks); calls to the model are serialised."""
    shared = LockedModel(model)

    opts = {"agent": "solve", "max_steps": max_steps, "max_minutes": max_minutes, "seed": seed}

    def make(i: int) -> Session:
        return new_session(home, store, task, shared, exec_timeout_s=exec_timeout_s, **opts)

    return _run_sessions(make, count, workers or default_workers(), store, task, instrument)
