"""The home screen, the new-session form, the help screen and the user keymap, driven by Pilot."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from textual.command import CommandList
from textual.widgets import DataTable, Input, Select

from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.store import Store
from mlagent_tui.tui.app import KeymapError, MlagentApp, load_keymap
from mlagent_tui.tui.screens.help import HelpScreen
from mlagent_tui.tui.screens.home import HomeScreen
from mlagent_tui.tui.screens.modals import TextPrompt
from mlagent_tui.tui.screens.new_session import NewSessionScreen
from mlagent_tui.tui.screens.session import SessionScreen

from .agent_helpers import research, write_replay
from .conftest import bwrap_ready
from .tui_wait import messages, until

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

SIZE = (120, 40)
HAPPY = [
    research("List Files", {"dir_path": "."}, thought="look at zebrafish"),
    research("Execute Script", {"script_name": "train.py"}),
    research("Validate", {}),
    research("Final Answer", {"final_answer": "baseline"}),
]


def ran(tmp_path: Path, home, store, tiny_task, name: str, **cfg) -> Session:
    """A session run to its end in the test's thread (budget-ended with max_steps=1)."""
    replay = write_replay(tmp_path / f"{name}.jsonl", HAPPY * 2)
    config = SessionConfig(task_dir=str(tiny_task), model=f"replay:{replay}", **cfg)
    session = Session.create(home, store, config)
    session.run()
    return session


def table_ids(app: MlagentApp) -> list[str]:
    table = app.screen.query_one("#sessions", DataTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


def select_row(app: MlagentApp, session_id: str) -> None:
    table = app.screen.query_one("#sessions", DataTable)
    table.move_cursor(row=table.get_row_index(session_id))


def test_home_lists_sessions_and_filter_narrows(tmp_path, home, store, tiny_task):
    budget = ran(tmp_path, home, store, tiny_task, "a", max_steps=1)
    done = ran(tmp_path, home, store, tiny_task, "b")

    async def go() -> None:
        app = MlagentApp(home, store)
        async with app.run_test(size=SIZE) as pilot:
            assert isinstance(app.screen, HomeScreen)
            assert set(table_ids(app)) == {budget.id, done.id}
            row = app.screen.query_one(DataTable).get_row(done.id)
            assert "finished" in row and "research" in row
            await pilot.press("slash")
            assert isinstance(app.focused, Input)
            await pilot.press(*"budget")
            await pilot.pause()
            assert table_ids(app) == [budget.id]
            box = app.screen.query_one("#filter", Input)
            box.value = ""
            await pilot.press(*"zebrafish")  # a step's thought: both match
            await pilot.pause()
            assert set(table_ids(app)) == {budget.id, done.id}
            box.value = ""
            await pilot.press(*"nothingmatches")
            await pilot.pause()
            assert table_ids(app) == []
            box.value = ""
            await pilot.press("enter")  # back to the table
            assert isinstance(app.focused, DataTable)
            select_row(app, done.id)
            await pilot.press("enter")  # replays the selected session
            assert isinstance(app.screen, SessionScreen)

    asyncio.run(go())


def test_new_session_form_starts_a_session(tmp_path, home, store, tiny_task):
    replay = write_replay(tmp_path / "new.jsonl", HAPPY)

    async def go() -> None:
        app = MlagentApp(home, store)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("n")
            form = app.screen
            assert isinstance(form, NewSessionScreen)
            assert form.query_one("#task", Select).value == "breast-cancer"
            assert form.query_one("#model", Input).value == "local"
            form.query_one("#task-dir", Input).value = str(tmp_path / "no-such-task")
            await pilot.click("#start")
            assert app.screen is form  # the error is shown in the form
            assert "task folder not found" in str(form.query_one("#form-error").render())
            form.query_one("#task-dir", Input).value = str(tiny_task)
            form.query_one("#model", Input).value = f"replay:{tmp_path / 'missing.jsonl'}"
            await pilot.click("#start")
            await until(
                pilot, lambda: "cannot start" in str(form.query_one("#form-error").render())
            )
            assert app.screen is form
            form.query_one("#model", Input).value = f"replay:{replay}"
            await pilot.press("ctrl+s")  # the key: the error above moved the button
            await until(pilot, lambda: isinstance(app.screen, SessionScreen))
            screen = app.screen
            await until(pilot, lambda: screen.view.state == "finished")

    asyncio.run(go())
    rows = store.sessions()
    assert len(rows) == 1 and rows[0]["status"] == "finished"


def test_resume_budget_session_and_refuse_finished(tmp_path, home, store, tiny_task):
    budget = ran(tmp_path, home, store, tiny_task, "a", max_steps=1)
    done = ran(tmp_path, home, store, tiny_task, "b")
    assert store.session(budget.id)["status"] == "budget"

    async def go() -> None:
        app = MlagentApp(home, store)
        async with app.run_test(size=SIZE) as pilot:
            select_row(app, done.id)
            await pilot.press("r")
            assert isinstance(app.screen, HomeScreen)
            assert "cannot be resumed" in messages(app)
            select_row(app, budget.id)
            await pilot.press("r")  # its budget is spent: the app asks for more steps
            assert isinstance(app.screen, TextPrompt)
            await pilot.press(*"zero", "enter")
            assert isinstance(app.screen, HomeScreen) and "not a number" in messages(app)
            await pilot.press("r")
            assert isinstance(app.screen, TextPrompt)
            await pilot.press("2", "enter")
            await until(pilot, lambda: isinstance(app.screen, SessionScreen))
            assert app.screen.session.id == budget.id
            await app.workers.wait_for_complete()
            await pilot.pause()

    asyncio.run(go())
    assert "resumed" in [e.kind for e in store.events(budget.id)]


def test_resume_of_a_stopped_session_asks_for_a_budget_and_keeps_its_end(
    tmp_path, home, store, tiny_task
):
    replay = write_replay(tmp_path / "s.jsonl", HAPPY * 2)
    config = SessionConfig(task_dir=str(tiny_task), model=f"replay:{replay}")
    stopped = Session.create(home, store, config)
    stopped.stop()  # as the person's `s` does: it ends `stopped` before any step
    stopped.run()
    assert store.session(stopped.id)["end_reason"] == "stopped by the person"

    async def go() -> None:
        app = MlagentApp(home, store)
        async with app.run_test(size=SIZE) as pilot:
            select_row(app, stopped.id)
            await pilot.press("r")  # never on the old budget: the app asks for one
            assert isinstance(app.screen, TextPrompt)
            await pilot.press("1", "enter")
            await until(pilot, lambda: isinstance(app.screen, SessionScreen))
            await app.workers.wait_for_complete()
            await pilot.pause()

    asyncio.run(go())
    ends = [e.payload.reason for e in store.events(stopped.id, kinds=["session_ended"])]
    assert ends[0] == "stopped by the person" and len(ends) == 2


def test_help_lists_keys_and_keymap_remaps(tmp_path, home, store):
    (home.root / "keymap.toml").write_text('[keys]\n"home.new" = "ctrl+n"\n')

    async def go() -> None:
        app = MlagentApp(home, store)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("n")  # no longer bound
            assert isinstance(app.screen, HomeScreen)
            await pilot.press("ctrl+n")
            assert isinstance(app.screen, NewSessionScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, HomeScreen)
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
            table = app.screen.query_one(DataTable)
            rows = [table.get_row_at(i) for i in range(table.row_count)]
            by_id = {str(r[2]): (str(r[0]), str(r[1])) for r in rows}
            assert by_id["home.new"][1] == "New session" and "n" in by_id["home.new"][0].lower()
            assert by_id["home.new"][0] != "n"
            for binding_id in ("home.resume", "home.filter", "home.quit", "app.help"):
                assert binding_id in by_id
            await pilot.press("q")
            assert isinstance(app.screen, HomeScreen)
            await pilot.press("f1")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, HomeScreen)

    asyncio.run(go())


