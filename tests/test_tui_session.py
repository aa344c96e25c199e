"""The session screen's scores pane, approve-all, fork, replay play and a failing model (Pilot)."""

from __future__ import annotations

import pytest
from textual.widgets import Sparkline

from mlagent_tui.core.llm.base import ModelError
from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.tui.app import MlagentApp
from mlagent_tui.tui.screens.modals import Confirm
from mlagent_tui.tui.screens.session import SessionScreen
from mlagent_tui.tui.view import ReplayIndex, view_upto
from mlagent_tui.tui.widgets import ScoresPane, Timeline

from .agent_helpers import research
from .conftest import bwrap_ready
from .test_tui import SIZE, make_session, run
from .tui_wait import messages, until

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def status(screen: SessionScreen) -> str:
    return str(screen.query_one("#status").render())


def levels(screen: SessionScreen) -> str:
    return str(screen.query_one("#score-levels").render())


def test_every_session_binding_has_an_id():
    ids = [b.id for b in SessionScreen.BINDINGS]
    assert all(i and i.startswith("session.") for i in ids) and len(set(ids)) == len(ids)


def test_replay_scores_pane_and_play(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, SessionScreen) and screen.replay
            text = levels(screen)
            # tiny-task: mae (lower is better), baseline 1.0, thresholds from its task.toml
            assert "last 1 (step 3)" in text and "lower is better" in text
            for name, value in (("gold", "0.05"), ("silver", "0.2"), ("bronze", "0.5")):
                assert name in text and value in text
            assert "median" in text and "baseline 1" in text
            assert screen.query_one(ScoresPane).query_one(Sparkline).data == [-1.0]
            await pilot.press("home")
            assert screen.selected == 0 and "no validate score yet" in levels(screen)
            await pilot.press("plus", "plus", "plus")
            assert "16 steps/s" in status(screen)
            screen.action_play()  # what `p` does; checked before the first tick can run
            assert "▶" in status(screen)
            await until(pilot, lambda: screen.selected == 4 and screen._player is None)
            assert "⏸" in status(screen) and screen.view.state == "finished"
            await pilot.press("minus")
            assert "8 steps/s" in status(screen)
            await pilot.press("p")  # at the end, `p` plays again from the start
            await until(pilot, lambda: screen.selected == 4 and screen._player is None)

    run(go())


def test_replay_index_matches_view_upto(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task)
    session.run()
    events = store.events(session.id)
    index = ReplayIndex(events, baseline=1.0, higher_is_better=False)
    for step in range(6):
        fast, slow = index.view(step), view_upto(events, step, baseline=1.0, higher_is_better=False)
        for name in ("state", "plan", "tokens_in", "best", "scores", "approval", "completed"):
            assert getattr(fast, name) == getattr(slow, name), (step, name)
        assert sorted(fast.steps) == sorted(n for n in slow.steps if n <= step)


def test_fork_from_a_replayed_step_opens_a_live_child(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            replay = app.screen
            assert isinstance(replay, SessionScreen)
            replay.selected = 99  # no such step: a message, not a crash
            replay.action_fork()
            assert isinstance(app.screen, Confirm)  # forking asks first
            await pilot.press("y")
            await app.workers.wait_for_complete()
            await until(pilot, lambda: "cannot fork" in messages(app))
            assert app.screen is replay
            await pilot.press("home", "right", "right")
            assert replay.selected == 2
            await pilot.press("f")
            assert isinstance(app.screen, Confirm) and "step 2" in app.screen.question
            await pilot.press("n")  # no: nothing starts
            assert app.screen is replay
            await pilot.press("f", "y")
            await until(
                pilot, lambda: isinstance(app.screen, SessionScreen) and app.screen is not replay
            )
            live = app.screen
            assert isinstance(live, SessionScreen) and live is not replay and not live.replay
            await app.workers.wait_for_complete()
            await until(pilot, lambda: live.view.state == "finished")
            child = live.session
            assert child is not None and child.id != session.id
            started = store.events(child.id, kinds=["session_started"])[0].payload
            assert (started.parent_session_id, started.parent_step) == (session.id, 2)
            assert "Final Answer" in str(live.query_one(Timeline).get_option_at_index(-1).prompt)

    run(go())


def test_approve_all_of_a_kind(tmp_path, home, store, tiny_task):
    listing = research("List Files", {"dir_path": "."})
    responses = [listing, listing, listing, research("Validate", {})]
    session = make_session(
        tmp_path, home, store, tiny_task, responses, approval="confirm-all", max_steps=4
    )
    bells: list[int] = []

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: screen.view.state == "waiting for you")
            screen._tick()  # the elapsed-time timer's callback: live, so the clock moves
            assert screen.view.clock is not None
            assert "0.05" in levels(screen)  # live thresholds come from the task spec
            await pilot.press("a")
            await until(pilot, lambda: screen.view.completed == 3)
            await until(pilot, lambda: screen.view.state == "waiting for you")
            assert screen.view.waiting["action"] == "Validate"
            await pilot.press("y")
            await app.workers.wait_for_complete()
            await until(pilot, lambda: screen.view.state == "budget")

    run(go())
    given = [e.payload for e in store.events(session.id, kinds=["approval_given"])]
    assert len(given) == 4 and all(g.approved for g in given)
    assert len(bells) == 2  # only the first List Files and the Validate asked the person


class FailingModel:
    name = "failing"
    supports_grammar = False

    def complete(self, messages, **kwargs):  # noqa: ANN001, ANN003, ANN201
        raise ModelError("the provider said no")


def test_a_model_error_shows_failed(tmp_path, home, store, tiny_task):
    config = SessionConfig(task_dir=str(tiny_task), model="replay:unused.jsonl")
    session = Session.create(home, store, config, model=FailingModel())

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await app.workers.wait_for_complete()
            await until(pilot, lambda: screen.view.state == "failed")
            assert "model error: the provider said no" in status(screen)
            timeline = screen.query_one(Timeline)
            assert "failed" in str(timeline.get_option_at_index(timeline.option_count - 1).prompt)
            await pilot.press("q")
        assert not app.is_running

    run(go())
    assert session.ended is not None and session.ended.status == "failed"
