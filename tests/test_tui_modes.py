"""The session screen by mode (live or replay, wide or 80x24), queued undo, toasts, fork and
quit confirmations, the solve agent's labels, the home list's focus and the new-session form."""

from __future__ import annotations

import asyncio
import io
from contextlib import redirect_stderr

import pytest
from rich.console import Console
from textual.widgets import DataTable, Input, TextArea

from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.tui.app import MlagentApp, wait_for_sessions
from mlagent_tui.tui.screens.home import HomeScreen
from mlagent_tui.tui.screens.modals import Confirm, PlanEditor, TextPrompt
from mlagent_tui.tui.screens.new_session import NewSessionScreen
from mlagent_tui.tui.screens.session import SessionScreen
from mlagent_tui.tui.widgets import DiffPane, FactCheckPane, PlanPane

from .agent_helpers import research, write_replay
from .conftest import bwrap_ready
from .test_tui import HAPPY, SIZE, make_session, run
from .test_tui_snapshots import Blocking
from .tui_wait import messages, until

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

SMALL = (80, 24)
TINY_SCRIPT = "import csv\nprint('ok')\n"


def footer_keys(screen) -> set[str]:  # noqa: ANN001
    """The keys the footer shows: shown bindings that `check_action` does not hide."""
    return {key for key, active in screen.active_bindings.items() if active.binding.show}


def shown(widget) -> str:  # noqa: ANN001
    """The text a Static shows, whatever renderable it holds (a Group, Syntax, Text)."""
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def palette(app: MlagentApp) -> set[str]:
    return {c.title for c in app.get_system_commands(app.screen)}


def blocked_session(tmp_path, home, store, tiny_task, responses, at: int):  # noqa: ANN001, ANN201
    session = make_session(tmp_path, home, store, tiny_task, responses, max_steps=len(responses))
    model = Blocking(session.model, at=at)
    session.model = session.agent.model = model
    return session, model


def test_live_and_replay_list_only_their_keys(tmp_path, home, store, tiny_task):
    responses = [research("List Files", {"dir_path": "."})] * 2 + HAPPY
    session, model = blocked_session(tmp_path, home, store, tiny_task, responses, at=2)

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: model.blocked.is_set() and screen.view.completed == 1)
            keys = footer_keys(screen)
            assert {"space", "s", "q"} <= keys  # the rest behind `?` (and the palette)
            assert not {"p", "plus", "minus", "y", "n", "a", "t", "d"} & keys
            titles = palette(app)
            assert "Pause" in titles and "Faster" not in titles and "Play" not in titles
            assert {"Hint", "Edit the plan", "Approval mode", "Undo the last edit"} <= titles
            assert "Approve" not in titles  # nothing waits for approval
            await pilot.press("plus", "p")  # replay keys do nothing live (no message either)
            assert "play is for replays" not in messages(app)
            await pilot.press("m")  # a toast names the new mode
            await until(pilot, lambda: "approval mode confirm-exec" in messages(app))
            await pilot.press("question_mark")
            rows = {row[2] for row in app.screen.rows}
            assert "session.approve" in rows and "session.faster" not in rows
            await pilot.press("escape", "m", "m")  # back to auto: nothing will ask
            assert screen.view.approval == "auto"
            model.release.set()
            await until(pilot, lambda: not screen.running)
            assert not {"space", "h", "e", "m", "u", "s"} & footer_keys(screen)  # ended
        replay = MlagentApp(home, store, replay_id=session.id)
        async with replay.run_test(size=SIZE) as pilot:
            await pilot.pause()
            keys = footer_keys(replay.screen)
            assert {"p", "plus", "q"} <= keys
            assert not {"space", "h", "e", "m", "u", "s", "y", "n", "a"} & keys
            titles = palette(replay)
            assert {"Play", "Faster", "Fork from this step"} <= titles
            assert not {"Pause", "Hint"} & titles

    run(go())


def test_80x24_stacks_the_panes(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SMALL) as pilot:
            await pilot.pause()
            screen = app.screen
            plan, step = screen.query_one(PlanPane), screen.query_one(FactCheckPane)
            assert step.display and not plan.display and step.size.width >= 45
            assert {"t", "d", "q"} <= footer_keys(screen)
            await pilot.press("t")
            assert plan.display and not step.display and plan.size.width >= 45
            await pilot.press("home", "right", "right")  # step 2 ran a script: its log shows
            assert screen.query_one("#log").display and not screen.query_one("#diff").display
            await pilot.press("d")
            assert screen.query_one("#diff").display
            await pilot.resize_terminal(160, 45)
            await pilot.pause()
            assert plan.display and step.display and screen.query_one("#log").display
            assert "t" not in footer_keys(screen)

    run(go())


