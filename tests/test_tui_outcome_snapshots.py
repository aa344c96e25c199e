"""SVG snapshots, at 80x24 and 120x40, of what the session screen tells about the outcome: the
end banner of a finished session, the approval that opens with what `y` runs, and the step in
progress in the Steps list. Pinned as in test_tui_snapshots (its `frozen` fixture)."""

from __future__ import annotations

import pytest

from mlagent_tui.tui.app import MlagentApp

from .conftest import bwrap_ready
from .test_tui import HAPPY
from .test_tui_snapshots import (
    EDITING,
    SIZE,
    SMALL,
    Blocking,
    ended,
    frozen,
    live,
    normalised_copy,
)
from .tui_wait import until

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
__all__ = ["frozen"]  # the fixture, used by name


@pytest.mark.parametrize("size", [SMALL, SIZE], ids=["80x24", "120x40"])
def test_finished_session_end_banner(frozen, snap_compare, tmp_path, home, store, tiny_task, size):
    live(tmp_path, home, store, tiny_task, HAPPY).run()
    copy = normalised_copy(store, tmp_path / "copy" / "mlagent.db")
    app = MlagentApp(home, copy, replay_id="snap0001")
    assert snap_compare(app, press=["end"], terminal_size=size)


@pytest.mark.parametrize("size", [SMALL, SIZE], ids=["80x24", "120x40"])
def test_confirm_exec_shows_what_y_runs(
    frozen, snap_compare, tmp_path, home, store, tiny_task, size
):
    session = live(tmp_path, home, store, tiny_task, HAPPY[1:], approval="confirm-exec")

    async def waiting(pilot) -> None:  # noqa: ANN001
        await until(pilot, lambda: pilot.app.screen.view.state == "waiting for you")

    assert snap_compare(
        MlagentApp(home, store, session=session), terminal_size=size, run_before=waiting
    )
    assert ended(session) == "stopped"


def test_80x24_step_in_progress(frozen, snap_compare, tmp_path, home, store, tiny_task):
    session = live(tmp_path, home, store, tiny_task, EDITING)  # no script: no measured time
    model = Blocking(session.model, at=3)
    session.model = session.agent.model = model

    async def running(pilot) -> None:  # noqa: ANN001
        await until(pilot, lambda: model.blocked.is_set() and pilot.app.screen.view.completed == 2)

    try:
        assert snap_compare(
            MlagentApp(home, store, session=session), terminal_size=SMALL, run_before=running
        )
    finally:
        model.release.set()
    assert ended(session) == "stopped"  # closing the app stopped it: no stray thread
