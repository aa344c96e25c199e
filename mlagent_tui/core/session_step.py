"""One step of a session, and the auto-submit that ends one (kept apart to stay small)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .agent.actions import ActionError, Observation, lookup, run_action
from .agent.actions_run import SOLUTION_FILE
from .agent.prompts import StepRecord, cut_middle
from .events import (
    ActionFinished,
    ActionStarted,
    FileChanged,
    LineBatcher,
    PlanEdited,
    ScoreRecorded,
)
from .session_state import Best
from .workspace import Workspace

if TYPE_CHECKING:
    from .session import Session

STORED_OBSERVATION_CHARS = 100_000
UNPARSED = (
    "Error: your response could not be parsed after {n} attempts, so no action was taken. "
    "Answer with the exact format: Reflection, Research Plan and Status, Fact Check, Thought, "
    "Action, Action Input."
)


def execute_step(s: Session) -> None:
    from .session import snapshot_name

    step = s.completed + 1
    s.state.step = s.recorder.step = step
    solution = s.workspace.root / SOLUTION_FILE
    s.state.previous_script = solution.read_text(errors="replace") if solution.is_file() else None
    response = s.agent.step(s.state)
    s.recorder.emit(response)
    if response.plan.strip() and response.plan.strip() != s.state.plan.strip():
        s.state.plan = response.plan
        s.recorder.emit(PlanEdited(author="agent", plan=response.plan))
    started = time.monotonic()
    action = response.action
    if not action:
        obs = Observation(text=UNPARSED.format(n=3), ok=False)
    else:
        try:
            action = lookup(action).name
        except ActionError as exc:
            obs = Observation(text=f"Error: {exc}", ok=False)
        else:
            obs = _approved_run(s, action, response)
    s.workspace.snapshot(snapshot_name(step))
    record_file_changes(s, _previous_snapshot(s.workspace, step), snapshot_name(step))
    text = cut_middle(obs.text, STORED_OBSERVATION_CHARS)
    s.recorder.emit(
        ActionFinished(
            action=action or "(unparsed)",
            observation=text,
            ok=obs.ok,
            duration_s=round(time.monotonic() - started, 3),
        )
    )
    s.completed = step
    s.state.history.append(
        StepRecord(
            step=step,
            action=action,
            action_input=response.action_input,
            response_text=response.raw,
            observation=text,
            ok=obs.ok,
        )
    )
    if obs.valid and obs.score is not None and action in ("Validate", "Run Solution"):
        better = s.best is None or s.task.better(obs.score, s.best.score)
        if better:
            s.best = Best(score=obs.score, step=step, session_id=s.id)
    if obs.ends_session:
        s.submitted = True
        s._finish("finished", "submitted (Final Answer)")


def _approved_run(s: Session, action: str, response) -> Observation:  # noqa: ANN001
    if s.needs_approval(action):
        approval = s.ask_approval(response)
        if not approval.approved:
            reason = approval.reason.strip() or "no reason given"
            return Observation(
                text=f"The person supervising you rejected this action: {reason}. "
                "Take this into account and choose another action.",
                ok=False,
            )
    s.recorder.emit(ActionStarted(action=action, action_input=response.action_input))
    batcher = LineBatcher(s.recorder)
    try:
        return run_action(s.context(batcher), action, response.action_input)
    finally:
        batcher.flush()


def budget_reason(s: Session) -> tuple[str, str] | None:
    """Why the session must end before its next step (a stop or a spent budget), if it must."""
    c = s.config
    if s._stop_reason:
        return "stopped", s._stop_reason
    if s.completed >= s.max_steps:
        return "budget", f"step budget of {s.max_steps} used"
    if c.max_minutes is not None and time.monotonic() - s._started > c.max_minutes * 60:
        return "budget", f"time budget of {c.max_minutes} minutes used"
    if c.max_cost is not None and s.cost_usd >= c.max_cost:
        return "budget", f"cost budget of ${c.max_cost} used"
    if c.max_tokens is not None and s.tokens_in + s.tokens_out >= c.max_tokens:
        return "budget", f"token budget of {c.max_tokens} used"
    return None


def record_file_changes(s: Session, before: str, after: str) -> None:
    """One FileChanged event per file that differs between two snapshots."""
    old, new = s.workspace.manifest(before), s.workspace.manifest(after)
    for rel in sorted(set(old) | set(new)):
        if old.get(rel) != new.get(rel):
            diff = s.workspace.diff_objects(rel, old.get(rel), new.get(rel))
            s.recorder.emit(
                FileChanged(
                    path=rel, before_hash=old.get(rel), after_hash=new.get(rel), diff=diff[:200_000]
                )
            )


def _previous_snapshot(ws: Workspace, step: int) -> str:
    names = [n for n in ws.snapshots() if n.startswith("step-") and int(n[5:]) < step]
    return names[-1]


def auto_submit(s: Session) -> tuple[float | None, bool, str | None]:
    """Grade the best validated submission seen (else the current one) on the test split."""
    from .session import snapshot_name

    sub = s.task.spec.submission.file
    target = s.workspace.root / sub
    if s.best is not None:
        source = Workspace(s.home.workspace(s.best.session_id), s.home.snapshots(s.best.session_id))
        digest = source.manifest(snapshot_name(s.best.step)).get(sub)
        current = s.workspace.file_hash(sub) if target.is_file() else None
        if digest and digest != current:
            target.write_bytes(source.load_object(digest))
            s.recorder.emit(
                FileChanged(
                    path=sub,
                    before_hash=current,
                    after_hash=digest,
                    author="system",
                    diff=f"restored the best validated submission (step {s.best.step})",
                ),
                step=s.completed,
            )
    result = s.task.grade(s.workspace.root, s.private, "test")
    medal = s.task.medal(result.score)
    s.recorder.emit(
        ScoreRecorded(
            split="submit",
            score=result.score,
            valid=result.valid,
            error=result.error,
            medal=medal,
            above_median=s.task.above_median(result.score),
        ),
        step=s.completed,
    )
    return result.score, result.valid, medal
