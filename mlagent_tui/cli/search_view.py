"""The search agent on the command line: its options and its tree in `sessions show`."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

PolicyOpt = Annotated[
    str, typer.Option("--policy", help="search agent: greedy | mcts | evolutionary")
]
WorkersOpt = Annotated[
    int, typer.Option("--workers", help="search agent: candidates in flight at once")
]
MaxNodesOpt = Annotated[
    int | None, typer.Option("--max-nodes", help="search agent: stop after this many nodes")
]
StarterOpt = Annotated[
    bool,
    typer.Option(
        "--starter/--no-starter",
        help="search and solve agents: begin with the task's starter script, run as given "
        "(search: the first node; solve: the first step, no model call)",
    ),
]
NodeOpt = Annotated[
    int | None, typer.Option("--node", help="Start from this node of a search session.")
]


def node_line(p: Any) -> str:
    """One progress line for a search event (a choice, a finished node, the selection)."""
    from ..core.safe_text import visible

    fmt = lambda v: "-" if v is None else f"{v:.4g}"  # noqa: E731
    if p.kind == "policy_choice":
        return visible(f"node #{p.node}: {p.operator} {p.parents or ''} ({p.reason})")
    if p.kind == "node_finished":
        why = f" ({p.error})" if p.error else ""
        return visible(f"node #{p.node}: {p.status} score {fmt(p.score)} in {p.seconds:.1f} s{why}")
    return visible(
        f"selected #{p.node} by {p.by}: search {fmt(p.search_score)}, hidden "
        f"{fmt(p.hidden_score)}, test {fmt(p.test_score)}"
    )


def tree_report(store: Any, session_id: str) -> dict[str, Any] | None:
    """The tree and the selection of a search session (None for other sessions)."""
    from ..core.search import Tree

    tree = Tree().apply_all(e.payload for e in store.events(session_id))
    if not tree.nodes:
        return None
    sel = tree.selection
    return {
        "nodes": store.rows("nodes", session_id),
        "lines": tree.render(),
        "selection": sel.model_dump() if sel is not None else None,
    }


def print_tree(console: Console, report: dict[str, Any]) -> None:
    from ..core.safe_text import visible

    console.print("search tree (#node operator status score; * pinned, x pruned):")
    for line in report["lines"]:
        console.print(visible(line), highlight=False, markup=False)
    sel = report["selection"]
    if sel is None:
        return
    fmt = lambda v: "-" if v is None else f"{v:.4g}"  # noqa: E731
    console.print(
        visible(
            f"selected #{sel['node']} by {sel['by']}: search {fmt(sel['search_score'])}, hidden "
            f"{fmt(sel['hidden_score'])}, test {fmt(sel['test_score'])}; validation alone: "
            f"#{sel['validation_node']}, test {fmt(sel['validation_test_score'])}"
        ),
        highlight=False,
        markup=False,
    )
    if sel.get("note"):
        console.print(visible(sel["note"]), highlight=False, markup=False)
