"""The new-session form: a task (bundled or a folder), a model, the agent and the approval mode.

Start creates the session with `Session.create` and hands it to `app.start_session`; anything
wrong (an unknown task folder, a model spec that does not load) is shown in the form.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from ...core.session import Session, SessionConfig
from ...core.tasks import DEFAULT_TASK, list_tasks

AGENTS = ("research", "solve")
APPROVALS = ("auto", "confirm-exec", "confirm-all")


def bundled_task_names() -> list[str]:
    try:
        return [t.name for t in list_tasks()]
    except Exception:  # noqa: BLE001 - a broken bundled task must not hide the form
        return []


class NewSessionScreen(ModalScreen[None]):
    help_name = "new session"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="new.cancel"),
        Binding("ctrl+s", "start", "Start", id="new.start"),
    ]

    def compose(self) -> ComposeResult:
        names = bundled_task_names()
        default = DEFAULT_TASK if DEFAULT_TASK in names else (names[0] if names else Select.NULL)
        with VerticalScroll(id="new-session"):
            yield Static(
                "New session — ctrl+s or Enter starts, escape cancels", classes="form-title"
            )
            with Horizontal(classes="field"):
                yield Label("Bundled task")
                yield Select(
                    [(n, n) for n in names], value=default, allow_blank=not names, id="task"
                )
            with Horizontal(classes="field"):
                yield Label("…or a folder")
                yield Input(placeholder="path/to/task-folder (wins when filled)", id="task-dir")
            with Horizontal(classes="field"):
                yield Label("Model")
                yield Input(value="local", placeholder="local, replay:FILE, litellm…", id="model")
            with Horizontal(classes="field"):
                yield Label("Agent")
                yield Select(
                    [(a, a) for a in AGENTS], value="research", allow_blank=False, id="agent"
                )
            with Horizontal(classes="field"):
                yield Label("Approval")
                yield Select(
                    [(a, a) for a in APPROVALS], value="auto", allow_blank=False, id="approval"
                )
            yield Static("", id="form-error")
            with Horizontal(id="form-buttons"):
                yield Button("Start", variant="primary", id="start")
                yield Button("Cancel", id="cancel")

    starting = False

    def on_mount(self) -> None:
        self.query_one("#task-dir", Input).focus()

    def config(self) -> SessionConfig:
        folder = self.query_one("#task-dir", Input).value.strip()
        task = self.query_one("#task", Select).value
        model = self.query_one("#model", Input).value.strip() or "local"
        return SessionConfig(
            task=None if folder or task is Select.NULL else str(task),
            task_dir=folder or None,
            model=model,
            agent=self.query_one("#agent", Select).value,  # type: ignore[arg-type]
            approval=self.query_one("#approval", Select).value,  # type: ignore[arg-type]
            solve_starter=True,  # as `mlagent run` does by default
        )

    def show_error(self, text: str) -> None:
        error = self.query_one("#form-error", Static)
        error.update(text)
        error.display = bool(text)

    def action_start(self) -> None:
        """Create the session off the UI thread; the form stays until it exists or fails."""
        if self.starting:
            return
        try:
            config = self.config()
        except Exception as exc:  # noqa: BLE001 - e.g. a field pydantic refuses
            self.show_error(f"cannot start: {exc}")
            return
        app = self.app
        self.starting = True
        self.show_error("")

        def failed(message: str) -> None:
            self.starting = False
            self.show_error(message)

        app.launch(  # type: ignore[attr-defined]
            lambda: Session.create(app.home, app.store, config),  # type: ignore[attr-defined]
            what="start the session",
            on_error=failed,
            on_ready=self.dismiss,
        )

    def action_cancel(self) -> None:
        self.dismiss()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_start()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start":
            self.action_start()
        else:
            self.action_cancel()
