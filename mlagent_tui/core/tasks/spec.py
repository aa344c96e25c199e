"""TaskSpec (task.toml), the registry of task folders, preparing a workspace, grading."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from ..sandbox.base import DEFAULT_DISK_MB
from ..sandbox.limits.confine import run_confined
from .contract import (
    OLDEST_CONTRACT,
    ContractVersionError,
    contract_version,
    grader_args,
    grader_env,
)
from .grading import SANDBOXES, SubmissionError, copy_submission, open_beneath
from .result import GradeResult, parse_grader_output

PACKAGE_PARENT = Path(__file__).resolve().parents[3]
BUNDLED_TASKS = PACKAGE_PARENT / "tasks"
DEFAULT_TASK = "breast-cancer"
MEDALS = ("gold", "silver", "bronze")
PREPARE_TIMEOUT_S = 120
GRADE_TIMEOUT_S = 120
DEFAULT_GRADE_MEM_MB = 2048
MAX_SUBMISSION_BYTES = 256 * 2**20  # a larger submission is refused, not read


class TaskError(Exception):
    """A task folder that breaks the contract, or a step of it that failed."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _inside(entry: str) -> str:
    """A workspace path in task.toml: relative, without `..`: the host acts on it."""
    path = PurePosixPath(entry)
    if not entry or path.is_absolute() or ".." in path.parts or "\x00" in entry:
        raise ValueError(f"{entry!r} is not a path inside the workspace")
    return entry


WorkspacePath = Annotated[str, AfterValidator(_inside)]


class Metric(_Strict):
    name: str
    higher_is_better: bool


class Submission(_Strict):
    file: WorkspacePath
    columns: list[str] | None = None
    id_column: str | None = None


class Baseline(_Strict):
    command: str
    score: float
    # How far a fresh run of the baseline may score from `score` (relative) before the task's
    # check fails it: a timed metric (a speed-up ratio) moves with the machine's load.
    tolerance: float = Field(default=0.05, gt=0, le=1)
    grades: int = Field(default=1, ge=1, le=9)  # the check grades it this often (the median)


class Thresholds(_Strict):
    median: float
    bronze: float
    silver: float
    gold: float


class Limits(_Strict):
    exec_timeout_s: float = Field(gt=0)
    mem_mb: int = Field(gt=0)
    max_steps: int = Field(gt=0)
    disk_mb: int = Field(default=DEFAULT_DISK_MB, gt=0)  # the workspace's size limit
    grade_mem_mb: int = Field(default=DEFAULT_GRADE_MEM_MB, gt=0)  # the grader process's memory


class Validate(_Strict):
    mode: Literal["score", "format"]


class TaskSpec(_Strict):
    contract: int = OLDEST_CONTRACT  # the contract version the folder was written to (contract.py)
    name: str
    title: str
    modality: Literal["tabular", "image", "text", "timeseries", "graph", "algorithmic", "code"]
    task_type: str
    source: str
    read_only: list[WorkspacePath] = Field(default_factory=list)
    metric: Metric
    submission: Submission
    baseline: Baseline
    thresholds: Thresholds
    limits: Limits
    validate_: Validate = Field(alias="validate")

    @model_validator(mode="after")
    def _ordered(self) -> TaskSpec:
        t = self.thresholds
        values = [t.median, t.bronze, t.silver, t.gold]
        sign = 1 if self.metric.higher_is_better else -1
        if not all(sign * (b - a) > 0 for a, b in zip(values, values[1:], strict=False)):
            direction = "increasing" if self.metric.higher_is_better else "decreasing"
            raise ValueError(f"thresholds median < bronze < silver < gold must be {direction}")
        return self

    # -- judging a score: needs only the spec, so rewards and benchmarks use it directly --------
    def medal(self, score: float | None) -> str | None:
        if score is None:
            return None
        for level in MEDALS:
            if self.reaches(score, getattr(self.thresholds, level)):
                return level
        return None

    def above_median(self, score: float | None) -> bool:
        return score is not None and self.reaches(score, self.thresholds.median)

    def reaches(self, score: float, threshold: float) -> bool:
        return score >= threshold if self.metric.higher_is_better else score <= threshold

    def better(self, a: float, b: float) -> bool:
        """True when score `a` is strictly better than `b`."""
        return a > b if self.metric.higher_is_better else a < b


