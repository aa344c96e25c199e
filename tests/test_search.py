"""The search agent: policies grow trees, workers overlap, hidden selection, store and replay."""

from __future__ import annotations

import json
import random

import pytest

from mlagent_tui.core.search import Settings, Tree, make_policy
from mlagent_tui.core.search.selection import in_hidden
from mlagent_tui.core.search_events import NodeCreated, NodeFinished
from mlagent_tui.core.session import Session, fork_node
from mlagent_tui.core.session.state import SessionError
from mlagent_tui.core.store import Store

from .conftest import bwrap_ready
from .search_helpers import (
    BAD,
    GOOD,
    SPLIT_PREPARE,
    offset_script,
    run_with_each_flag,
    sleepy,
    start,
)
from .search_helpers import reply as whole_reply
from .test_cli import mlagent

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

# a reply with a whole script and one search/replace pair parses for every operator
EDIT = "<<<<<<< SEARCH\n2 * int(row['x'])\n=======\n2 * int(row['x']) + 0\n>>>>>>> REPLACE\n"


def reply(script: str) -> str:
    return whole_reply(script) + (EDIT if "row['x']" in script else "")


MIXED = [reply(BAD), reply(GOOD), reply(GOOD)] + [reply(GOOD), reply(BAD)] * 4


def payloads(store: Store, sid: str, kind: str) -> list:
    return [e.payload for e in store.events(sid, kinds=[kind])]


@pytest.mark.parametrize("policy", ["greedy", "mcts", "evolutionary"])
def test_each_policy_builds_a_tree(tmp_path, home, store, tiny_task, policy) -> None:
    s = start(tmp_path, home, store, tiny_task, MIXED, policy=policy, workers=1, max_steps=8)
    result = s.run()
    assert result.valid and result.final_score == pytest.approx(0.0) and result.steps == 8
    created = payloads(store, s.id, "node_created")
    choices = payloads(store, s.id, "policy_choice")
    assert [c.node for c in choices] == [n.node for n in created]  # a choice before each node
    assert all(c.policy == policy and c.reason for c in choices)
    assert [n.operator for n in created[:2]] == ["draft", "draft"]
    later = {n.operator for n in created[3:]}
    assert later and later <= {"draft", "debug", "improve", "edit", "crossover"}
    assert later - {"draft"}, f"{policy} only drafted: {[n.operator for n in created]}"
    for n in created:  # a child's parents exist and were created before it
        assert all(p < n.node for p in n.parents)
        if n.operator in ("debug", "improve", "edit"):
            assert len(n.parents) == 1
    rows = store.rows("nodes", s.id)
    assert len(rows) == len(created) and sum(r["chosen"] for r in rows) == 1


def _tree(*nodes: tuple[int, list[int], str, float | None]) -> Tree:
    tree = Tree(higher_is_better=True)
    for nid, parents, status, score in nodes:
        op = "draft" if not parents else "improve"
        tree.apply(NodeCreated(node=nid, parents=parents, operator=op, script="print(1)\n"))
        tree.apply(NodeFinished(node=nid, status=status, score=score))
    return tree


def test_policies_choose_their_operators() -> None:
    tree = _tree((1, [], "valid", 0.5), (2, [], "valid", 0.9), (3, [], "buggy", None))
    greedy = make_policy("greedy", Settings(debug_prob=0.0, edit_prob=0.0))
    assert greedy.choose(tree, random.Random(0)).model_dump(
        exclude={"reason", "focus", "memory"}
    ) == {
        "operator": "improve",
        "parents": [2],
    }
    debug = make_policy("greedy", Settings(debug_prob=1.0)).choose(tree, random.Random(0))
    assert debug.operator == "debug" and debug.parents == [3]
    evo = make_policy("evolutionary", Settings(crossover_prob=1.0))
    cross = evo.choose(tree, random.Random(0))
    assert cross.operator == "crossover" and sorted(cross.parents) == [1, 2]
    mcts = make_policy("mcts", Settings(edit_prob=0.0)).choose(tree, random.Random(0))
    assert mcts.operator in ("improve", "debug") and mcts.reason.startswith(mcts.operator)
    assert "UCT path root > #" in mcts.reason


