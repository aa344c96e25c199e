"""The search tree pane: live and replay show the same tree, a node's diff, the steering keys."""

from __future__ import annotations

import asyncio

import pytest

from mlagent_tui.core.search import Tree
from mlagent_tui.tui.app import MlagentApp
from mlagent_tui.tui.screens.modals import Confirm, TextPrompt
from mlagent_tui.tui.screens.session import SessionScreen
from mlagent_tui.tui.widgets import DiffPane, ExecLog, Timeline
from mlagent_tui.tui.widgets.search_tree import SearchTreePane

from .conftest import bwrap_ready
from .test_tui import SIZE, make_session
from .tui_search_helpers import Blocking, search_session
from .tui_wait import messages, until

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def tree_lines(app: MlagentApp) -> list[str]:
    """The tree pane as text: one line per node, indented by depth."""
    pane = app.screen.query_one(SearchTreePane)
    lines: list[str] = []

    def walk(node, depth: int) -> None:  # noqa: ANN001
        for child in node.children:
            lines.append("  " * depth + child.label.plain)
            walk(child, depth + 1)

    walk(pane.root, 0)
    return lines


def ended(app: MlagentApp) -> bool:
    screen = app.screen
    return isinstance(screen, SessionScreen) and screen.view.state in ("finished", "budget")


def test_replay_shows_the_same_tree_as_live(tmp_path, home, store, tiny_task) -> None:
    session = search_session(tmp_path, home, store, tiny_task)
    seen: dict[str, list[str]] = {}

    async def live() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: ended(app) and len(tree_lines(app)) == 5)
            screen = app.screen
            assert not screen.query_one(Timeline).display  # the tree takes the Steps' place
            assert screen.focused is screen.query_one(SearchTreePane)
            seen["live"] = tree_lines(app)
            valid = [
                (e.payload.node, e.payload.score)
                for e in store.events(session.id, kinds=["node_finished"])
                if e.payload.status == "valid"
            ]
            assert valid and screen.view.scores == valid  # the scores pane: one per valid node
            levels = str(screen.query_one("#score-levels").render())
            assert f"(node #{valid[-1][0]})" in levels

    async def replay() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: len(tree_lines(app)) == 5)
            seen["replay"] = tree_lines(app)
            await pilot.press("home")  # the first step: the tree as it was then
            await until(pilot, lambda: len(tree_lines(app)) < 5)
            await pilot.press("end")
            await until(pilot, lambda: tree_lines(app) == seen["replay"])

    asyncio.run(live())
    asyncio.run(replay())
    assert seen["live"] == seen["replay"]
    core = Tree(False).apply_all(e.payload for e in store.events(session.id)).render()
    assert [ln.split()[0] for ln in seen["live"]] == [ln.split()[0] for ln in core]
    assert "#3 draft 0 ★ ✓" in seen["live"]  # the best node, and the chosen answer
    assert seen["live"][3].startswith("  #4 improve")  # a child under its parent


def test_selecting_a_node_shows_plan_diff_and_log(tmp_path, home, store, tiny_task) -> None:
    session = search_session(tmp_path, home, store, tiny_task)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: screen._node_shown == 5)  # the newest node first
            await pilot.press("up")  # #4, an improvement of #3
            await until(pilot, lambda: screen._node_shown == 4)
            diff = screen.query_one(DiffPane)
            assert diff.border_title == "Diff · #4 vs #3"
            text = screen.search_shown().diff(screen.search_shown().nodes[4])[1]
            assert "-        fh.write(f\"{row['id']},{2 * int(row['x']) + 0}\\n\")" in text
            assert "+        fh.write(f\"{row['id']},{2 * int(row['x']) + 2}\\n\")" in text
            assert text.startswith("--- #3/solution.py\n+++ #4/solution.py\n")
            log = screen.query_one(ExecLog)
            assert log.border_title == "Execution log · #4"
            shown = [line.text.rstrip() for line in log.lines]
            assert shown[0] == "done" and shown[1].startswith("── valid in")
            assert "Node #4: improve of #3" in screen.query_one("#factcheck-pane").border_title
            assert screen.query_one("#plan").border_title == "Plan · #4"

    asyncio.run(go())


