"""What the session screen tells about a step and a session (Pilot): every step's observation or
error in the execution log, the end banner with the graded result, a status line that fits
80x24, the approval that shows what `y` runs, the step in progress in the Steps list, and the
plan editor's select-all and clear."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.widgets import Footer, TextArea
from textual.widgets._footer import FooterKey

from mlagent_tui.tui.app import MlagentApp
from mlagent_tui.tui.screens.modals import PlanEditor, TextPrompt
from mlagent_tui.tui.screens.session import SessionScreen
from mlagent_tui.tui.widgets import ExecLog, Timeline

from .agent_helpers import research
from .conftest import bwrap_ready
from .test_tui import HAPPY, make_session, run
from .test_tui_snapshots import Blocking
from .tui_wait import until

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

SMALL, WIDE = (80, 24), (120, 40)
SUPERVISED = [
    research("Execute Script", {"script_name": "train.py"}),  # rejected
    research("Execute Script", {"script_name": "missing.py"}),  # approved, fails
    research("Write File", {"file_name": "notes.txt", "content": "hello\n"}),  # no approval
    research("Execute Script", {"script_name": "train.py"}),
    research("Validate", {}),
]


def screen_text(screen) -> str:  # noqa: ANN001
    """The terminal's text as the person sees it now."""
    return "\n".join(strip.text for strip in screen._compositor.render_strips())


def log_text(screen: SessionScreen) -> str:
    return "\n".join(strip.text for strip in screen.query_one(ExecLog).lines)


def status_lines(screen: SessionScreen) -> list[str]:
    return Text.from_markup(str(screen.query_one("#status").render())).plain.splitlines()


def test_supervised_steps_show_their_observation_and_what_y_runs(tmp_path, home, store, tiny_task):
    """confirm-exec at 80x24: the step pane opens with the command and script `y` runs; the
    log shows the rejection, the error and the validation; the status line keeps its parts."""
    session = make_session(
        tmp_path, home, store, tiny_task, SUPERVISED, approval="confirm-exec", max_steps=5
    )

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SMALL) as pilot:
            screen = app.screen
            assert isinstance(screen, SessionScreen)
            await until(pilot, lambda: screen.view.waiting is not None)
            shown = screen_text(screen)
            assert "y runs" in shown and "python train.py" in shown, shown
            assert "import csv" in shown  # the script as it is now, visible without scrolling
            lines = status_lines(screen)
            assert len(lines) <= 2 and all(len(line) <= 78 for line in lines), lines
            joined = " ".join(lines)
            for part in ("waiting for you", "confirm-exec", "1/5", "y approves"):
                assert part in joined, joined
            await pilot.press("n")
            await until(pilot, lambda: isinstance(app.screen, TextPrompt))
            await pilot.press(*"not yet", "enter")
            await until(
                pilot, lambda: screen.view.waiting is not None and screen.view.completed == 1
            )
            screen._goto(1)
            assert "rejected this action: not yet" in log_text(screen)
            screen._goto(2)
            await pilot.press("y")
            await until(pilot, lambda: screen.view.completed >= 2)
            screen._goto(2)
            assert "does not exist" in log_text(screen)
            for step in (4, 5):
                await until(pilot, lambda s=step: (screen.view.waiting or {}).get("step") == s)
                await pilot.press("y")
            await until(pilot, lambda: screen.view.completed == 5 and not screen.running)
            screen._goto(3)
            assert "notes.txt" in log_text(screen)  # a file action's observation
            screen._goto(5)
            assert "mae = 1" in log_text(screen)  # the validation's observation
            await pilot.press("q")

    run(go())


def test_end_banner_live_and_in_replay(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task)

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SMALL) as pilot:
            screen = app.screen
            banner = screen.query_one("#end-banner")
            assert not banner.display
            await until(pilot, lambda: screen.view.state == "finished")
            text = str(banner.render())
            assert banner.display and "Session finished: submitted (Final Answer)" in text
            assert "final score 1 vs baseline 1 (level)" in text
            assert "medal: none (below median)" in text  # mae 1, median 0.9
            assert "final 1" in " ".join(status_lines(screen))
            assert "Session finished" in screen_text(screen)  # on screen at 80x24
            await pilot.press("q")

        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=WIDE) as pilot:
            screen = app.screen
            await pilot.pause()
            banner = screen.query_one("#end-banner")
            assert banner.display and "medal: none" in str(banner.render())
            await pilot.press("home")
            assert not banner.display  # the replay at its start: nothing has ended yet
            await pilot.press("end")
            assert banner.display

    run(go())


