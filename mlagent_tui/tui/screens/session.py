"""The session screen: one layout for a live session and for the replay of a stored one."""

from __future__ import annotations

import threading

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from ...core.events import AgentResponse, Event
from ...core.session import Approval, Session
from ..view import SessionView, view_upto
from ..widgets import DiffPane, ExecLog, FactCheckPane, PlanPane, StatusBar, Timeline
from .modals import Confirm, PlanEditor, TextPrompt

MIN_WIDTH, MIN_HEIGHT = 80, 24
APPROVAL_MODES = ["auto", "confirm-exec", "confirm-all"]
TOO_SMALL = f"The terminal is too small: mlagent needs at least {MIN_WIDTH}x{MIN_HEIGHT}."


class SessionEvent(Message):
    """One event of the session, posted (thread-safely) from the bus to the screen."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class SessionScreen(Screen):
    BINDINGS = [
        Binding("space", "pause", "Pause/resume"),
        Binding("h", "hint", "Hint"),
        Binding("e", "edit_plan", "Edit plan"),
        Binding("m", "cycle_approval", "Approval mode"),
        Binding("y", "approve", "Approve"),
        Binding("n", "reject", "Reject"),
        Binding("u", "undo", "Undo edit"),
        Binding("s", "stop", "Stop & submit"),
        Binding("left", "step(-1)", "Prev step", show=False, priority=True),
        Binding("right", "step(1)", "Next step", show=False, priority=True),
        Binding("home", "jump(0)", "First step", show=False, priority=True),
        Binding("end", "jump(1)", "Last step", show=False, priority=True),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        *,
        session: Session | None = None,
        events: list[Event] | None = None,
        baseline: float | None = None,
        higher_is_better: bool = True,
    ) -> None:
        super().__init__()
        self.session = session
        self.replay = session is None
        self.known = {"baseline": baseline, "higher_is_better": higher_is_better}
        if session is not None:
            self.known.update(max_steps=session.max_steps)
        self.events: list[Event] = list(events or [])
        self.view = SessionView(**self.known)
        self.selected: int | None = None  # None follows the latest step (live)
        self.note = ""
        self.worker: Worker | None = None
        self._answer = threading.Event()
        self._approval = Approval(approved=True)
        self._unsubscribe = None
        self._full = self.view  # replay: the whole session, for the timeline

    # -- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Horizontal(id="main"):
            yield Timeline(id="timeline")
            with Vertical(id="panes"):
                with Horizontal(id="top"):
                    yield PlanPane(id="plan")
                    yield FactCheckPane(id="factcheck-pane")
                yield ExecLog(id="log")
                yield DiffPane(id="diff")
        yield Static(TOO_SMALL, id="too-small")
        yield Footer()

    def on_mount(self) -> None:
        if self.replay:
            self._full = SessionView(**self.known).apply_all(self.events)
            self.selected = self._full.last_step
            self.note = "replay: ←/→ step, home/end"
            self._show_replay()
            return
        assert self.session is not None
        self.view.apply_all(self.session.store.events(self.session.id))
        self.view.approval = self.session.approval
        self.session.approver = self._approve
        self._unsubscribe = self.session.subscribe(lambda ev: self.post_message(SessionEvent(ev)))
        self.worker = self.run_worker(
            self.session.run, thread=True, exit_on_error=False, name="session"
        )
        self.refresh_panes()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()

    def on_resize(self, event: Resize) -> None:
        small = event.size.width < MIN_WIDTH or event.size.height < MIN_HEIGHT
        self.query_one("#main").display = not small
        self.query_one("#status").display = not small
        self.query_one("#too-small").display = small

    # -- feeding -------------------------------------------------------------------------
    @on(SessionEvent)
    def _on_session_event(self, message: SessionEvent) -> None:
        event = message.event
        self.events.append(event)
        self.view.apply(event)
        if event.kind == "approval_asked":
            self.app.bell()
            self.note = "y approves, n rejects"
        elif event.kind in ("approval_given", "session_ended"):
            self.note = ""
        self.refresh_panes()

    def refresh_panes(self) -> None:
        view = self.view
        step = self.selected if self.selected is not None else view.last_step
        current = view.steps.get(step)
        following = self.selected is None or step == view.last_step
        self.query_one(StatusBar).show(view, self.note)
        # in replay every step stays in the timeline; the panes show the state at `step`
        self.query_one(Timeline).show(self._full if self.replay else view, step)
        plan = view.plan if following or current is None else current.plan
        self.query_one(PlanPane).show(plan)
        self.query_one(FactCheckPane).show(current)
        self.query_one(ExecLog).show(current)
        self.query_one(DiffPane).show(current)

    @on(Timeline.StepSelected)
    def _on_step_selected(self, message: Timeline.StepSelected) -> None:
        if self.replay:
            if message.step != self.selected:
                self.selected = message.step
                self._show_replay()
            return
        self.selected = None if message.step == self.view.last_step else message.step
        self.refresh_panes()

    # -- replay --------------------------------------------------------------------------
    def replay_steps(self) -> list[int]:
        return sorted({e.step for e in self.events})

    def _show_replay(self) -> None:
        step = self.selected or 0
        self.view = view_upto(self.events, step, **self.known)
        self.view.steps.setdefault(step, self.view.step_view(step))
        if step == self._full.last_step:
            self.view.state = self._full.state
        self.note = f"replay · showing step {step}"
        self.refresh_panes()

    def _goto(self, step: int) -> None:
        if self.replay:
            self.selected = step
            self._show_replay()
        else:
            self.selected = None if step == self.view.last_step else step
            self.refresh_panes()

    def action_step(self, delta: int) -> None:
        steps = self.replay_steps() if self.replay else sorted(self.view.steps)
        current = self.selected if self.selected is not None else self.view.last_step
        later = [s for s in steps if s > current] if delta > 0 else []
        earlier = [s for s in steps if s < current] if delta < 0 else []
        if later or earlier:
            self._goto(later[0] if later else earlier[-1])

    def action_jump(self, end: int) -> None:
        steps = self.replay_steps() if self.replay else sorted(self.view.steps)
        if steps:
            self._goto(steps[-1] if end else steps[0])

    # -- the person in the loop (live only) ----------------------------------------------
    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.state in (
            WorkerState.PENDING,
            WorkerState.RUNNING,
        )

    def _live(self) -> Session | None:
        if self.session is None or not self.running:
            self.notify("this session is not running", severity="warning")
            return None
        return self.session

    def _approve(self, response: AgentResponse) -> Approval:
        """Called on the session's thread: block until the person answers (y / n / stop)."""
        self._answer.clear()
        self._answer.wait()
        return self._approval

    def _give(self, approval: Approval) -> None:
        self._approval = approval
        self._answer.set()

    def action_pause(self) -> None:
        if (s := self._live()) is not None:
            s.unpause() if s.paused else s.pause()

    def action_hint(self) -> None:
        if (s := self._live()) is None:
            return

        def done(text: str | None) -> None:
            if text and text.strip():
                s.add_hint(text)
                self.notify("hint given: the next prompt carries it")

        prompt = TextPrompt("A hint for the agent:", "e.g. try gradient boosting")
        self.app.push_screen(prompt, done)

    def action_edit_plan(self) -> None:
        if (s := self._live()) is None:
            return

        def done(plan: str | None) -> None:
            if plan is None:
                return
            try:
                s.edit_plan(plan)
            except ValueError as exc:
                self.notify(str(exc), severity="error")
            else:
                self.notify("plan saved: the next prompt carries it")

        self.app.push_screen(PlanEditor(s.state.plan or self.view.plan), done)

    def action_cycle_approval(self) -> None:
        if (s := self._live()) is None:
            return
        i = APPROVAL_MODES.index(s.approval) if s.approval in APPROVAL_MODES else -1
        s.set_approval(APPROVAL_MODES[(i + 1) % len(APPROVAL_MODES)])  # type: ignore[arg-type]
        self.view.approval = s.approval
        self.refresh_panes()

    def action_approve(self) -> None:
        if self.view.waiting is None:
            self.notify("nothing is waiting for approval", severity="warning")
            return
        self._give(Approval(approved=True))

    def action_reject(self) -> None:
        if self.view.waiting is None:
            self.notify("nothing is waiting for approval", severity="warning")
            return

        def done(reason: str | None) -> None:
            if reason is not None and self.view.waiting is not None:
                self._give(Approval(approved=False, reason=reason.strip()))

        self.app.push_screen(TextPrompt("Why reject it? (the model sees this)"), done)

    def action_undo(self) -> None:
        if (s := self._live()) is None:
            return
        try:
            event = s.undo_last_edit()
        except Exception as exc:  # noqa: BLE001 - nothing to undo is a message, not a crash
            self.notify(f"cannot undo: {exc}", severity="warning")
        else:
            self.notify(f"undid the last edit of {event.path}")

    def action_stop(self) -> None:
        if (s := self._live()) is None:
            return
        s.stop("stopped by the person")
        self._give(Approval(approved=False, reason="the person stopped the session"))
        self.note = "stopping after this step, then submitting"
        self.refresh_panes()

    def action_quit(self) -> None:
        if not self.running:
            self.app.exit()
            return

        def done(yes: bool | None) -> None:
            if yes and self.session is not None:
                self.session.stop("the person quit")
                self._give(Approval(approved=False, reason="the person quit"))
                self.app.exit()

        self.app.push_screen(Confirm("The session is running. Stop it and quit?"), done)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is self.worker and event.state == WorkerState.ERROR:
            self.view.state = "failed"
            self.note = f"error: {event.worker.error}"
            self.refresh_panes()