def test_two_workers_run_two_nodes_at_once(tmp_path, home, store, tiny_task) -> None:
    """Proof by the nodes' own execution intervals, not by wall time."""
    replies = [reply(sleepy(1.5)), reply(sleepy(1.5))]
    s = start(tmp_path, home, store, tiny_task, replies, workers=2, max_steps=2)
    s.run()
    a, b = payloads(store, s.id, "node_finished")[:2]
    assert a.status == b.status == "valid"
    assert a.exec_start < b.exec_end and b.exec_start < a.exec_end  # the intervals overlap


def test_one_worker_runs_one_node_at_a_time(tmp_path, home, store, tiny_task) -> None:
    replies = [reply(sleepy(0.5)), reply(sleepy(0.5))]
    s = start(tmp_path, home, store, tiny_task, replies, workers=1, max_steps=2)
    s.run()
    first, second = sorted(payloads(store, s.id, "node_finished"), key=lambda p: p.exec_start)
    assert second.exec_start >= first.exec_end


def test_hidden_selection_picks_by_hidden_score(tmp_path, home, store, tiny_task) -> None:
    """A: perfect on the rows the search sees, off by 1 on the hidden ones; B: 0.5 everywhere,
    C: 0.6 everywhere. Validation alone picks A; the hidden part picks B."""
    (tiny_task / "prepare.py").write_text(SPLIT_PREPARE)
    seen = {i: 0.0 for i in range(40, 80) if not in_hidden(0, str(i))}
    replies = [
        reply(offset_script(seen, 1.0)),
        reply(offset_script({}, 0.5)),
        reply(offset_script({}, 0.6)),
    ]
    s = start(tmp_path, home, store, tiny_task, replies, workers=1, max_steps=3)
    result = s.run()
    (sel,) = payloads(store, s.id, "selection_made")
    assert sel.hidden_split and sel.by == "hidden" and "hidden" in sel.note
    assert sel.validation_node == 1 and sel.node == 2
    assert sel.search_score == pytest.approx(0.5) and sel.hidden_score == pytest.approx(0.5)
    assert sel.test_score == pytest.approx(0.5) and sel.validation_test_score == pytest.approx(1.0)
    hidden = {c.node: c.hidden_score for c in sel.candidates}
    assert hidden == {1: pytest.approx(1.0), 2: pytest.approx(0.5), 3: pytest.approx(0.6)}
    assert result.final_score == pytest.approx(0.5)  # the chosen node is what is submitted
    assert not list(home.root.glob("private/*-part"))  # the split folders are gone
    from mlagent_tui.core.bench.metrics import outcome_from_facts
    from mlagent_tui.core.store.bench import session_facts

    run = outcome_from_facts(session_facts(store, s.id), s.task.spec, model="m", run_index=0)
    assert run.selection_gap == pytest.approx(0.5)  # the bench reports the gap (> 0: hidden won)
    assert run.best_attempt == pytest.approx(0.0) and run.steps == 3


def test_nodes_table_is_rebuilt_from_events(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, MIXED, workers=2, max_steps=6)
    s.subscribe(
        lambda e: s.search.prune(1) if e.kind == "node_finished" and e.payload.node == 1 else None
    )
    s.run()
    with pytest.raises(ValueError, match="ended"):
        s.search.prune(2)
    fresh = Store(tmp_path / "rebuilt.db")
    fresh.append_many(store.events(s.id))
    assert fresh.rows("nodes", s.id) == store.rows("nodes", s.id)
    fresh.close()


