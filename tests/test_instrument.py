"""Instrumentation: counting progress lines, and verified insertion by a (replayed) frozen model."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlagent_tui.core.llm.replay import ReplayModel
from tests.agent_helpers import Recording, write_replay
from trainer.instrument.model import (
    PROGRESS_MARKERS,
    check_progress_line,
    count_progress,
    extract_code,
    instrument,
    verify_instrumentation,
)

PROGRAM = """import pandas as pd
from sklearn.linear_model import LogisticRegression

df = pd.read_csv("train.csv")
model = LogisticRegression()
for epoch in range(3):
    model.fit(df[["x"]], df["y"])
    loss = 1 - model.score(df[["x"]], df["y"])
pd.DataFrame({"y": model.predict(df[["x"]])}).to_csv("submission.csv")
"""

GOOD = """import pandas as pd
from sklearn.linear_model import LogisticRegression
print("imported packages")

df = pd.read_csv("train.csv")
print("Loaded data", len(df))
model = LogisticRegression()
print("defined model")
for epoch in range(3):
    model.fit(df[["x"]], df["y"])
    loss = 1 - model.score(df[["x"]], df["y"])
    print("training loss:", round(loss, 4))
print("trained model")
pd.DataFrame({"y": model.predict(df[["x"]])}).to_csv("submission.csv")
print("predicted test labels")
"""


def model_answering(tmp_path: Path, *answers: str) -> Recording:
    return Recording(ReplayModel(write_replay(tmp_path / "answers.jsonl", list(answers))))


def test_count_progress_distinct_case_insensitive_by_line() -> None:
    output = (
        "Imported packages\nloaded data (569 rows)\n"
        "epoch 1 training loss: 0.7\nepoch 2 TRAINING LOSS: 0.5\n"
        "Traceback (most recent call last):\nValueError: bad shape\n"
    )
    assert count_progress(output) == 3  # training loss counted once
    assert count_progress("") == 0
    every = "\n".join(m.upper() for m in PROGRESS_MARKERS)
    assert count_progress(every) == len(PROGRESS_MARKERS) == 7


def test_good_instrumentation_is_accepted(tmp_path: Path) -> None:
    model = model_answering(tmp_path, f"Here you go:\n```python\n{GOOD}```\nDone.")
    result = instrument(PROGRAM, model)
    assert result.ok, result.reason
    assert result.code == GOOD
    assert len(result.added) == 6
    assert result.markers == [
        "imported packages",
        "loaded data",
        "defined model",
        "training loss:",
        "trained model",
        "predicted test labels",
    ]
    # the frozen model saw the program and the marker list
    assert "pd.read_csv" in model.prompts[0] and "predicted test labels" in model.prompts[0]


def test_changed_line_is_rejected_and_program_kept(tmp_path: Path) -> None:
    altered = GOOD.replace("range(3)", "range(30)")
    result = instrument(PROGRAM, model_answering(tmp_path, f"```python\n{altered}```"))
    assert not result.ok
    assert result.code == PROGRAM
    assert "changed original line 6" in result.reason


def test_garbage_answer_is_rejected(tmp_path: Path) -> None:
    result = instrument(PROGRAM, model_answering(tmp_path, "I'm sorry, I can't help with that."))
    assert not result.ok and result.code == PROGRAM
    assert "changed" in result.reason or "removed" in result.reason
    empty = instrument(PROGRAM, model_answering(tmp_path, "   \n"))
    assert not empty.ok and empty.reason == "the model's answer holds no program"


def test_model_failure_keeps_the_program(tmp_path: Path) -> None:
    model = model_answering(tmp_path, f"```python\n{GOOD}```")
    assert instrument(PROGRAM, model).ok
    again = instrument(PROGRAM, model)  # the replay file is used up: ModelExhausted
    assert not again.ok and again.code == PROGRAM and again.reason.startswith("model failed")


def test_unchanged_answer_is_not_ok(tmp_path: Path) -> None:
    result = instrument(PROGRAM, model_answering(tmp_path, PROGRAM))
    assert not result.ok and result.reason == "no progress prints were added"


def test_print_with_side_effects_is_rejected() -> None:
    sneaky = PROGRAM.replace(
        "model = LogisticRegression()\n",
        "model = LogisticRegression()\nprint('defined model', model.fit(df[['x']], df['y']))\n",
    )
    added, problem = verify_instrumentation(PROGRAM, sneaky)
    assert added == [] and "calls model.fit()" in problem


def test_print_that_restructures_the_program_is_rejected() -> None:
    # a print at the top level ends the loop early: the next line becomes an unexpected indent
    broken = PROGRAM.replace(
        '    model.fit(df[["x"]], df["y"])\n',
        'print("training loss:", 0)\n    model.fit(df[["x"]], df["y"])\n',
    )
    assert "does not parse" in verify_instrumentation(PROGRAM, broken)[1]
    # a print slipped into a multi-line string changes the string, not the control flow
    doc = 'HELP = """usage:\n  run it\n"""\nx = 1\n'
    inside = 'HELP = """usage:\nprint("loaded data")\n  run it\n"""\nx = 1\n'
    assert verify_instrumentation(doc, inside)[1] == (
        "the inserted lines change the program's structure"
    )


@pytest.mark.parametrize(
    ("line", "ok"),
    [
        ('print("trained model")', True),
        ("    logger.info('training loss: %s', loss.item())", True),
        ("print(f'testing loss: {float(loss):.3f}')", True),
        ('print("hello")', False),  # no marker
        ('x = "trained model"', False),  # not a call
        ('os.remove("trained model")', False),  # not a print
        ('print("loaded data", open("a").read())', False),  # open() is not read-only formatting
        ('print("loaded data", (n := 3))', False),
        ("# trained model", False),
    ],
)
def test_check_progress_line(line: str, ok: bool) -> None:
    assert (check_progress_line(line) is None) is ok


def test_extract_code_prefers_python_fence() -> None:
    answer = "```text\nnotes\n```\n```python\nx = 1\n```"
    assert extract_code(answer) == "x = 1\n"
    assert extract_code("```\ny = 2\n```") == "y = 2\n"
    assert extract_code("z = 3") == "z = 3\n"
    assert extract_code("  ") == ""
