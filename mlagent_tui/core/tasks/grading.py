"""Helpers for a task's private/grade.py: robust submission loading and the grader's JSON contract.

A grader must never crash on a bad submission, so every failure becomes
`{"score": null, "valid": false, "error": "..."}` on stdout. Standard library only at import
(pandas and numpy load inside the functions that need them): `mlagent_tui.taskkit` re-exports
this module, and a copy of it runs inside the sandbox, where pydantic may be missing.
"""

from __future__ import annotations

import argparse
import errno
import inspect
import json
import math
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any


class SubmissionError(Exception):
    """The submission is malformed; the message is shown to the agent."""


GradeFn = Callable[..., float]
SANDBOXES = ("local", "docker")
SANDBOX_ENV = "MLAGENT_SANDBOX"  # every grader gets the session's backend in its environment


def sandbox_backend(default: str = "local") -> str:
    """The session's sandbox backend, from MLAGENT_SANDBOX: agent code a grader runs goes there.

    An unknown value is an error rather than a silent fall back to another backend.
    """
    value = os.environ.get(SANDBOX_ENV) or default
    if value not in SANDBOXES:
        raise ValueError(
            f"{SANDBOX_ENV}={value!r} is not a sandbox backend ({' | '.join(SANDBOXES)})"
        )
    return value


def run_grader(grade_fn: GradeFn, argv: list[str] | None = None) -> dict[str, Any]:
    """Parse the grader CLI, call `grade_fn(submission, answers, split)`, print one JSON line.

    A grade function that runs the agent's code takes a `sandbox` keyword too: the session's
    backend, from `--sandbox` (contract 2) or else MLAGENT_SANDBOX, which every grader gets.
    Returns the printed result as a dict (score, valid, error).
    """
    parser = argparse.ArgumentParser(description="Grade a submission")
    parser.add_argument("--submission", required=True, type=Path)
    parser.add_argument("--answers", required=True, type=Path)
    parser.add_argument("--split", choices=["validate", "test"], default="validate")
    parser.add_argument("--sandbox", choices=SANDBOXES, default=None)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"score": None, "valid": False, "error": None}
    try:
        extra: dict[str, str] = {}
        if "sandbox" in inspect.signature(grade_fn).parameters:
            extra["sandbox"] = args.sandbox or sandbox_backend()
        if not args.submission.is_file():
            raise SubmissionError(f"submission file not found: {args.submission.name}")
        score = float(grade_fn(args.submission, args.answers, args.split, **extra))
        if not math.isfinite(score):
            raise SubmissionError(f"score is not finite: {score}")
        result.update(score=score, valid=True)
    except SubmissionError as exc:
        result["error"] = str(exc)
    except Exception as exc:  # noqa: BLE001 - a grader never crashes
        result["error"] = f"{type(exc).__name__}: {exc}"
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return result


# -- reading a file of the workspace: the agent controls every name in it --------------------
def open_beneath(root: Path, rel: str) -> int:
    """Open `root/rel` read-only without following any link and without leaving `root`.

    Each folder on the way is opened with O_NOFOLLOW|O_DIRECTORY relative to the previous one,
    the last entry with O_NOFOLLOW|O_NONBLOCK (a named pipe cannot block the host). Returns the
    descriptor, whatever the entry is: the caller checks its type with fstat. Raises
    SubmissionError saying what is wrong.
    """
    path = PurePosixPath(rel)
    parts = path.parts
    if not parts or path.is_absolute() or ".." in parts or "\x00" in rel:
        raise SubmissionError(f"{rel!r} is not a path inside the workspace")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SubmissionError(f"the workspace cannot be opened: {exc.strerror}") from None
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
            flags |= os.O_NONBLOCK | os.O_NOCTTY if last else os.O_DIRECTORY
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                raise _refusal(fd, part, PurePosixPath(*parts[: i + 1]), exc) from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _refusal(dir_fd: int, name: str, shown: PurePosixPath, exc: OSError) -> SubmissionError:
    if exc.errno == errno.ENOENT:
        return SubmissionError(f"no submission: {shown} does not exist")
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode) or exc.errno == errno.ELOOP:
        return SubmissionError(
            f"{shown} is a symbolic link; the submission must be a regular file in the workspace"
        )
    if exc.errno == errno.ENOTDIR:
        return SubmissionError(f"{shown} is not a folder")
    return SubmissionError(f"cannot open {shown}: {exc.strerror}")


