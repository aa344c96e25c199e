"""The task-folder contract, versioned: folders written to each published version still check
and grade through the real code paths (tests/data/contract/: v1-* have no `contract` field and
were written to the first contracts, v2-* to the current one); a newer version is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlagent_tui.core.tasks import CURRENT_CONTRACT, Task, TaskError, check_task, load_spec
from mlagent_tui.core.tasks.grading import run_grader

from .conftest import ROOT, bwrap_ready, docker_ready

CORPUS = Path(__file__).parent / "data" / "contract"
FOLDERS = sorted(p.name for p in CORPUS.iterdir() if (p / "task.toml").is_file())
CODE = [name for name in FOLDERS if name.endswith("-code")]

needs_bwrap = pytest.mark.skipif(not bwrap_ready(), reason="bubblewrap missing")

# a valid and an invalid submission of each kind, with the score the valid one must get
CSV_RIGHT = "id,y\n" + "".join(f"{i},{2 * (i % 7)}\n" for i in range(20, 40))
CSV_WRONG_COLUMNS = "id,prediction\n" + "".join(f"{i},0\n" for i in range(20, 40))
SOLVER_RIGHT = "def square(x):\n    return x * x\n"
SOLVER_WRONG_TYPE = "def square(x):\n    return str(x * x)\n"
IN_DOCKER_ONLY = (
    "import os\n\n\ndef square(x):\n"
    "    return x * x if os.path.exists('/.dockerenv') else x * x + 1\n"
)


def mlagent(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mlagent_tui", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=600,
        cwd=ROOT,
    )


def test_corpus_has_each_published_version() -> None:
    versions = {load_spec(CORPUS / name).contract for name in FOLDERS}
    assert versions == set(range(1, CURRENT_CONTRACT + 1))
    oldest = (CORPUS / "v1-csv" / "private" / "grade.py").read_text()
    assert "--sandbox" not in oldest and "mlagent_tui.core.grading " in oldest


@needs_bwrap
def test_tasks_check_passes_every_version() -> None:
    """`mlagent tasks check` on the whole corpus, as a task author runs it."""
    proc = mlagent("tasks", "check", "--task-dir", str(CORPUS), "--json")
    report = json.loads(proc.stdout)
    failed = [
        (t["task"], c["name"], c["detail"])
        for t in report["tasks"]
        for c in t["checks"]
        if not c["ok"]
    ]
    assert proc.returncode == 0 and not failed, failed or proc.stderr[-2000:]
    assert sorted(t["task"] for t in report["tasks"]) == FOLDERS


def grade_both(task: Task, tmp_path: Path, sandbox: str) -> tuple[dict, dict]:
    """Grade a right and a wrong submission of `task` on both splits; the results by split."""
    ws, pv = tmp_path / "ws", tmp_path / "pv"
    task.prepare(ws, pv)
    code = task.spec.submission.file.endswith(".py")
    right, wrong = (SOLVER_RIGHT, SOLVER_WRONG_TYPE) if code else (CSV_RIGHT, CSV_WRONG_COLUMNS)
    sub = ws / task.spec.submission.file
    good, bad = {}, {}
    for split in ("validate", "test"):
        sub.write_text(right)
        good[split] = task.grade(ws, pv, split, sandbox=sandbox)
        sub.write_text(wrong)
        bad[split] = task.grade(ws, pv, split, sandbox=sandbox)
    return good, bad


@needs_bwrap
@pytest.mark.parametrize("name", FOLDERS)
def test_each_version_grades_right_and_wrong_submissions(name: str, tmp_path: Path) -> None:
    task = Task(CORPUS / name)
    good, bad = grade_both(task, tmp_path, "local")
    best = 1.0 if name in CODE else 0.0  # the fraction squared right; the absolute error
    for split in ("validate", "test"):
        assert good[split].valid and good[split].score == best, good[split]
        assert not bad[split].valid and bad[split].score is None
        expected = "not an int" if name in CODE else "lacks column"
        assert expected in (bad[split].error or ""), bad[split]


@pytest.mark.docker
@pytest.mark.parametrize("name", CODE)
def test_code_graders_of_each_version_run_the_submission_in_docker(
    name: str, tmp_path: Path
) -> None:
    """The version-1 code grader is given no --sandbox flag: it finds the backend in
    MLAGENT_SANDBOX, so the submission runs in docker, as the session's scripts did."""
    if not docker_ready():
        pytest.skip("no dockerd or sandbox image")
    task = Task(CORPUS / name)
    good, bad = grade_both(task, tmp_path, "docker")
    assert good["test"].valid and good["test"].score == 1.0, good["test"]
    assert not bad["test"].valid and "not an int" in (bad["test"].error or "")
    # a solver that squares right only inside a docker container: it ran there
    (tmp_path / "ws" / "solver.py").write_text(IN_DOCKER_ONLY)
    assert task.grade(tmp_path / "ws", tmp_path / "pv", "test", sandbox="docker").score == 1.0
    assert task.grade(tmp_path / "ws", tmp_path / "pv", "test", sandbox="local").score == 0.0