def test_show_prints_the_tree_and_replay_rebuilds_it(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, MIXED, workers=1, max_steps=5)
    s.run()
    live = s.search.tree.render()
    replayed = Tree().apply_all(e.payload for e in store.events(s.id))
    assert replayed.render() == live and any("<= chosen" in ln for ln in live)
    proc = mlagent("sessions", "show", s.id, home=home.root, check=True)
    assert "search tree" in proc.stdout and "#1 draft buggy" in proc.stdout
    assert "selected #" in proc.stdout
    shown = json.loads(mlagent("sessions", "show", s.id, "--json", home=home.root).stdout)
    assert len(shown["search"]["nodes"]) == len(replayed.nodes)
    # running the recorded responses again grows the same tree
    (tmp_path / "again").mkdir()
    out = mlagent("sessions", "export", s.id, "--responses", home=home.root, check=True).stdout
    again = start(
        tmp_path / "again",
        home,
        store,
        tiny_task,
        [json.loads(x)["content"] for x in out.splitlines()],
        workers=1,
        max_steps=5,
    )  # noqa: E501
    again.run()
    assert again.search.tree.render() == live


def test_fork_from_a_node(tmp_path, home, store, tiny_task) -> None:
    s = start(tmp_path, home, store, tiny_task, MIXED, workers=1, max_steps=4)
    s.run()
    with pytest.raises(SessionError, match="no finished node #42"):
        fork_node(home, store, s.id, 42)
    child = fork_node(home, store, s.id, 2, max_steps=1)
    first = payloads(store, child.id, "node_created")[0]
    assert (
        first.script == s.search.tree.nodes[2].script and f"node #2 of session {s.id}" in first.plan
    )
    assert child.workspace.file_hash("solution.py") is not None
    result = child.run()
    assert result.valid
    tree = child.search.tree
    assert tree.nodes[1].status == "valid" and len(tree.nodes) == 2  # node 1 ran with no call


def test_steering_expand_pin_hint(tmp_path, home, store, tiny_task) -> None:
    """x, p and h are events, consumed at the next policy choice; a hint reaches the prompt."""
    from .agent_helpers import Recording

    s = start(tmp_path, home, store, tiny_task, MIXED, workers=1, max_steps=5)
    s.model = Recording(s.model)
    with pytest.raises(ValueError, match="no node #7"):
        s.search.expand_next(7)

    def steer(event) -> None:  # noqa: ANN001
        if event.kind == "node_finished" and event.payload.node == 1:
            s.search.hint(1, "use a lookup table")
            s.search.expand_next(1)
            s.search.pin(1)
            with pytest.raises(ValueError, match="empty hint"):
                s.search.hint(1, "  ")

    s.subscribe(steer)
    s.run()
    choices = payloads(store, s.id, "policy_choice")
    asked = [c for c in choices if "asked" in c.reason]
    assert asked and asked[0].parents == [1] and asked[0].operator == "debug"
    assert any("use a lookup table" in p for p in s.model.prompts)
    assert s.search.tree.nodes[1].pinned and store.rows("nodes", s.id)[0]["pinned"] == 1


def test_memory_goes_into_prompts(tmp_path, home, store, tiny_task) -> None:
    from .agent_helpers import Recording

    s = start(tmp_path, home, store, tiny_task, MIXED, workers=1, max_steps=4)
    s.model = Recording(s.model)
    s.run()
    assert "What was tried so far" in s.model.prompts[-1]
    assert "#1 draft" in s.model.prompts[-1] and "oops" in s.model.prompts[-1]


def test_a_spent_search_resumes_only_with_a_new_budget(tmp_path, home, store, tiny_task) -> None:
    """Its steps are its model calls: 2 of 2 used, so a resume needs a new budget."""
    s = start(tmp_path, home, store, tiny_task, MIXED, workers=1, max_steps=2)
    s.run()
    with pytest.raises(SessionError, match="step budget of 2 used"):
        Session.resume(home, store, s.id)


def test_a_search_begins_with_the_tasks_starter(tmp_path, home, store, tiny_task) -> None:
    """Node #1 is the task's starter as given, without a model call; the budget's calls all
    go to the model's nodes; a resume does not run the starter again."""
    from mlagent_tui.core.session.budget import BudgetLimits

    s = start(tmp_path, home, store, tiny_task, MIXED, workers=1, max_steps=2, from_starter=True)
    s.run()
    created = payloads(store, s.id, "node_created")
    first = created[0]
    assert (first.node, first.form, first.operator, first.parents) == (1, "starter", "draft", [])
    assert first.script == (tiny_task / "env" / "train.py").read_text() and first.tokens == 0
    assert len(created) == 3 and len(payloads(store, s.id, "llm_call")) == 2
    finished = payloads(store, s.id, "node_finished")
    assert [p.node for p in finished] == [1, 2, 3] and finished[0].status == "valid"  # ran once
    assert "starter" in payloads(store, s.id, "policy_choice")[0].reason
    again = Session.resume(home, store, s.id, limits=BudgetLimits(max_steps=2))
    again.run()
    forms = [p.form for p in payloads(store, s.id, "node_created")]
    assert forms.count("starter") == 1 and len(forms) == 5


