"""Procedural training tasks: deterministic, varied, valid task folders that a session can solve.

Generation runs real scripts (two small tasks of seed 4: a binary task with categories and gaps,
a regression with a TARGET constant), once per module; the task check and a replayed session
then use the folders as any task folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlagent_tui.core.session import Session, SessionConfig
from mlagent_tui.core.tasks import Task, check_task, tree_hashes
from trainer.cli import app
from trainer.procedural import design_task, generate_tasks

from .agent_helpers import research, write_replay
from .conftest import bwrap_ready

SEED = 4  # its first two tasks are small and cover categories, gaps and both target styles
runner = CliRunner()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    out = tmp_path_factory.mktemp("procedural") / "tasks"
    return out, generate_tasks(out, 2, SEED)


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["procedural", *args])
    return result.exit_code, result.stdout, result.stderr


def test_designs_vary_across_a_batch_and_repeat_for_a_seed() -> None:
    designs = [design_task(0, i) for i in range(16)]
    assert len({d.name for d in designs}) == 16
    assert all(d.name.startswith(f"proc-0-{i}-") for i, d in enumerate(designs))
    assert len({d.domain for d in designs}) >= 5 and len({d.target.name for d in designs}) >= 6
    assert {d.task_type for d in designs} == {
        "binary-classification",
        "multiclass-classification",
        "regression",
    }
    assert {d.metric for d in designs} >= {"accuracy", "roc_auc", "rmse", "mae"}
    assert any(d.categorical for d in designs) and any(
        c.missing for d in designs for c in d.numeric
    )
    assert {d.target_var for d in designs} == {True, False}
    for d in designs:
        assert 200 <= d.rows <= 3000 and 3 <= len(d.order) <= 25
        assert d.target.name not in d.order and set(d.baseline_features) <= set(d.order)
        assert not any(c.missing for c in d.numeric if c.name in d.baseline_features)
    assert design_task(0, 3) == design_task(0, 3)
    assert design_task(1, 3) != design_task(0, 3)
    column_sets = {tuple(d.order) for d in designs}
    assert len(column_sets) == 16  # no two tasks share their columns


def test_generated_folders_keep_the_format(made: tuple[Path, list]) -> None:
    out, tasks = made
    assert [t.name for t in tasks] == [design_task(SEED, i).name for i in range(2)]
    for index, t in enumerate(tasks):
        folder = out / t.name
        task = Task(folder)
        spec = task.spec
        assert spec.name == t.name and spec.baseline.score == pytest.approx(t.baseline)
        assert spec.submission.columns == [t.target]
        assert set(task.references()) == {"median", "bronze", "silver", "gold"}
        thresholds = spec.thresholds.model_dump()
        for level, threshold in thresholds.items():  # each reference reaches its own level ...
            assert spec.reaches(t.scores[level], threshold)
        assert spec.medal(spec.baseline.score) is None  # ... and the starter earns no medal
        assert spec.better(t.scores["gold"], spec.baseline.score)
        description = task.description
        for section in ("## Files", "## Columns", "## Metric", "## Submission"):
            assert section in description
        design = design_task(SEED, index)  # every attempt keeps the columns and target
        assert all(f"`{c}`" in description for c in design.order)
        assert f"id,{t.target}" in description
        word = "Higher is better" if spec.metric.higher_is_better else "Lower is better"
        assert word in description
        train = (folder / "env" / "train.py").read_text()
        assert "FEATURES = [" in train and 'print("wrote submission.csv")' in train
        gold = (folder / "private" / "reference" / "gold.py").read_text()
        assert gold.splitlines()[-2:] == train.splitlines()[-2:]  # an edit of the starter


def test_two_generated_tasks_pass_the_task_check(made: tuple[Path, list]) -> None:
    if not bwrap_ready():
        pytest.skip("bubblewrap missing")
    out, tasks = made
    for t in tasks:
        report = check_task(Task(out / t.name))
        assert report.ok, [c for c in report.checks if not c.ok]


def test_a_replayed_gold_session_beats_the_baseline(made: tuple[Path, list], tmp_path, home, store):
    if not bwrap_ready():
        pytest.skip("bubblewrap missing")
    out, tasks = made
    folder = out / tasks[0].name
    gold = (folder / "private" / "reference" / "gold.py").read_text()
    replay = write_replay(
        tmp_path / "gold.jsonl",
        [
            research("Write File", {"file_name": "gold.py", "content": gold}),
            research("Execute Script", {"script_name": "gold.py"}),
            research("Validate", {}),
            research("Final Answer", {"final_answer": "gold reference"}),
        ],
    )
    config = SessionConfig(task_dir=str(folder), model=f"replay:{replay}", max_steps=4)
    result = Session.create(home, store, config).run()
    spec = Task(folder).spec
    assert result.valid and result.final_score is not None
    assert spec.better(result.final_score, spec.baseline.score)


def test_cli_is_deterministic_and_writes_into_a_full_folder_only_with_force(
    made: tuple[Path, list], tmp_path: Path
) -> None:
    first, tasks = made
    again = tmp_path / "again"
    again.mkdir()
    (again / "notes.txt").write_text("mine\n")
    code, _, err = invoke("--count", "2", "--out", str(again), "--seed", str(SEED))
    assert code == 2 and "not empty" in err and "--force" in err
    code, out, _ = invoke(
        "--count", "2", "--out", str(again), "--seed", str(SEED), "--force", "--json"
    )
    assert code == 0, out
    summary = json.loads(out)
    assert [t["name"] for t in summary["tasks"]] == [t.name for t in tasks]
    for t in tasks:  # same seed, same bytes
        assert tree_hashes(again / t.name) == tree_hashes(first / t.name)
    assert (again / "notes.txt").read_text() == "mine\n"  # nothing else touched


def test_bad_input_is_refused_clearly(tmp_path: Path) -> None:
    code, _, err = invoke("--count", "0", "--out", str(tmp_path / "a"))
    assert code == 2 and "--count must be at least 1" in err
    code, _, err = invoke("--count", "1", "--out", str(tmp_path / "a"), "--seed", "-1")
    assert code == 2 and "--seed" in err
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    code, _, err = invoke("--count", "1", "--out", str(a_file))
    assert code == 2 and "not a folder" in err
    code, _, err = invoke("--count", "1", "--out", str(a_file / "below"))
    assert code == 2 and "cannot write" in err
    assert not (tmp_path / "a").exists()
