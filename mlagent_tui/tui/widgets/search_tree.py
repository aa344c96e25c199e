"""The search tree pane: one line per node (operator, score or status, marks), the best path in
bold; moving the cursor selects a node. The same widget shows a live search and a replay."""

from __future__ import annotations

from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ..search_view import SearchView

STEER_KEYS = "x p k h steer · ? keys"  # expand, pin, prune, hint: `?` says more


class SearchTreePane(Tree[int]):
    """A Textual Tree whose node data is the search node's id; the screen owns the keys."""

    DEFAULT_CSS = """
    SearchTreePane { height: 1fr; width: 100%; padding: 0; border: round $primary-darken-2;
        scrollbar-size-vertical: 1; }
    """

    class NodeChosen(Message):
        """The person moved the cursor to a node."""

        def __init__(self, node: int) -> None:
            super().__init__()
            self.node = node

    def __init__(self, **kwargs) -> None:  # noqa: ANN003
        super().__init__("search", **kwargs)
        self.show_root = False
        self.auto_expand = False  # enter must not fold a branch away
        self.guide_depth = 2
        self._items: dict[int, TreeNode[int]] = {}
        self._parent_of: dict[int, int | None] = {}

    def on_mount(self) -> None:
        self.border_title = "Search tree"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # space belongs to the screen (pause), not to folding a branch
        return False if action == "toggle_node" else super().check_action(action, parameters)

    def show(self, view: SearchView, selected: int | None) -> None:
        """Add new nodes, relabel changed ones, rebuild when nodes went away (replay going
        back); put the cursor on `selected` without announcing it as the person's choice."""
        nodes = view.nodes
        parent_of = {n.id: (n.parents[0] if n.parents else None) for n in nodes.values()}
        if any(nid not in parent_of or parent_of[nid] != p for nid, p in self._parent_of.items()):
            self.clear()
            self._items, self._parent_of = {}, {}
        labels = view.labels()
        for nid in sorted(nodes):
            label = labels[nid]
            item = self._items.get(nid)
            if item is None:
                parent = self._items.get(parent_of[nid] or -1, self.root)
                # no fold icons: guides show the shape and every branch stays open
                item = parent.add(label, data=nid, expand=True, allow_expand=False)
                self._items[nid] = item
                self._parent_of[nid] = parent_of[nid]
            elif item.label != label:
                item.set_label(label)
        count = len(nodes)
        self.border_title = f"Search tree · {count} node{'s' * (count != 1)}"
        if selected is not None and selected in self._items:
            # after the refresh, when the new nodes have their lines
            self.call_after_refresh(self._move_to, selected)

    def _move_to(self, nid: int) -> None:
        item = self._items.get(nid)
        if item is not None and self.cursor_node is not item:
            self.move_cursor(item)

    @property
    def cursor_id(self) -> int | None:
        """The id of the node under the cursor (None before the first node)."""
        node = self.cursor_node
        return node.data if node is not None else None

    # The person's moves say which node they chose. Highlight events do not: the tree also
    # moves its cursor when nodes are added above it or when the screen follows the search.
    def _chosen(self) -> None:
        if self.cursor_id is not None:
            self.post_message(self.NodeChosen(self.cursor_id))

    def action_cursor_up(self) -> None:
        super().action_cursor_up()
        self._chosen()

    def action_cursor_down(self) -> None:
        super().action_cursor_down()
        self._chosen()

    def action_page_up(self) -> None:
        super().action_page_up()
        self._chosen()

    def action_page_down(self) -> None:
        super().action_page_down()
        self._chosen()

    def action_cursor_parent(self) -> None:
        super().action_cursor_parent()
        self._chosen()

    def action_cursor_parent_next_sibling(self) -> None:
        super().action_cursor_parent_next_sibling()
        self._chosen()

    def action_cursor_previous_sibling(self) -> None:
        super().action_cursor_previous_sibling()
        self._chosen()

    def action_cursor_next_sibling(self) -> None:
        super().action_cursor_next_sibling()
        self._chosen()

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[int]) -> None:
        event.stop()

    def on_tree_node_selected(self, event: Tree.NodeSelected[int]) -> None:
        event.stop()  # enter, or a click
        if event.node.data is not None:
            self.post_message(self.NodeChosen(event.node.data))