def test_steering_keys_record_events(tmp_path, home, store, tiny_task) -> None:
    """x, p, h and k on the selected node; k on the branch of the best node asks first."""
    session = search_session(tmp_path, home, store, tiny_task)
    model = Blocking(session.model, at=3)  # two drafts have run; the third is being written
    session.model = model

    def of(kind: str) -> list:
        return [e.payload for e in store.events(session.id, kinds=[kind])]

    async def go() -> None:
        app = MlagentApp(home, store, session=session)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: model.blocked.is_set() and len(tree_lines(app)) == 2)
            await until(pilot, lambda: "bug" in tree_lines(app)[1])
            assert screen._node_shown == 2  # following the newest node
            await pilot.press("up")  # from the newest node (#2) to #1
            await until(pilot, lambda: screen._node_shown == 1)
            await pilot.press("x")
            await until(pilot, lambda: "#1 is expanded at the next choice" in messages(app))
            assert of("node_expand_asked")
            await pilot.press("p")
            await until(pilot, lambda: bool(of("node_pinned")))
            await until(pilot, lambda: "⚑" in tree_lines(app)[0])  # the mark, via the bus
            await pilot.press("h")
            await until(pilot, lambda: isinstance(app.screen, TextPrompt))
            await pilot.press(*"use 2x", "enter")
            await until(pilot, lambda: bool(of("node_hint")))
            await pilot.press("k")  # #1 is the best node: asked first; no leaves it alone
            await until(pilot, lambda: isinstance(app.screen, Confirm))
            assert "holds the best node #1" in app.screen.question
            await pilot.press("n")
            await until(pilot, lambda: app.screen is screen)
            await pilot.press("k")
            await until(pilot, lambda: isinstance(app.screen, Confirm))
            await pilot.press("y")
            await until(pilot, lambda: bool(of("node_pruned")))
            await until(pilot, lambda: "✂" in tree_lines(app)[0])
            assert screen.query_one(SearchTreePane).cursor_id == 1  # the cursor stayed
            model.release.set()
            await until(pilot, lambda: ended(app))
            assert len(tree_lines(app)) == 5 and screen._node_shown == 1  # the pick stayed
            assert screen.query_one(SearchTreePane).cursor_id == 1  # as the tree grew

    try:
        asyncio.run(go())
    finally:
        model.release.set()
    assert [p.node for p in of("node_expand_asked")] == [1]
    assert [(p.node, p.pinned) for p in of("node_pinned")] == [(1, True)]
    assert [(p.node, p.text) for p in of("node_hint")] == [(1, "use 2x")]
    assert [p.node for p in of("node_pruned")] == [1]  # once: the first k was answered no


def test_replay_keys_say_they_steer_live_only(tmp_path, home, store, tiny_task) -> None:
    session = search_session(tmp_path, home, store, tiny_task)
    session.run()
    count = len(store.events(session.id))

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await until(pilot, lambda: screen._node_shown == 5)
            for key in "xkh":
                await pilot.press(key)
            await until(pilot, lambda: messages(app).count("steer a live search only") == 3)
            assert not isinstance(app.screen, (Confirm, TextPrompt))
            await pilot.press("p")  # in a replay p plays it
            await until(pilot, lambda: screen._player is not None)

    asyncio.run(go())
    assert len(store.events(session.id)) == count  # nothing recorded


def test_other_agents_keep_the_steps_list(tmp_path, home, store, tiny_task) -> None:
    session = make_session(tmp_path, home, store, tiny_task)
    session.run()

    async def go() -> None:
        app = MlagentApp(home, store, replay_id=session.id)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            screen = app.screen
            assert not screen.query_one(SearchTreePane).display
            assert screen.query_one(Timeline).display and not screen.is_search
            assert not screen.check_action("expand_node", ())

    asyncio.run(go())
