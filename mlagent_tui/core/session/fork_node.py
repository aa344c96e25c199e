"""`fork ID --node N`: a new session from one node of a search session.

The new session's workspace holds node N's files (its snapshot); a search session then starts
its tree with node N's script as its first node (run again, with no model call), so it goes on
searching from there; a solve or research session finds the script in its workspace.
"""

from __future__ import annotations

from typing import Any

from ..home import Home
from ..llm import ChatModel
from ..search import Tree, node_snapshot
from ..search_events import NodeCreated
from ..store import Store
from ..workspace import Workspace
from .config import snapshot_name
from .end import ends_if_raises
from .run import Session
from .state import SessionError


def fork_node(
    home: Home,
    store: Store,
    session_id: str,
    node: int,
    model: ChatModel | None = None,
    model_spec: str | None = None,
    **overrides: Any,
) -> Session:
    """A new session starting from node `node`'s files and script."""
    if store.session(session_id) is None:
        raise SessionError(f"no session {session_id!r} (see `mlagent sessions list`)")
    tree = Tree().apply_all(e.payload for e in store.events(session_id))
    if not tree.nodes:
        raise SessionError(f"session {session_id} has no search nodes; fork it with --step")
    found = tree.nodes.get(node)
    if found is None or not found.snapshot:
        known = ", ".join(f"#{n.id}" for n in tree.nodes.values() if n.snapshot) or "none"
        raise SessionError(f"session {session_id} has no finished node #{node} (nodes: {known})")
    session = Session.fork(home, store, session_id, 0, model, model_spec, **overrides)
    parent = Workspace(home.workspace(session_id), home.snapshots(session_id))
    with ends_if_raises(session, f"copying node #{node}'s files"):
        session.workspace.restore(node_snapshot(node), source=parent)
        session.workspace.snapshot(snapshot_name(0))
    if session.search is not None:
        session.recorder.emit(
            NodeCreated(
                node=1,
                operator=found.operator,
                form=found.form,  # type: ignore[arg-type]
                plan=f"node #{node} of session {session_id}: {found.plan}",
                script=found.script,
            )
        )
    return session
