"""mlagent-train end to end on the CPU with the real bundled model, kept tiny."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlagent_tui.core.store import Store
from trainer.cli import app

from .conftest import TINY, bwrap_ready

runner = CliRunner()
pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_help_on_every_command() -> None:
    for command in ([], ["data"], ["run"], ["runs"], ["export"]):
        code, out, _ = invoke(*command, "--help")
        assert code == 0 and "Usage" in out


def test_data_on_a_database_without_sessions(tmp_path) -> None:
    db = tmp_path / "empty.db"
    code, _, err = invoke("data", "--db", str(db))
    assert code == 1 and "no database" in err  # a mistyped path never makes a new database
    Store(db).close()
    code, out, _ = invoke("data", "--db", str(db))
    assert code == 0 and "no trainable sessions" in out
    code, out, _ = invoke("data", "--db", str(db), "--json")
    summary = json.loads(out)
    assert code == 0 and summary["samples"] == 0 and summary["sessions_total"] == 0
    code, out, _ = invoke("run", "--recipe", "offline", "--db", str(db), "--json")
    assert code == 0 and json.loads(out)["updates_done"] == 0
    assert "no trainable sessions" in json.loads(out)["message"]


def test_single_step_run_resume_and_runs(tmp_path) -> None:
    home, out_dir, plots = tmp_path / "home", tmp_path / "run", tmp_path / "plots"
    common = ["--home", str(home), "--json"]
    code, out, err = invoke(
        "run", "--recipe", "single-step", "--task-dir", str(TINY), "--steps", "1",
        "--group-size", "2", "--max-new-tokens", "48",  # progress by structure (the default)
        "--out", str(out_dir), "--plots", str(plots), *common,
    )  # fmt: skip
    assert code == 0, err
    assert "loading the policy: the bare base" in err and "generating 2 answers" in err
    assert err.count("update 1: reward") == 1  # once, not again from the bar's last state
    result = json.loads(out)
    assert result["updates_done"] == 1 and len(result["reward_mean"]) == 1
    assert len(result["valid_rate"]) == 1 and result["seconds_per_update"][0] > 0
    assert len(result["all_equal_groups"]) == 1 and result["all_equal_groups"][0] in (0, 1)
    assert result["out_dir"] == str(out_dir) and (out_dir / "latest").is_file()
    assert sorted(Path(p).name for p in result["plots"]) == [
        "exec_time.png",
        "reward.png",
        "valid_rate.png",
    ]
    # The rollouts are real sessions named after the policy checkpoint.
    code, out, _ = invoke("data", "--home", str(home), "--json")
    summary = json.loads(out)
    assert summary["sessions_total"] == 2
    assert all(name.startswith("policy:smollm2@train-") for name in summary["models"])
    assert summary["samples_with_logprobs"] == summary["samples"] > 0  # the sampler's ids kept

    code, out, err = invoke("run", "--resume", str(out_dir), "--steps", "2", *common)
    assert code == 0, err
    resumed = json.loads(out)
    assert resumed["updates_done"] == 2 and resumed["run_id"] == result["run_id"]
    assert resumed["reward_mean"][0] == result["reward_mean"][0]
    assert resumed["resumed_from"].endswith("update-0001")

    code, out, _ = invoke("runs", *common)
    (run,) = json.loads(out)["runs"]
    assert run["status"] == "finished" and run["updates"] == 2 and len(run["reward_mean"]) == 2

    gguf = tmp_path / "policy.gguf"
    code, out, err = invoke(
        "export", "--run", str(out_dir), "--to", str(gguf), "--no-verify", "--json"
    )
    assert code == 0, err
    exported = json.loads(out)
    assert exported["checkpoint"].endswith("update-0002") and gguf.stat().st_size > 1_000_000
    code, _, err = invoke("export", "--run", str(tmp_path), "--to", str(gguf))
    assert code == 1 and "no checkpoint" in err

    broken = tmp_path / "broken"
    shutil.copytree(out_dir, broken)
    (broken / "checkpoints" / "update-0002" / "state.json").write_text("{not json")
    code, _, err = invoke("run", "--resume", str(broken), "--steps", "3")
    assert code == 1 and "corrupt" in err and "state.json" in err
    (broken / "latest").write_text("update-0099\n")
    code, _, err = invoke("run", "--resume", str(broken), "--steps", "3")
    assert code == 1 and "not a checkpoint folder" in err


def test_bad_input_is_refused_clearly(tmp_path) -> None:
    code, _, err = invoke("run", "--recipe", "single-step", "--home", str(tmp_path))
    assert code == 1 and "needs tasks" in err
    code, _, err = invoke("run", "--recipe", "nope", "--tasks", "digits")
    assert code == 1 and "unknown recipe" in err
    code, _, err = invoke("run", "--resume", str(tmp_path))
    assert code == 1 and "not a training run folder" in err
    args = ("run", "--recipe", "single-step", "--tasks", "digits", "--home", str(tmp_path))
    code, _, err = invoke(*args, "--improve-prob", "1.5")
    assert code == 1 and "improve_prob" in err and "less than or equal to 1" in err
    code, _, err = invoke(*args, "--precision", "fp8")
    assert code == 1 and "precision" in err and "'float32' or 'bfloat16'" in err
    # NF4 weights need a GPU: refused in one line on the CPU, before any rollout
    code, _, err = invoke(*args, "--load-in-4bit", "--steps", "1")
    assert code == 1 and "4-bit loading needs a CUDA GPU" in err
