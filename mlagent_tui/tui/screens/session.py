"""The session screen: one layout for a live session and for the replay of a stored one."""

from __future__ import annotations

import threading
import time
from collections import deque

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Static

from ...core.events import Event
from ...core.session import Approval, Session
from ..view import ReplayIndex, SessionView
from ..widgets import DiffPane, ExecLog, FactCheckPane, PlanPane, ScoresPane, StatusBar, Timeline
from ..widgets.result import EndBanner
from ..widgets.search_tree import SearchTreePane
from .search_actions import SEARCH_BINDINGS, SearchSteering
from .session_actions import APPROVAL_MODES, SessionActions
from .session_modes import SessionModes

MIN_WIDTH, MIN_HEIGHT = 80, 24
NARROW_WIDTH = 120  # below it the plan/step and log/files panes share one slot each
TOO_SMALL = f"The terminal is too small: mlagent needs at least {MIN_WIDTH}x{MIN_HEIGHT}."
SPEEDS = [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0]  # replay steps per second
DEFAULT_SPEED = 2

__all__ = ["APPROVAL_MODES", "SessionEvent", "SessionScreen"]


class SessionEvent(Message):
    """One event of the session, posted (thread-safely) from the bus to the screen."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


def _b(key: str, action: str, description: str, name: str, **kw) -> Binding:  # noqa: ANN003
    return Binding(key, action, description, id=f"session.{name}", **kw)


class SessionScreen(SearchSteering, SessionModes, SessionActions, Screen):
    # Footer order is priority order: at 80 columns the first ones are what stays visible.
    # `check_action` hides each key where it does nothing (live vs replay, nothing waiting,
    # the session ended, the wide layout), so the footer, palette and help list only what works.
    # The footer keeps the keys that fit 80 columns (show=True); `?` lists them all.
    BINDINGS = [
        _b("y", "approve", "Approve", "approve"),
        _b("n", "reject", "Reject", "reject"),
        _b("a", "approve_all", "Approve all", "approve_all", show=False),
        _b("space", "pause", "Pause", "pause"),
        _b("s", "stop", "Stop", "stop"),
        _b("p", "play", "Play", "play"),
        _b("plus", "speed(1)", "Faster", "faster"),
        _b("minus", "speed(-1)", "Slower", "slower", show=False),  # help and palette list it
        _b("q", "quit", "Quit", "quit"),
        _b("h", "hint", "Hint", "hint", show=False),
        _b("e", "edit_plan", "Edit the plan", "edit_plan", show=False),
        _b("m", "cycle_approval", "Approval mode", "approval_mode", show=False),
        _b("u", "undo", "Undo the last edit", "undo", show=False),
        _b("f", "fork", "Fork from this step", "fork", show=False),
        _b("t", "swap_top", "Plan/step", "swap_top"),
        _b("d", "swap_bottom", "Log/files", "swap_bottom"),
        _b("left", "step(-1)", "Prev step", "prev_step", show=False, priority=True),
        _b("right", "step(1)", "Next step", "next_step", show=False, priority=True),
        _b("home", "jump(0)", "First step", "first_step", show=False, priority=True),
        _b("end", "jump(1)", "Last step", "last_step", show=False, priority=True),
        *SEARCH_BINDINGS,  # a search session's node keys (x p k h), on the selected node
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
        self.events: list[Event] = list(events or [])
        self.known = {
            "baseline": baseline,
            "higher_is_better": higher_is_better,
            "thresholds": _thresholds(session, self.events),
        }
        if session is not None:
            self.known.update(max_steps=session.max_steps)
        self.view = SessionView(**self.known)
        self.selected: int | None = None  # None follows the latest step (live)
        self.note = ""
        self.lead = ""  # replay: play state and speed, shown before the session's status
        self.thread: threading.Thread | None = None
        self.auto_approved: set[str] = set()
        self._answer = threading.Event()
        self._approval = Approval(approved=True)
        self._unsubscribe = None
        self._full = self.view  # replay: the whole session, for the timeline
        self._player: Timer | None = None
        self._speed = DEFAULT_SPEED
        self._steps: list[int] | None = None  # replay: the stored steps
        self._inbox: deque[Event] = deque()  # live: events from the bus, not yet shown
        self._inbox_lock = threading.Lock()
        self._wake_posted = False

    @property
    def help_name(self) -> str:
        """The help screen's heading."""
        return "replay of a session" if self.replay else "live session"

    # -- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield EndBanner(id="end-banner")  # how the session ended, its final score and medal
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield SearchTreePane(id="search-tree")  # a search session's, else hidden
                yield Timeline(id="timeline")
                yield ScoresPane(id="scores")
            with Vertical(id="panes"):
                with Horizontal(id="top"):
                    yield PlanPane(id="plan")
                    yield FactCheckPane(id="factcheck-pane")
                yield ExecLog(id="log")
                yield DiffPane(id="diff")
        yield Static(TOO_SMALL, id="too-small")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.search_setup()
        if self.replay:
            self._index = ReplayIndex(self.events, **self.known)
            self._full = self._index.full
            self.selected = self._full.last_step
            self._show_replay()
            return
        assert self.session is not None
        self.view.apply_all(self.session.store.events(self.session.id))
        self.view.approval = self.session.approval
        self.view.live = True
        self.session.approver = self._approve
        self._unsubscribe = self.session.subscribe(self._from_bus)
        self.start_session_thread()
        self.set_interval(1.0, self._tick, name="elapsed")
        self.refresh_panes()

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.session is not None and self.session.ended is None:
            # the app is closing under a live session: stop it after this step and free a
            # pending approval, so its thread ends instead of waiting for a person forever
            self.session.stop("the app closed")
            self._give(Approval(approved=False, reason="the app closed"))

    def on_resize(self, event: Resize) -> None:
        small = event.size.width < MIN_WIDTH or event.size.height < MIN_HEIGHT
        self.query_one("#main").display = not small
        self.query_one("#status").display = not small
        self.query_one("#too-small").display = small
        if (event.size.width < NARROW_WIDTH) != self.narrow:
            self.set_narrow(event.size.width < NARROW_WIDTH)
            self.refresh_panes()

    def _tick(self) -> None:
        """Live: the elapsed time in the status bar moves every second until the end."""
        if self.view.state in ("finished", "failed", "stopped", "budget"):
            self.view.clock = None
            return
        self.view.clock = time.time()
        self.query_one(StatusBar).show(self.view, self.note, self.lead)
        self.query_one(Timeline).show(self.view, self.selected)  # the running step's clock

    # -- feeding -------------------------------------------------------------------------
    def _from_bus(self, event: Event) -> None:
        """On the session's thread: queue the event; wake the screen once per batch.

        A flood of output (thousands of lines a second) becomes one message and one repaint
        per batch, so a key press never waits behind a queue of events.
        """
        self._inbox.append(event)
        with self._inbox_lock:
            if self._wake_posted:
                return
            self._wake_posted = True
        self.post_message(SessionEvent(event))

    @on(SessionEvent)
    def _on_session_event(self, message: SessionEvent) -> None:
        with self._inbox_lock:
            self._wake_posted = False
        batch = [self._inbox.popleft() for _ in range(len(self._inbox))]
        for event in batch:
            self._take(event)
        if batch and all(e.kind == "exec_output" for e in batch):
            self._refresh_log()  # a flood of output touches nothing but the log
        elif batch:
            self.refresh_panes()

    def _take(self, event: Event) -> None:
        if event.kind != "exec_output":  # output lives in the bounded step logs (and the store)
            self.events.append(event)
        self.view.apply(event)
        self.search_take(event)
        if event.kind == "approval_asked":
            if event.payload.action not in self.auto_approved:
                self.app.bell()
                self.note = "y approves, n rejects, a approves all of this kind"
        elif event.kind in ("approval_given", "session_ended"):
            self.note = ""

    def _refresh_log(self) -> None:
        view = self.view
        step = self.selected if self.selected is not None else view.last_step
        self.query_one(ExecLog).show(view.steps.get(step))

    def refresh_panes(self) -> None:
        view = self.view
        step = self.selected if self.selected is not None else view.last_step
        current = view.steps.get(step)
        following = self.selected is None or step == view.last_step
        self.query_one(StatusBar).show(view, self.note, self.lead)
        self.query_one(EndBanner).show(view)
        # in replay every step stays in the timeline; the panes show the state at `step`
        self.query_one(Timeline).show(self._full if self.replay else view, step)
        if not self.show_node():  # a search session's panes show its selected node
            plan = view.plan if following or current is None else current.plan
            self.query_one(PlanPane).show(plan, view.agent)
            workspace = self.session.workspace if self.session is not None else None
            self.query_one(FactCheckPane).show(current, view.agent, view.waiting, workspace)
            self.query_one(ExecLog).show(current)
            self.query_one(DiffPane).show(current)
        self.query_one(ScoresPane).show(view)
        if self.narrow:
            self.apply_slots(
                has_log=bool(current and current.log) or self.is_search,
                has_diffs=bool(current and current.diffs),
            )
        self.sync_keys()

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
        if self._steps is None:
            self._steps = sorted({e.step for e in self.events})
        return self._steps

    def _show_replay(self) -> None:
        step = self.selected or 0
        self.view = self._index.view(step)
        self.view.steps.setdefault(step, self.view.step_view(step))
        if step == self._full.last_step:
            self.view.state = self._full.state
            self.view.ended_reason = self._full.ended_reason
        playing = "▶" if self._player is not None else "⏸"
        # first in the status line, so a narrow terminal still shows that this is a replay
        self.lead = f"{playing} replay {SPEEDS[self._speed]:g} steps/s · ←/→"
        self.note = ""
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

    def action_play(self) -> None:
        """Replay: step forward automatically at the chosen speed, or stop doing so."""
        if not self.replay:
            self.notify("play is for replays; space pauses a live session", severity="warning")
            return
        if self._player is not None:
            self._stop_player()
        else:
            if self.selected == self.replay_steps()[-1]:
                self.selected = 0  # at the end: play from the start
            self._player = self.set_interval(1 / SPEEDS[self._speed], self._advance, name="play")
        self._show_replay()

    def action_speed(self, delta: int) -> None:
        if not self.replay:
            return
        self._speed = max(0, min(len(SPEEDS) - 1, self._speed + delta))
        if self._player is not None:
            self._player.stop()
            self._player = self.set_interval(1 / SPEEDS[self._speed], self._advance, name="play")
        self._show_replay()

    def _stop_player(self) -> None:
        if self._player is not None:
            self._player.stop()
            self._player = None

    def _advance(self) -> None:
        later = [s for s in self.replay_steps() if s > (self.selected or 0)]
        if not later:
            self._stop_player()
            self._show_replay()
            return
        self._goto(later[0])


def _thresholds(session: Session | None, events: list[Event]) -> dict[str, float]:
    """The task's medal thresholds: from the live task, or the stored task folder in replay."""
    try:
        if session is not None:
            return session.task.spec.thresholds.model_dump()
        from ...core.tasks import find_task

        started = events[0].payload if events else None
        config = getattr(started, "config", None) or {}
        folder = config.get("task_folder")
        task = find_task(task_dir=folder) if folder else find_task(started.task, None)
        return task.spec.thresholds.model_dump()
    except Exception:  # noqa: BLE001 - a moved task folder still replays, without thresholds
        return {}
