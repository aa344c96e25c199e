"""The TUI driven by Pilot: live sessions with the replay model on the tiny task, and replay."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.tui.app import MlagentApp
from mlagent_tui.tui.screens.modals import PlanEditor, TextPrompt
from mlagent_tui.tui.screens.session import SessionScreen
from mlagent_tui.tui.widgets import Timeline

from .agent_helpers import research, write_replay
from .conftest import bwrap_ready
from .tui_wait import until

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

HAPPY = [
    research("List Files", {"dir_path": "."}),
    research("Execute Script", {"script_name": "train.py"}, plan="1. run baseline **done**"),
    research("Validate", {}),
    research("Final Answer", {"final_answer": "baseline"}),
]
SIZE = (120, 40)


def make_session(tmp_path: Path, home, store, tiny_task, responses=HAPPY, **cfg) -> Session:
    replay = write_replay(tmp_path / "replay.jsonl", responses)
    config = SessionConfig(task_dir=str(tiny_task), model=f"replay:{replay}", **cfg)
    return Session.create(home, store, config)


def kinds(store, session_id: str) -> list[str]:
    return [e.kind for e in store.events(session_id)]


def run(coro) -> None:
    asyncio.run(coro)


def test_live_session_finishes_and_timeline_has_the_steps(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task)

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, SessionScreen)
            await app.workers.wait_for_complete()
            await until(pilot, lambda: screen.view.state == "finished")
            timeline = screen.query_one(Timeline)
            assert timeline.option_count == 4
            assert "Final Answer" in str(timeline.get_option_at_index(3).prompt)
            assert "validate 1" in str(timeline.get_option_at_index(2).prompt)
            assert "finished" in str(screen.query_one("#status").render())
            await pilot.press("q")
        assert not app.is_running

    run(go())
    assert session.ended is not None and session.ended.status == "finished"


def test_pause_resume_hint_and_plan_edit(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task, HAPPY * 3, max_steps=50)
    session.pause()  # paused before the first step, so the keys find it running

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: screen.view.state == "paused")
            await pilot.press("h")
            assert isinstance(app.screen, TextPrompt)
            await pilot.press(*"try boosting", "enter")
            await pilot.press("e")
            assert isinstance(app.screen, PlanEditor)
            await pilot.press("ctrl+a", "delete", "ctrl+s")  # empty: refused, still open
            assert isinstance(app.screen, PlanEditor)
            await pilot.press(*"1. my plan", "ctrl+s")
            assert app.screen is screen
            await pilot.press("space")  # resume
            await until(pilot, lambda: screen.view.completed >= 1)
            await pilot.press("space")  # pause
            await until(pilot, lambda: screen.view.state == "paused")
            await pilot.press("s")  # stop and submit
            await app.workers.wait_for_complete()
            await until(pilot, lambda: screen.view.state == "stopped")
            assert "stopped by the person" in screen.view.status_line()  # why, in the header

    run(go())
    ks = kinds(store, session.id)
    assert ks.count("paused") == 2 and "resumed" in ks and "hint_given" in ks
    plans = [(r["author"], r["plan"]) for r in store.rows("plans", session.id)]
    assert ("human", "1. my plan") in plans
    hints = [e.payload.text for e in store.events(session.id, kinds=["hint_given"])]
    assert hints == ["try boosting"]


def test_approval_yes_and_no_with_confirm_all(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task, approval="confirm-all", max_steps=2)
    bells: list[int] = []

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: screen.view.state == "waiting for you")
            assert "waiting for you" in str(screen.query_one("#status").render())
            await pilot.press("y")
            await until(pilot, lambda: screen.view.completed == 1)
            await until(pilot, lambda: screen.view.state == "waiting for you")
            await pilot.press("n")
            assert isinstance(app.screen, TextPrompt)
            await pilot.press(*"not yet", "enter")
            await app.workers.wait_for_complete()
            await until(pilot, lambda: screen.view.state == "budget")
            assert "rejected" in str(screen.query_one(Timeline).get_option_at_index(1).prompt)

    run(go())
    given = [e.payload for e in store.events(session.id, kinds=["approval_given"])]
    assert [g.approved for g in given] == [True, False] and given[1].reason == "not yet"
    assert len(bells) == 2


def test_replay_moves_between_steps(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, SessionScreen) and screen.replay
            assert screen.selected == 4 and screen.view.state == "finished"
            await pilot.press("home")
            assert screen.selected == 0 and screen.view.completed == 0
            await pilot.press("right", "right")
            assert screen.selected == 2 and screen.view.completed == 2
            assert "run baseline" in screen.view.plan
            assert screen.query_one(Timeline).option_count == 4
            await pilot.press("left")
            assert screen.selected == 1 and screen.view.steps[1].action == "List Files"
            await pilot.press("end")
            assert screen.selected == 4
            await pilot.press("q")
        assert not app.is_running

    run(go())


def test_undo_and_approval_mode_keys(tmp_path, home, store, tiny_task):
    responses = [research("Write File", {"file_name": "a.py", "content": "print(1)"})]
    session = make_session(tmp_path, home, store, tiny_task, responses * 3 + HAPPY, max_steps=50)
    session.pause()

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: screen.view.state == "paused")
            await pilot.press("space")
            await until(pilot, lambda: screen.view.completed >= 1)
            await pilot.press("space")  # pause: undo waits for no step to run, nor to start
            await until(pilot, lambda: session.paused and not session.step_running)
            await pilot.press("u")
            await until(pilot, lambda: any(d[1] == "human" for d in _diffs(screen)))
            await pilot.press("m")
            assert session.approval == "confirm-exec" and "confirm-exec" in str(
                screen.query_one("#status").render()
            )
            await pilot.press("s")
            await app.workers.wait_for_complete()

    run(go())
    authors = [e.payload.author for e in store.events(session.id, kinds=["file_changed"])]
    assert "human" in authors


def _diffs(screen) -> list:
    return [d for s in screen.view.steps.values() for d in s.diffs]


def test_small_terminal_and_unknown_replay(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task, HAPPY[:1], max_steps=1)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id="nope")
        async with app.run_test(size=(60, 20)) as pilot:
            await pilot.pause()
            assert app.screen.__class__.__name__ == "HomeScreen"
            app.open_replay(session.id)
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, SessionScreen)
            assert screen.query_one("#too-small").display
            assert not screen.query_one("#main").display
            await pilot.resize_terminal(120, 40)
            await pilot.pause()
            assert screen.query_one("#main").display
            assert not screen.query_one("#too-small").display

    run(go())
