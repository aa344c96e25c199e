"""SVG snapshots (pytest-textual-snapshot) of the home screen, a running session, a session
waiting for approval, the plan editor and a replay.

Everything that varies between runs is pinned: event timestamps count up from a fixed instant,
session ids are fixed, the elapsed-time ticker is off, and the stored sessions shown on the home
screen and in replay are copied with temporary paths and measured durations normalised.
Update the pictures with `pytest tests/test_tui_snapshots.py --snapshot-update`, then look at them.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from pathlib import Path

import pytest

from mlagent_tui.core import events as events_module
from mlagent_tui.core.events import PAYLOAD_ADAPTER, Event
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.session import run as session_module
from mlagent_tui.core.store import Store
from mlagent_tui.tui.app import MlagentApp
from mlagent_tui.tui.screens.modals import PlanEditor
from mlagent_tui.tui.screens.session import SessionScreen

from .agent_helpers import research, write_replay
from .conftest import bwrap_ready
from .test_tui import HAPPY
from .tui_wait import until

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC
SIZE = (120, 40)
SMALL = (80, 24)
EDITING = [
    research("List Files", {"dir_path": "."}),
    research(
        "Write File",
        {"file_name": "train.py", "content": "print('hello')\n"},
        plan="1. list the files **done**\n2. write a first train.py **in progress**",
        thought="start from a tiny script",
    ),
    research("Validate", {}),
]

# twelve steps: step numbers reach two digits, with the longest outcome ("validate invalid":
# a submission without the grader's columns)
MANY = [
    research("Execute Script", {"script_name": "train.py"}),
    research("Write File", {"file_name": "submission.csv", "content": "no,columns\n"}),
    research("Validate", {}),
] * 4


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch):
    """Fixed clock for events, fixed session ids, no elapsed ticker, UTC dates."""
    ticks = itertools.count()
    monkeypatch.setattr(events_module, "now", lambda: T0 + next(ticks))
    ids = (f"snap{i:04d}" for i in itertools.count(1))
    monkeypatch.setattr(session_module, "new_session_id", lambda: next(ids))
    monkeypatch.setattr(SessionScreen, "_tick", lambda self: None)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


class Blocking:
    """A replay model that stops at its `at`-th call until released: a session caught running."""

    def __init__(self, inner, at: int) -> None:  # noqa: ANN001
        self.inner, self.at = inner, at
        self.name, self.supports_grammar = inner.name, inner.supports_grammar
        self.calls = 0
        self.blocked, self.release = threading.Event(), threading.Event()

    def complete(self, messages, **kwargs):  # noqa: ANN001, ANN003, ANN201
        self.calls += 1
        if self.calls == self.at:
            self.blocked.set()
            self.release.wait(timeout=120)
        return self.inner.complete(messages, **kwargs)


def live(tmp_path: Path, home, store, tiny_task, responses, **cfg) -> Session:  # noqa: ANN001
    replay = write_replay(tmp_path / "replay.jsonl", responses)
    config = SessionConfig(task_dir=str(tiny_task), model=f"replay:{replay}", **cfg)
    return Session.create(home, store, config)


def normalised_copy(store: Store, target: Path, model: str = "replay:demo.jsonl") -> Store:
    """The store's sessions in a new file, with replay file paths and durations pinned."""
    copy = Store(target)
    for row in store.sessions():
        for event in store.events(row["id"]):
            text = re.sub(r"replay:[^\"]*?\.jsonl", model, event.payload.model_dump_json())
            text = re.sub(r'"duration_s":[0-9.e-]+', '"duration_s":0.42', text)
            text = re.sub(r'"peak_mem_mb":[0-9.e-]+', '"peak_mem_mb":21.0', text)
            text = re.sub(r"\d+\.\d s\b", "0.4 s", text)
            payload = PAYLOAD_ADAPTER.validate_json(text)
            copy.append(Event(**{**event.model_dump(exclude={"payload"}), "payload": payload}))
    return copy


def finished_sessions(tmp_path: Path, home, store, tiny_task, **kw) -> Store:  # noqa: ANN001, ANN003
    for i, responses in enumerate((HAPPY, EDITING)):
        folder = tmp_path / f"r{i}"
        folder.mkdir()
        live(folder, home, store, tiny_task, responses).run()
    return normalised_copy(store, tmp_path / "copy" / "mlagent.db", **kw)


