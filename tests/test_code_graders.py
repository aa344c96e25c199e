"""Code-task graders run the submission in the sandbox and still say clearly what went wrong:
a crash, a hang past the time limit, garbage on the pipe, a wrong result."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from mlagent_tui.core.tasks import BUNDLED_TASKS, Task, grading_games
from mlagent_tui.core.tasks.grading import SubmissionError

from .conftest import bwrap_ready

pytestmark = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> dict[str, tuple[Task, Path, Path]]:
    root = tmp_path_factory.mktemp("code-tasks")
    out = {}
    for name in ("prisoners-dilemma", "sat-heuristic", "code-speedup"):
        task = Task(BUNDLED_TASKS / name)
        ws, pv = root / f"{name}-ws", root / f"{name}-pv"
        task.prepare(ws, pv)
        out[name] = (task, ws, pv)
    return out


def grade_with(prepared, name: str, code: str):
    task, ws, pv = prepared[name]
    (ws / task.spec.submission.file).write_text(code)
    return task.grade(ws, pv, "test", sandbox="local")


def grader_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"grade_{name}", BUNDLED_TASKS / name / "private" / "grade.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STRATEGY_FAILURES = [
    ("def strategy(history):\n    return 1 // 0\n", "strategy() raised ZeroDivisionError"),
    ("import nonexistent_module\n", "importing strategy.py failed: ModuleNotFoundError"),
    ("def other(history):\n    return 0\n", "strategy.py defines no function strategy()"),
    ("def strategy(history):\n    return 2\n", "strategy() must return 0 or 1, got 2"),
    ("def strategy(history):\n    return 'C'\n", "strategy() must return 0 or 1"),
    (
        "import os\ndef strategy(history):\n    print('bye', flush=True)\n    os._exit(3)\n",
        "strategy.py's process ended unexpectedly (exit code 3)",
    ),
    (
        "def strategy(history):\n    open('replies.pipe', 'w').write('not json\\n')\n"
        "    return 0\n",
        "strategy.py's process sent garbage",
    ),
]


@pytest.mark.parametrize(("code", "message"), STRATEGY_FAILURES)
def test_strategy_failures_are_clear(prepared, code: str, message: str) -> None:
    g = grade_with(prepared, "prisoners-dilemma", code)
    assert not g.valid and g.score is None
    assert message in (g.error or ""), g.error


def test_prints_do_not_break_the_protocol(prepared) -> None:
    code = (
        "import sys\ndef strategy(history):\n    print('{\"move\": 7}')\n"
        "    print('x', file=sys.stderr)\n    return 0\n"
    )
    g = grade_with(prepared, "prisoners-dilemma", code)
    assert g.valid, g.error


def test_a_hang_meets_the_time_limit(prepared, monkeypatch) -> None:
    monkeypatch.setattr(grading_games, "TIME_LIMIT_S", 2.0)
    module = grader_module("prisoners-dilemma")
    task, ws, pv = prepared["prisoners-dilemma"]
    (ws / "strategy.py").write_text("def strategy(history):\n    while True:\n        pass\n")
    with pytest.raises(SubmissionError, match="took longer than 2 s"):
        module.grade(ws / "strategy.py", pv, "test", sandbox="local")


def test_a_memory_hog_is_killed_and_named(prepared) -> None:
    code = "def strategy(history):\n    x = bytearray(8 * 2**30)\n    return 0\n"
    g = grade_with(prepared, "prisoners-dilemma", code)
    assert not g.valid and ("MemoryError" in g.error or "memory" in g.error), g.error


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("def heuristic(clauses, assignment):\n    return 0\n", "must return a literal"),
        (
            "def heuristic(clauses, assignment):\n    return 1\n",
            "variable 1 is already assigned",
        ),
    ],
)
def test_heuristic_failures_are_clear(prepared, code: str, message: str) -> None:
    g = grade_with(prepared, "sat-heuristic", code)
    assert not g.valid and message in (g.error or ""), g.error


SPEEDUP_FAILURES = [
    ("def compute(data):\n    return None\n", "compute() returned None"),
    ("def compute(data):\n    raise ValueError('no')\n", "compute() raised ValueError: no"),
    ("def compute(data):\n    return [[[0.0]]]\n", "compute() returned shape (1, 1, 1)"),
    ("def compute(data):\n    return [[1, 2], [3]]\n", "converting its result failed"),
]


@pytest.mark.parametrize(("code", "message"), SPEEDUP_FAILURES)
def test_compute_failures_are_clear(prepared, code: str, message: str) -> None:
    g = grade_with(prepared, "code-speedup", code)
    assert not g.valid and message in (g.error or ""), g.error


def test_a_wrong_result_is_invalid(prepared) -> None:
    env = (BUNDLED_TASKS / "code-speedup" / "env" / "compute.py").read_text()
    code = (
        env
        + "\n_c = compute\n\ndef compute(data):\n    out = _c(data)\n"
        + "    out[0][0][0] += 1\n    return out\n"
    )
    g = grade_with(prepared, "code-speedup", code)
    assert not g.valid and "wrong result" in (g.error or ""), g.error


def test_speedup_hang_meets_the_time_limit(prepared, monkeypatch) -> None:
    module = grader_module("code-speedup")
    monkeypatch.setattr(module, "TIME_LIMIT_S", 2.0)
    task, ws, pv = prepared["code-speedup"]
    (ws / "compute.py").write_text("import time\ndef compute(data):\n    time.sleep(60)\n")
    with pytest.raises(SubmissionError, match="timing took longer than 2 s"):
        module.grade(ws / "compute.py", pv, "test", sandbox="local")


def test_the_sandbox_sees_only_the_scratch_folder(prepared, tmp_path) -> None:
    """The worker's workspace holds the submission copy, the worker and its two pipes."""
    task, ws, pv = prepared["prisoners-dilemma"]
    (ws / "helper.py").write_text("X = 1\n")
    code = "import os\nraise RuntimeError('SEEN=' + ','.join(sorted(os.listdir('.'))))\n"
    g = grade_with(prepared, "prisoners-dilemma", code)
    assert "SEEN=replies.pipe,requests.pipe,strategy.py,worker.py" in (g.error or ""), g.error
    shutil.rmtree(tmp_path, ignore_errors=True)
