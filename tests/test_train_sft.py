"""Demonstrations as sessions and the supervised warm start, on the CPU, tiny budgets."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlagent_tui.core.home import Home
from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task
from trainer.demos import IMPROVED, DemoError, record_demos
from trainer.recipes import NothingToTrain, RunOptions, run_training

from .conftest import bwrap_ready

TRAIN = str(Path(sys.executable).parent / "mlagent-train")
pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


# The research grammar's shape (mlagent_tui.core.agent.grammar): one-line sections, a plan whose
# further lines start with a digit or "-", then the action and its JSON input.
GRAMMAR_SHAPE = re.compile(
    r"Reflection: [^\n]+\nResearch Plan and Status: [^\n](?:[^\n]|\n[0-9-])*\n"
    r"Fact Check: [^\n]+\nThought: [^\n]+\nAction: [^\n]+\nAction Input: \{[^\n]*\}"
)


def _demos(tmp_path: Path, task_dir: Path, agents=("solve", "research")) -> tuple[Home, Store]:
    home = Home.at(tmp_path / "home")
    store = Store(home.db_path)
    results, notes = record_demos(
        home, store, [Task(task_dir)], levels=["gold", "silver"], agents=agents, seeds=[0]
    )
    assert notes == ["tiny-task: no reference for silver; skipped those"]
    assert all(r.valid and r.beats_baseline and r.level == "gold" for r in results)
    return home, store


def test_demos_are_real_sessions_of_both_agents(tmp_path, tiny_task) -> None:
    home, store = _demos(tmp_path, tiny_task)
    cursor = store.db.execute("SELECT agent, id, model FROM sessions")
    rows = {r[0]: {"id": r[1], "model": r[2]} for r in cursor.fetchall()}
    assert set(rows) == {"solve", "research"}
    assert {r["model"] for r in rows.values()} == {"reference:gold"}
    steps = [r["action"] for r in store.rows("steps", rows["research"]["id"])]
    assert steps == [
        "Execute Script",
        "Validate",
        "Write File",
        "Execute Script",
        "Validate",
        "Final Answer",
    ]
    calls = [
        e.payload.text for e in store.events(rows["research"]["id"]) if e.payload.kind == "llm_call"
    ]
    # Each answer is written after the observation before it: the plan quotes the real score,
    # and no answer echoes the format's own instructions.
    assert "mae" in calls[2] and "Baseline validation" in calls[2]
    assert IMPROVED in calls[2] and "Write File" in calls[2]
    assert not any("The full high level research plan" in c for c in calls)
    # The first answer runs the starter the description names; every answer but the long Write
    # File is text the response grammar allows (the plan starts on its header's line).
    assert '"script_name": "train.py"' in calls[0]
    for text in calls[:2] + calls[3:]:
        assert GRAMMAR_SHAPE.fullmatch(text), text
    # The solve demo copies the starter the prompt shows, then improves on it with the reference.
    solve = [
        json.loads(r["action_input"])["content"] for r in store.rows("steps", rows["solve"]["id"])
    ]
    starter = (tiny_task / "env" / "train.py").read_text()
    assert len(solve) == 2 and solve[0].strip() == starter.strip() and solve[1] != solve[0]


def test_sft_learns_resumes_and_records_its_data(tmp_path, tiny_task) -> None:
    home, store = _demos(tmp_path, tiny_task)
    out = tmp_path / "sft"
    options = RunOptions(
        recipe="sft", home=str(home.root), out=str(out), steps=3, sft_batch=3, lr=3e-3
    )
    first = run_training(options.model_copy(update={"steps": 2}))
    assert first.updates_done == 2 and any("learning from" in n for n in first.notes)
    assert first.engine == "transformers + peft on cpu"  # no GPU here: never unsloth
    data = json.loads((out / "training_data.json").read_text())
    assert data["tasks"] == {"tiny-task": [0]}
    resumed = run_training(options, resume=out, steps=3)
    assert resumed.updates_done == 3 and resumed.resumed_from
    # 9 answers of 9 steps in 3 updates of 3: the same answers again cost less after learning
    assert resumed.loss[-1] < resumed.loss[0]


def test_sft_with_nothing_to_learn_names_demos(tmp_path, tiny_task) -> None:
    with pytest.raises(NothingToTrain, match="mlagent-train demos"):
        run_training(RunOptions(recipe="sft", home=str(tmp_path / "empty"), steps=1))
    home, _ = _demos(tmp_path, tiny_task, agents=("solve",))
    with pytest.raises(NothingToTrain, match="excluded task"):
        run_training(
            RunOptions(recipe="sft", home=str(home.root), steps=1, exclude_tasks=["tiny-task"])
        )


def test_minutes_budget_and_init(tmp_path, tiny_task) -> None:
    home, _ = _demos(tmp_path, tiny_task, agents=("solve",))
    base = dict(recipe="sft", home=str(home.root), sft_batch=1, lr=3e-3)
    timed = run_training(RunOptions(**base, steps=50, minutes=0.0001, out=str(tmp_path / "a")))
    assert timed.updates_done == 1 and any("budget was spent" in n for n in timed.notes)
    follow = run_training(
        RunOptions(**base, steps=1, init=str(tmp_path / "a"), out=str(tmp_path / "b"))
    )
    assert follow.updates_done == 1
    # b started from a's weights: the answer a learnt from costs b less from the start
    assert follow.loss[0] < timed.loss[0]
    data = json.loads((tmp_path / "b" / "training_data.json").read_text())
    assert data["tasks"] == {"tiny-task": [0]} and len(data["runs"]) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--minutes", "0"], "--minutes must be more than 0"),
        (["--recipe", "nope"], "unknown recipe"),
    ],
)
def test_cli_refuses_bad_budgets(tmp_path, args, message) -> None:
    cmd = [TRAIN, "run", "--recipe", "sft", "--home", str(tmp_path)]
    proc = subprocess.run([*cmd, *args], capture_output=True, text=True)
    assert proc.returncode != 0 and message in proc.stderr


def test_drafts_only_records_the_solve_agents_first_step_alone(tmp_path, tiny_task) -> None:
    """The parents of RL's improve prompts: one valid step each (the starter), and research
    demos refused rather than silently cut."""
    home = Home.at(tmp_path / "home")
    store = Store(home.db_path)
    results, _ = record_demos(
        home,
        store,
        [Task(tiny_task)],
        levels=["gold"],
        drafts_only=True,
        agents=("solve",),
        seeds=[3, 4],
    )
    assert [r.seed for r in results] == [3, 4] and all(r.valid for r in results)
    starter = (tiny_task / "env" / "train.py").read_text()
    for r in results:
        steps = store.rows("steps", r.session_id)
        assert len(steps) == 1
        assert json.loads(steps[0]["action_input"])["content"].strip() == starter.strip()
    with pytest.raises(DemoError, match="--agents solve"):
        record_demos(home, store, [Task(tiny_task)], levels=["gold"], drafts_only=True)


def test_cli_demos_bad_level(tmp_path) -> None:
    cmd = [
        TRAIN,
        "demos",
        "--tasks",
        "breast-cancer",
        "--levels",
        "platinum",
        "--home",
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown level(s) platinum" in proc.stderr


def test_shared_prefix_gives_the_same_logprobs_as_the_whole_sequence() -> None:
    import torch

    from trainer.policy import load_policy
    from trainer.recipes.common import RunContext, TrainItem
    from trainer.recipes.sft import answer_logprobs, shared_prefix

    torch.set_num_threads(1)
    policy = load_policy("local", seed=0)
    system = {"role": "system", "content": "You write python scripts. " * 40}
    items = [
        TrainItem(
            prompt_ids=policy.chat_prompt_ids([system, {"role": "user", "content": q}]),
            completion_ids=policy.tokenizer(a)["input_ids"],
            reward=1.0,
            group="t/solve",
        )
        for q, a in [("Print one.", "print(1)"), ("Print the sum of 2 and 3.", "print(2 + 3)")]
    ]

    def ctx(prompt_grad: bool) -> RunContext:
        options = RunOptions(recipe="sft", sft_prompt_grad=prompt_grad)
        return RunContext(options, policy, None, None, [], "r", Path("."))  # type: ignore[arg-type]

    prefix = shared_prefix(ctx(False), items)
    assert prefix is not None and prefix[0] > 64
    with torch.no_grad():
        for it in items:
            fast = answer_logprobs(ctx(False), it, prefix)
            whole = answer_logprobs(ctx(True), it)
            assert torch.allclose(fast, whole, atol=1e-3), (fast, whole)


def test_prefixed_groups_items_by_shared_prompt_start_and_keeps_the_arithmetic() -> None:
    """Two tasks' steps in one batch: each task's long shared start runs once, and every
    answer's log-probabilities are those of its whole prompt."""
    import torch

    from trainer.policy import load_policy
    from trainer.recipes.common import RunContext, TrainItem
    from trainer.recipes.sft import answer_logprobs, prefixed

    torch.set_num_threads(1)
    policy = load_policy("local", seed=0)

    def item(task: str, q: str, a: str) -> TrainItem:
        system = {"role": "system", "content": f"Task {task}: predict the label. " * 40}
        messages = [system, {"role": "user", "content": q}]
        ids = policy.tokenizer(a)["input_ids"]
        return TrainItem(policy.chat_prompt_ids(messages), ids, 1.0, f"{task}/solve")

    items = [
        item("alpha", "Print one.", "print(1)"),
        item("beta", "Print two.", "print(2)"),
        item("alpha", "Print the sum.", "print(2 + 3)"),
        item("gamma", "Print three.", "print(3)"),
    ]
    options = RunOptions(recipe="sft")
    ctx = RunContext(options, policy, None, None, [], "r", Path("."))  # type: ignore[arg-type]
    whole = RunContext(
        options.model_copy(update={"sft_prompt_grad": True}), policy, None, None, [], "r", Path(".")
    )  # type: ignore[arg-type]
    seen = list(prefixed(ctx, items))
    assert sorted(i for i, _ in seen) == [0, 1, 2, 3]  # every item once
    by_index = dict(seen)
    assert by_index[0] is by_index[2] and by_index[0][0] > 256  # alpha's start, run once
    assert by_index[1] is None and by_index[3] is None  # alone: run whole
    with torch.no_grad():
        for i, prefix in seen:
            fast = answer_logprobs(ctx, items[i], prefix)
            assert torch.allclose(fast, answer_logprobs(whole, items[i]), atol=1e-3)