def copy_submission(root: Path, rel: str, dest_dir: Path, max_bytes: int) -> Path:
    """Copy the workspace's submission `rel` into `dest_dir` (a private folder) for grading.

    The grader reads only this copy: a link (to the answers, say), anything but a regular file,
    or more than `max_bytes` is refused, and a later swap in the workspace changes nothing.
    """
    fd = open_beneath(root, rel)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        what = (
            "a directory"
            if stat.S_ISDIR(st.st_mode)
            else "not a regular file (a named pipe, socket or device)"
        )
        raise SubmissionError(
            f"{rel} is {what}; the submission must be a regular file in the workspace"
        )
    too_big = SubmissionError(f"{rel} is larger than {max_bytes / 2**20:.0f} MB")
    if st.st_size > max_bytes:
        os.close(fd)
        raise too_big
    with os.fdopen(fd, "rb") as src:
        dest = dest_dir / PurePosixPath(rel).name
        copied = 0
        with open(dest, "xb") as out:
            while chunk := src.read(1 << 20):
                copied += len(chunk)
                if copied > max_bytes:  # it grew while being read
                    raise too_big
                out.write(chunk)
    return dest


def load_answers(answers_dir: Path, split: str) -> Any:
    """Read `<answers_dir>/<split>.csv` (written by prepare.py) as a DataFrame."""
    import pandas as pd

    return pd.read_csv(answers_dir / f"{split}.csv")


def load_csv_submission(
    path: Path, *, id_column: str, columns: list[str], answers: Any, numeric: bool = True
) -> Any:
    """Read a CSV submission and align it to `answers` on `id_column`.

    Checks: it parses as CSV, has the required columns, every answer id appears exactly once,
    and (for numeric columns) no value is NaN or infinite. Extra ids (rows of the other split)
    are ignored, so one submission file covers validate and test.
    """
    import numpy as np
    import pandas as pd

    if path.stat().st_size == 0:
        raise SubmissionError("submission is empty")
    try:
        sub = pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001 - pandas raises many kinds
        raise SubmissionError(f"submission is not a readable CSV: {exc}") from exc
    missing_cols = [c for c in [id_column, *columns] if c not in sub.columns]
    if missing_cols:
        raise SubmissionError(
            f"submission lacks column(s) {missing_cols}; expected {[id_column, *columns]}, "
            f"got {list(sub.columns)}"
        )
    if sub[id_column].duplicated().any():
        dup = sub[id_column][sub[id_column].duplicated()].iloc[0]
        raise SubmissionError(f"duplicate id in submission: {dup!r}")
    sub = sub.set_index(sub[id_column].astype(str))
    wanted = answers[id_column].astype(str)
    absent = wanted[~wanted.isin(sub.index)]
    if len(absent):
        raise SubmissionError(
            f"submission misses {len(absent)} of {len(wanted)} ids, e.g. {absent.iloc[0]!r}"
        )
    aligned = sub.loc[wanted.values, columns].reset_index(drop=True)
    for col in columns:
        if aligned[col].isna().any():
            raise SubmissionError(f"column {col!r} has missing values")
        if numeric:
            values = pd.to_numeric(aligned[col], errors="coerce")
            if values.isna().any() or not np.isfinite(values.to_numpy(dtype=float)).all():
                raise SubmissionError(f"column {col!r} has non-numeric or infinite values")
            aligned[col] = values
    return aligned


def check_range(values: Any, column: str, low: float, high: float) -> Any:
    """Raise SubmissionError unless every value lies in [low, high]; returns a float array."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    if ((arr < low) | (arr > high)).any():
        raise SubmissionError(f"column {column!r} must hold values in [{low:g}, {high:g}]")
    return arr


def check_whole(values: Any, column: str, low: int | None = None, high: int | None = None) -> Any:
    """Raise SubmissionError unless every value is a whole number (in [low, high] when given);
    returns an int64 array (class numbers, counts)."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    span = f" {low}-{high}" if low is not None and high is not None else ""
    if not np.all(arr == np.round(arr)):
        raise SubmissionError(f"column {column!r} must hold whole numbers{span}")
    if (low is not None and (arr < low).any()) or (high is not None and (arr > high).any()):
        raise SubmissionError(f"column {column!r} must hold whole numbers{span}")
    return arr.astype(np.int64)