class Task:
    """A task folder on disk, validated."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder).resolve()
        self.spec = load_spec(self.folder)
        for needed in ("prepare.py", "private/grade.py", "description.md"):
            if not (self.folder / needed).is_file():
                raise TaskError(f"{self.folder}: missing {needed}")

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        return (self.folder / "description.md").read_text(errors="replace")

    def references(self) -> dict[str, Path]:
        ref_dir = self.folder / "private" / "reference"
        levels = ("median", "bronze", "silver", "gold")
        return {lvl: ref_dir / f"{lvl}.py" for lvl in levels if (ref_dir / f"{lvl}.py").is_file()}

    # -- preparing ------------------------------------------------------------------------
    def prepare(self, workspace: Path, private: Path, seed: int = 0) -> None:
        """Write public data + starter files into `workspace` and answers into `private`."""
        workspace.mkdir(parents=True, exist_ok=True)
        private.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable,
            str(self.folder / "prepare.py"),
            "--public",
            str(workspace),
            "--private",
            str(private),
            "--seed",
            str(seed),
        ]
        proc = _run(cmd, cwd=self.folder, timeout=PREPARE_TIMEOUT_S, what=f"{self.name}: prepare")
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip()[-2000:]
            raise TaskError(f"{self.name}: prepare.py failed (exit {proc.returncode}):\n{tail}")
        env_dir = self.folder / "env"
        if env_dir.is_dir():
            shutil.copytree(env_dir, workspace, dirs_exist_ok=True)
        for rel in self.spec.read_only:
            _make_read_only(workspace, rel)

    # -- grading --------------------------------------------------------------------------
    def grade(
        self, workspace: Path, private: Path, split: str = "validate", *, sandbox: str = "local"
    ) -> GradeResult:
        """Grade a private copy of the workspace's submission in a grader process of its own.

        The copy is read without following links, so a submission linked to the answers is
        refused rather than scored. The grader runs on the host with the answers; agent code it
        must run (a code task's strategy or program) runs in `sandbox`, the session's backend.
        """
        if sandbox not in SANDBOXES:
            raise ValueError(f"unknown sandbox backend {sandbox!r} ({' | '.join(SANDBOXES)})")
        with tempfile.TemporaryDirectory(prefix="mlagent-grade-") as tmp:
            try:
                submission = copy_submission(
                    Path(workspace), self.spec.submission.file, Path(tmp), MAX_SUBMISSION_BYTES
                )
            except SubmissionError as exc:
                return GradeResult(error=str(exc))
            cmd = [sys.executable, str(self.folder / "private" / "grade.py")]
            cmd += grader_args(self.spec.contract, submission, Path(private), split, sandbox)
            try:
                proc = _run(
                    cmd,
                    cwd=private,
                    timeout=GRADE_TIMEOUT_S,
                    what=f"{self.name}: grade",
                    extra_env=grader_env(sandbox),
                    mem_mb=self.spec.limits.grade_mem_mb,
                )
            except TaskError as exc:
                return GradeResult(error=str(exc))
        return parse_grader_output(proc.stdout, proc.stderr, proc.returncode)

    def medal(self, score: float | None) -> str | None:
        return self.spec.medal(score)

    def above_median(self, score: float | None) -> bool:
        return self.spec.above_median(score)

    def reaches(self, score: float, threshold: float) -> bool:
        return self.spec.reaches(score, threshold)

    def better(self, a: float, b: float) -> bool:
        return self.spec.better(a, b)


def _make_read_only(workspace: Path, rel: str) -> None:
    """chmod 0444 a regular file of the workspace; a link or anything else is left alone."""
    try:
        fd = open_beneath(workspace, rel)
    except SubmissionError:
        return  # missing, or reached through a link: never followed
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, 0o444)
    finally:
        os.close(fd)


def _run(
    cmd: list[str],
    *,
    cwd: Path,
    timeout: float,
    what: str,
    extra_env: dict[str, str] | None = None,
    mem_mb: int | None = None,
) -> subprocess.CompletedProcess:
    # Graders import mlagent_tui.taskkit, installed or not.
    pythonpath = os.pathsep.join(filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": pythonpath}
    env.update(extra_env or {})
    if mem_mb is not None:
        return _run_confined(cmd, cwd=cwd, env=env, timeout=timeout, what=what, mem_mb=mem_mb)
    try:
        return subprocess.run(
            cmd,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise TaskError(f"{what} timed out after {timeout:.0f} s") from exc


def _run_confined(
    cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float, what: str, mem_mb: int
) -> subprocess.CompletedProcess:
    """`cmd` under a memory limit of `mem_mb` (a grader: it runs on the host)."""
    done = run_confined(cmd, cwd=cwd, env=env, timeout_s=timeout, mem_mb=mem_mb)
    if done.out_of_memory:
        raise TaskError(
            f"{what} ran out of memory: killed past its {mem_mb} MB limit "
            "(grade_mem_mb in task.toml's [limits])"
        )
    if done.timed_out:
        raise TaskError(f"{what} timed out after {timeout:.0f} s")
    return subprocess.CompletedProcess(cmd, done.returncode, done.stdout, done.stderr)


def load_spec(folder: Path) -> TaskSpec:
    toml_path = Path(folder) / "task.toml"
    if not toml_path.is_file():
        raise TaskError(f"{folder}: no task.toml (is this a task folder?)")
    try:
        data = tomllib.loads(toml_path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise TaskError(f"{toml_path}: not valid UTF-8 (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"{toml_path}: not valid TOML: {exc}") from exc
    try:
        contract_version(data, toml_path)  # a newer version: one line, not its unknown fields
    except ContractVersionError as exc:
        raise TaskError(str(exc)) from None
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']).replace('validate_', 'validate') or '(root)'}:"
            f" {err['msg']}"
            for err in exc.errors()
        )
        raise TaskError(f"{toml_path}: {problems}") from exc


def tasks_root() -> Path:
    return Path(os.environ.get("MLAGENT_TASKS", BUNDLED_TASKS))


def list_tasks(root: Path | None = None) -> list[Task]:
    root = root or tasks_root()
    return [Task(p) for p in sorted(root.iterdir()) if (p / "task.toml").is_file()]


def tasks_in(folder: Path | str) -> list[Task]:
    """The tasks a `--task-dir` names: one task folder, or a folder of task folders."""
    folder = Path(folder)
    if (folder / "task.toml").is_file():
        return [Task(folder)]
    if not folder.is_dir():
        raise TaskError(f"task folder not found: {folder}")
    found = list_tasks(folder)
    if not found:
        raise TaskError(f"no task.toml in {folder} nor in any folder inside it")
    return found


def find_task(name: str | None = None, task_dir: Path | str | None = None) -> Task:
    """A task by bundled name, or a task folder anywhere on disk."""
    if task_dir is not None:
        folder = Path(task_dir)
        if not folder.is_dir():
            raise TaskError(f"task folder not found: {folder}")
        return Task(folder)
    name = name or DEFAULT_TASK
    folder = tasks_root() / name
    if not (folder / "task.toml").is_file():
        known = ", ".join(p.name for p in sorted(tasks_root().iterdir()) if p.is_dir())
        raise TaskError(f"unknown task {name!r}; bundled tasks: {known}")
    return Task(folder)
