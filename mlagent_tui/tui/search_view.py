"""SearchView: a search session's tree as the tree pane shows it, fed by events (live or replay).

The core's Tree folds the node events; beside it this keeps what the panes add: each policy
choice's reason and the best path. It holds no Textual objects, so a replay rebuilds the tree
"as it was at step k" by feeding the stored events up to that step to a fresh SearchView.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

from ..core.events import Event
from ..core.safe_text import visible_deep
from ..core.workspace.diff import text_diff

if TYPE_CHECKING:
    from ..core.search import Node, Tree

SHORT_OP = {"crossover": "cross"}  # the narrow left column has room for about 26 cells
STATUS_STYLE = {"valid": "green", "buggy": "red", "timed_out": "red", "running": "yellow"}
MARKS = (("★", "best node"), ("✓", "chosen answer"), ("⚑", "pinned"), ("✂", "pruned"))


@dataclass
class SearchView:
    """The tree of one search plus the policy's reasons, built only from events."""

    higher_is_better: bool = True
    tree: Tree = field(init=False)
    reasons: dict[int, str] = field(default_factory=dict)  # node -> "greedy: why"
    last_step: int = -1

    def __post_init__(self) -> None:
        from ..core.search import SEARCH_KINDS, Tree  # only a search session needs it

        self.tree = Tree(self.higher_is_better)
        self._kinds = frozenset(SEARCH_KINDS)

    def apply(self, event: Event) -> None:
        """Fold one event in (other kinds are ignored); the agent's text is made visible first."""
        if event.kind not in self._kinds:
            return
        payload = visible_deep(event.payload)
        if payload.kind == "policy_choice":
            self.reasons[payload.node] = f"{payload.policy}: {payload.reason}".rstrip(": ")
        self.tree.apply(payload)
        self.last_step = max(self.last_step, event.step)

    def apply_all(self, events: list[Event]) -> SearchView:
        for event in events:
            self.apply(event)
        return self

    # -- reading ---------------------------------------------------------------------------
    @property
    def nodes(self) -> dict[int, Node]:
        return self.tree.nodes

    @property
    def latest(self) -> int | None:
        return max(self.tree.nodes, default=None)

    def best(self) -> Node | None:
        return self.tree.best()

    def best_path(self) -> set[int]:
        """The best node and its first-parent ancestors (marked in the tree)."""
        best = self.tree.best()
        return set(self.tree.lineage(best.id)) if best is not None else set()

    def chosen(self) -> int | None:
        """The node the final selection picked, once made."""
        return getattr(self.tree.selection, "node", None)

    def branch_best(self, node: int) -> Node | None:
        """The best node in `node`'s branch when it is the best of the whole tree, else None:
        pruning that branch asks first."""
        best = self.tree.best()
        return best if best is not None and best.id in self.tree.subtree(node) else None

    def labels(self) -> dict[int, Text]:
        """Every node's line (the best path worked out once for all of them)."""
        path, best, chosen = self.best_path(), self.best(), self.chosen()
        best_id = best.id if best is not None else None
        return {nid: self.label(n, path, best_id, chosen) for nid, n in self.nodes.items()}

    def label(self, node: Node, path: set[int], best: int | None, chosen: int | None) -> Text:
        """One line of the tree: #id, operator, score or status, and the marks."""
        text = Text(f"#{node.id} ", style="bold yellow" if node.id in path else "")  # best path
        text.append(SHORT_OP.get(node.shown_op, node.shown_op))
        if len(node.parents) > 1:
            text.append("+" + ",".join(f"#{p}" for p in node.parents[1:]), style="dim")
        shown = {"running": "…", "buggy": "bug", "timed_out": "t/o"}.get(node.status, "")
        if node.status == "valid" and node.score is not None:
            shown = f"{node.score:.4g}"
        text.append(f" {shown}", style=STATUS_STYLE.get(node.status, ""))
        marks = (
            ("★", best == node.id, "bold yellow"),
            ("✓", chosen == node.id, "bold green"),
            ("⚑", node.pinned, "cyan"),
            ("✂", node.pruned, "magenta"),
        )
        for mark, on, style in marks:
            if on:
                text.append(f" {mark}", style=style)
        if node.pruned:
            text.stylize("dim")
        return text

    def detail(self, node: Node) -> tuple[str, list[RenderableType]]:
        """The node pane's title and body: what it is, how it ran, why, marks, hints, script."""
        parent = f" of #{node.parents[0]}" if node.parents else ""
        title = f"Node #{node.id}: {node.shown_op}{parent}"
        head = Text()
        score = f" · score {node.score:.6g}" if node.score is not None else ""
        head.append("Status: ", style="bold")
        head.append(f"{node.status}{score}", style=STATUS_STYLE.get(node.status, ""))
        if node.done:
            head.append(f" · {node.seconds:.1f} s")
        head.append(f" · {node.tokens} tok · {node.form} form\n")
        if node.id in self.reasons:
            head.append("Policy: ", style="bold")
            head.append(f"{self.reasons[node.id]}\n")
        if len(node.parents) > 1:
            head.append("Parents: ", style="bold")
            head.append(", ".join(f"#{p}" for p in node.parents) + "\n")
        marks = [word for (_, word), on in zip(MARKS, self._marks_on(node), strict=True) if on]
        if marks:
            head.append("Marks: ", style="bold")
            head.append(", ".join(marks) + "\n")
        head.append("Plan: ", style="bold")
        head.append(f"{node.plan or '-'}\n")
        head.rstrip()
        parts: list[RenderableType] = [head]
        if node.hints:
            hints = Text()
            for hint in node.hints:
                hints.append(f"• hint: {hint}\n", style="yellow")
            hints.rstrip()
            parts.append(hints)
        if node.error:
            parts.append(Text(f"error: {node.error}", style="red"))
        if node.id == self.chosen():
            parts.append(Text(self.selection_text(), style="green"))
        if not node.script:
            return title, parts
        parts.append(Text("  script (solution.py):", style="dim"))
        parts.append(
            Syntax(node.script or "", "python", word_wrap=True, background_color="default")
        )
        return title, parts

    def _marks_on(self, node: Node) -> tuple[bool, bool, bool, bool]:
        best = self.best()
        return (
            best is not None and best.id == node.id,
            self.chosen() == node.id,
            node.pinned,
            node.pruned,
        )

    def selection_text(self) -> str:
        """How the final answer was picked, with the scores that show the selection gap."""
        sel: Any = self.tree.selection
        if sel is None:
            return ""

        def num(value: float | None) -> str:
            return "-" if value is None else f"{value:.4g}"

        text = (
            f"chosen as the answer by {sel.by}: search {num(sel.search_score)}, hidden "
            f"{num(sel.hidden_score)}, test {num(sel.test_score)}"
        )
        if sel.validation_node is not None and sel.validation_node != sel.node:
            text += (
                f"; validation alone would pick #{sel.validation_node} "
                f"(test {num(sel.validation_test_score)})"
            )
        return text + (f" ({sel.note})" if sel.note else "")

    def diff(self, node: Node) -> tuple[str, str]:
        """(title, unified diff of the node's script against its first parent's)."""
        parent = self.nodes.get(node.parents[0]) if node.parents else None
        if not node.script:
            return f"Diff · #{node.id}", ""
        before = parent.script if parent is not None else ""
        source = f"#{parent.id}/solution.py" if parent is not None else "(nothing: a draft)"
        text = text_diff(before, node.script, source, f"#{node.id}/solution.py")
        title = f"Diff · #{node.id} vs #{parent.id}" if parent else f"Diff · #{node.id} (draft)"
        return title, text

    def log_lines(self, node: Node) -> list[str]:
        """The node's execution log: its output, then how it ended."""
        if not node.done:
            return ["(running…)"]
        lines = node.output.splitlines() if node.output else []
        if node.error:
            lines.append(f"── error: {node.error}")
        lines.append(f"── {node.status} in {node.seconds:.1f}s")
        return lines


def diff_renderable(text: str, node: Node) -> RenderableType:
    """A unified diff, highlighted; no script or an identical one says so."""
    if not node.script:
        return Text("(no script: the model's reply could not be used)", style="dim")
    if not text:
        return Text("(the same script as its parent)", style="dim")
    # wrapped: the changed end of a long line must show in a narrow pane too
    return Group(Syntax(text, "diff", word_wrap=True, background_color="default"))


def search_view_upto(events: list[Event], step: int, higher_is_better: bool) -> SearchView:
    """The tree as it was once step `step` had completed (replay)."""
    return SearchView(higher_is_better).apply_all([e for e in events if e.step <= step])
