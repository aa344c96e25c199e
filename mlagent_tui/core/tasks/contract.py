"""The task-folder contract's versions: how a task's grade.py is called (docs/tasks.md).

task.toml's `contract = N` says which version a folder was written to; a folder without it was
written before the field existed and is read as version 1, the oldest still accepted.

- 1: `grade.py --submission PATH --answers DIR --split validate|test`, exactly these flags.
- 2: the same plus `--sandbox local|docker`, the session's backend, as its own flag.

Every grader, whatever its version, also finds the backend in the environment variable
MLAGENT_SANDBOX: a variable breaks no argument parser, so a version-1 grader that runs agent
code (through run_grader and the worker pool, which read it) still runs it in the session's
backend, and no grader is handed a flag it never promised to parse.
"""

from __future__ import annotations

from pathlib import Path

from .grading import SANDBOX_ENV

OLDEST_CONTRACT = 1
CURRENT_CONTRACT = 2


class ContractVersionError(ValueError):
    """task.toml names a contract version this mlagent does not know."""


def contract_version(data: dict, toml_path: Path) -> int:
    """The `contract` field of a parsed task.toml (1 when absent); a version newer than this
    mlagent knows, or no version at all, is refused in one line."""
    value = data.get("contract", OLDEST_CONTRACT)
    if type(value) is not int or value < OLDEST_CONTRACT:
        raise ContractVersionError(
            f"{toml_path}: contract = {value!r} is not a contract version "
            f"(a whole number, {OLDEST_CONTRACT} to {CURRENT_CONTRACT})"
        )
    if value > CURRENT_CONTRACT:
        raise ContractVersionError(
            f"{toml_path}: contract = {value} is newer than this mlagent knows "
            f"({OLDEST_CONTRACT} to {CURRENT_CONTRACT}); update mlagent to use this task"
        )
    return value


def grader_args(
    contract: int, submission: Path, answers: Path, split: str, sandbox: str
) -> list[str]:
    """The command-line flags a grader of `contract` is promised, in order."""
    args = ["--submission", str(submission), "--answers", str(answers), "--split", split]
    if contract >= 2:
        args += ["--sandbox", sandbox]
    return args


def grader_env(sandbox: str) -> dict[str, str]:
    """What every grader finds in its environment, on top of the host's."""
    return {SANDBOX_ENV: sandbox}
