"""`mlagent-train eval` and the training-data record it holds evaluations out of.

Sessions are real (breast-cancer, the local sandbox) and driven by replay files, one ReplayModel
per session; budgets are one or two steps so that a handful of sessions cover every figure.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import find_task
from trainer.cli import app
from trainer.data import unit_score
from trainer.evaluate import EvalRequest, default_eval_workers, plan_eval
from trainer.provenance import (
    ProvenanceError,
    TrainingData,
    sidecar_of,
    training_data_of_model,
)

from .agent_helpers import research, write_replay
from .conftest import ROOT, bwrap_ready
from .train_helpers import solve_text

TASK = "breast-cancer"
STARTER = (ROOT / "tasks" / TASK / "env" / "train.py").read_text()
GARBAGE = "open('submission.csv', 'w').write('garbage\\n')\nprint('wrote it')\n"
runner = CliRunner()
needs_sandbox = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["eval", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary folders (the eval's own home included) go here, so a test sees leftovers."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


# -- the record ------------------------------------------------------------------------------
def test_training_data_add_merge_save_load(tmp_path: Path) -> None:
    data = TrainingData(runs=["run-a"])
    for seed in (3, 1, 3):
        data.add(TASK, seed)
    merged = data.merge(TrainingData(tasks={TASK: [2], "digits": [0]}, runs=["run-b"]))
    assert data.tasks == {TASK: [1, 3]}  # merge leaves both inputs as they were
    assert merged.tasks == {TASK: [1, 2, 3], "digits": [0]} and merged.runs == ["run-a", "run-b"]

    run = tmp_path / "run"
    file = merged.save(run)
    assert file == run / "training_data.json" and not [p for p in run.iterdir() if p != file]
    checkpoint = run / "checkpoints" / "update-0002"
    checkpoint.mkdir(parents=True)
    for where in (run, checkpoint, file):
        assert TrainingData.load(where) == merged
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(ProvenanceError, match="model.gguf.training.json"):
        TrainingData.load(gguf)
    sidecar_of(gguf).write_text(json.dumps({"training_data": merged.model_dump()}))  # card form
    assert TrainingData.load(gguf) == merged

    for text in ("{not json", '{"runs": []}', '{"tasks": {"x": ["one"]}}', "[]"):
        (tmp_path / "bad.json").write_text(text)
        with pytest.raises(ProvenanceError, match="bad.json"):
            TrainingData.load(tmp_path / "bad.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProvenanceError, match="no training_data.json"):
        TrainingData.load(tmp_path / "empty")


def test_training_data_of_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert training_data_of_model("smollm2") is None
    assert training_data_of_model("openai/gpt-4o-mini") is None
    assert training_data_of_model("local") is None  # tests run without a shipped adapter
    gguf = tmp_path / "m.gguf"
    assert training_data_of_model(f"local:{gguf}") is None  # no sidecar: nothing known
    TrainingData(tasks={TASK: [0]}).save(tmp_path)
    (tmp_path / "training_data.json").rename(sidecar_of(gguf))
    assert training_data_of_model(f"local:{gguf}") == TrainingData(tasks={TASK: [0]})

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    monkeypatch.setenv("MLAGENT_ADAPTER_DIR", str(adapter))
    assert training_data_of_model("local") is None  # a folder without weights: the bare base
    (adapter / "adapter_model.safetensors").write_bytes(b"weights")
    with pytest.raises(ProvenanceError, match="card.json"):
        training_data_of_model("local")  # an adapter nobody can say the training data of
    card = {"name": "x", "training_data": {"tasks": {TASK: [0, 1]}, "runs": ["r"]}}
    (adapter / "card.json").write_text(json.dumps(card))
    assert training_data_of_model("local") == TrainingData(tasks={TASK: [0, 1]}, runs=["r"])


def test_sessions_at_a_time_by_where_the_model_runs(tmp_path: Path) -> None:
    """An in-process model decodes on every core: its sessions run one at a time (two at a
    time only contend); an API or replay model leaves the CPU to the sandboxed scripts."""
    cores = max(1, os.cpu_count() or 1)
    assert default_eval_workers("local") == default_eval_workers("smollm2") == 1
    assert default_eval_workers("local:/some/model.gguf") == 1
    assert default_eval_workers("replay:/r.jsonl") == default_eval_workers("gpt-4o") == cores
    replay = write_replay(tmp_path / "r.jsonl", [solve_text(STARTER)])
    plan = plan_eval(EvalRequest(model=f"replay:{replay}", tasks=[TASK], seeds=["100"]))
    assert (plan.workers, plan.threads) == (cores, cores)
    plan = plan_eval(
        EvalRequest(model="smollm2", tasks=[TASK], seeds=["100"], workers=3, threads=1)
    )
    assert (plan.workers, plan.threads) == (3, 1)


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "smollm2", "--seeds", "1"], "no tasks"),
        (["--model", "smollm2", "--tasks", "no-such-task", "--seeds", "1"], "no-such-task"),
        (["--model", "smollm2", "--tasks", TASK], "--seeds is required"),
        (["--model", "smollm2", "--tasks", TASK, "--seeds", " , "], "--seeds is required"),
        (["--model", "smollm2", "--tasks", TASK, "--seeds", "1,x"], "whole numbers"),
        (["--model", "smollm2", "--tasks", TASK, "--seeds", "-1"], "0 or more"),
        (["--model", "smollm2", "--tasks", TASK, "--seeds", "1", "--samples", "0"], "--samples"),
        (["--model", "smollm2", "--tasks", TASK, "--seeds", "1", "--threads", "0"], "--threads"),
        (["--model", "smollm2", "--tasks", TASK, "--seeds", "1", "--agent", "x"], "unknown agent"),
        (["--model", "policy:run", "--tasks", TASK, "--seeds", "1"], "export"),
        (["--model", "replay:/no/such.jsonl", "--tasks", TASK, "--seeds", "1"], "not found"),
        (["--model", "local:/no/such.gguf", "--tasks", TASK, "--seeds", "1"], "no GGUF"),
        (["--model", "smollm2", "--tasks", TASK, "--seeds", "1", "--trained-on", "/no"], "/no"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(
    tmp_path: Path, private_tmp: Path, args: list[str], message: str
) -> None:
    home = tmp_path / "kept"
    code, out, err = invoke(*args, "--home", str(home), "--json")
    assert code == 2 and out == "" and message in err, err
    assert not home.exists() and not list(private_tmp.iterdir())


def test_trained_tasks_are_refused_unless_named_with_new_seeds(
    tmp_path: Path, private_tmp: Path
) -> None:
    run = tmp_path / "run"
    TrainingData(tasks={TASK: [1, 7]}, runs=["run-1"]).save(run)
    trained = ["--trained-on", str(run), "--model", "smollm2", "--json"]
    code, _, err = invoke(*trained, "--tasks", TASK, "--seeds", "2,7")
    assert code == 2 and f"task {TASK} was trained on seeds 1,7" in err
    task_dir = str(ROOT / "tasks" / TASK)
    code, _, err = invoke(*trained, "--task-dir", task_dir, "--seeds", "3")
    assert code == 2 and f"task {TASK} was trained on" in err and "named in --tasks" in err

    # The model's own record (a GGUF's sidecar) counts the same; nothing is loaded to refuse.
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    TrainingData(tasks={TASK: [0]}).save(tmp_path)
    (tmp_path / "training_data.json").rename(sidecar_of(gguf))
    code, _, err = invoke("--model", f"local:{gguf}", "--tasks", TASK, "--seeds", "0")
    assert code == 2 and "seeds 0" in err and "m.gguf.training.json" in err
    assert not list(private_tmp.iterdir())


# -- real sessions ---------------------------------------------------------------------------
@needs_sandbox
def test_rates_per_task_and_held_out_seeds(tmp_path: Path, private_tmp: Path) -> None:
    replay = write_replay(tmp_path / "good.jsonl", [solve_text(STARTER, "run the starter")])
    run = tmp_path / "run"
    TrainingData(tasks={TASK: [0]}, runs=["run-1"]).save(run)
    code, out, err = invoke(
        "--model", f"replay:{replay}", "--tasks", TASK, "--seeds", "1,2", "--samples", "1",
        "--max-steps", "1", "--workers", "2", "--trained-on", str(run), "--json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    spec = find_task(TASK).spec
    rows = report["sessions"]
    assert [(r["seed"], r["valid"]) for r in rows] == [(1, True), (2, True)]
    beats = [r["final_score"] > spec.baseline.score for r in rows]
    rewards = [unit_score(spec, r["final_score"], True) for r in rows]
    expected = {
        "valid_rate": 1.0,
        "beats_baseline_rate": sum(beats) / 2,
        "medal_rate": sum(r["medal"] is not None for r in rows) / 2,
        "mean_reward": round(sum(rewards) / 2, 4),
        "samples": 2,
    }
    for figures in (report, report["tasks"][TASK]):
        assert {k: figures[k] for k in expected} == expected
    assert report["tasks"][TASK]["baseline_score"] == spec.baseline.score
    assert report["held_out"] == {
        "tasks": [],
        "held_out_seeds": {TASK: {"trained_seeds": [0], "eval_seeds": [1, 2]}},
        "training_data": str(run / "training_data.json"),
    }
    assert report["agent"] == "solve" and report["max_steps"] == 1 and report["home"] is None
    assert report["starter"] is True  # step 1 ran the task's starter (as `mlagent run` does)
    # the starter alone never beats itself, whatever it scores against seed 0's baseline
    assert [r["starter_score"] for r in rows] == [r["final_score"] for r in rows]
    assert [r["beats_starter"] for r in rows] == [False, False]
    assert (report["beats_starter_rate"], report["starter_sessions"]) == (0.0, 2)
    assert set(report["definitions"]) >= {"valid", "beats_baseline", "medal", "mean_reward"}
    assert err.count(f"{TASK} seed ") == 2  # one progress line per session, on stderr
    assert not list(private_tmp.iterdir())  # the temporary home is gone


@needs_sandbox
def test_invalid_sessions_kept_in_a_home_say_why(tmp_path: Path, private_tmp: Path) -> None:
    replay = write_replay(tmp_path / "bad.jsonl", [solve_text(GARBAGE)])
    home = tmp_path / "kept"
    args = ["--model", f"replay:{replay}", "--tasks", TASK, "--seeds", "3", "--max-steps", "1"]
    code, out, err = invoke(*args, "--home", str(home), "--no-starter")  # the model's draft
    assert code == 0, err
    assert "valid" in out and "mean reward" in out and "all" in out  # the readable table
    assert f"{TASK} seed 3 #0: invalid" in err and "submission:" in err
    assert f"--home {home.resolve()}" in err  # how to replay what was kept
    rows = Store(home / "mlagent.db").sessions()
    solve = [r for r in rows if r["agent"] == "solve"]
    assert len(solve) == 1 and not solve[0]["valid"]
    # beside it, the starter run once at seed 3: what "better than the starter" is judged by
    assert [r["agent"] for r in rows if r is not solve[0]] == ["baseline"]
    assert not list(private_tmp.iterdir())


@needs_sandbox
def test_research_agent(tmp_path: Path, private_tmp: Path) -> None:
    responses = [
        research("Execute Script", {"script_name": "train.py"}),
        research("Final Answer", {"final_answer": "the starter"}),
    ]
    replay = write_replay(tmp_path / "research.jsonl", responses)
    code, out, err = invoke(
        "--model", f"replay:{replay}", "--agent", "research", "--tasks", TASK, "--seeds", "4",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["agent"] == "research" and report["max_steps"] == 15  # the research default
    (row,) = report["sessions"]
    assert row["valid"] and row["steps"] == 2 and row["status"] == "finished"
    assert report["valid_rate"] == 1.0 and report["held_out"]["tasks"] == [TASK]
    assert report["held_out"]["training_data"] is None
