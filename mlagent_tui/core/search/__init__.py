"""The search agent: a tree of candidate solutions grown by a policy (greedy, mcts,
evolutionary) with operators (draft, debug, improve, edit, crossover), run by a pool of
workers, and a final pick on a hidden part of validation."""

from .driver import SearchDriver
from .node import SEARCH_KINDS, Node, Tree
from .policies import POLICIES, Settings, make_policy
from .workers import snapshot_name as node_snapshot

__all__ = [
    "POLICIES",
    "SEARCH_KINDS",
    "Node",
    "SearchDriver",
    "Settings",
    "Tree",
    "make_policy",
    "node_snapshot",
]