def test_bad_keymap_is_reported(tmp_path, home, store):
    path = home.root / "keymap.toml"
    path.write_text("[keys]\nbroken = \n")
    with pytest.raises(KeymapError):
        load_keymap(home, path)
    path.write_text('[keys]\n"app.help" = ["f1", "f2"]\n')
    assert load_keymap(home, path) == {"app.help": "f1,f2"}

    async def go() -> None:
        path.write_text("not toml [")
        app = MlagentApp(home, store)
        async with app.run_test(size=SIZE):
            assert isinstance(app.screen, HomeScreen)
            assert "keymap" in messages(app)

    asyncio.run(go())


def test_a_database_locked_by_a_writer_is_read_through_wal(tmp_path, home, store, tiny_task):
    """A running session holds the write lock: the home screen and a replay still read."""
    done = ran(tmp_path, home, store, tiny_task, "a")
    writer = sqlite3.connect(str(home.db_path), timeout=0)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO _migrations (name, applied_at) VALUES ('held', 'now')")
    try:
        reader = Store(home.db_path)  # no write lock needed: the schema is current

        async def go() -> None:
            app = MlagentApp(home, reader)
            async with app.run_test(size=SIZE) as pilot:
                assert table_ids(app) == [done.id]
                await pilot.press("enter")
                await until(pilot, lambda: isinstance(app.screen, SessionScreen))
                assert app.screen.view.state == "finished"
                await pilot.press("q")  # a replay opened from the list goes back to it
                assert isinstance(app.screen, HomeScreen) and app.is_running

        asyncio.run(go())
        reader.close()
    finally:
        writer.rollback()
        writer.close()


def test_command_palette_lists_and_runs_the_screen_keys(tmp_path, home, store, tiny_task):
    async def go() -> None:
        app = MlagentApp(home, store)
        async with app.run_test(size=SIZE) as pilot:
            titles = {c.title: c for c in app.get_system_commands(app.screen)}
            for title in ("New session", "Resume", "Filter", "Quit"):
                assert title in titles
            assert titles["New session"].help == "key: n"
            await pilot.press("ctrl+p")
            await pilot.press(*"New sess")
            await until(pilot, lambda: bool(app.screen.query(CommandList)))
            found = app.screen.query_one(CommandList)
            await until(pilot, lambda: found.option_count > 0)
            assert "New session" in str(found.get_option_at_index(0).prompt)
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, NewSessionScreen))

    asyncio.run(go())
