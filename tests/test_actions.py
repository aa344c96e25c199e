"""Actions one by one, through the registry, against a real prepared workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlagent_tui.core.agent.actions import REGISTRY, ActionContext, run_action, visible_actions
from mlagent_tui.core.agent.memory import Memory, derive_tags
from mlagent_tui.core.llm import make_model
from mlagent_tui.core.sandbox.local import LocalExecutor
from mlagent_tui.core.tasks import Task
from mlagent_tui.core.workspace import Workspace

from .agent_helpers import write_replay
from .conftest import bwrap_ready

MLAB_NAMES = {
    "List Files": ["dir_path"],
    "Read File": ["file_name"],
    "Write File": ["file_name", "content"],
    "Append File": ["file_name", "content"],
    "Copy File": ["source", "destination"],
    "Inspect Script Lines": ["script_name", "start_line_number", "end_line_number"],
    "Execute Script": ["script_name"],
    "Undo Edit Script": ["script_name"],
    "Understand File": ["file_name", "things_to_look_for"],
    "Edit Script (AI)": ["script_name", "edit_instruction", "save_name"],
    "Final Answer": ["final_answer"],
    "Validate": [],
    "Memory Write": ["content"],
    "Memory Read": ["query"],
}


@pytest.fixture
def ctx(tmp_path: Path, tiny_task: Path) -> ActionContext:
    task = Task(tiny_task)
    ws_root, private = tmp_path / "ws", tmp_path / "private"
    task.prepare(ws_root, private)
    replay = write_replay(
        tmp_path / "r.jsonl",
        [
            "The file has columns id, x and y.",
            "```python\nprint('edited')\n```",
            "```python\nprint('segment')\n```",
        ],
    )
    return ActionContext(
        workspace=Workspace(ws_root, tmp_path / "meta", read_only=task.spec.read_only),
        task=task,
        private=private,
        executor=LocalExecutor(use_bwrap=bwrap_ready() or None),
        model=make_model(f"replay:{replay}"),
        memory=Memory(),
    )


def test_names_and_arguments_are_mlagentbench_s() -> None:
    for name, args in MLAB_NAMES.items():
        assert list(REGISTRY[name].input_model.model_fields) == args, name
    assert "Run Solution" not in {a.name for a in visible_actions()}


def test_file_actions(ctx: ActionContext) -> None:
    assert "train.csv" in run_action(ctx, "list files", {"dir_path": "."}).text
    run_action(ctx, "Write File", {"file_name": "sub/a.py", "content": "a = 1\nb = 2\nc = 3\n"})
    run_action(ctx, "Append File", {"file_name": "sub/a.py", "content": "d = 4\n"})
    obs = run_action(
        ctx,
        "Inspect Script Lines",
        {"script_name": "sub/a.py", "start_line_number": 2, "end_line_number": 4},
    )
    assert "2: b = 2" in obs.text and "4: d = 4" in obs.text and "1: a" not in obs.text
    run_action(ctx, "Copy File", {"source": "sub/a.py", "destination": "b.py"})
    assert (ctx.workspace.root / "b.py").read_text().endswith("d = 4\n")
    obs = run_action(ctx, "Undo Edit Script", {"script_name": "sub/a.py"})
    assert "d = 4" not in obs.text
    bad = run_action(
        ctx,
        "Inspect Script Lines",
        {"script_name": "sub/a.py", "start_line_number": 1, "end_line_number": 500},
    )
    assert not bad.ok and "limited to 100" in bad.text
    wrong = run_action(ctx, "Read File", {"filename": "x"})
    assert not wrong.ok and "file_name" in wrong.text and "Expected" in wrong.text


def test_llm_backed_actions_record_and_diff(ctx: ActionContext) -> None:
    recorded = []
    ctx.record = recorded.append
    obs = run_action(
        ctx, "Understand File", {"file_name": "train.csv", "things_to_look_for": "columns"}
    )
    assert "columns id, x and y" in obs.text
    obs = run_action(
        ctx,
        "Edit Script (AI)",
        {"script_name": "train.py", "edit_instruction": "print edited", "save_name": "train2.py"},
    )
    assert "+print('edited')" in obs.text and (ctx.workspace.root / "train2.py").exists()
    obs = run_action(
        ctx,
        "Edit Script Segment (AI)",
        {
            "script_name": "train.py",
            "start_line_number": 1,
            "end_line_number": 1,
            "edit_instruction": "x",
            "save_name": "train3.py",
        },
    )
    assert (ctx.workspace.root / "train3.py").read_text().startswith("print('segment')")
    assert [r.purpose for r in recorded] == ["understand_file", "edit_script", "edit_script"]


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_execute_validate_and_final(ctx: ActionContext) -> None:
    assert not run_action(ctx, "Validate", {}).ok  # nothing submitted yet
    obs = run_action(ctx, "Execute Script", {"script_name": "train.py"})
    assert obs.ok and "wrote submission.csv" in obs.text
    assert run_action(ctx, "Validate", {}).score == pytest.approx(1.0)
    final = run_action(ctx, "Final Answer", {"final_answer": "done"})
    assert final.ends_session and final.valid


def test_memory_by_similarity() -> None:
    mem = Memory()
    mem.write("gradient boosting reached mae 0.4 #boosting", 1)
    mem.write("the data has 40 rows and a column x", 2)
    mem.write("learning rate 0.1 was best for boosting", 3)
    hits = mem.read("what did boosting score?", k=2)
    assert {n.step for _, n in hits} == {1, 3}
    assert "3 note(s)" in mem.summary() and "boosting" in mem.summary()
    assert derive_tags("plain words about scaling features scaling") == [
        "scaling",
        "plain",
        "words",
    ]