def test_home_screen(frozen, snap_compare, tmp_path, home, store, tiny_task):
    copy = finished_sessions(tmp_path, home, store, tiny_task)
    assert snap_compare(MlagentApp(home, copy), terminal_size=SIZE)


def test_replay_of_a_step(frozen, snap_compare, tmp_path, home, store, tiny_task):
    copy = finished_sessions(tmp_path, home, store, tiny_task)
    app = MlagentApp(home, copy, replay_id="snap0001")
    assert snap_compare(app, press=["home", "right", "right"], terminal_size=SIZE)


def test_80x24_home_with_a_long_model_name(frozen, snap_compare, tmp_path, home, store, tiny_task):
    """80x24 is a first-class size: status and scores stay beside a long model name."""
    long = "replay:a-very-long-model-file-name-from-a-sweep-of-many-runs.jsonl"
    copy = finished_sessions(tmp_path, home, store, tiny_task, model=long)
    assert snap_compare(MlagentApp(home, copy), terminal_size=SMALL)


def test_80x24_replay_of_a_step(frozen, snap_compare, tmp_path, home, store, tiny_task):
    """The step pane and the files pane, each full width of the right column; replay keys."""
    copy = finished_sessions(tmp_path, home, store, tiny_task)
    app = MlagentApp(home, copy, replay_id="snap0002")
    assert snap_compare(app, press=["home", "right", "right"], terminal_size=SMALL)


@pytest.mark.parametrize("size", [SMALL, SIZE], ids=["80x24", "120x40"])
def test_two_digit_steps(frozen, snap_compare, tmp_path, home, store, tiny_task, size):
    """Steps 10 and on stay one line each (the action's name gives way, cut with an ellipsis),
    and the footer is whole: the keys that fit, the others behind `?`."""
    session = live(tmp_path, home, store, tiny_task, MANY, max_steps=12, stuck_after=0)
    session.run()
    copy = normalised_copy(store, tmp_path / "copy" / "mlagent.db")
    app = MlagentApp(home, copy, replay_id="snap0001")
    assert snap_compare(app, press=["end"], terminal_size=size)


def test_running_session_and_plan_editor(frozen, snap_compare, tmp_path, home, store, tiny_task):
    session = live(tmp_path, home, store, tiny_task, EDITING)
    model = Blocking(session.model, at=3)
    session.model = session.agent.model = model

    async def running(pilot) -> None:  # noqa: ANN001
        await until(pilot, lambda: model.blocked.is_set() and pilot.app.screen.view.completed == 2)

    async def editing(pilot) -> None:  # noqa: ANN001
        await running(pilot)
        await pilot.press("e")
        await until(pilot, lambda: isinstance(pilot.app.screen, PlanEditor))

    try:
        app = MlagentApp(home, store, session=session)
        assert snap_compare(app, terminal_size=SIZE, run_before=running)
    finally:
        model.release.set()
    assert ended(session) == "stopped"  # closing the app stopped it: no stray thread

    (tmp_path / "again").mkdir()
    again = live(tmp_path / "again", home, store, tiny_task, EDITING)
    model = Blocking(again.model, at=3)
    again.model = again.agent.model = model
    try:
        app = MlagentApp(home, store, session=again)
        assert snap_compare(app, terminal_size=SMALL, run_before=editing)
    finally:
        model.release.set()


def test_waiting_for_approval(frozen, snap_compare, tmp_path, home, store, tiny_task):
    session = live(tmp_path, home, store, tiny_task, HAPPY, approval="confirm-all")

    async def waiting(pilot) -> None:  # noqa: ANN001
        await until(pilot, lambda: pilot.app.screen.view.state == "waiting for you")

    app = MlagentApp(home, store, session=session)
    assert snap_compare(app, terminal_size=SIZE, run_before=waiting)
    assert ended(session) == "stopped"


def ended(session: Session) -> str | None:
    """The session's final status once its thread has finished running it."""
    assert session._run_lock.acquire(timeout=60), "the session thread did not end"
    session._run_lock.release()
    return session.ended.status if session.ended else None
