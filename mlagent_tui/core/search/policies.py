"""Search policies: which parent(s) and which operator the next node gets, and why.

greedy (AIDE): a few drafts, then improve the best valid node, debugging a buggy leaf with
some probability up to a maximum debug depth. mcts: UCT over the tree, a node's value its
normalised validation score. evolutionary: a population of the best valid nodes (pinned ones
always kept), tournament selection, improve or edit as mutation, crossover of two parents.
Pruned branches are never expanded. Each policy is deterministic given its random generator.
"""

from __future__ import annotations

import math
import random
from typing import Protocol

from pydantic import BaseModel

from ..agent.tweak import Tweak
from ..search_events import Operator
from .node import Node, Tree

POLICIES = ("greedy", "mcts", "evolutionary")


class Choice(BaseModel):
    operator: Operator
    parents: list[int] = []
    reason: str
    focus: Tweak | None = None  # an edit: the setting of its parent it changes
    memory: str = ""  # what was learnt across the tree when it was chosen (its prompt shows it)


class Settings(BaseModel):
    num_drafts: int = 3  # the task's starter, where the search begins with it, is one
    debug_prob: float = 0.5
    max_debug_depth: int = 3
    debug_trials: int = 3  # debugs tried before their success rate decides (debugs_pay)
    edit_prob: float = 0.3  # of improvements, the share asked as ONE small edit
    uct_c: float = 1.0
    max_children: int = 3  # mcts: a node with this many children is only descended through
    population: int = 6
    tournament: int = 2
    crossover_prob: float = 0.3


class Policy(Protocol):
    name: str

    def choose(self, tree: Tree, rng: random.Random) -> Choice: ...


def _expandable(tree: Tree) -> list[Node]:
    return [n for n in tree.nodes.values() if not n.pruned]


def _drafts(tree: Tree) -> int:
    return sum(1 for n in tree.nodes.values() if n.operator == "draft")


def debugs_pay(tree: Tree, settings: Settings) -> bool:
    """Whether debugging still looks worth a model call in this tree: until `debug_trials`
    debugs have finished, or once one of them ran. (The shipped model's debugs fixed 0 of 11
    on breast-cancer and took half the calls; a model that can debug keeps debugging.)"""
    done = [n for n in tree.nodes.values() if n.operator == "debug" and n.done]
    return len(done) < settings.debug_trials or any(n.status == "valid" for n in done)


def _debuggable(tree: Tree, settings: Settings) -> list[Node]:
    """Finished buggy leaves with a script, not too deep in debugging already."""
    if not debugs_pay(tree, settings):
        return []
    return [
        n
        for n in _expandable(tree)
        if n.status in ("buggy", "timed_out")
        and n.script
        and not n.children
        and tree.debug_depth.get(n.id, 0) < settings.max_debug_depth
    ]


def _improve(node: Node, rng: random.Random, settings: Settings, why: str) -> Choice:
    op: Operator = "edit" if rng.random() < settings.edit_prob else "improve"
    return Choice(operator=op, parents=[node.id], reason=f"{op} {why}")


def expand_choice(tree: Tree, node: Node, rng: random.Random, settings: Settings) -> Choice:
    """The operator for a node a person asked to expand next."""
    if node.status == "valid":
        return _improve(node, rng, settings, f"#{node.id}: asked by the person")
    if node.status == "running":
        return Choice(operator="draft", reason=f"#{node.id} is still running: a new draft")
    if not node.script and node.parents:
        return Choice(operator="debug", parents=[node.parents[0]], reason="asked by the person")
    return Choice(operator="debug", parents=[node.id], reason=f"debug #{node.id}: asked")


class Greedy:
    name = "greedy"

    def __init__(self, settings: Settings) -> None:
        self.s = settings

    def choose(self, tree: Tree, rng: random.Random) -> Choice:
        drafts = _drafts(tree)
        if drafts < self.s.num_drafts:
            return Choice(operator="draft", reason=f"draft {drafts + 1} of {self.s.num_drafts}")
        buggy = _debuggable(tree, self.s)
        if buggy and rng.random() < self.s.debug_prob:
            node = rng.choice(buggy)
            return Choice(
                operator="debug", parents=[node.id], reason=f"debug buggy leaf #{node.id}"
            )
        best = tree.best([n for n in _expandable(tree)])
        if best is not None:
            return _improve(best, rng, self.s, f"the best valid node #{best.id} ({best.score:.4g})")
        if buggy:
            node = rng.choice(buggy)
            return Choice(operator="debug", parents=[node.id], reason=f"no valid node: #{node.id}")
        return Choice(operator="draft", reason="nothing valid or debuggable: a new draft")