def test_step_loss_weighs_every_answer_the_same() -> None:
    import torch

    from trainer.policy import load_policy
    from trainer.recipes.common import RunContext, TrainItem
    from trainer.recipes.sft import SftRecipe, answer_logprobs

    torch.set_num_threads(1)
    policy = load_policy("local", seed=0)
    items = [
        TrainItem(
            prompt_ids=policy.chat_prompt_ids([{"role": "user", "content": q}]),
            completion_ids=policy.tokenizer(a)["input_ids"],
            reward=1.0,
            group="t/research",
        )
        for q, a in [
            ("Act.", "Action: Validate"),
            ("Write it.", "x = [i * i for i in range(99)]\n" * 9),
        ]
    ]
    assert len(items[1].completion_ids) > 10 * len(items[0].completion_ids)
    frozen = torch.optim.SGD(policy.trainable_parameters(), lr=0.0)
    with torch.no_grad():
        nll = [
            -answer_logprobs(
                RunContext(RunOptions(recipe="sft"), policy, None, None, [], "r", Path(".")), it
            )
            for it in items
        ]  # type: ignore[arg-type]
    by_step = float(sum(n.mean() for n in nll) / 2)
    by_token = float(torch.cat(nll).sum() / sum(len(n) for n in nll))
    for mode, expected in (("step", by_step), ("token", by_token)):
        ctx = RunContext(
            RunOptions(recipe="sft", sft_loss=mode), policy, None, None, [], "r", Path(".")
        )  # type: ignore[arg-type]
        got = SftRecipe.update(None, ctx, frozen, items)["loss"]  # type: ignore[arg-type]
        assert abs(got - expected) < 1e-3, (mode, got, expected)
    assert abs(by_step - by_token) > 0.05  # the short decision counts for half, not 1/10th


