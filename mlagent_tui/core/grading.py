"""Helpers for a task's private/grade.py: robust submission loading and the grader's JSON contract.

A grader must never crash on a bad submission, so every failure becomes
`{"score": null, "valid": false, "error": "..."}` on stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel


class SubmissionError(Exception):
    """The submission is malformed; the message is shown to the agent."""


class GradeResult(BaseModel):
    score: float | None = None
    valid: bool = False
    error: str | None = None


GradeFn = Callable[[Path, Path, str], float]


def run_grader(grade_fn: GradeFn, argv: list[str] | None = None) -> GradeResult:
    """Parse the grader CLI, call `grade_fn(submission, answers, split)`, print one JSON line."""
    parser = argparse.ArgumentParser(description="Grade a submission")
    parser.add_argument("--submission", required=True, type=Path)
    parser.add_argument("--answers", required=True, type=Path)
    parser.add_argument("--split", choices=["validate", "test"], default="validate")
    args = parser.parse_args(argv)
    try:
        if not args.submission.is_file():
            raise SubmissionError(f"submission file not found: {args.submission.name}")
        score = float(grade_fn(args.submission, args.answers, args.split))
        if not math.isfinite(score):
            raise SubmissionError(f"score is not finite: {score}")
        result = GradeResult(score=score, valid=True)
    except SubmissionError as exc:
        result = GradeResult(error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a grader never crashes
        result = GradeResult(error=f"{type(exc).__name__}: {exc}")
    sys.stdout.write(json.dumps(result.model_dump()) + "\n")
    sys.stdout.flush()
    return result


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
