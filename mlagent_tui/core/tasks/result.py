"""A grading's result as the host reads it: the grader's one JSON line, validated."""

from __future__ import annotations

import json

from pydantic import BaseModel, ValidationError


class GradeResult(BaseModel):
    score: float | None = None
    valid: bool = False
    error: str | None = None


def parse_grader_output(stdout: str, stderr: str, returncode: int) -> GradeResult:
    """The last line of `stdout` that is a grade result; else an invalid result saying why."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            return GradeResult.model_validate(json.loads(line))
        except (ValueError, ValidationError):
            continue
    detail = (stderr or stdout).strip()[-1000:] or "no output"
    return GradeResult(error=f"grader failed (exit {returncode}) without a result: {detail}")
