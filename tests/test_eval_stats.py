"""Honest figures in `mlagent-train eval`: Wilson intervals beside each rate, and `--against
MODEL`, the same sessions run with a second model and compared pair by pair (sign test)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trainer.cli import app
from trainer.provenance import TrainingData, sidecar_of
from trainer.stats_tests import interval_text, paired, sign_test, wilson

from .conftest import ROOT, bwrap_ready
from .train_helpers import solve_text

TASK = "breast-cancer"
STARTER = (ROOT / "tasks" / TASK / "env" / "train.py").read_text()
GARBAGE = "open('submission.csv', 'w').write('garbage\\n')\nprint('wrote it')\n"
runner = CliRunner()


def test_wilson_matches_the_textbook_values() -> None:
    lo, hi = wilson(9, 12)  # 75% of 12: the shipped model's valid rate on 12 sessions
    assert (round(lo, 3), round(hi, 3)) == (0.468, 0.911)
    assert wilson(0, 10)[0] == 0.0 and round(wilson(0, 10)[1], 3) == 0.278
    assert wilson(10, 10)[1] == 1.0 and wilson(0, 0) == (0.0, 1.0)
    assert interval_text(9, 12) == "75% [47-91%]"
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_sign_test_is_exact() -> None:
    assert sign_test(0, 0) == 1.0 and sign_test(3, 3) == 1.0
    assert math.isclose(sign_test(5, 1), 14 / 64)  # RL against sft: 5 better, 1 worse
    assert math.isclose(sign_test(1, 5), 14 / 64)
    assert math.isclose(sign_test(10, 0), 2 / 1024)
    assert math.isclose(sign_test(8, 2), 2 * (1 + 10 + 45) / 1024)
    got = paired([(("a", 1, 0), 0.5), (("a", 2, 0), 0.1), (("b", 1, 0), 0.3)], [
        (("a", 1, 0), 0.2), (("a", 2, 0), 0.1), (("c", 1, 0), 1.0),
    ])  # fmt: skip
    assert (got.sessions, got.better, got.worse, got.same, got.unmatched) == (2, 1, 0, 1, 2)
    assert got.mean_difference == 0.15 and got.p_value == 1.0


def _replay(path: Path, script: str) -> Path:
    path.write_text(json.dumps({"content": solve_text(script)}) + "\n")
    return path


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_against_compares_the_same_sessions(tmp_path: Path) -> None:
    good, bad = _replay(tmp_path / "good.jsonl", STARTER), _replay(tmp_path / "bad.jsonl", GARBAGE)
    args = ["eval", "--model", f"replay:{good}", "--tasks", TASK, "--seeds", "1,2"]
    args += ["--max-steps", "1", "--against", f"replay:{bad}", "--no-starter"]  # their drafts
    done = runner.invoke(app, [*args, "--json"])
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["intervals"]["valid_rate"] == [round(x, 4) for x in wilson(2, 2)]
    against = report["against"]
    assert against["paired"] == {
        "sessions": 2,
        "better": 2,
        "worse": 0,
        "same": 0,
        "mean_difference": report["mean_reward"],
        "p_value": 0.5,
        "unmatched": 0,
    }
    assert against["valid_rate"] == 0.0 and "cannot be checked" in against["held_out_note"]
    assert {"intervals", "against"} <= set(report["definitions"])
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.stderr
    out = " ".join(text.stdout.split())
    assert "[34-100%]" in out and "did better in 2, worse in 0" in out
    assert "sign test p = 0.5" in out and "no training record" in out


def test_against_a_model_trained_on_the_seeds_is_refused(tmp_path: Path) -> None:
    good = _replay(tmp_path / "good.jsonl", STARTER)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    TrainingData(tasks={TASK: [1]}).save_sidecar(model)
    assert sidecar_of(model).is_file()
    done = runner.invoke(
        app,
        ["eval", "--model", f"replay:{good}", "--tasks", TASK, "--seeds", "1"]
        + ["--against", f"local:{model}"],
    )
    assert done.exit_code == 2
    assert "--against" in done.stderr and "trained on seeds 1" in done.stderr
