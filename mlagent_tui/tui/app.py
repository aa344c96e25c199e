"""MlagentApp: a live session, the replay of a stored one, or the list of recent sessions."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterable
from pathlib import Path

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from ..core.home import Home
from ..core.session import Session
from ..core.store import Store
from .screens import (
    HelpScreen,
    HomeScreen,
    SessionScreen,
    help_title,
    key_rows,
    palette_commands,
)
from .session_threads import SESSION_THREADS


class MlagentApp(App):
    """`MlagentApp(home, store, session=None, replay_id=None)`.

    With `session` (created or resumed, not yet run) the app runs it in a thread worker and
    shows it live; with `replay_id` it replays the stored session; with neither it lists the
    recent sessions. `app.result` is the session's SessionResult when a live run finished.
    """

    CSS_PATH = "app.tcss"
    TITLE = "mlagent"
    BINDINGS = [Binding("question_mark,f1", "help", "Help", id="app.help")]

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
        self.session_threads: list[threading.Thread] = []  # live sessions, for run_app to wait
        self.keymap_error: str | None = None
        self.hung_up = False  # the terminal closed under the app (SIGHUP)
        try:
            self.user_keymap = load_keymap(home)
        except KeymapError as exc:
            self.user_keymap, self.keymap_error = {}, str(exc)

    def on_mount(self) -> None:
        try:  # the terminal closes (a tmux kill-session, an ssh drop): stop, leave, draw nothing
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.hang_up)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            pass
        if self.user_keymap:
            self.set_keymap(self.user_keymap)
        if self.keymap_error:
            self.notify(self.keymap_error, severity="warning", timeout=10)
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
            # straight to the replay (q quits); the home screen only when there is nothing to show
            if not self.open_replay(self.replay_id):
                self.push_screen(HomeScreen(self.store))
        else:
            self.push_screen(HomeScreen(self.store))

    def hang_up(self) -> None:
        """SIGHUP: nobody is watching. A live session stops after its step (its screen's
        unmount stops it, and it stays resumable) and the app exits. Textual's shutdown can
        block writing to the terminal that is gone, so once the sessions have ended the
        process leaves anyway."""
        self.hung_up = True
        if self.session is not None and self.session.ended is None:
            self.session.stop("the terminal closed")
        self.exit()
        threading.Thread(target=_leave_after, args=(self,), daemon=True, name="hangup").start()

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

    def launch(
        self,
        make: Callable[[], Session],
        *,
        what: str,
        on_error: Callable[[str], None] | None = None,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        """Create, resume or fork a session in a thread worker, then show it live.

        Preparing a task's workspace can take seconds; the UI keeps answering meanwhile. A
        failure goes to `on_error` (default: an error notification) and nothing else changes.
        """

        def failed(message: str) -> None:
            if on_error is not None:
                on_error(message)
            else:
                self.notify(message, severity="error", timeout=10)

        def ready(session: Session) -> None:
            if on_ready is not None:
                on_ready()
            self.start_session(session)

        def work() -> None:
            try:
                session = make()
            except Exception as exc:  # noqa: BLE001 - every failure is shown, none crashes
                self.call_from_thread(failed, f"cannot {what}: {exc}")
                return
            self.call_from_thread(ready, session)

        self.notify(f"{what}…", timeout=3)
        self.run_worker(work, thread=True, exit_on_error=False, group="launch", name=what)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Textual's own commands, then every key of the current screen (ctrl+p)."""
        yield from super().get_system_commands(screen)
        yield from palette_commands(screen)

    def action_help(self) -> None:
        """List every key of the current screen (and the app's), as remapped by the keymap."""
        if isinstance(self.screen, HelpScreen):
            return
        screen = self.screen
        self.push_screen(HelpScreen(key_rows(screen), title=help_title(screen)))

    def open_replay(self, session_id: str) -> bool:
        """Push the replay of a stored session; False (and a message) when there is none."""
        events = self.store.events(session_id)
        if not events:
            self.notify(f"no session {session_id!r}", severity="error", timeout=8)
            return False
        baseline, higher, max_steps = _task_facts(events[0].payload)
        screen = SessionScreen(events=events, baseline=baseline, higher_is_better=higher)
        screen.known["max_steps"] = max_steps
        self.push_screen(screen)
        return True


def _leave_after(app: MlagentApp, grace_s: float = 10.0) -> None:
    """Wait for the live sessions to record their end, then give the app `grace_s` to exit."""
    for thread in list(app.session_threads):
        thread.join()
    time.sleep(grace_s)
    os._exit(128 + signal.SIGHUP)


class KeymapError(Exception):
    pass


def keymap_path(home: Home) -> Path:
    """The home folder's `keymap.toml`, else `$MLAGENT_HOME/keymap.toml` when that is set."""
    path = home.root / "keymap.toml"
    env = os.environ.get("MLAGENT_HOME")
    if not path.is_file() and env:
        return Path(env) / "keymap.toml"
    return path


def load_keymap(home: Home, path: Path | None = None) -> dict[str, str]:
    """The user's key remapping, or {} when there is no keymap file.

    The file is TOML with one table, `[keys]`, mapping a binding id to the key (or several keys,
    comma-separated, or a list of keys) that replaces its default; ids the app does not know are
    ignored. The help screen (`?` or F1) shows each key's id. For example::

        [keys]
        "home.new" = "ctrl+n"            # new session
        "home.resume" = "R"
        "app.help" = ["f1", "h"]         # several keys for one binding

    Key names are Textual's (`ctrl+x`, `f5`, `space`, `question_mark`, `left`...).
    """
    path = path or keymap_path(home)
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KeymapError(f"keymap {path} not read: {exc}") from exc
    keys = data.get("keys", {})
    if not isinstance(keys, dict):
        raise KeymapError(f"keymap {path}: [keys] must be a table of binding id = key")
    keymap: dict[str, str] = {}
    for binding_id, value in keys.items():
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = ",".join(value)
        if not isinstance(value, str) or not value.strip():
            raise KeymapError(f"keymap {path}: {binding_id!r} must be a key string")
        keymap[str(binding_id)] = value
    return keymap


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
        wait_for_sessions(app)
    finally:
        store.close()
    return app


def wait_for_sessions(app: MlagentApp) -> None:
    """After the screen is gone: a live session stops after the step in progress (a script
    may run to its time-out, a model call to its end). Say so, and wait; Ctrl-C leaves now
    and the session stays resumable."""
    alive = [t for t in app.session_threads if t.is_alive()]
    try:
        for thread in alive:
            if not app.hung_up:  # a closed terminal takes no more text
                print(
                    f"mlagent: {thread.name} stops after its current step; waiting for it "
                    "(Ctrl-C leaves now, the session stays resumable)",
                    file=sys.stderr,
                    flush=True,
                )
            thread.join()
    except KeyboardInterrupt:
        SESSION_THREADS.difference_update(alive)  # left on purpose: exit does not wait
        raise