def test_version_1_grader_is_called_with_exactly_its_three_flags(tmp_path: Path) -> None:
    """The oldest grader's own parser takes no --sandbox: handed one, argparse exits 2."""
    grader = CORPUS / "v1-csv" / "private" / "grade.py"
    (tmp_path / "validate.csv").write_text("id,y\n1,2\n")
    (tmp_path / "sub.csv").write_text("id,y\n1,2\n")
    base = [sys.executable, str(grader), "--submission", str(tmp_path / "sub.csv")]
    base += ["--answers", str(tmp_path), "--split", "validate"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    flagged = subprocess.run([*base, "--sandbox", "local"], capture_output=True, text=True, env=env)
    assert flagged.returncode == 2 and "unrecognized arguments: --sandbox" in flagged.stderr
    plain = subprocess.run(base, capture_output=True, text=True, env=env)
    assert json.loads(plain.stdout) == {"score": 0.0, "valid": True, "error": None}


def test_run_grader_takes_the_backend_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sub = tmp_path / "s.csv"
    sub.write_text("x\n")
    seen: list[str] = []

    def grade(submission: Path, answers_dir: Path, split: str, sandbox: str = "local") -> float:
        seen.append(sandbox)
        return 1.0

    argv = ["--submission", str(sub), "--answers", str(tmp_path), "--split", "test"]
    monkeypatch.setenv("MLAGENT_SANDBOX", "docker")
    assert run_grader(grade, argv)["valid"]
    assert run_grader(grade, [*argv, "--sandbox", "local"])["valid"]  # the flag wins
    monkeypatch.setenv("MLAGENT_SANDBOX", "bogus")
    result = run_grader(grade, argv)
    assert seen == ["docker", "local"]
    assert not result["valid"] and "MLAGENT_SANDBOX='bogus'" in result["error"]
    capsys.readouterr()


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("99", "contract = 99 is newer than this mlagent knows (1 to 2); update mlagent"),
        ("0", "contract = 0 is not a contract version"),
        ('"2"', "contract = '2' is not a contract version"),
    ],
)
def test_unknown_contract_version_is_refused_in_one_line(
    tiny_task: Path, value: str, words: str
) -> None:
    toml = tiny_task / "task.toml"
    # a newer version may bring fields this one does not know: the version is what is named
    toml.write_text(f"contract = {value}\nfuture_field = 1\n" + toml.read_text())
    with pytest.raises(TaskError) as caught:
        load_spec(tiny_task)
    assert words in str(caught.value) and "\n" not in str(caught.value)
    proc = mlagent("tasks", "check", "--task-dir", str(tiny_task))
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and words in " ".join(proc.stderr.split()), proc.stderr


def test_bundled_tasks_are_written_to_the_current_contract() -> None:
    from mlagent_tui.core.tasks import list_tasks

    tasks = list_tasks()
    assert tasks and all(t.spec.contract == CURRENT_CONTRACT for t in tasks)
    for t in tasks:
        text = (t.folder / "private" / "grade.py").read_text()
        assert "mlagent_tui.taskkit" in text and "from mlagent_tui.core" not in text, t.name


@needs_bwrap
def test_check_of_a_version_1_folder_in_process(tmp_path: Path) -> None:
    """check_task itself (not only the CLI) passes the oldest folder."""
    report = check_task(Task(CORPUS / "v1-csv"), sandbox="local")
    assert report.ok, [c for c in report.checks if not c.ok]