def test_queued_undo_shows_the_text_diff(tmp_path, home, store, tiny_task):
    responses = [
        research("Write File", {"file_name": "notes.txt", "content": "first\n"}),
        research("Write File", {"file_name": "notes.txt", "content": "hello, world!!\n"}),
        research("List Files", {"dir_path": "."}),
        research("List Files", {"dir_path": "."}),
    ]
    session, model = blocked_session(tmp_path, home, store, tiny_task, responses, at=3)

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: model.blocked.is_set() and screen.view.completed == 2)
            assert session.step_running
            await pilot.press("u")  # step 3 is running: queued, and said so
            assert "undo is queued" in messages(app) and "undo queued" in screen.note
            model.release.set()
            await until(pilot, lambda: "undid the last edit of notes.txt" in messages(app))
            await until(pilot, lambda: not screen.undo_queued)
            human = [d for s in screen.view.steps.values() for d in s.diffs if d[1] == "human"]
            assert human and "-hello, world!!" in human[0][2] and "+first" in human[0][2]
            await until(pilot, lambda: not screen.running)
            undone = [
                n for n, s in screen.view.steps.items() if any(d[1] == "human" for d in s.diffs)
            ]
            assert undone == [3]  # recorded after step 3, the one that was running
            screen._goto(3)
            text = shown(screen.query_one(DiffPane).query_one("#diffs"))
            assert "-hello, world!!" in text and "binary" not in text

    run(go())
    assert (session.workspace.root / "notes.txt").read_text() == "first\n"
    assert session.ended is not None and session.ended.status == "budget"  # it went on


def test_solve_agent_labels_and_plan_editor_cursor(tmp_path, home, store, tiny_task):
    solve = [f"Plan: start small\n```python\n{TINY_SCRIPT}```\n"] * 2
    replay = write_replay(tmp_path / "solve.jsonl", solve)
    config = SessionConfig(
        task_dir=str(tiny_task), model=f"replay:{replay}", agent="solve", max_steps=1
    )
    session = Session.create(home, store, config)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("home", "right")
            pane = app.screen.query_one(FactCheckPane)
            text = shown(pane.query_one("#factcheck"))
            assert pane.border_title == "Step 1: draft · Run Solution"
            assert "Reflection" not in text and "Fact Check" not in text and "Mode: draft" in text
            assert "print('ok')" in text  # the script, not a dict's repr
            assert app.screen.query_one(PlanPane).border_title == "Plan"
            app.push_screen(PlanEditor("1. first\n2. second"))
            await pilot.pause()
            area = app.screen.query_one(TextArea)
            assert area.cursor_location == area.document.end and app.focused is area

    run(go())


def test_home_focus_empty_filter_and_unknown_model(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task, max_steps=1)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store)
        async with app.run_test(size=SMALL) as pilot:
            table = app.screen.query_one(DataTable)
            header = [str(c.label) for c in table.columns.values()]
            assert header.index("status") < header.index("model")  # status stays visible
            await pilot.press("slash", *"nothing-like-this")
            note = app.screen.query_one("#no-sessions")
            assert note.display and "No session matches" in str(note.render())
            app.screen.query_one("#filter", Input).value = ""
            await pilot.press("enter")  # back to the list
            assert not note.display and app.focused is table
            await pilot.press("enter")  # replay, then back
            await until(pilot, lambda: isinstance(app.screen, SessionScreen))
            await pilot.press("q")
            assert isinstance(app.screen, HomeScreen) and app.focused is table
            await pilot.press("r")  # a key for the list, not typed into the filter
            assert isinstance(app.screen, TextPrompt)  # its budget is spent: how many more?
            await pilot.press("escape", "n")
            form = app.screen
            assert isinstance(form, NewSessionScreen)
            form.query_one("#task-dir", Input).value = str(tiny_task)
            form.query_one("#model", Input).value = "locl"
            await pilot.click("#start")
            error = form.query_one("#form-error")
            await until(pilot, lambda: "unknown model" in str(error.render()))
            assert "did you mean 'local'" in str(error.render()) and app.screen is form

    run(go())
    assert len(store.sessions()) == 1  # the refused model made no session


def test_replay_fork_asks_and_quit_does_not_wait_for_the_step(tmp_path, home, store, tiny_task):
    session, model = blocked_session(tmp_path, home, store, tiny_task, HAPPY, at=2)

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: model.blocked.is_set() and screen.view.completed == 1)
            await pilot.press("f")
            assert isinstance(app.screen, Confirm) and "Fork" in app.screen.question
            await pilot.press("n")
            assert app.screen is screen
            await pilot.press("ctrl+q")
        return app

    app = asyncio.run(go())
    # the app closed while the step still waited for the model: nothing joined its thread
    assert not app.is_running and model.blocked.is_set() and not model.release.is_set()
    assert app.session_threads and app.session_threads[0].is_alive()
    model.release.set()
    err = io.StringIO()
    with redirect_stderr(err):
        wait_for_sessions(app)
    assert "stops after its current step" in err.getvalue()
    assert session.ended is not None and session.ended.status == "stopped"
