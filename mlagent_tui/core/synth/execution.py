"""Generated code runs only in the sandbox: no network, a time limit, a memory limit.

`Task.prepare` and `Task.grade` run a task's scripts as plain subprocesses, which is right for
tasks a person wrote and reviewed. Code a model just wrote is first run here, inside the sandbox
executor; only code that behaved there reaches `check_task` and the task folder.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from pydantic import BaseModel

from ..sandbox import ExecResult, make_executor
from ..tasks.kit import install_taskkit

NETWORK_MARKERS = (
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Name or service not known",
    "URLError",
    "ConnectionRefusedError",
    "gaierror",
)


class Attempt(BaseModel):
    """One try of a role at its stage: ok, or why not (error | timeout | network | memory)."""

    ok: bool
    kind: str = "ok"
    detail: str = ""


class SandboxRunner:
    """Runs commands in a scratch folder through the sandbox executor of the chosen backend."""

    def __init__(self, backend: str = "local", timeout_s: float = 60.0, mem_mb: int = 1024):
        self.backend = backend
        self.timeout_s = timeout_s
        self.mem_mb = mem_mb

    def run(
        self, folder: Path, command: str, timeout_s: float | None = None, backend: str = ""
    ) -> ExecResult:
        executor = make_executor(backend or self.backend, workspace=folder, mem_mb=self.mem_mb)
        try:
            return executor.run(
                command, cwd=folder, timeout_s=timeout_s or self.timeout_s, mem_mb=self.mem_mb
            )
        finally:
            executor.close()


def failure(res: ExecResult, what: str) -> Attempt:
    """Name why a sandboxed run failed, with the tail of its output for the model."""
    tail = res.output.strip()[-1500:] or "(no output)"
    if res.timed_out or res.killed_reason == "timeout":
        return Attempt(
            ok=False,
            kind="timeout",
            detail=f"{what} ran past its time limit ({res.duration_s:.0f} s) and was stopped:\n"
            + tail,
        )
    if res.killed_reason:
        return Attempt(
            ok=False,
            kind=res.killed_reason,
            detail=f"{what} was killed ({res.killed_reason}):\n" + tail,
        )
    kind = "network" if any(m in res.output for m in NETWORK_MARKERS) else "error"
    note = " (there is no network in the sandbox)" if kind == "network" else ""
    return Attempt(
        ok=False, kind=kind, detail=f"{what} failed (exit {res.exit_code}){note}:\n{tail}"
    )


def install_grading(folder: Path) -> None:
    """Make `mlagent_tui.taskkit` importable inside the sandbox, whichever backend (PYTHONPATH=.):
    neither bwrap nor the docker image can import the project itself (tasks/kit.py)."""
    install_taskkit(folder)


# One interpreter runs many generated scripts in turn (numpy, pandas and scikit-learn are
# imported once, not once per script); each script gets fresh globals and its own marker lines.
DRIVER_NAME = "_synth_driver.py"
DRIVER = """import os, runpy, shutil, sys, traceback

mode, jobs = sys.argv[1], sys.argv[2:]
home = os.getcwd()
for job in jobs:
    print("@@" + mode + " " + job, flush=True)
    code = 0
    if mode == "RUN" and os.path.exists("submission.csv"):
        os.remove("submission.csv")
    if mode == "GRADE":
        name, split = job.rsplit(":", 1)
        # as Task.grade calls a grader of the contract synth writes (taskfolder.py, version 1);
        # the backend is in MLAGENT_SANDBOX, as for every grader
        sys.argv = ["grade.py", "--submission", "subs/" + name, "--answers", "answers",
                    "--split", split]
        script = "private/grade.py"
    else:
        sys.argv, script = [job], job
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.chdir(home)
    print("@@EXIT " + str(code), flush=True)
    if mode == "RUN" and os.path.exists("submission.csv"):
        shutil.move("submission.csv", os.path.join("out", job + ".csv"))
"""


def driver_command(folder: Path, mode: str, jobs: list[str], sandbox: str = "local") -> str:
    """Write the driver into `folder`; the shell command that runs `jobs` through it (`sandbox`:
    the backend a grader is told it runs agent code in)."""
    (folder / DRIVER_NAME).write_text(DRIVER)
    args = " ".join(shlex.quote(j) for j in jobs)
    env = f"MLAGENT_SANDBOX={shlex.quote(sandbox)} PYTHONPATH=."
    return f"{env} python {DRIVER_NAME} {mode} {args}"
