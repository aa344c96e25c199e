"""Distillation of search sessions (`--recipe distil`): the data, the held-out lists, the rounds
and their record, resume, and the bad inputs. Real search sessions driven by replay models on
the tiny task; the training runs use the bare 135M base on the CPU with one update per round."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mlagent_tui.core.home import Home
from mlagent_tui.core.llm.replay import ReplayModel
from mlagent_tui.core.search.node import Node, Tree
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task
from trainer.distil_data import beat_parent, distil_steps
from trainer.heldout import held_out_reason
from trainer.recipes import NothingToTrain, RunOptions, run_training
from trainer.recipes.distil_options import DistilOptions
from trainer.rollout import new_session, run_session

from .agent_helpers import Recording, write_replay
from .conftest import bwrap_ready
from .train_helpers import gold_script, solve_text

TRAIN = str(Path(sys.executable).parent / "mlagent-train")
pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def _starter(task_dir: Path) -> str:
    return (task_dir / "env" / "train.py").read_text()


def _search(
    tmp_path: Path, home: Home, store: Store, task_dir: Path, seed: int, answers: list[str]
) -> Recording:
    """One real search session (one candidate in flight: a deterministic tree); its model."""
    replay = write_replay(tmp_path / f"search-{seed}.jsonl", answers)
    model = Recording(ReplayModel(replay))
    task = Task(task_dir)
    run_session(
        lambda: new_session(
            home, store, task, model, agent="search", seed=seed, max_steps=len(answers), workers=1
        ),
        store,
        task,
        instrument="none",
    )
    return model


def test_steps_to_improvements_carry_the_prompts_the_search_sent(tmp_path, tiny_task) -> None:
    home = Home.at(tmp_path / "home")
    store = Store(home.db_path)
    starter, gold = _starter(tiny_task), gold_script(tiny_task)
    # seed 3: the answers are y = 2x, so the starter's 2x + 1 scores mae 1 and gold 0
    answers = [solve_text(starter), solve_text("import sys\nsys.exit(3)\n"), solve_text(starter)]
    answers += [solve_text(gold, "drop the +1")] * 3
    model = _search(tmp_path, home, store, tiny_task, 3, answers)
    (got,) = distil_steps(store)
    assert got.nodes >= 5 and got.improvements >= 1 and got.skipped is None
    assert {s.operator for s in got.steps} <= {"improve", "edit", "debug"}
    for step in got.steps:
        # train prompt == the prompt the search sent at inference, word for word
        assert "\n".join(m["content"] for m in step.messages) in model.prompts
        assert gold.strip().splitlines()[-1].strip() in step.response
    improving = [s for s in got.steps if s.improves]
    assert improving and all(s.basis in ("search", "valid") for s in improving)
    debug = [s for s in got.steps if s.operator == "debug"]
    assert all(s.basis == "valid" and s.parent_score is None for s in debug)


def test_the_hidden_score_decides_where_both_nodes_have_one() -> None:
    tree = Tree(higher_is_better=False)
    tree.nodes = {
        1: Node(id=1, operator="draft", parents=[], status="valid", score=1.0),
        2: Node(id=2, operator="improve", parents=[1], status="valid", score=0.5),
    }
    assert beat_parent(tree, tree.nodes[2], {})[:2] == (True, "search")
    # better on the rows the search scored, worse on the rows it never saw: no improvement
    assert beat_parent(tree, tree.nodes[2], {1: 0.4, 2: 0.9})[:2] == (False, "hidden")
    assert beat_parent(tree, tree.nodes[2], {2: 0.9})[:2] == (True, "search")  # parent has none


def test_held_out_tasks_and_seeds_never_become_distil_data(tmp_path, tiny_task) -> None:
    assert held_out_reason("text-sentiment") and held_out_reason("customer-churn")
    assert held_out_reason("proc-1000-3-retail") and held_out_reason("proc-0-3-retail") is None
    assert held_out_reason("digits", 100) and held_out_reason("digits", 3) is None
    home = Home.at(tmp_path / "home")
    store = Store(home.db_path)
    gold = gold_script(tiny_task)
    answers = [solve_text(_starter(tiny_task))] * 3 + [solve_text(gold)] * 3
    _search(tmp_path, home, store, tiny_task, 102, answers)  # 102: an evaluation seed
    (got,) = distil_steps(store)
    assert got.steps == [] and "evaluation seed" in (got.skipped or "")
    from trainer.recipes.distil import procedural_tasks

    with pytest.raises(ValueError, match="kept for evaluation"):
        procedural_tasks(tmp_path / "out", DistilOptions(procedural=1, procedural_seed=1000))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TRAIN, "run", *args], capture_output=True, text=True, timeout=300)


def test_cli_bad_input_is_one_line_before_any_model_loads(tmp_path, tiny_task) -> None:
    for args, message in (
        (["--recipe", "distil", "--rounds", "0"], "--rounds takes 1 or more"),
        (["--recipe", "sft", "--rounds", "2"], "with --recipe distil"),
        (["--recipe", "distil", "--tasks", "noisy-shapes"], "noisy-shapes is a held-out task"),
    ):
        done = _cli(*args, "--home", str(tmp_path / "h"))
        assert done.returncode == 2, done
        assert message in done.stderr and len(done.stderr.strip().splitlines()) <= 2
    empty = _cli("--recipe", "distil", "--home", str(tmp_path / "empty"), "--json")
    assert empty.returncode == 0
    said = json.loads(empty.stdout)["message"]
    assert "no search sessions" in said and "--rounds N" in said and "--agent search" in said
    # sessions, but none better than its parent: says so, and names the commands again
    home = Home.at(tmp_path / "home")
    store = Store(home.db_path)
    _search(tmp_path, home, store, tiny_task, 3, [solve_text(_starter(tiny_task))] * 4)
    flat = _cli("--recipe", "distil", "--home", str(home.root), "--task-dir", str(tiny_task))
    assert flat.returncode == 0 and "found an improvement" in flat.stdout.replace("\n", " ")


@pytest.mark.timeout(1800)  # two updates of the 135M model on a shared CPU
def test_rounds_record_search_resume_and_anchor_only_rounds(tmp_path, tiny_task) -> None:
    from trainer.demos import record_demos

    home = Home.at(tmp_path / "home")
    store = Store(home.db_path)
    record_demos(home, store, [Task(tiny_task)], levels=["gold"], agents=["solve"], seeds=[0])
    starter, gold = _starter(tiny_task), gold_script(tiny_task)
    replay = tmp_path / "searcher.jsonl"
    write_replay(replay, [solve_text(starter)] * 6)  # round 1: nothing better than the starter
    out = tmp_path / "run"
    options = RunOptions(
        recipe="distil",
        task_dirs=[str(tiny_task)],
        home=str(home.root),
        out=str(out),
        steps=1,
        sft_batch=2,
        anchor=1,
        lr=3e-3,
        distil=DistilOptions(
            rounds=2,
            round_updates=1,
            search_model=f"replay:{replay}",
            search_steps=6,
            search_workers=1,
            procedural=0,
        ),
    )
    first = run_training(options)  # stops after round 1 (one update): an interrupted run
    assert first.updates_done == 1
    (r1,) = json.loads((out / "distil.json").read_text())["rounds"]
    assert r1["round"] == 1 and r1["anchor_only"] and r1["improvements_found"] == 0
    assert r1["nodes_searched"] >= 3 and r1["items"] == 0 and len(r1["sessions"]) == 1
    # round 2 (seed 10002: y = 2x) gets a searcher that finds the gold script
    write_replay(replay, [solve_text(starter)] * 3 + [solve_text(gold)] * 3)
    second = run_training(options, resume=out, steps=2)
    assert second.updates_done == 2 and second.resumed_from
    rounds = json.loads((out / "distil.json").read_text())["rounds"]
    assert [r["round"] for r in rounds] == [1, 2]  # round 1's search was not run again
    assert rounds[1]["improvements_found"] >= 1 and rounds[1]["items"] >= 1
    assert not rounds[1]["anchor_only"]
    searched = store.fetch("SELECT COUNT(*) FROM sessions WHERE agent = 'search'")[0][0]
    assert searched == 2
    data = json.loads((out / "training_data.json").read_text())
    assert {10001, 10002} <= set(data["tasks"]["tiny-task"])  # eval --trained-on refuses them
    assert any("round 2" in n and "improvement(s) found" in n for n in second.notes)


@pytest.mark.timeout(900)
def test_a_round_without_improvement_or_anchor_stops_and_says_why(tmp_path, tiny_task) -> None:
    home = Home.at(tmp_path / "home")
    replay = write_replay(tmp_path / "flat.jsonl", [solve_text(_starter(tiny_task))] * 4)
    options = RunOptions(
        recipe="distil",
        task_dirs=[str(tiny_task)],
        home=str(home.root),
        out=str(tmp_path / "run"),
        steps=1,
        distil=DistilOptions(
            rounds=1, round_updates=1, search_model=f"replay:{replay}", search_steps=4, procedural=0
        ),
    )
    with pytest.raises(NothingToTrain, match="round 1: the search found no improvement"):
        run_training(options)


def test_round_figures_only_when_asked_and_held_to_the_runs_record(tmp_path) -> None:
    from types import SimpleNamespace

    from trainer.provenance import TrainingData
    from trainer.recipes.distil_search import round_eval

    def ctx(**kw) -> SimpleNamespace:
        options = SimpleNamespace(distil=DistilOptions(**kw))
        return SimpleNamespace(options=options, update=1, out_dir=tmp_path)

    class Exported:  # the policy's llama.cpp copy, as the sampler leaves it
        folder = tmp_path

        def refresh(self, version: int) -> None:
            (tmp_path / "policy.gguf").write_bytes(b"GGUF")

    assert round_eval(ctx(), Exported(), 1) is None  # no evaluation asked
    asked = ctx(eval_tasks=["breast-cancer"], eval_seeds=[2])
    assert "no llama.cpp copy" in round_eval(asked, None, 1)["note"]
    TrainingData(tasks={"breast-cancer": [0, 1, 2]}).save(tmp_path)
    with pytest.raises(ValueError, match="round 1's evaluation: task breast-cancer was trained"):
        round_eval(asked, Exported(), 1)


def test_answers_go_to_their_node_and_a_tweak_is_taught_as_the_solve_agents_edit(
    tmp_path, tiny_task
) -> None:
    """Two calls in flight: each answer is its own node's (the call's purpose names it). An
    edit whose value the model picked (a tweak) that beat its parent is taught twice: as its
    value under the search's prompt (with the memory), and as the setting's number and value
    under the solve agent's menu of the parent's settings, which must be exactly the prompt
    `SolveAgent` builds."""
    from mlagent_tui.core.agent import AgentState
    from mlagent_tui.core.agent.menu import menu_of
    from mlagent_tui.core.agent.prompts import StepRecord
    from mlagent_tui.core.events import LLMCall
    from mlagent_tui.core.search_events import NodeCreated, NodeFinished, PolicyChoice
    from mlagent_tui.core.session import solve_preview
    from trainer.prompts import agent_messages, prepared_columns

    home = Home.at(tmp_path / "home")
    store = Store(home.db_path)
    replay = ReplayModel(write_replay(tmp_path / "r.jsonl", ["unused"]))
    task = Task(tiny_task)
    session = new_session(home, store, task, replay, agent="search", seed=3)
    starter = _starter(tiny_task)
    half = starter.replace("+ 1}", "+ 0.5}") + "opts = dict(alpha=1.0)\n"
    exact, worse = half.replace("alpha=1.0", "alpha=0.5"), half.replace("alpha=1.0", "alpha=2")
    free = "<<<<<<< SEARCH\n+ 1}\n=======\n+ 0.5}\n>>>>>>> REPLACE\n"
    emit = session.recorder.emit
    emit(PolicyChoice(policy="greedy", node=1, operator="draft", reason="the starter"))
    emit(NodeCreated(node=1, operator="draft", form="starter", script=starter))
    emit(NodeFinished(node=1, status="valid", score=1.0))
    for node, parent in ((2, 1), (3, 1)):
        emit(PolicyChoice(policy="greedy", node=node, operator="edit", parents=[parent], reason=""))
    emit(LLMCall(model="m", purpose="search:edit:3", text="Plan: worse\nValue: 5"))
    emit(LLMCall(model="m", purpose="search:edit:2", text=f"Plan: half\n{free}"))
    emit(NodeCreated(node=3, parents=[1], operator="edit", form="edit", script=starter * 2))
    emit(NodeCreated(node=2, parents=[1], operator="edit", form="edit", script=half))
    emit(NodeFinished(node=3, status="valid", score=5.0))
    emit(NodeFinished(node=2, status="valid", score=0.5))
    for node, script, value, score in ((4, exact, "0.5", 0.0), (5, worse, "2", 0.9)):
        emit(PolicyChoice(policy="greedy", node=node, operator="edit", parents=[2], reason=""))
        emit(LLMCall(model="m", purpose=f"search:edit:{node}", text=f"Plan: a\nValue: {value}"))
        emit(NodeCreated(node=node, parents=[2], operator="edit", form="edit", script=script))
        emit(NodeFinished(node=node, status="valid", score=score))
    (got,) = distil_steps(store)
    assert sorted(s.node for s in got.steps) == [2, 4, 4]  # node 5's value did not help
    assert all(s.improves for s in got.steps)
    order = sorted(got.steps, key=lambda s: (s.node, "Setting" in s.response))
    edit, searched_item, menu_item = order
    assert edit.operator == "edit" and edit.response == f"Plan: half\n{free}"
    assert searched_item.response == "Plan: Change 1.0 to 0.5.\nValue: 0.5"
    searched = "tried so far in this search"  # the memory block: the search prompt only
    assert "Change this number: 1.0" in searched_item.messages[-1]["content"]
    assert searched in searched_item.messages[-1]["content"]
    assert searched not in menu_item.messages[-1]["content"]
    menu = menu_of(half, prepared_columns(str(task.folder), 3))
    k = [t.text for t in menu].index("1.0") + 1
    assert menu_item.response == f"Setting: {k}\nPlan: Change 1.0 to 0.5.\nValue: 0.5"
    assert f"{k}. Change this number: 1.0" in menu_item.messages[-1]["content"]

    columns = prepared_columns(str(task.folder), 3)
    run = StepRecord(
        step=1,
        action="Run Solution",
        action_input={"content": half},
        observation=f"wrote\n\nValidation: {task.spec.metric.name} = 0.5",
    )
    state = AgentState(
        task=task,
        step=2,
        history=[run],
        previous_script=half,
        preview=solve_preview(task, 3),
        edits=True,
        columns=columns,
    )
    assert menu_item.messages == agent_messages(task, "solve", state)
