"""One step of a session, and the auto-submit that ends one (kept apart to stay small)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..agent import StepRecord, cut_middle
from ..agent.actions import (
    SOLUTION_FILE,
    ActionContext,
    ActionError,
    Observation,
    lookup,
    run_action,
)
from ..agent.tweak import columns_of
from ..events import (
    ActionFinished,
    ActionStarted,
    AgentResponse,
    ApprovalAsked,
    ApprovalGiven,
    FileChanged,
    LineBatcher,
    PlanEdited,
    ScoreRecorded,
    clean_text,
)
from ..tasks import runnable_starter
from ..workspace import Workspace, WorkspaceError
from .changes import over_limit, record_file_changes, skipped_note
from .config import Approval, snapshot_name
from .state import Best

if TYPE_CHECKING:
    from .parts import SessionParts

STORED_OBSERVATION_CHARS = 100_000
MAX_SOLUTION_BYTES = 1_000_000
UNPARSED = (
    "Error: your response could not be parsed after {n} attempts, so no action was taken. "
    "Answer with the exact format: Reflection, Research Plan and Status, Fact Check, Thought, "
    "Action, Action Input."
)


def execute_step(s: SessionParts) -> None:
    step = s.completed + 1
    s.state.step = s.recorder.step = step
    s.state.previous_script = _read_solution(s.workspace)
    s.state.starter = None
    if step == 1 and s.config.agent == "solve" and s.config.solve_starter:
        s.state.starter = runnable_starter(s.task, s.workspace.root)
    s.state.edits = s.config.agent == "solve" and bool(s.config.solve_edits)
    if s.state.edits:
        s.state.columns, s.state.seed = columns_of(s.workspace.root), s.config.seed
        s.state.menu = bool(s.config.solve_menu)
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
    previous = _previous_snapshot(s.workspace, step)
    s.workspace.snapshot(snapshot_name(step))
    record_file_changes(s, previous, snapshot_name(step))
    note = skipped_note(s.workspace, previous, snapshot_name(step))
    if over_limit(s.workspace, snapshot_name(step)):  # an error, like the disk limit
        obs = obs.model_copy(update={"ok": False})
    text = clean_text(cut_middle(obs.text, STORED_OBSERVATION_CHARS) + note)
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


def needs_approval(s: SessionParts, action: str) -> bool:
    if s.approval == "confirm-all":
        return True
    if s.approval == "confirm-exec":
        try:
            return lookup(action).kind in ("exec", "final")
        except Exception:  # noqa: BLE001 - unknown actions fail later with a message
            return False
    return False


def ask_approval(s: SessionParts, response: AgentResponse) -> Approval:
    s.recorder.emit(ApprovalAsked(action=response.action, action_input=response.action_input))
    approval = s.approver(response) if s.approver else Approval(approved=True)
    s.recorder.emit(ApprovalGiven(approved=approval.approved, reason=approval.reason))
    return approval


def action_context(s: SessionParts, batcher: LineBatcher) -> ActionContext:
    assert s._executor is not None
    return ActionContext(
        workspace=s.workspace,
        task=s.task,
        private=s.private,
        executor=s._executor,
        model=s.model,
        memory=s.state.memory,
        step=s.state.step,
        on_output=batcher,
        record=s.recorder.emit,
    )


def _approved_run(s: SessionParts, action: str, response: AgentResponse) -> Observation:
    if needs_approval(s, action):
        approval = ask_approval(s, response)
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
        return run_action(action_context(s, batcher), action, response.action_input)
    finally:
        batcher.flush()


def undo_edit(s: SessionParts) -> FileChanged:
    """Undo the last file edit, recorded as the person's, and keep the step's snapshot so."""
    edit = s.workspace.undo_last_edit()
    diff = s.workspace.diff_objects(edit.path, edit.before_hash, edit.after_hash)
    event = FileChanged(
        path=edit.path,
        before_hash=edit.before_hash,
        after_hash=edit.after_hash,
        diff=diff,
        author="human",
    )
    s.recorder.emit(event, step=s.completed)
    s.workspace.snapshot(snapshot_name(s.completed))
    return event


def _read_solution(ws: Workspace) -> str | None:
    """The solve agent's last script, read without following links (a link is no script)."""
    try:
        return ws.read_bytes(SOLUTION_FILE, MAX_SOLUTION_BYTES).decode("utf-8", "replace")
    except WorkspaceError:
        return None


def _previous_snapshot(ws: Workspace, step: int) -> str:
    names = [n for n in ws.snapshots() if n.startswith("step-") and int(n[5:]) < step]
    return names[-1]


def auto_submit(s: SessionParts) -> tuple[float | None, bool, str | None]:
    """Grade the best validated submission seen (else the current one) on the test split."""
    sub = s.task.spec.submission.file
    if s.best is not None:
        source = Workspace(s.home.workspace(s.best.session_id), s.home.snapshots(s.best.session_id))
        digest = source.manifest(snapshot_name(s.best.step)).get(sub)
        current = s.workspace.file_hash(sub)
        restored = False
        if digest and digest != current:
            try:
                s.workspace.put(sub, source.load_object(digest))  # replaces a link itself
                restored = True
            except (WorkspaceError, OSError):
                pass  # e.g. a folder where the file goes: the current one is graded (invalid)
        if restored:
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
    result = s.task.grade(s.workspace.root, s.private, "test", sandbox=s.config.sandbox)
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
