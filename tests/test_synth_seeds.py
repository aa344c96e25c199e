"""Any seed that passes `tasks check` grows tasks, errors are one line, nothing of
the report is lost when the model fails, kept names end on a whole word."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from mlagent_tui.core.llm import make_model
from mlagent_tui.core.synth import SynthConfig, SynthError, synthesize
from mlagent_tui.core.synth.seed import describe_seed, seed_prompt, target_summary
from mlagent_tui.core.synth.taskfolder import next_name, slug
from mlagent_tui.core.tasks import Task, check_task, find_task

from .agent_helpers import write_replay
from .conftest import TINY, bwrap_ready
from .test_synth import mlagent

# 80 rows, ids that are strings ("r000"): more distinct ids than a target has classes, and no
# mean of them exists. Same rule as the tiny task, so its baseline and reference still hold.
ID_LISTED_PREPARE = """import argparse
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--public", type=Path, required=True)
parser.add_argument("--private", type=Path, required=True)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()
rows = [(f"r{i:03d}", i % 7, 2 * (i % 7) + (args.seed % 3)) for i in range(80)]
(args.public / "train.csv").write_text(
    "id,x,y\\n" + "".join(f"{i},{x},{y}\\n" for i, x, y in rows[:40])
)
(args.public / "test.csv").write_text("id,x\\n" + "".join(f"{i},{x}\\n" for i, x, _ in rows[40:]))
(args.public / "sample_submission.csv").write_text(
    "id,y\\n" + "".join(f"{i},100\\n" for i, _, _ in rows[40:])
)
(args.private / "validate.csv").write_text(
    "id,y\\n" + "".join(f"{i},{y}\\n" for i, _, y in rows[40:60])
)
(args.private / "test.csv").write_text("id,y\\n" + "".join(f"{i},{y}\\n" for i, _, y in rows[60:]))
"""


def make_seed(parent: Path, name: str, columns: str = '["id", "y"]') -> Path:
    """A copy of the tiny task whose `[submission] columns` list the id column too."""
    folder = parent / name
    shutil.copytree(TINY, folder)
    toml = (folder / "task.toml").read_text()
    toml = toml.replace('name = "tiny-task"', f'name = "{name}"')
    (folder / "task.toml").write_text(toml.replace('columns = ["y"]', f"columns = {columns}"))
    (folder / "prepare.py").write_text(ID_LISTED_PREPARE)
    return folder


@pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")
def test_seed_listing_the_id_column_passes_check_and_is_described(tmp_path: Path) -> None:
    task = Task(make_seed(tmp_path, "id-listed"))
    report = check_task(task)
    assert report.ok, [c for c in report.checks if not c.ok]
    facts = describe_seed(task)
    assert facts.id_column == "id" and facts.target_columns == ["y"]
    assert "y: 7 classes" in facts.target_summary and "id" not in facts.target_summary
    assert "Submission: CSV with columns ['id', 'y']" in seed_prompt(facts)


def test_seed_with_only_the_id_column_is_one_line(tmp_path: Path) -> None:
    seed = make_seed(tmp_path, "id-only", columns='["id"]')
    with pytest.raises(SynthError, match="no target column") as exc:
        describe_seed(Task(seed))
    assert "\n" not in str(exc.value)
    proc = mlagent("tasks", "synth", "--task-dir", str(seed), "--model", "replay:/nonexistent")
    assert proc.returncode == 1 and "no target column" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_target_summary_of_text_and_many_values() -> None:
    df = pd.DataFrame(
        {
            "id": [f"s{i}" for i in range(50)],
            "label": [f"word{i}" for i in range(50)],
            "mixed": [str(i) if i % 2 else "n/a" for i in range(50)],
            "value": [float(i) for i in range(50)],
        }
    )
    summary = target_summary(df, ["label", "mixed", "value", "absent"])
    assert "label: text, 50 distinct values" in summary
    assert "mixed: text, 26 distinct values" in summary
    assert "value: continuous, mean 24.5" in summary and "absent: not in train.csv" in summary


def test_synth_from_a_folder_of_seeds_reaches_the_model(tmp_path: Path) -> None:
    """`--task-dir FOLDER --seed-task NAME` picks one seed; the id-listed seed reaches the model."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    make_seed(seeds, "id-listed")
    make_seed(seeds, "other-seed")
    replay = write_replay(tmp_path / "r.jsonl", ["no json", "still none", '{"dna": 1}'])
    proc = mlagent(
        "tasks", "synth", "--task-dir", str(seeds), "--seed-task", "id-listed",
        "--model", f"replay:{replay}", "--out", str(tmp_path / "out"), "--n", "2",
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1  # the model ran out in the second candidate, nothing kept
    assert "synth from id-listed" in proc.stdout and "strategist: 3 call(s)" in proc.stdout
    proc = mlagent("tasks", "synth", "--task-dir", str(seeds), "--model", f"replay:{replay}")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "id-listed, other-seed" in proc.stderr and "name one" in proc.stderr


def test_model_error_mid_reask_keeps_the_rejections(tmp_path: Path) -> None:
    """The strategist's first answer is rejected, then the model fails: the rejection stays."""
    replay = write_replay(tmp_path / "r.jsonl", ["no json here"])
    report = synthesize(
        find_task("diabetes"), make_model(f"replay:{replay}"), SynthConfig(out=tmp_path / "o")
    )
    (cand,) = report.candidates
    assert cand.reason.startswith("model error") and report.stopped
    log = cand.roles["strategist"]
    assert log.calls == 1 and log.json_errors == ["no JSON object found in the answer"]
    assert "rejected: no JSON object found in the answer" in report.text()
    assert report.as_json()["candidates"][0]["roles"]["strategist"]["json_errors"]


def test_kept_names_end_on_a_whole_word(tmp_path: Path) -> None:
    assert slug("greenhouse seedling survival") == "greenhouse-seedling"
    assert slug("Wildfire ignition (dry days)") == "wildfire-ignition-dry"
    assert slug("short") == "short" and slug("!!!") == "task"
    assert slug("supercalifragilisticexpialidocious") == "supercalifragilisticexpi"  # one word
    name = next_name(tmp_path, "breast-cancer", "subscriber churn in rural telecom markets")
    assert name == "breast-cancer-synth-01-subscriber-churn-in"
