"""The search tree: nodes and the person's marks on them, built only from events.

`Tree.apply` takes each search event in order, live or read back from the store, so a
running search, a resumed one, a replay and the TUI's pane all see the same tree.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel

from ..search_events import NodeStatus, Operator

SEARCH_KINDS = (
    "node_created",
    "node_started",
    "node_finished",
    "policy_choice",
    "node_expand_asked",
    "node_pinned",
    "node_pruned",
    "node_hint",
    "selection_made",
)


@dataclass
class Node:
    id: int
    operator: Operator
    parents: list[int]
    form: str = "whole"
    plan: str = ""
    script: str = ""
    status: NodeStatus = "running"
    score: float | None = None
    output: str = ""
    error: str | None = None
    seconds: float = 0.0
    tokens: int = 0
    snapshot: str = ""
    exec_start: float = 0.0
    exec_end: float = 0.0
    overhead_ms: float = 0.0
    pinned: bool = False
    pruned: bool = False  # this node or an ancestor was pruned: no policy expands it
    hints: list[str] = field(default_factory=list)
    children: list[int] = field(default_factory=list)
    visits: int = 0
    value_sum: float = 0.0

    @property
    def shown_op(self) -> str:
        """The operator as shown: the task's own starter is a draft the model did not write."""
        return "starter" if self.form == "starter" else self.operator

    @property
    def done(self) -> bool:
        return self.status != "running"


class Tree:
    """Every node of one search, guarded by one lock (the TUI reads it from its thread)."""

    def __init__(self, higher_is_better: bool = True) -> None:
        self.higher = higher_is_better
        self.nodes: dict[int, Node] = {}
        self.expand_asked: list[int] = []  # x presses not yet consumed, oldest first
        self.selection: BaseModel | None = None
        self.lock = threading.RLock()
        self.debug_depth: dict[int, int] = {}

    # -- building ---------------------------------------------------------------------------
    def apply(self, payload: BaseModel) -> None:
        """Fold one search event into the tree; other kinds are ignored."""
        kind = getattr(payload, "kind", "")
        with self.lock:
            handler = getattr(self, f"_on_{kind}", None)
            if handler is not None:
                handler(payload)

    def apply_all(self, payloads: Iterable[BaseModel]) -> Tree:
        for payload in payloads:
            self.apply(payload)
        return self

    def _on_node_created(self, p: BaseModel) -> None:
        node = Node(
            id=p.node,
            operator=p.operator,
            parents=list(p.parents),
            form=p.form,
            plan=p.plan,
            script=p.script,
            tokens=p.tokens,
        )
        self.nodes[p.node] = node
        for parent in p.parents:
            if parent in self.nodes:
                self.nodes[parent].children.append(p.node)
        first = self.nodes.get(p.parents[0]) if p.parents else None
        self.debug_depth[p.node] = (
            self.debug_depth.get(first.id, 0) + 1 if p.operator == "debug" and first else 0
        )
        if first is not None and first.pruned:
            node.pruned = True

    def _on_node_finished(self, p: BaseModel) -> None:
        node = self.nodes.get(p.node)
        if node is None:
            return
        node.status, node.score, node.output, node.error = p.status, p.score, p.output, p.error
        node.seconds, node.snapshot = p.seconds, p.snapshot
        node.exec_start, node.exec_end, node.overhead_ms = p.exec_start, p.exec_end, p.overhead_ms
        value = self.normalised(node.score) if node.status == "valid" else 0.0
        for nid in self.lineage(node.id):  # MCTS back-propagation along the first parents
            self.nodes[nid].visits += 1
            self.nodes[nid].value_sum += value

    def _on_node_expand_asked(self, p: BaseModel) -> None:
        self.expand_asked.append(p.node)

    def _on_node_pinned(self, p: BaseModel) -> None:
        if p.node in self.nodes:
            self.nodes[p.node].pinned = p.pinned

    def _on_node_pruned(self, p: BaseModel) -> None:
        for nid in self.subtree(p.node):
            self.nodes[nid].pruned = True

    def _on_node_hint(self, p: BaseModel) -> None:
        if p.node in self.nodes:
            self.nodes[p.node].hints.append(p.text)

    def _on_selection_made(self, p: BaseModel) -> None:
        self.selection = p

    # -- reading ----------------------------------------------------------------------------
    def lineage(self, node_id: int) -> list[int]:
        """The node and its first-parent ancestors, nearest first."""
        out, seen = [], set()
        current: int | None = node_id
        while current is not None and current in self.nodes and current not in seen:
            out.append(current)
            seen.add(current)
            parents = self.nodes[current].parents
            current = parents[0] if parents else None
        return out

    def subtree(self, node_id: int) -> list[int]:
        out, todo = [], [node_id]
        while todo:
            nid = todo.pop()
            if nid in self.nodes and nid not in out:
                out.append(nid)
                todo.extend(self.nodes[nid].children)
        return out

    def valid(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.status == "valid" and n.score is not None]

    def best(self, candidates: Iterable[Node] | None = None) -> Node | None:
        pool = [n for n in (candidates if candidates is not None else self.valid())]
        pool = [n for n in pool if n.status == "valid" and n.score is not None]
        if not pool:
            return None
        sign = 1 if self.higher else -1
        return max(pool, key=lambda n: (sign * n.score, -n.id))  # type: ignore[operator]

    def ranked(self) -> list[Node]:
        sign = 1 if self.higher else -1
        return sorted(self.valid(), key=lambda n: (-sign * n.score, n.id))  # type: ignore[operator]

    def normalised(self, score: float | None) -> float:
        """A score mapped to [0, 1] among the valid scores so far (best 1), for MCTS values."""
        scores = [n.score for n in self.valid() if n.score is not None]
        if score is None or not scores:
            return 0.0
        low, high = min(scores), max(scores)
        if high == low:
            return 1.0
        frac = (score - low) / (high - low)
        return frac if self.higher else 1.0 - frac

    def next_id(self) -> int:
        with self.lock:
            return max(self.nodes, default=0) + 1

    def render(self) -> list[str]:
        """The tree as indented lines (for `sessions show` and replay)."""
        with self.lock:
            roots = [n for n in self.nodes.values() if not n.parents]
            lines: list[str] = []

            def walk(node: Node, depth: int) -> None:
                score = "-" if node.score is None else f"{node.score:.4g}"
                marks = "".join(m for m, on in (("*", node.pinned), ("x", node.pruned)) if on)
                extra = f" +{node.parents[1:]}" if len(node.parents) > 1 else ""
                chosen = getattr(self.selection, "node", None) == node.id
                lines.append(
                    f"{'  ' * depth}#{node.id} {node.shown_op}{extra} {node.status} "
                    f"score={score}{' ' + marks if marks else ''}{' <= chosen' if chosen else ''}"
                )
                for child in node.children:
                    if self.nodes[child].parents[0] == node.id:
                        walk(self.nodes[child], depth + 1)

            for root in sorted(roots, key=lambda n: n.id):
                walk(root, 0)
            return lines
