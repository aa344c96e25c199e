"""Training data from stored search sessions: the steps on the way to each improvement.

A search session's events hold its tree: every node's operator, parents, plan, script, log and
score, the model's raw answer (the `llm_call` between a node's `policy_choice` and its
`node_created`), and at the end the hidden scores of the top candidates. A node *beat its
parent* when it is valid and its parent was not (a debug that worked), or when its score is
better in the metric's direction: on the hidden part of validation where both have a hidden
score (the selection re-scored them on rows the search never saw), else on the search score.
Each step of the path from the root to such a node (improve, edit and debug; the Drafts are
the anchor's) becomes one item: the prompt the search's own operator builds
(`core.search.operators.messages_for`, with the memory and hints as they stood when the step
was chosen) and the answer the model gave. An edit whose value the model picked under a grammar
(a tweak: a number, columns, a model swap) is taught only where it beat its parent itself (a
value on the way that did not help is not one to copy), as two items: the search's prompt
answered `Plan/Value`, and the prompt the solve agent sends when it improves by one edit
(`SolveAgent._edit`: the same without the memory block, with a menu of the parent's settings)
answered with the setting's number, then `Plan/Value` (core/agent/menu.py).
So distillation teaches the choices both agents ask the model for. The setting an edit
changed is not stored; it is found again as the one setting of the parent whose value, the
answer's, gives the child's script.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from mlagent_tui.core.agent.menu import choice_answer, menu_of, with_menu
from mlagent_tui.core.agent.parsing import ResponseParseError
from mlagent_tui.core.agent.tweak import Tweak, apply_value, tweaks_of, value_match
from mlagent_tui.core.search.memory import memory_text
from mlagent_tui.core.search.node import Node, Tree
from mlagent_tui.core.search.operators import context_of, messages_for
from mlagent_tui.core.session import solve_preview
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import TaskError

from .heldout import held_out_reason
from .prompts import prepared_columns, session_task, solve_response

STEP_OPERATORS = ("improve", "edit", "debug")
Basis = Literal["hidden", "search", "valid"]
_QUOTED = re.compile(r"[\"']([^\"']+)[\"']")  # a column name in a list's text


class DistilStep(BaseModel):
    """One step to imitate: the operator's prompt on its real parent, and the child's answer."""

    session_id: str
    task: str
    seed: int
    node: int
    parent: int
    operator: str
    messages: list[dict[str, str]]
    response: str
    parent_score: float | None = None
    score: float | None = None
    basis: Basis = Field(
        description="what the improvement was judged on: hidden (both nodes had a hidden "
        "score), search (the search score), valid (the parent had no valid submission)"
    )
    improves: bool = Field(description="this step itself beat its parent (else it led to one)")


class SessionYield(BaseModel):
    """What one search session gave: its nodes, its improvements and the steps kept."""

    session_id: str
    task: str
    seed: int
    nodes: int = 0
    improvements: int = 0
    steps: list[DistilStep] = Field(default_factory=list)
    skipped: str | None = None  # why nothing was taken (held out, task gone ...)


def search_session_rows(store: Store) -> list[dict[str, Any]]:
    """Every stored search session, oldest first."""
    return store.fetch_dicts("SELECT * FROM sessions WHERE agent = 'search' ORDER BY started_at")


def hidden_scores(events: list[Any]) -> dict[int, float]:
    """node -> hidden score, from the final selection's candidates (the nodes table's column)."""
    out: dict[int, float] = {}
    for event in events:
        if event.payload.kind == "selection_made":
            for cand in event.payload.candidates:
                if cand.hidden_score is not None:
                    out[cand.node] = cand.hidden_score
    return out


def beat_parent(
    tree: Tree, node: Node, hidden: dict[int, float]
) -> tuple[bool, Basis, float | None, float | None]:
    """(beat its parent, judged on what, parent's score, node's score) for a node with one."""
    parent = tree.nodes.get(node.parents[0]) if node.parents else None
    if parent is None or node.status != "valid" or node.score is None:
        return False, "search", None, node.score
    if parent.status != "valid" or parent.score is None:
        return True, "valid", None, node.score
    if node.id in hidden and parent.id in hidden:
        basis: Basis = "hidden"
        mine, theirs = hidden[node.id], hidden[parent.id]
    else:
        basis, mine, theirs = "search", node.score, parent.score
    better = mine > theirs if tree.higher else mine < theirs
    return better, basis, theirs, mine


def _answers_and_memory(events: list[Any], higher: bool) -> tuple[dict[int, str], dict[int, str]]:
    """node -> the raw answer the model gave for it, and node -> the memory block its prompt
    showed (the tree folded up to its policy choice, as the driver built it)."""
    tree = Tree(higher)
    answers: dict[int, str] = {}
    memory: dict[int, str] = {}
    current: int | None = None
    for event in events:
        p = event.payload
        if p.kind == "policy_choice":
            current = p.node
            memory[p.node] = memory_text(tree)
        elif p.kind == "llm_call" and p.purpose.startswith("search:"):
            named = p.purpose.split(":")[2:]  # `search:<op>:<node>`: calls in flight at once
            node = int(named[0]) if named and named[0].isdigit() else current
            if node is not None:
                answers[node] = p.text  # the last call of a node is the one that parsed
        elif p.kind == "node_created":
            current = None
        tree.apply(p)
    return answers, memory


def session_steps(
    store: Store, row: dict[str, Any], exclude: set[str] | None = None
) -> SessionYield:
    """The steps of one search session on the paths to its improvements."""
    config = json.loads(row.get("config") or "{}")
    seed = int(config.get("seed") or 0)
    out = SessionYield(session_id=row["id"], task=str(row.get("task")), seed=seed)
    why = held_out_reason(out.task, seed)
    if why is None and out.task in (exclude or set()):
        why = f"{out.task} is excluded"
    if why is not None:
        out.skipped = why
        return out
    try:
        task = session_task(config or {"task": row["task"]})
    except TaskError:
        out.skipped = "task folder gone"
        return out
    events = store.events(row["id"])
    tree = Tree(task.spec.metric.higher_is_better).apply_all(e.payload for e in events)
    out.nodes = len(tree.nodes)
    hidden = hidden_scores(events)
    answers, memory = _answers_and_memory(events, tree.higher)
    preview = solve_preview(task, seed)
    on_path: dict[int, bool] = {}
    for node in tree.nodes.values():
        better = beat_parent(tree, node, hidden)[0]
        if node.operator in STEP_OPERATORS and better:
            out.improvements += 1
            for nid in tree.lineage(node.id):
                on_path[nid] = on_path.get(nid, False) or nid == node.id
    for nid in sorted(on_path):
        node = tree.nodes[nid]
        if node.operator not in STEP_OPERATORS or not node.parents or not node.script:
            continue
        better, basis, theirs, mine = beat_parent(tree, node, hidden)
        hints = list(_hints_of(events, nid))
        parent = tree.nodes[node.parents[0]]
        response = answers.get(nid) or (
            solve_response(node.plan, node.script) if node.form == "whole" else ""
        )
        taught: list[tuple[list[dict[str, str]], str]] = []  # (prompt, answer)
        if node.form == "edit" and "<<<<<<< SEARCH" not in response:  # a tweak's value
            if not better:
                continue
            columns = prepared_columns(str(task.folder), seed)
            focus = focus_of(parent.script, node.script, response, columns)
            if focus is None:
                continue
            response = value_answer(focus, response)
            ctx = context_of(task, preview, memory.get(nid, ""), hints, columns)
            taught.append((messages_for("edit", ctx, [parent], focus), response))
            taught += _menu_item(task, preview, hints, columns, parent, focus, response)
        elif response:
            ctx = context_of(task, preview, memory.get(nid, ""), hints)
            taught.append((messages_for(node.operator, ctx, [parent]), response))
        for messages, answer in taught:
            out.steps.append(
                DistilStep(
                    session_id=out.session_id,
                    task=task.name,
                    seed=seed,
                    node=nid,
                    parent=parent.id,
                    operator=node.operator,
                    messages=messages,
                    response=answer,
                    parent_score=theirs,
                    score=mine,
                    basis=basis,
                    improves=better,
                )
            )
    return out


def _menu_item(
    task: Any,
    preview: str,
    hints: list[str],
    columns: list[str],
    parent: Node,
    focus: Tweak,
    answer: str,
) -> list[tuple[list[dict[str, str]], str]]:
    """The solve agent's edit prompt on the parent (its menu of settings, no memory) and the
    answer that picks `focus` with the search's value; none where the menu leaves it out."""
    menu = menu_of(parent.script, columns, [parent.script])
    reply = choice_answer(menu, focus, answer)
    if reply is None:
        return []
    solo = context_of(task, preview, "", hints, columns)
    return [(with_menu(messages_for("improve", solo, [parent]), menu), reply)]


