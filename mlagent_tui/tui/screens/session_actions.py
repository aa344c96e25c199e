"""The person's keys on the session screen: pause, hint, plan, approval, undo, stop, fork, quit.

A mixin of SessionScreen, kept apart so each file stays small; it reads and writes the screen's
`session`, `view`, `thread`, `note` and `selected`.

The session and the hooks run in daemon threads of their own, not in Textual's thread workers:
those live in asyncio's default executor, which the interpreter joins on exit, so closing the
app would wait there (a blank terminal) until the step in progress ended. `run_app` waits for
the session thread instead, saying so, where Ctrl-C leaves at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.message import Message

from ...core.events import AgentResponse
from ...core.safe_text import visible
from ...core.session import Approval, Session
from ..session_threads import SESSION_THREADS
from .modals import Confirm, PlanEditor, TextPrompt

if TYPE_CHECKING:
    from ..view import SessionView

APPROVAL_MODES = ["auto", "confirm-exec", "confirm-all"]
MODE_MEANS = {
    "auto": "every action runs without asking",
    "confirm-exec": "you approve each script run (y/n)",
    "confirm-all": "you approve every action (y/n)",
}


def _has_edits(s: Session) -> bool:
    """Whether the workspace's journal holds an edit to undo (when it cannot be read now,
    e.g. mid-write, the undo goes ahead and says itself what it found)."""
    try:
        return bool(s.workspace.edits())
    except Exception:  # noqa: BLE001 - a journal line being written
        return True


class SessionActions:
    """Key actions; live-only ones say so (a notify) when the session is not running."""

    session: Session | None
    view: SessionView
    thread: threading.Thread | None
    note: str
    selected: int | None
    replay: bool
    _answer: threading.Event
    _approval: Approval
    auto_approved: set[str]
    undo_queued: bool = False

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start_session_thread(self) -> None:
        """Run the live session in a daemon thread; its end arrives as a ThreadEnded message."""
        session = self.session
        assert session is not None

        def run() -> None:
            error: BaseException | None = None
            try:
                session.run()
            except BaseException as exc:  # noqa: BLE001 - shown on the screen, never lost
                error = exc
            finally:
                self.post_message(ThreadEnded(error))  # type: ignore[attr-defined]

        self.thread = threading.Thread(target=run, name=f"session {session.id}", daemon=True)
        self.app.session_threads.append(self.thread)  # type: ignore[attr-defined]
        SESSION_THREADS.add(self.thread)
        self.thread.start()

    def _live(self) -> Session | None:
        if self.session is None or not self.running:
            self.notify("this session is not running", severity="warning")
            return None
        return self.session

    def _approve(self, response: AgentResponse) -> Approval:
        """Called on the session's thread: block until the person answers (y / n / a / stop)."""
        if response.action in self.auto_approved:
            return Approval(approved=True, reason="approved for all actions of this kind")
        self._answer.clear()
        self._answer.wait()
        return self._approval

    def _give(self, approval: Approval) -> None:
        self._approval = approval
        self._answer.set()

    def _hook(self, fn: Callable[[], object]) -> None:
        """Call a session hook off the UI thread: it writes an event to the database, and a
        busy database (a flood of output, a checkpoint) must not delay the next key."""

        def run() -> None:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - a hook that fails says so
                self.tell(f"failed: {exc}", "error")

        threading.Thread(target=run, name="session hook", daemon=True).start()

    def action_pause(self) -> None:
        if (s := self._live()) is not None:
            self._hook(s.unpause if s.paused else s.pause)

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
        current = self.view.approval if self.view.approval in APPROVAL_MODES else s.approval
        i = APPROVAL_MODES.index(current) if current in APPROVAL_MODES else -1
        mode = APPROVAL_MODES[(i + 1) % len(APPROVAL_MODES)]
        self.view.approval = mode  # shown at once; recorded by the worker
        self._hook(lambda: s.set_approval(mode))  # type: ignore[arg-type]
        self.notify(f"approval mode {mode}: {MODE_MEANS[mode]}", title="m")
        self.refresh_panes()

    def action_approve(self) -> None:
        if self.view.waiting is None:
            self.notify("nothing is waiting for approval", severity="warning")
            return
        self._give(Approval(approved=True))

    def action_approve_all(self) -> None:
        """Approve the waiting action and every later action of the same kind."""
        if self.view.waiting is None:
            self.notify("nothing is waiting for approval", severity="warning")
            return
        action = self.view.waiting["action"]
        self.auto_approved.add(action)
        self.notify(f"approving every {action} for the rest of this session")
        self._give(Approval(approved=True, reason="approved for all actions of this kind"))

    def action_reject(self) -> None:
        if self.view.waiting is None:
            self.notify("nothing is waiting for approval", severity="warning")
            return

        def done(reason: str | None) -> None:
            if reason is not None and self.view.waiting is not None:
                self._give(Approval(approved=False, reason=reason.strip()))

        self.app.push_screen(TextPrompt("Why reject it? (the model sees this)"), done)

    def action_undo(self) -> None:
        """Undo the last file edit; while a step runs (it may be editing files) the undo is
        queued: the session pauses after the step, the edit is undone, and it goes on."""
        if (s := self._live()) is None:
            return
        if self.undo_queued:
            self.notify("an undo is already queued for the end of this step")
            return
        if not _has_edits(s):  # queueing one would pause the session for nothing
            self.notify("nothing to undo: no file edit yet", severity="warning")
            return
        if not s.step_running:
            self._hook(lambda: self._undo_now(s))
            return
        self.undo_queued = True
        self.note = "undo queued: after this step"
        self.notify(
            "a step is running: the undo is queued; the session pauses after this step, "
            "undoes the last edit, then goes on",
            timeout=6,
        )
        self.refresh_panes()
        self._hook(lambda: self._undo_after_step(s))

    def tell(self, text: str, severity: str = "information", undo_done: bool = False) -> None:
        """From any thread: a notification (posting never blocks, even while the app closes)."""
        self.post_message(Notice(text, severity, undo_done))  # type: ignore[attr-defined]

    def on_notice(self, message: Notice) -> None:
        if message.text:
            shown = visible(message.text)  # may name the agent's files: text, never markup
            self.notify(shown, severity=message.severity, markup=False)  # type: ignore[arg-type]
        if message.undo_done:
            self.undo_queued = False
            if self.note.startswith("undo queued"):
                self.note = ""
            self.refresh_panes()

    def _undo_now(self, s: Session, undo_done: bool = False) -> None:
        """On a hook thread: undo, and say what happened."""
        try:
            event = s.undo_last_edit()
        except Exception as exc:  # noqa: BLE001 - nothing to undo is a message, not a crash
            self.tell(f"cannot undo: {exc}", "warning", undo_done)
        else:
            self.tell(f"undid the last edit of {event.path}", "information", undo_done)

    def _undo_after_step(self, s: Session) -> None:
        """On a hook thread: hold the session before its next step, wait for this one to end,
        undo, and let it go on (unless the person had paused it)."""
        was_paused = s.paused
        s.pause()
        done = False
        try:
            while s.step_running and s.ended is None:
                time.sleep(0.05)  # the step ends by itself; nothing to wake on from here
            if s.ended is None:
                self._undo_now(s, undo_done=True)
                done = True
        finally:
            if not was_paused and s.ended is None:
                s.unpause()
            if not done:
                self.tell("the session ended before the queued undo", "warning", undo_done=True)

    def action_stop(self) -> None:
        if (s := self._live()) is None:
            return
        s.stop("stopped by the person")
        self._give(Approval(approved=False, reason="the person stopped the session"))
        self.note = "stopping after this step, then submitting"
        self.refresh_panes()

    def action_fork(self) -> None:
        """Fork a new live session from the selected step (live or replay)."""
        app = self.app
        source = self.session.id if self.session is not None else self.view.session_id
        step = self.selected if self.selected is not None else self.view.completed

        def done(yes: bool | None) -> None:
            if yes:
                app.launch(  # type: ignore[attr-defined]
                    lambda: Session.fork(app.home, app.store, source, step),  # type: ignore[attr-defined]
                    what=f"fork {source} from step {step}",
                )

        question = (
            f"Fork {source} from step {step}? A new live session starts from the files and plan"
            f" after step {step}; this one is unchanged."
        )
        app.push_screen(Confirm(question), done)

    def action_quit(self) -> None:
        """Back to the screen below (the home screen), or out of the app when there is none;
        asks first while the session runs."""
        if not self.running:
            if len(self.app.screen_stack) > 2:  # the default screen, the home screen, this one
                self.app.pop_screen()
            else:
                self.app.exit()
            return

        def done(yes: bool | None) -> None:
            if yes and self.session is not None:
                self.session.stop("the person quit")
                self._give(Approval(approved=False, reason="the person quit"))
                self.app.exit()

        self.app.push_screen(Confirm("The session is running. Stop it and quit?"), done)

    def on_thread_ended(self, message: ThreadEnded) -> None:
        if message.error is not None:
            self.view.state = "failed"
            self.view.ended_reason = f"error: {message.error}"
            self.note = f"error: {message.error}"
        self.refresh_panes()


class Notice(Message):
    """A notification posted from a hook thread (and whether a queued undo is over)."""

    def __init__(self, text: str, severity: str, undo_done: bool = False) -> None:
        super().__init__()
        self.text, self.severity, self.undo_done = text, severity, undo_done


class ThreadEnded(Message):
    """The live session's thread has ended (with the error that ended it, if any)."""

    def __init__(self, error: BaseException | None) -> None:
        super().__init__()
        self.error = error