class MCTS:
    name = "mcts"

    def __init__(self, settings: Settings) -> None:
        self.s = settings

    def _uct(self, tree: Tree, node: Node, parent_visits: int) -> float:
        if node.visits == 0:
            return math.inf
        explore = self.s.uct_c * math.sqrt(math.log(max(parent_visits, 1)) / node.visits)
        return node.value_sum / node.visits + explore

    def choose(self, tree: Tree, rng: random.Random) -> Choice:
        roots = [n for n in _expandable(tree) if not n.parents]
        if len([n for n in tree.nodes.values() if not n.parents]) < self.s.num_drafts:
            return Choice(operator="draft", reason="the root has room for another draft")
        visits = sum(n.visits for n in roots)
        path = ["root"]
        candidates = [n for n in roots if n.done]
        while candidates:
            node = max(candidates, key=lambda n: (self._uct(tree, n, visits), -n.id))
            path.append(f"#{node.id}")
            kids = [tree.nodes[c] for c in node.children if not tree.nodes[c].pruned]
            done_kids = [k for k in kids if k.done and k.parents[0] == node.id]
            if len(node.children) < self.s.max_children or not done_kids:
                return self._expand(tree, node, rng, " > ".join(path))
            visits, candidates = node.visits, done_kids
        return Choice(operator="draft", reason="no finished node to descend to: a new draft")

    def _expand(self, tree: Tree, node: Node, rng: random.Random, path: str) -> Choice:
        why = f"UCT path {path}"
        if node.status == "valid":
            return _improve(node, rng, self.s, f"#{node.id} ({why})")
        if node.script and tree.debug_depth.get(node.id, 0) < self.s.max_debug_depth:
            return Choice(operator="debug", parents=[node.id], reason=f"debug #{node.id} ({why})")
        return Choice(operator="draft", reason=f"#{node.id} cannot be expanded ({why}): a draft")


class Evolutionary:
    name = "evolutionary"

    def __init__(self, settings: Settings) -> None:
        self.s = settings

    def population(self, tree: Tree) -> list[Node]:
        """The best valid nodes of no pruned branch, pinned ones always in."""
        ranked = [n for n in tree.ranked() if not n.pruned]
        pinned = [n for n in ranked if n.pinned]
        rest = [n for n in ranked if not n.pinned][: max(self.s.population - len(pinned), 0)]
        return pinned + rest

    def _tournament(self, pop: list[Node], rng: random.Random, tree: Tree) -> Node:
        entrants = rng.sample(pop, min(self.s.tournament, len(pop)))
        best = tree.best(entrants)
        assert best is not None
        return best

    def choose(self, tree: Tree, rng: random.Random) -> Choice:
        pop = self.population(tree)
        if _drafts(tree) < self.s.num_drafts or not pop:
            buggy = _debuggable(tree, self.s)
            if _drafts(tree) >= self.s.num_drafts and buggy and rng.random() < self.s.debug_prob:
                node = rng.choice(buggy)
                return Choice(operator="debug", parents=[node.id], reason="no population yet")
            return Choice(operator="draft", reason=f"seeding the population ({len(pop)} valid)")
        if len(pop) >= 2 and rng.random() < self.s.crossover_prob:
            a = self._tournament(pop, rng, tree)
            others = [n for n in pop if n.id != a.id]
            b = self._tournament(others, rng, tree)
            return Choice(
                operator="crossover",
                parents=[a.id, b.id],
                reason=f"crossover of tournament winners #{a.id} and #{b.id}",
            )
        parent = self._tournament(pop, rng, tree)
        return _improve(parent, rng, self.s, f"mutation of tournament winner #{parent.id}")


def make_policy(name: str, settings: Settings | None = None) -> Policy:
    settings = settings or Settings()
    if name == "greedy":
        return Greedy(settings)
    if name == "mcts":
        return MCTS(settings)
    if name == "evolutionary":
        return Evolutionary(settings)
    raise ValueError(f"unknown policy {name!r} ({' | '.join(POLICIES)})")
