"""MlagentApp: a live session, the replay of a stored one, or the list of recent sessions."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from ..core.home import Home
from ..core.session import Session
from ..core.store import Store
from .screens.home import HomeScreen
from .screens.session import SessionScreen


class MlagentApp(App):
    """`MlagentApp(home, store, session=None, replay_id=None)`.

    With `session` (created or resumed, not yet run) the app runs it in a thread worker and
    shows it live; with `replay_id` it replays the stored session; with neither it lists the
    recent sessions. `app.result` is the session's SessionResult when a live run finished.
    """

    CSS_PATH = "app.tcss"
    TITLE = "mlagent"

    def __init__(
        self,
        home: Home,
        store: Store,
        session: Session | None = None,
        replay_id: str | None = None,
    ) -> None:
        super().__init__()
        self.home, self.store = home, store
        self.session, self.replay_id = session, replay_id

    def on_mount(self) -> None:
        if self.session is not None:
            spec = self.session.task.spec
            self.push_screen(
                SessionScreen(
                    session=self.session,
                    baseline=spec.baseline.score,
                    higher_is_better=spec.metric.higher_is_better,
                )
            )
        elif self.replay_id is not None:
            self.push_screen(HomeScreen(self.store))
            self.open_replay(self.replay_id)
        else:
            self.push_screen(HomeScreen(self.store))

    def start_session(self, session: Session) -> None:
        """Show a created, resumed or forked session live (it runs in a worker)."""
        self.session = session
        spec = session.task.spec
        self.push_screen(
            SessionScreen(
                session=session,
                baseline=spec.baseline.score,
                higher_is_better=spec.metric.higher_is_better,
            )
        )

    def open_replay(self, session_id: str) -> None:
        events = self.store.events(session_id)
        if not events:
            self.notify(f"no session {session_id!r}", severity="error", timeout=8)
            return
        baseline, higher, max_steps = _task_facts(events[0].payload)
        screen = SessionScreen(events=events, baseline=baseline, higher_is_better=higher)
        screen.known["max_steps"] = max_steps
        self.push_screen(screen)


def _task_facts(started) -> tuple[float | None, bool, int]:  # noqa: ANN001
    """Baseline, metric direction and step budget of a stored session's task, where found."""
    try:
        from ..core.tasks import find_task

        config = getattr(started, "config", None) or {}
        folder = config.get("task_folder")
        task = find_task(task_dir=folder) if folder else find_task(started.task, None)
        spec = task.spec
        steps = config.get("max_steps") or spec.limits.max_steps
        return spec.baseline.score, spec.metric.higher_is_better, steps
    except Exception:  # noqa: BLE001 - a moved task folder still replays, without a baseline
        return None, True, 0


def run_app(
    home: Home | Path | str | None = None,
    session: Session | None = None,
    replay_id: str | None = None,
) -> MlagentApp:
    """Open the app (blocking) and return it once it exits."""
    home = home if isinstance(home, Home) else Home.at(home)
    store = Store(home.db_path)
    app = MlagentApp(home, store, session=session, replay_id=replay_id)
    try:
        app.run()
    finally:
        store.close()
    return app
