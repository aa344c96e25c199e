"""Memory across branches: a short, bounded record of what worked and what failed anywhere in
the tree, put into every operator's prompt so one branch learns from another's mistakes.

It is a function of the tree alone (no events of its own), so resume and replay rebuild it.
"""

from __future__ import annotations

from .node import Node, Tree

MAX_LINES = 8
MAX_LINE_CHARS = 160


def _last_error_line(node: Node) -> str:
    text = node.error or node.output or ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):  # a traceback's last line names the error
        if "Error" in line or "error" in line or "killed" in line:
            return line
    return lines[-1] if lines else "no output"


def describe(tree: Tree, node: Node) -> str:
    """One line about one finished node."""
    plan = " ".join(node.plan.split())[:60]
    what = f"#{node.id} {node.operator}" + (f" ({plan})" if plan else "")
    if node.status == "valid" and node.score is not None:
        parent = tree.nodes.get(node.parents[0]) if node.parents else None
        verdict = ""
        if parent is not None and parent.score is not None:
            same = parent.score == node.score
            better = tree.higher == (node.score > parent.score)
            verdict = " same as" if same else (" better than" if better else " worse than")
            verdict += f" its parent's {parent.score:.4g}"
        line = f"{what}: worked, score {node.score:.4g}{verdict}"
    elif node.status == "timed_out":
        line = f"{what}: too slow (killed at the time limit)"
    else:
        line = f"{what}: failed: {_last_error_line(node)}"
    return line[:MAX_LINE_CHARS]


def memory_text(tree: Tree, limit: int = MAX_LINES) -> str:
    """The prompt block: the best node, then the most recent other results (at most `limit`)."""
    with tree.lock:
        done = [n for n in tree.nodes.values() if n.done]
        if not done:
            return ""
        best = tree.best()
        recent = [n for n in sorted(done, key=lambda n: n.id) if n is not best][-(limit - 1) :]
        lines = [describe(tree, n) for n in ([best] if best else []) + recent]
    return "What was tried so far in this search (best first, then the latest):\n" + "\n".join(
        f"- {ln}" for ln in lines
    )