def test_no_starter_where_none_runs(tmp_path, home, store, tiny_task) -> None:
    """A script submission is graded as its folder holds it, a baseline that is not one
    script has no starter to run, and `from_starter=False` asks for none: no starter node."""
    from mlagent_tui.core.search.driver import SearchDriver

    s = start(tmp_path, home, store, tiny_task, MIXED, workers=1, max_steps=1, from_starter=True)
    spec = s.task.spec
    assert SearchDriver(s)._starter() == (tiny_task / "env" / "train.py").read_text()
    spec.submission.file = "strategy.py"
    assert SearchDriver(s)._starter() is None
    spec.submission.file = "submission.csv"
    spec.baseline.command = "bash run.sh"
    assert SearchDriver(s)._starter() is None
    spec.baseline.command = "python train.py"
    (s.workspace.root / "train.py").unlink()
    assert SearchDriver(s)._starter() is None
    off = start(tmp_path / "off", home, store, tiny_task, MIXED, workers=1, max_steps=1)
    assert SearchDriver(off)._starter() is None


def test_debugging_stops_where_it_never_pays() -> None:
    """After `debug_trials` debugs that all failed, a buggy leaf is no longer debugged."""
    tree = _tree((1, [], "valid", 0.5), (2, [], "buggy", None))
    always = Settings(debug_prob=1.0, debug_trials=2, num_drafts=1)
    assert make_policy("greedy", always).choose(tree, random.Random(0)).operator == "debug"
    failed = _tree(
        (1, [], "valid", 0.5),
        (2, [], "buggy", None),
        (3, [2], "buggy", None),
        (4, [3], "buggy", None),
        (5, [], "buggy", None),
    )
    for node in (3, 4):
        failed.nodes[node].operator = "debug"
    assert make_policy("greedy", always).choose(failed, random.Random(0)).operator != "debug"
    failed.nodes[4].status = "valid"  # one debug ran: debugging pays again
    failed.nodes[4].score = 0.6
    assert make_policy("greedy", always).choose(failed, random.Random(0)).operator == "debug"


def test_no_starter_on_the_command_line(tmp_path, tiny_task) -> None:
    """`run --agent search` begins with the starter; `--no-starter` leaves the tree to the model."""
    flags = ("--starter", "--no-starter")
    args = ("--agent", "search", "--workers", "1", "--max-steps", "1")
    runs = run_with_each_flag(tmp_path, tiny_task, [reply(GOOD)] * 4, flags, *args)
    forms = {
        flag: [p.form for p in payloads(store, sid, "node_created")]
        for flag, (store, sid) in runs.items()
    }
    assert forms == {"--starter": ["starter", "whole"], "--no-starter": ["whole"]}


def test_the_hidden_part_chooses_among_distinct_nodes_and_the_starter() -> None:
    """Ties of search score (copies, most often) take one place among the top; the starter
    always stands, so an answer worse than it on the hidden part is never handed back."""
    from mlagent_tui.core.search.selection import contenders

    tree = _tree(
        (1, [], "valid", 0.5),
        (2, [1], "valid", 0.9),
        (3, [2], "valid", 0.9),
        (4, [2], "valid", 0.8),
        (5, [4], "valid", 0.7),
        (6, [4], "valid", 0.6),
    )
    assert [n.id for n in contenders(tree.ranked(), 3)] == [2, 4, 5]
    tree.nodes[1].form = "starter"
    assert [n.id for n in contenders(tree.ranked(), 3)] == [2, 4, 5, 1]
    assert [n.id for n in contenders(tree.ranked(), 6)] == [2, 4, 5, 6, 1]
