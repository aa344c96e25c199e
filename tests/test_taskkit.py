"""mlagent_tui.taskkit, the task authors' module: its names resolve, its metrics are sklearn's, the
old module names still import (with a warning), and a grader that imports it runs inside the
sandbox (bwrap and docker) from the copy tasks/kit.py installs, as `mlagent tasks synth` runs
generated graders there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mlagent_tui.taskkit as taskkit
from mlagent_tui.core.sandbox import make_executor
from mlagent_tui.core.synth.answers import extract_json
from mlagent_tui.core.synth.execution import SandboxRunner
from mlagent_tui.core.synth.roles import DeveloperAnswer, GraderAnswer, StrategistAnswer
from mlagent_tui.core.synth.stages import run_data_stage, run_grader_stage
from mlagent_tui.core.tasks.kit import install_taskkit

from . import synth_helpers as h
from .conftest import ROOT, bwrap_ready, docker_ready

BACKENDS = [
    pytest.param("local", marks=pytest.mark.skipif(not bwrap_ready(), reason="no bubblewrap")),
    pytest.param("docker", marks=pytest.mark.docker),
]

GRADER = '''"""A taskkit grader: accuracy of a 0/1 column; the old module name beside the new."""
from mlagent_tui.core.grading import SubmissionError as OldError
from mlagent_tui.taskkit import (
    SubmissionError, accuracy, check_whole, load_answers, load_csv_submission, run_grader)


def grade(submission, answers_dir, split, sandbox):
    assert OldError is SubmissionError and sandbox in ("local", "docker")
    answers = load_answers(answers_dir, split)
    sub = load_csv_submission(submission, id_column="id", columns=["y"], answers=answers)
    return accuracy(answers["y"], check_whole(sub["y"], "y", 0, 1))


if __name__ == "__main__":
    run_grader(grade)
'''


def need(backend: str) -> None:
    if backend == "docker" and not docker_ready():
        pytest.skip("no dockerd or sandbox image")


def test_every_public_name_resolves_and_is_documented() -> None:
    for name in taskkit.__all__:
        value = getattr(taskkit, name)
        if callable(value):
            assert (value.__doc__ or "").strip(), f"taskkit.{name} has no docstring"
        assert name in taskkit.__doc__, f"taskkit's docstring does not list {name}"
    with pytest.raises(AttributeError):
        taskkit.no_such_name  # noqa: B018


def test_metrics_agree_with_scikit_learn() -> None:
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    p = np.round(rng.random(200), 1)  # ties, which roc_auc counts half
    c_true, c_pred = rng.integers(0, 4, 200), rng.integers(0, 5, 200)
    r_true, r_pred = rng.normal(size=200), rng.normal(size=200)
    assert taskkit.roc_auc(y, p) == pytest.approx(sk.roc_auc_score(y, p))
    assert taskkit.accuracy(c_true, c_pred) == pytest.approx(sk.accuracy_score(c_true, c_pred))
    assert taskkit.macro_f1(c_true, c_pred) == pytest.approx(
        sk.f1_score(c_true, c_pred, average="macro")
    )
    assert taskkit.log_loss(y, p) == pytest.approx(sk.log_loss(y, np.clip(p, 1e-15, 1 - 1e-15)))
    assert taskkit.mae(r_true, r_pred) == pytest.approx(sk.mean_absolute_error(r_true, r_pred))
    assert taskkit.rmse(r_true, r_pred) == pytest.approx(
        np.sqrt(sk.mean_squared_error(r_true, r_pred))
    )
    assert taskkit.smape([0.0, 2.0], [0.0, 2.0]) == 0.0
    with pytest.raises(ValueError, match="single class"):
        taskkit.roc_auc([1, 1], [0.2, 0.3])
    with pytest.raises(taskkit.SubmissionError, match="whole numbers 0-9"):
        taskkit.check_whole([1.5], "label", 0, 9)
    with pytest.raises(taskkit.SubmissionError, match=r"\[0, 1\]"):
        taskkit.check_range([1.2], "target", 0, 1)


@pytest.mark.parametrize("old", ["grading", "grading_worker", "grading_games"])
def test_old_module_names_import_the_same_module_with_a_warning(old: str) -> None:
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        f"    old = importlib.import_module('mlagent_tui.core.{old}')\n"
        f"new = importlib.import_module('mlagent_tui.core.tasks.{old}')\n"
        "import mlagent_tui.core as core\n"
        f"print(old is new, core.{old} is new, [str(w.message) for w in seen])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("True True ") and "deprecated" in proc.stdout
    assert "mlagent_tui.taskkit" in proc.stdout


def write_grading_folder(folder: Path) -> None:
    install_taskkit(folder)
    (folder / "answers").mkdir()
    (folder / "answers" / "test.csv").write_text("id,y\n1,0\n2,1\n3,1\n4,0\n")
    (folder / "right.csv").write_text("id,y\n4,0\n3,1\n2,1\n1,1\n")
    (folder / "halves.csv").write_text("id,y\n1,0.5\n2,1\n3,1\n4,0\n")
    (folder / "grade.py").write_text(GRADER)


@pytest.mark.parametrize("backend", BACKENDS)
def test_taskkit_grader_runs_inside_the_sandbox(backend: str, tmp_path: Path) -> None:
    need(backend)
    write_grading_folder(tmp_path)
    probe = (
        "import mlagent_tui.taskkit as k\n"
        "try:\n    k.worker_pool\nexcept ImportError as e:\n    print('HOSTONLY', e)\n"
    )
    (tmp_path / "probe.py").write_text(probe)
    executor = make_executor(backend, workspace=tmp_path)
    try:
        out = {}
        for sub in ("right.csv", "halves.csv"):
            cmd = f"MLAGENT_SANDBOX={backend} PYTHONPATH=. python grade.py --submission {sub} "
            res = executor.run(cmd + "--answers answers --split test", cwd=tmp_path, timeout_s=60)
            assert res.exit_code == 0, res.output
            out[sub] = json.loads(res.output.strip().splitlines()[-1])
        res = executor.run("PYTHONPATH=. python probe.py", cwd=tmp_path, timeout_s=60)
    finally:
        executor.close()
    assert out["right.csv"] == {"score": 0.75, "valid": True, "error": None}
    assert not out["halves.csv"]["valid"]
    assert "whole numbers 0-1" in out["halves.csv"]["error"]
    assert "HOSTONLY" in res.output and "works only on the host" in res.output, res.output


@pytest.fixture(scope="module")
def synth_data(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """The replayed developer's data for the seedling task, prepared in the sandbox once."""
    if not bwrap_ready():
        pytest.skip("bubblewrap missing")
    scratch = tmp_path_factory.mktemp("synth")
    strategy = StrategistAnswer.model_validate(extract_json(h.strategist()))
    dev = DeveloperAnswer.model_validate(extract_json(h.developer()))
    data = run_data_stage(dev, strategy.spec, SandboxRunner("local", 60.0, 1024), scratch)
    return strategy.spec, data, scratch


TASKKIT_GRADE = h.GRADE.replace(
    "from mlagent_tui.taskkit import (\n    SubmissionError, load_answers, load_csv_submission, "
    "run_grader)",
    "from mlagent_tui.taskkit import (\n    SubmissionError, accuracy, check_range, load_answers,"
    " load_csv_submission, run_grader)",
).replace(
    'return float(np.mean(pred == answers["survived"].to_numpy(dtype=int)))',
    'return accuracy(answers["survived"].to_numpy(dtype=int), pred)',
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_generated_taskkit_grader_passes_synth_sandbox_check(
    backend: str, synth_data: tuple
) -> None:
    """The grader stage of `mlagent tasks synth`: a grader written to the MLOps prompt (taskkit
    imports, its metrics) grades the sample, the answers, references and garbage in the sandbox."""
    need(backend)
    assert "accuracy(" in TASKKIT_GRADE and "mlagent_tui.taskkit" in TASKKIT_GRADE
    spec, data, scratch = synth_data
    runner = SandboxRunner(backend, 60.0, 1024)
    score = run_grader_stage(GraderAnswer(grade_py=TASKKIT_GRADE), spec, data, runner, scratch)
    assert 0.5 < score <= 1.0
