"""The app at 80x24 as a new user first sees it: the whole footer, one line per step in the
Steps pane whatever the step number, the help screen's title, and `u` with nothing to undo."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from mlagent_tui.tui.app import MlagentApp
from mlagent_tui.tui.screens.help import HelpScreen
from mlagent_tui.tui.widgets import Timeline

from .agent_helpers import research
from .conftest import bwrap_ready
from .test_tui import HAPPY, make_session, run
from .test_tui_snapshots import MANY, Blocking
from .tui_wait import messages, until

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

SMALL, WIDE = (80, 24), (120, 40)


async def footer_fits(pilot, screen, wanted: set[str]) -> tuple[list[str], int]:  # noqa: ANN001
    """The footer's keys once `wanted` are among them (it recomposes after a focus or state
    change), and how far past the footer's right edge the last one reaches."""

    def shown() -> list:
        return list(screen.query_one(Footer).query(FooterKey).results())

    await until(pilot, lambda: wanted <= {k.key_display for k in shown()})
    await pilot.pause()  # laid out
    keys = shown()
    right = screen.query_one(Footer).region.right
    return [k.key_display for k in keys], max(k.region.right for k in keys) - right


@pytest.mark.parametrize("size", [SMALL, WIDE], ids=["80x24", "120x40"])
def test_steps_are_one_line_each_at_any_width(tmp_path, home, store, tiny_task, size):
    session = make_session(tmp_path, home, store, tiny_task, MANY, max_steps=12, stuck_after=0)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            timeline = app.screen.query_one(Timeline)
            width = timeline.scrollable_content_region.width
            assert timeline.option_count == 12
            for index in range(12):
                prompt = Text.from_markup(str(timeline.get_option_at_index(index).prompt))
                assert prompt.cell_len <= width, prompt.plain  # one line: nothing wraps
                assert prompt.plain.lstrip().startswith(str(index + 1))
            last = Text.from_markup(str(timeline.get_option_at_index(11).prompt)).plain
            assert last.endswith("validate invalid")  # the outcome is whole; the action gave way
            if size == SMALL:
                assert "…" in last
            await pilot.resize_terminal(*WIDE if size == SMALL else SMALL)  # cut again
            await pilot.pause()
            width = timeline.scrollable_content_region.width
            prompts = [str(timeline.get_option_at_index(i).prompt) for i in range(12)]
            assert all(Text.from_markup(p).cell_len <= width for p in prompts)

    run(go())


def test_the_footer_is_whole_at_80x24_and_help_has_a_title(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task, HAPPY, approval="confirm-all")

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SMALL) as pilot:
            screen = app.screen
            await until(pilot, lambda: screen.view.state == "waiting for you")
            keys, past = await footer_fits(pilot, screen, {"y", "n", "q", "?"})
            assert past <= 0, keys  # nothing cut off  # nothing cut off
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen))
            assert app.screen.heading == "Keys: live session"  # not a class name
            listed = {row[2] for row in app.screen.rows}
            assert {"session.hint", "session.undo", "session.fork"} <= listed  # behind `?`
            await pilot.press("escape", "s")

    run(go())


def test_help_titles_name_the_screen(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task, HAPPY)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store)
        async with app.run_test(size=SMALL) as pilot:
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen))
            assert app.screen.heading == "Keys: recent sessions"
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SMALL) as pilot:
            keys, past = await footer_fits(pilot, app.screen, {"p", "q", "?"})
            assert past <= 0, keys
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen))
            assert app.screen.heading == "Keys: replay of a session"

    run(go())


def test_undo_with_nothing_to_undo_says_so(tmp_path, home, store, tiny_task):
    responses = [research("List Files", {"dir_path": "."})] * 2 + HAPPY
    session = make_session(tmp_path, home, store, tiny_task, responses, max_steps=6)
    model = Blocking(session.model, at=2)
    session.model = session.agent.model = model

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=WIDE) as pilot:
            screen = app.screen
            await until(pilot, lambda: model.blocked.is_set() and screen.view.completed == 1)
            assert session.step_running and not session.workspace.edits()
            await pilot.press("u")
            await until(pilot, lambda: "nothing to undo" in messages(app))
            assert not screen.undo_queued and "undo queued" not in screen.note
            assert not session.paused  # nothing was queued, so nothing holds the session
            model.release.set()
            await until(pilot, lambda: not screen.running)
            assert "undid" not in messages(app)

    run(go())
    assert session.ended is not None and session.ended.status == "finished"
