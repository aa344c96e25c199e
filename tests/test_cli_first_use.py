"""What a new user meets first on the command line, run as they would run it: `--version`,
`tasks list` at 80 columns, a typo'd `--model` refused before litellm loads, and usage errors
(exit 2, one line) for an unknown session, an unusable home, a typo'd choice, a missing
workspace."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, TINY
from .test_cli import mlagent

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize(
    ("code", "name"),
    [
        ("from mlagent_tui.cli.main import main; main()", "mlagent"),
        ("from trainer.cli import main; main()", "mlagent-train"),
    ],
)
def test_version_of_both_commands(code: str, name: str) -> None:
    from importlib.metadata import version

    proc = subprocess.run(
        [sys.executable, "-c", code, "--version"], capture_output=True, text=True, env=ENV
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{name} {version('mlagent')}"


def test_tasks_list_reads_at_80_columns() -> None:
    proc = mlagent("tasks", "list", env={"COLUMNS": "80"}, check=True)
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["task", "metric", "baseline", "median", "bronze", "silver", "gold"]
    assert "…" not in proc.stdout and max(len(line) for line in lines) <= 80
    from mlagent_tui.core.tasks import list_tasks

    for task in list_tasks():  # every name and metric whole, the title on the line below
        row = next(i for i, line in enumerate(lines) if line.startswith(f"{task.name} "))
        assert f"{task.spec.metric.name} " in lines[row]
        assert task.spec.title in " ".join(lines[row + 1 :]).replace("\n", " ")


TYPOS = {
    "locl": "did you mean 'local'?",
    "Local": "did you mean 'local'?",
    "smolm2": "did you mean 'smollm2'?",
    "relpay:run.jsonl": "did you mean 'replay:run.jsonl'?",
    "lcoal:/m/x.gguf": "did you mean 'local:/m/x.gguf'?",
    "open ai/gpt-4o": "no spaces",
    "openai/": "an empty part between slashes",
}


def test_a_typo_of_a_model_is_refused_without_importing_litellm() -> None:
    code = (
        "import sys\n"
        "from mlagent_tui.core.llm import ModelError, check_model\n"
        f"for spec in {list(TYPOS)!r}:\n"
        "    try:\n"
        "        check_model(spec)\n"
        "    except ModelError as exc:\n"
        "        print(exc)\n"
        "print('litellm' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=ENV, timeout=120
    )
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[-1] == "False", proc.stdout + proc.stderr
    for line, words in zip(lines[:-1], TYPOS.values(), strict=True):
        assert words in line, line


def test_run_with_a_typo_of_local_exits_2_before_litellm(tmp_path: Path) -> None:
    args = ["-X", "importtime", "-m", "mlagent_tui", "run", "--task-dir", str(TINY)]
    proc = subprocess.run(
        [sys.executable, *args, "--model", "locl"],
        capture_output=True,
        text=True,
        env={**ENV, "MLAGENT_HOME": str(tmp_path / "home")},
        timeout=120,
        cwd=ROOT,
    )
    said = [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 2 and len(said) == 1 and "did you mean 'local'?" in said[0]
    imported = [line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line]
    assert imported and not any(name.startswith("litellm") for name in imported)


@pytest.mark.parametrize(
    "args",
    [
        ["resume", "no-such-id"],
        ["replay", "no-such-id"],
        ["sessions", "show", "no-such-id"],
        ["sessions", "export", "no-such-id"],
        ["fork", "no-such-id", "--step", "1"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_an_unknown_session_is_a_usage_error_alike(tmp_path: Path, args: list[str]) -> None:
    proc = mlagent(*args, home=tmp_path / "home")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == ("error: no session 'no-such-id' (see `mlagent sessions list`)")


@pytest.mark.parametrize(
    "args", [["logs", "status", "--home", "{f}"], ["--home", "{f}", "sessions", "list"]]
)
def test_an_unusable_home_is_a_usage_error(tmp_path: Path, args: list[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    proc = mlagent(*[a.format(f=blocker) for a in args])
    assert proc.returncode == 2 and f"cannot use home folder {blocker}" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_typo_of_a_choice_names_the_choices(tmp_path: Path) -> None:
    base = ["run", "--task-dir", str(TINY), "--model", "replay:x.jsonl"]
    proc = mlagent(*base, "--agent", "sovle", home=tmp_path / "home")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: --agent 'sovle' is not one of: research, solve")
    proc = mlagent(*base, "--sandbox", "dokcer", home=tmp_path / "home")
    assert proc.returncode == 2 and "--sandbox 'dokcer' is not one of: local, docker" in (
        proc.stderr
    )
    assert "pydantic" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_grade_names_the_missing_workspace(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    proc = mlagent("tasks", "grade", "--task-dir", str(TINY), "--workspace", str(missing))
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith(f"error: no workspace at {missing}")
    assert "private" not in proc.stderr and "answers" not in proc.stderr