def value_answer(focus: Tweak, answer: str) -> str:
    """The answer with a plan that says what the value does (the small model's own plans
    often name nothing: "it already writes a val.")."""
    value = value_match(answer).group(1)
    if focus.kind == "names":
        plan = f"Add {added_columns(focus.text, value)} to this list."
    else:
        plan = f"Change {focus.text} to {value}."
    return f"Plan: {plan}\nValue: {value}"


def added_columns(before: str, after: str) -> str:
    """The columns a list edit adds, as its plan names them: how many, the first and the last
    ("the 10 columns from worst_radius to worst_fractal_dimension"), or each where few.

    Which block of a table's columns to add is what a sweep teaches, and in the list itself
    the model copies the data's header in its order: after `mean_radius` it wrote
    `mean_texture` at p = 0.9997 where it was taught `worst_radius`. Named first in the plan,
    the choice comes before the list (a plan that named only which block, "the last 10
    columns", was outweighed by "the other", the word of three tasks' plans)."""
    had = set(_QUOTED.findall(before))
    new = [c for c in _QUOTED.findall(after) if c not in had]
    if not new:
        return "more of the data's columns"
    if len(new) == 1:
        return f"the column {new[0]}"
    if len(new) <= 3:
        return "the columns " + ", ".join(new[:-1]) + f" and {new[-1]}"
    return f"the {len(new)} columns from {new[0]} to {new[-1]}"


def focus_of(parent: str, child: str, answer: str, columns: list[str]) -> Tweak | None:
    """The setting of `parent` whose value, as `answer` names it, makes `child` (None: none)."""
    for tweak in tweaks_of(parent, columns):
        try:
            if apply_value(answer, parent, tweak)[1] == child:
                return tweak
        except ResponseParseError:
            continue
    return None


def _hints_of(events: list[Any], node: int) -> list[str]:
    for event in events:
        if event.payload.kind == "node_created" and event.payload.node == node:
            return list(event.payload.hints)
    return []


def distil_steps(
    store: Store,
    *,
    tasks: set[str] | None = None,
    exclude: set[str] | None = None,
    sessions: set[str] | None = None,
    on_session: Callable[[SessionYield], None] | None = None,
) -> list[SessionYield]:
    """Every stored search session's yield (of `tasks` where given, of `sessions` where given)."""
    out = []
    for row in search_session_rows(store):
        if tasks is not None and row.get("task") not in tasks:
            continue
        if sessions is not None and row["id"] not in sessions:
            continue
        got = session_steps(store, row, exclude)
        out.append(got)
        if on_session is not None:
            on_session(got)
    return out
