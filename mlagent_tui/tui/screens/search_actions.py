"""A search session on the session screen: the tree pane in the Steps list's place, the selected
node in the plan/step/log/files panes, and the steering keys on that node.

A mixin of SessionScreen (placed before SessionModes, whose key checks it extends). The keys call
the running search's methods (`session.search`), which record each mark as an event, so the
tree pane updates from the bus like every pane and a replay shows the marks; in a replay the keys
only say why they do nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Group
from textual.binding import Binding

from ..search_view import SearchView, diff_renderable, search_view_upto
from ..widgets import DiffPane, ExecLog, FactCheckPane, PlanPane, StatusBar, Timeline
from ..widgets.search_tree import STEER_KEYS, SearchTreePane
from .modals import Confirm, TextPrompt
from .session_modes import action_name

if TYPE_CHECKING:
    from ...core.events import Event
    from ...core.search import Node
    from ...core.session import Session

SEARCH_ACTIONS = {"expand_node", "pin_node", "prune_node", "node_hint"}
SEARCH_BINDINGS = [
    Binding("x", "expand_node", "Expand this node next", id="session.expand_node", show=False),
    Binding("p", "pin_node", "Pin/unpin this node", id="session.pin_node", show=False),
    Binding("k", "prune_node", "Prune this branch", id="session.prune_node", show=False),
    Binding("h", "node_hint", "Hint for this node", id="session.node_hint", show=False),
]
REPLAY_NOTICE = "replay: x p k h steer a live search only (here p plays the replay)"


class SearchSteering:
    """The tree pane and the node keys; inert (every check falls through) for other agents."""

    session: Session | None
    replay: bool
    events: list[Event]
    selected: int | None
    known: dict[str, Any]
    search_view: SearchView | None = None
    search_node: int | None = None  # the node the person picked; None follows the newest
    _search_cache: tuple[int, SearchView] | None = None
    _node_shown: int | None = None
    _node_log_key: tuple[Any, ...] | None = None
    _node_panes_key: tuple[Any, ...] | None = None

    @property
    def is_search(self) -> bool:
        return self.search_view is not None

    # -- feeding -----------------------------------------------------------------------------
    def search_setup(self) -> None:
        """On mount: a search session's tree pane takes the Steps list's place (live and
        replay alike); any other session keeps its Steps list."""
        pane = self.query_one(SearchTreePane)  # type: ignore[attr-defined]
        if self.session is not None:
            agent = self.session.config.agent
        else:
            started = self.events[0].payload if self.events else None
            agent = getattr(started, "agent", "")
        if agent != "search":
            pane.display = False
            return
        self.search_view = SearchView(self.known.get("higher_is_better", True))
        if self.session is not None:  # a resumed search: the nodes it already has
            self.search_view.apply_all(self.session.store.events(self.session.id))
        self.query_one(Timeline).display = False  # type: ignore[attr-defined]
        pane.border_subtitle = "replay" if self.replay else STEER_KEYS
        pane.focus()

    def search_take(self, event: Event) -> None:
        """Live: one event from the bus."""
        if self.search_view is not None:
            self.search_view.apply(event)
            if event.step > 0:  # a search's steps are its model calls: the status counts them
                self.view.step_view(event.step)  # type: ignore[attr-defined]

    def search_shown(self) -> SearchView:
        """The tree shown now: live, the whole tree; in replay, the tree at the chosen step."""
        assert self.search_view is not None
        if not self.replay:
            return self.search_view
        step = self.selected or 0
        if self._search_cache is None or self._search_cache[0] != step:
            higher = self.known.get("higher_is_better", True)
            self._search_cache = (step, search_view_upto(self.events, step, higher))
        return self._search_cache[1]

    # -- showing -----------------------------------------------------------------------------
    def show_node(self) -> bool:
        """A search session: update the tree and show its selected node in the panes (True);
        any other session: False (the panes show the selected step)."""
        if not self.is_search:
            return False
        view = self.search_shown()
        nid = self.search_node if self.search_node in view.nodes else view.latest
        self._node_shown = nid
        self.query_one(SearchTreePane).show(view, nid)  # type: ignore[attr-defined]
        node = view.nodes.get(nid) if nid is not None else None
        self._show_node_panes(view, node)
        best = view.best()
        if best is not None and self.view.best != best.score:  # type: ignore[attr-defined]
            self.view.best = best.score  # type: ignore[attr-defined]  # the status bar's best
            self.query_one(StatusBar).show(self.view, self.note, self.lead)  # type: ignore[attr-defined]
        return True

    def _show_node_panes(self, view: SearchView, node: Node | None) -> None:
        query = self.query_one  # type: ignore[attr-defined]
        plan, detail = query(PlanPane), query(FactCheckPane)
        log, diff = query(ExecLog), query(DiffPane)
        if node is None:
            plan.show("", "solve")
            detail.border_title = "Node"
            detail.query_one("#factcheck").update("no node yet: the first draft is being written")
            diff.query_one("#diffs").update("")
            diff.border_title = "Diff"
            log.clear()
            self._node_log_key = self._node_panes_key = None
            return
        best = view.best()
        shown = (node.id, node.status, node.pinned, node.pruned, len(node.hints))
        shown += (view.chosen(), best.id if best else None, node.id in view.reasons)
        if shown != self._node_panes_key:  # unchanged panes keep their scroll
            self._node_panes_key = shown
            plan.show(node.plan, "solve")
            plan.border_title = f"Plan · #{node.id}"
            title, parts = view.detail(node)
            detail.border_title = title
            detail.query_one("#factcheck").update(Group(*parts))
            diff.border_title, text = view.diff(node)
            diff.query_one("#diffs").update(diff_renderable(text, node))
        lines = view.log_lines(node)
        key = (node.id, node.status, len(lines))
        if key != self._node_log_key:  # rewritten only when it changed: a scroll stays put
            self._node_log_key = key
            log.clear()
            log.step, log.count = None, 0
            log.border_title = f"Execution log · #{node.id}"
            log.write("\n".join(lines))

    def on_search_tree_pane_node_chosen(self, message: SearchTreePane.NodeChosen) -> None:
        if not self.is_search:
            return
        latest = self.search_shown().latest
        # live, the newest node means "follow the search"; in replay the pick stays
        self.search_node = None if not self.replay and message.node == latest else message.node
        self.refresh_panes()  # type: ignore[attr-defined]

    # -- keys --------------------------------------------------------------------------------
    def binding_applies(self, action: str) -> bool:
        name = action_name(action)
        if name in SEARCH_ACTIONS:
            return self.is_search and not self.replay
        return super().binding_applies(action)  # type: ignore[misc]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        name = action_name(action)
        if name in SEARCH_ACTIONS:
            if not self.is_search:
                return False
            if self.replay:
                return True  # the action says why it does nothing here
            if name == "node_hint":  # else h falls through to the session's hint
                return self.running and self._node_shown is not None  # type: ignore[attr-defined]
            return True
        if name == "hint" and self.is_search and not self.replay and self._node_shown is not None:
            return False  # h gives the selected node a hint (its children's prompts)
        return super().check_action(action, parameters)  # type: ignore[misc]

    def _target(self) -> tuple[Any, int] | None:
        """The running search and the selected node, or None with a notice saying why not."""
        notify = self.notify  # type: ignore[attr-defined]
        if self.replay:
            notify(REPLAY_NOTICE, severity="warning")
            return None
        driver = getattr(self.session, "search", None)
        if driver is None or not self.running or driver.ended:  # type: ignore[attr-defined]
            notify("the search has ended: there is nothing to steer", severity="warning")
            return None
        if self._node_shown is None:
            notify("no node yet: wait for the first draft", severity="warning")
            return None
        return driver, self._node_shown

    def _steer(self, call: Callable[[], object], done: str) -> None:
        """Call the search off the UI thread (it writes an event); say what happened."""

        def run() -> None:
            try:
                call()
            except ValueError as exc:  # unknown node, empty hint, the search ended
                self.tell(str(exc), "error")  # type: ignore[attr-defined]
            except Exception as exc:  # noqa: BLE001 - a failure is shown, never a crash
                self.tell(f"failed: {exc}", "error")  # type: ignore[attr-defined]
            else:
                self.tell(done)  # type: ignore[attr-defined]

        threading.Thread(target=run, name="search steering", daemon=True).start()

    def action_expand_node(self) -> None:
        if (target := self._target()) is None:
            return
        driver, nid = target
        if self.search_shown().nodes[nid].pruned:
            self.notify(f"#{nid} is in a pruned branch: no policy expands it", severity="warning")  # type: ignore[attr-defined]
            return
        self._steer(lambda: driver.expand_next(nid), f"#{nid} is expanded at the next choice")

    def action_pin_node(self) -> None:
        if (target := self._target()) is None:
            return
        driver, nid = target
        pinned = not self.search_shown().nodes[nid].pinned
        word = "pinned: never dropped from the population" if pinned else "unpinned"
        self._steer(lambda: driver.pin(nid, pinned), f"#{nid} {word}")

    def action_prune_node(self) -> None:
        if (target := self._target()) is None:
            return
        driver, nid = target
        view = self.search_shown()
        if view.nodes[nid].pruned:
            self.notify(f"#{nid} is already in a pruned branch", severity="warning")  # type: ignore[attr-defined]
            return
        done = f"branch #{nid} pruned: no policy expands it; its nodes stay candidates"
        best = view.branch_best(nid)
        if best is None:
            self._steer(lambda: driver.prune(nid), done)
            return

        def answer(yes: bool | None) -> None:
            if yes:
                self._steer(lambda: driver.prune(nid), done)

        question = (
            f"Branch #{nid} holds the best node #{best.id} (score {best.score:.4g}). Prune it? "
            f"No policy expands the branch any more; #{best.id} stays a candidate for the final "
            "answer."
        )
        self.app.push_screen(Confirm(question), answer)  # type: ignore[attr-defined]

    def action_node_hint(self) -> None:
        if (target := self._target()) is None:
            return
        driver, nid = target

        def done(text: str | None) -> None:
            if text and text.strip():
                self._steer(lambda: driver.hint(nid, text), f"hint attached to #{nid}")

        prompt = TextPrompt(
            f"A hint for node #{nid} (the prompts of its children carry it):",
            "e.g. add a feature for the weekday",
        )
        self.app.push_screen(prompt, done)  # type: ignore[attr-defined]
