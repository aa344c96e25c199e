"""Score tables: one row per task (direction, baseline score, each method's score), as CSV.

`bench aup` reads them, a bench's report writes them; aup.py turns them into profiles and AUP.
A method without a valid score on a task is written `infeasible`; no cell is left empty.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from pydantic import BaseModel

INFEASIBLE = "infeasible"
REQUIRED_COLUMNS = ("task", "higher_is_better", "baseline")
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


class ScoreTableError(ValueError):
    """A score table that cannot be scored: a missing column or value, a bad number."""


class TaskScores(BaseModel):
    """One task's row: direction, baseline score and each method's score (None = no valid one)."""

    task: str
    higher_is_better: bool
    baseline: float
    scores: dict[str, float | None]


def _flag(value: str, where: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ScoreTableError(f"{where}: higher_is_better must be true or false, not {value!r}")


def _number(value: str, where: str) -> float | None:
    v = value.strip()
    if not v:
        raise ScoreTableError(
            f"{where}: missing value (write `{INFEASIBLE}` for a method without a valid score)"
        )
    if v.lower() == INFEASIBLE:
        return None
    try:
        number = float(v)
    except ValueError:
        raise ScoreTableError(f"{where}: not a number: {value!r}") from None
    if not math.isfinite(number):
        raise ScoreTableError(f"{where}: not a finite number: {value!r}")
    return number


def parse_score_table(text: str, source: str = "score table") -> list[TaskScores]:
    """Rows of a CSV with columns task, higher_is_better, baseline, then one per method."""
    reader = csv.reader(io.StringIO(text))
    header = [h.strip() for h in next(reader, [])]
    if not header:
        raise ScoreTableError(f"{source}: empty file")
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise ScoreTableError(
            f"{source}: missing column(s) {', '.join(missing)}; the columns are "
            f"task, higher_is_better, baseline, then one per method"
        )
    if len(set(header)) != len(header):
        raise ScoreTableError(f"{source}: a column name appears twice")
    methods = [h for h in header if h not in REQUIRED_COLUMNS]
    if not methods:
        raise ScoreTableError(f"{source}: no method columns after task, higher_is_better, baseline")
    rows: list[TaskScores] = []
    for line_no, values in enumerate(reader, start=2):
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            raise ScoreTableError(
                f"{source}:{line_no}: {len(values)} values for {len(header)} columns"
            )
        cell = dict(zip(header, values, strict=True))
        task = cell["task"].strip()
        if not task:
            raise ScoreTableError(f"{source}:{line_no}: missing value in column task")
        if any(r.task == task for r in rows):
            raise ScoreTableError(f"{source}:{line_no}: task {task!r} appears twice")
        where = f"{source}:{line_no} ({task})"
        baseline = _number(cell["baseline"], f"{where} column baseline")
        if baseline is None:
            raise ScoreTableError(f"{where}: the baseline needs a score")
        rows.append(
            TaskScores(
                task=task,
                higher_is_better=_flag(cell["higher_is_better"], where),
                baseline=baseline,
                scores={m: _number(cell[m], f"{where} column {m}") for m in methods},
            )
        )
    if not rows:
        raise ScoreTableError(f"{source}: no task rows")
    return rows


def load_score_table(path: Path) -> list[TaskScores]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ScoreTableError(f"cannot read {path}: {exc}") from None
    return parse_score_table(text, source=str(path))


def score_table_csv(rows: list[TaskScores]) -> str:
    """The inverse of parse_score_table (what `bench aup --scores` reads back)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    methods = list(rows[0].scores) if rows else []
    writer.writerow([*REQUIRED_COLUMNS, *methods])
    for r in rows:
        cells = [INFEASIBLE if r.scores[m] is None else repr(r.scores[m]) for m in methods]
        writer.writerow([r.task, str(r.higher_is_better).lower(), repr(r.baseline), *cells])
    return out.getvalue()