def test_killed_sft_run_resumes_from_its_last_checkpoint(tmp_path, tiny_task) -> None:
    import os
    import signal
    import time

    home, _ = _demos(tmp_path, tiny_task, agents=("solve",))
    out = tmp_path / "run"
    cmd = [
        TRAIN,
        "run",
        "--recipe",
        "sft",
        "--home",
        str(home.root),
        "--out",
        str(out),
        "--steps",
        "40",
        "--sft-batch",
        "1",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while not (out / "latest").is_file() and time.monotonic() < deadline:
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = int((out / "latest").read_text().split("-")[1])
    assert 1 <= done < 40
    resumed = subprocess.run(
        [TRAIN, "run", "--resume", str(out), "--steps", str(done + 1), "--json"],
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["updates_done"] == done + 1 and result["resumed_from"]


def test_local_models_sample_cooler_unless_told() -> None:
    from mlagent_tui.core.session import SessionConfig

    assert SessionConfig(model="local").sampling_temperature() == 0.2
    assert SessionConfig(model="local:/x.gguf", agent="solve").sampling_temperature() == 0.2
    assert SessionConfig(model="openai/gpt-4o").sampling_temperature() is None
    assert SessionConfig(model="local", temperature=0.9).sampling_temperature() == 0.9
    assert SessionConfig(model="local", agent="solve").agent_options() == {"temperature": 0.2}


def test_solve_prompt_shows_columns_rows_and_the_starter(tiny_task) -> None:
    from mlagent_tui.core.agent import AgentState
    from mlagent_tui.core.session import solve_preview
    from trainer.prompts import agent_messages

    task = Task(tiny_task)
    preview = solve_preview(task, 0)
    system = agent_messages(task, "solve", AgentState(task=task, step=1, preview=preview))[0]
    assert "train.csv:" in system["content"] and "Starter file train.py" in system["content"]
    assert preview == solve_preview(task, 0)  # deterministic: live and trainer prompts agree
