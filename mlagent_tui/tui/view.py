"""SessionView: the one model every pane reads, fed by `apply(event)` in live and in replay.

It holds no Textual objects, so a replay can rebuild the view "as it was at step k" simply by
applying the stored events up to that step to a fresh SessionView.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..core.events import Event
from ..core.safe_text import visible_deep
from ..core.session.diagnose import error_line
from .status_text import short_model, status_line

__all__ = ["ReplayIndex", "SessionView", "StepView", "short_model", "view_upto"]

LOG_LINES_PER_STEP = 5_000


@dataclass
class StepView:
    """What one step did, as the panes show it."""

    step: int
    action: str = ""
    action_input: dict[str, Any] = field(default_factory=dict)
    reflection: str = ""
    plan: str = ""
    fact_check: str = ""
    thought: str = ""
    outcome: str = ""  # "", "ok", "error", "rejected", or "score 0.123"
    log: deque[str] = field(default_factory=lambda: deque(maxlen=LOG_LINES_PER_STEP))
    log_total: int = 0  # lines ever added (the deque keeps only the last ones)
    diffs: list[tuple[str, str, str]] = field(default_factory=list)  # (path, author, diff)
    notes: list[str] = field(default_factory=list)  # hints, person's edits, parse errors
    done: bool = False
    started_ts: float | None = None  # when the step began (its model call), for "working…"


@dataclass
class SessionView:
    """Everything the screen shows, derived only from events (plus the live approval mode)."""

    session_id: str = ""
    task: str = ""
    model: str = ""
    agent: str = ""
    approval: str = "auto"
    max_steps: int = 0
    baseline: float | None = None
    higher_is_better: bool = True
    thresholds: dict[str, float] = field(default_factory=dict)  # median, bronze, silver, gold
    state: str = "starting"  # running | paused | waiting for you | finished | ...
    plan: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True  # False once a call's model had no price: shown "cost unknown"
    tokens_estimated: bool = False  # some counts estimated, not reported: shown "~N tok"
    best: float | None = None
    scores: list[tuple[int, float]] = field(default_factory=list)
    steps: dict[int, StepView] = field(default_factory=dict)
    waiting: dict[str, Any] | None = None  # the action awaiting approval
    ended_reason: str = ""
    final_score: float | None = None
    final_valid: bool = False
    medal: str | None = None
    live: bool = False  # a live session (not a replay): the running step shows "working…"
    step_started_ts: float | None = None  # when the step in progress began (its model call)
    first_ts: float | None = None
    last_ts: float | None = None
    clock: float | None = None  # live: "now", ticked by the screen's timer
    speed: str = ""  # replay: "▶ 2 steps/s" or "⏸ 2 steps/s"

    # -- feeding -------------------------------------------------------------------------
    def step_view(self, step: int) -> StepView:
        if step not in self.steps:
            self.steps[step] = StepView(step=step, plan=self.plan)
        return self.steps[step]

    @property
    def last_step(self) -> int:
        return max(self.steps, default=0)

    @property
    def completed(self) -> int:
        return max((s.step for s in self.steps.values() if s.done), default=0)

    def apply(self, event: Event) -> None:
        # Every string of the payload (file names, output, the model's text) with its control
        # characters shown: no pane can hand the terminal an escape sequence of the agent's.
        p = visible_deep(event.payload)
        kind = p.kind
        self.first_ts = self.first_ts or event.ts
        self.last_ts = event.ts
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(event, p)

    def apply_all(self, events: list[Event]) -> SessionView:
        for event in events:
            self.apply(event)
        return self

    def _on_session_started(self, event: Event, p: Any) -> None:
        self.session_id = event.session_id
        self.task, self.model, self.agent = p.task, p.model, p.agent
        cfg = p.config or {}
        self.approval = cfg.get("approval", self.approval)
        self.max_steps = cfg.get("max_steps") or self.max_steps
        if self.state == "starting":
            self.state = "running"
        self.step_started_ts = event.ts

    def _on_llm_call(self, event: Event, p: Any) -> None:
        self.tokens_in += p.tokens_in
        self.tokens_out += p.tokens_out
        self.cost_usd += p.cost_usd
        self.cost_known = self.cost_known and p.cost_known
        self.tokens_estimated = self.tokens_estimated or p.tokens_estimated

    def _on_agent_response(self, event: Event, p: Any) -> None:
        s = self.step_view(event.step)
        s.started_ts = s.started_ts or self.step_started_ts
        s.action, s.action_input = p.action, dict(p.action_input)
        s.reflection, s.fact_check, s.thought = p.reflection, p.fact_check, p.thought
        s.plan = p.plan or self.plan

    def _on_parse_error(self, event: Event, p: Any) -> None:
        self.step_view(event.step).notes.append(f"parse error (attempt {p.attempt}): {p.error}")

    def _on_action_started(self, event: Event, p: Any) -> None:
        self.step_view(event.step).action = p.action

    def _on_exec_output(self, event: Event, p: Any) -> None:
        s = self.step_view(event.step)
        s.log.extend(p.lines)
        s.log_total += len(p.lines)

    def _on_exec_finished(self, event: Event, p: Any) -> None:
        end = "timed out" if p.timed_out else f"exit code {p.exit_code}"
        s = self.step_view(event.step)
        s.log.append(f"── {p.command}: {end} in {p.duration_s:.1f}s")
        s.log_total += 1

    def _on_file_changed(self, event: Event, p: Any) -> None:
        self.step_view(event.step).diffs.append((p.path, p.author, p.diff))

    def _on_file_changes_summarized(self, event: Event, p: Any) -> None:
        total = p.added + p.changed + p.removed
        self.step_view(event.step).notes.append(
            f"{total} more files changed, not listed ({p.added} added, {p.changed} changed, "
            f"{p.removed} removed)"
        )

    def _on_score_recorded(self, event: Event, p: Any) -> None:
        if p.split == "baseline":
            self.baseline = p.score
            return
        s = self.step_view(event.step)
        text = f"{p.split} {p.score:.4g}" if p.valid and p.score is not None else "invalid"
        if s.done:  # the auto-submit after the last step keeps that step's own outcome
            s.notes.append(f"auto-{p.split}: {text if p.valid else p.error or 'invalid'}")
        else:
            s.outcome = text if p.valid else f"{p.split} invalid"
        if p.valid and p.score is not None and p.split == "validate":
            self.scores.append((event.step, p.score))
            if self.best is None or (p.score > self.best) == self.higher_is_better:
                self.best = p.score

    def _on_node_finished(self, event: Event, p: Any) -> None:
        # a search's scores are its nodes' search scores, in the order they finished
        if p.status == "valid" and p.score is not None:
            self.scores.append((p.node, p.score))
            if self.best is None or (p.score > self.best) == self.higher_is_better:
                self.best = p.score

    def _on_plan_edited(self, event: Event, p: Any) -> None:
        self.plan = p.plan
        s = self.step_view(event.step)
        s.plan = p.plan
        if p.author == "human":
            s.notes.append("the person edited the plan")

    def _on_hint_given(self, event: Event, p: Any) -> None:
        self.step_view(event.step).notes.append(f"hint: {p.text}")

    def _on_approval_mode_changed(self, event: Event, p: Any) -> None:
        self.approval = p.mode

    def _on_approval_asked(self, event: Event, p: Any) -> None:
        self.waiting = {"action": p.action, "action_input": p.action_input, "step": event.step}
        self.state = "waiting for you"

    def _on_approval_given(self, event: Event, p: Any) -> None:
        self.waiting = None
        self.state = "running"
        if not p.approved:
            s = self.step_view(event.step)
            s.outcome = "rejected"
            s.notes.append(f"rejected: {p.reason or 'no reason given'}")

    def _on_action_finished(self, event: Event, p: Any) -> None:
        s = self.step_view(event.step)
        s.action = p.action
        if not s.outcome:
            s.outcome = "ok" if p.ok else "error"
        if not p.ok:  # what went wrong, for every action (a script's log shows only output)
            s.notes.append(f"error: {error_line(p.observation)}")
        log_observation(s, p.observation, p.ok)
        s.done = True
        self.step_started_ts = event.ts  # the next step's model call begins now

    def _on_paused(self, event: Event, p: Any) -> None:
        self.state = "paused"

    def _on_resumed(self, event: Event, p: Any) -> None:
        self.state = "running"
        self.step_started_ts = event.ts

    def _on_session_ended(self, event: Event, p: Any) -> None:
        self.state = p.status
        self.ended_reason = p.reason
        self.final_score = p.final_score
        self.final_valid, self.medal = p.valid, p.medal
        self.waiting = None
        self.clock = None
        if p.status == "failed":  # e.g. a model error: the step in progress failed
            last = self.steps.get(self.last_step)
            s = last if last is not None and not last.done and last.step > 0 else None
            s = s or self.step_view(self.completed + 1)
            s.outcome, s.done = "failed", True
            s.notes.append(p.reason)
            s.log.append(f"── the step failed: {p.reason}")
            s.log_total += 1

    # -- reading -------------------------------------------------------------------------
    @property
    def elapsed_s(self) -> float:
        if self.first_ts is None or self.last_ts is None:
            return 0.0
        return max(self.last_ts, self.clock or 0.0) - self.first_ts

    def usage_text(self) -> str:
        """Tokens and cost as the status line shows them: "~" marks estimated counts, and a
        model without a price shows "cost unknown", never a made-up $0."""
        tokens = f"{'~' * self.tokens_estimated}{self.tokens_in + self.tokens_out} tok"
        return f"{tokens} ${self.cost_usd:.4f}" if self.cost_known else f"{tokens} cost unknown"

    def status_line(self) -> str:
        """Every part of the status bar on one line (markup); the bar fits them to its width."""
        return status_line(self)


def log_observation(s: StepView, observation: str, ok: bool) -> None:
    """The execution log ends with what the step saw: the observation itself when the step
    printed nothing (a validation, a rejection, a file action, a parse error), else the error
    line of a failed run (its output is already there)."""
    if s.log_total == 0:
        lines = observation.splitlines() or ["(no output)"]
        s.log.extend(["── observation" if ok else "── error", *lines])
        s.log_total += len(lines) + 1
    elif not ok:
        s.log.append(f"── error: {error_line(observation)}")
        s.log_total += 1


def view_upto(events: list[Event], step: int, **known: Any) -> SessionView:
    """A fresh view as it was once step `step` had completed (replay)."""
    view = SessionView(**known)
    for event in events:
        if event.step <= step:
            view.apply(event)
    return view


_SCALARS = (
    "session_id", "task", "model", "agent", "approval", "max_steps", "baseline",
    "higher_is_better", "thresholds", "state", "plan", "tokens_in", "tokens_out", "cost_usd",
    "cost_known", "tokens_estimated",
    "best", "waiting", "ended_reason", "final_score", "final_valid", "medal", "first_ts",
    "last_ts", "step_started_ts",
)  # fmt: skip


class ReplayIndex:
    """The whole session's view plus the session-wide fields as they were after each step.

    `view(k)` equals `view_upto(events, k)` without re-applying every event: a step's StepView
    only ever receives events of that step, so the full view's StepViews are shared. Where the
    stored steps are not in order (never written so, but possible), it falls back to view_upto.
    """

    def __init__(self, events: list[Event], **known: Any) -> None:
        self.events, self.known = events, known
        self.full = SessionView(**known)
        self.ordered = all(a.step <= b.step for a, b in zip(events, events[1:], strict=False))
        self._after: dict[int, dict[str, Any]] = {}
        for i, event in enumerate(events):
            self.full.apply(event)
            if i + 1 == len(events) or events[i + 1].step != event.step:
                fields = {name: getattr(self.full, name) for name in _SCALARS}
                fields["waiting"] = dict(self.full.waiting) if self.full.waiting else None
                fields["n_scores"] = len(self.full.scores)
                self._after[event.step] = fields
        self._steps = sorted(self._after)

    def view(self, step: int) -> SessionView:
        if not self.ordered:
            return view_upto(self.events, step, **self.known)
        done = [s for s in self._steps if s <= step]
        view = SessionView(**self.known)
        if done:
            fields = dict(self._after[done[-1]])
            view.scores = self.full.scores[: fields.pop("n_scores")]
            for name, value in fields.items():
                setattr(view, name, value)
        view.steps = {n: s for n, s in self.full.steps.items() if n <= step}
        return view