def test_the_step_in_progress_shows_working_and_its_time(tmp_path, home, store, tiny_task):
    session = make_session(tmp_path, home, store, tiny_task)
    model = Blocking(session.model, at=2)
    session.model = session.agent.model = model

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SMALL) as pilot:
            screen = app.screen
            timeline = screen.query_one(Timeline)
            await until(pilot, lambda: model.blocked.is_set() and timeline.option_count == 2)
            row = Text.from_markup(str(timeline.get_option_at_index(1).prompt)).plain
            assert row.lstrip().startswith("2") and "working…" in row, row
            assert row.rstrip()[-4:-2] == "0:", row  # the elapsed time, m:ss
            model.release.set()
            await until(pilot, lambda: screen.view.state == "finished")
            rows = [str(timeline.get_option_at_index(i).prompt) for i in range(4)]
            assert timeline.option_count == 4 and not any("working" in r for r in rows)
            await pilot.press("q")

    try:
        run(go())
    finally:
        model.release.set()


def test_plan_editor_selects_all_clears_and_opens_the_editor(
    tmp_path, home, store, tiny_task, monkeypatch
):
    monkeypatch.setenv("VISUAL", "true")
    session = make_session(tmp_path, home, store, tiny_task, HAPPY * 2, max_steps=10)
    session.pause()

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SMALL) as pilot:
            screen = app.screen
            await until(pilot, lambda: screen.view.state == "paused")
            await pilot.press("e")
            await until(pilot, lambda: isinstance(app.screen, PlanEditor))
            editor = app.screen
            area = editor.query_one(TextArea)
            area.text = "1. old plan\n2. more"
            await pilot.press("ctrl+a", *"new")
            assert area.text == "new"
            await pilot.press("ctrl+l")
            assert area.text == ""
            await pilot.press("ctrl+z")
            assert area.text == "new"  # a clear is undoable
            await pilot.click("#clear")
            assert area.text == "" and area.has_focus
            footer = editor.query_one(Footer)
            wanted = {"Select all", "Clear", "Open in $EDITOR"}
            # the footer recomposes after a focus change: wait for it, do not read it mid-way
            await until(pilot, lambda: wanted <= {k.description for k in footer.query(FooterKey)})
            await pilot.press("ctrl+e")  # reaches the editor, not the text area's line end
            error = str(editor.query_one("#error").render())
            assert "cannot run" in error, error  # headless: no terminal to hand over
            await pilot.press("escape")
            await pilot.press("s")
            await app.workers.wait_for_complete()

    run(go())


def test_every_step_has_its_observation_or_error_in_the_log(tmp_path, home, store, tiny_task):
    """A failed action, a file action and a validation print nothing: their log pane shows
    what the step saw; a script's own output stays as it was, its error line after it."""
    responses = [
        research("Execute Script", {"script_name": "missing.py"}),
        research("Write File", {"file_name": "boom.py", "content": "raise SystemExit('no')\n"}),
        research("Execute Script", {"script_name": "boom.py"}),
        research("Validate", {}),
    ]
    session = make_session(tmp_path, home, store, tiny_task, responses, max_steps=4)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=WIDE) as pilot:
            screen = app.screen
            await pilot.press("home")
            seen = {}
            for step in range(1, 5):
                await pilot.press("right")
                seen[step] = log_text(screen)
            assert "── error" in seen[1] and "missing.py does not exist" in seen[1], seen[1]
            assert "── observation" in seen[2] and "boom.py" in seen[2], seen[2]
            assert "exit code 1" in seen[3] and "── error: " in seen[3], seen[3]
            assert "not valid" in seen[4], seen[4]  # the validation's own error

    run(go())
