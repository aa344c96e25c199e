"""Performance profiles and the AUP score (MLGym), from any table of per-task scores.

For task p and method m (the baseline counts as a method, named `baseline`):

- feasible(p, m): m has a valid score s > 0 that is not worse than the baseline's b
  (s >= b when higher is better, s <= b when lower is better). Scores <= 0 are infeasible, as in
  MLGym, because a ratio of scores is undefined for them. The baseline is always feasible.
- best_p: the best feasible score of task p (max, or min when lower is better).
- ratio r(p, m) = best_p / s when higher is better, s / best_p when lower is better, so r >= 1
  and r = 1 for the best method (ties share r = 1).
- infeasible methods get r(p, m) = (1 + EPSILON) * r(p, baseline), EPSILON = 0.05; since every
  feasible method is at least as good as the baseline, that is just past the worst feasible ratio.
- performance profile rho_m(tau) = |{p : r(p, m) <= tau}| / |P|.
- AUP_m = integral of rho_m over tau in [1, tau_max], tau_max = the largest ratio in the table
  (all tasks, all methods). rho_m is a step function, so the integral is exact:
  AUP_m = (1/|P|) * sum_p (tau_max - r(p, m)).

MLGym's released script integrates the same profile on a log10 grid; we integrate over linear
tau exactly, so values compare between tables scored here, not with MLGym's printed numbers.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from pydantic import BaseModel, Field

EPSILON = 0.05
BASELINE = "baseline"
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


class AupResult(BaseModel):
    tau_max: float
    epsilon: float = EPSILON
    methods: list[str]
    ratios: dict[str, dict[str, float]] = Field(description="task -> method -> ratio")
    aup: dict[str, float]

    def profile(self, method: str, taus: list[float]) -> list[float]:
        """rho_method(tau) at each tau: the share of tasks with ratio <= tau."""
        rs = [row[method] for row in self.ratios.values()]
        return [sum(1 for r in rs if r <= tau + 1e-12) / len(rs) for tau in taus]


def feasible(score: float | None, baseline: float, higher_is_better: bool) -> bool:
    if score is None or not math.isfinite(score) or score <= 0:
        return False
    return score >= baseline if higher_is_better else score <= baseline


def task_ratios(row: TaskScores, epsilon: float = EPSILON) -> dict[str, float]:
    """Each method's performance ratio on one task (the baseline's included, as `baseline`)."""
    if row.baseline <= 0 or not math.isfinite(row.baseline):
        raise ScoreTableError(
            f"task {row.task!r}: the baseline score must be a positive number for ratios "
            f"(got {row.baseline})"
        )
    hib = row.higher_is_better
    scores = {BASELINE: row.baseline, **row.scores}
    ok = {m: s for m, s in scores.items() if feasible(s, row.baseline, hib)}
    best = max(ok.values()) if hib else min(ok.values())

    def ratio(s: float) -> float:
        return best / s if hib else s / best

    base_ratio = ratio(row.baseline)
    return {
        m: ratio(ok[m]) if m in ok else (1 + epsilon) * base_ratio for m in [BASELINE, *row.scores]
    }


def compute_aup(rows: list[TaskScores], epsilon: float = EPSILON) -> AupResult:
    """Ratios, tau_max and AUP for every method over the tasks of `rows` (see module doc)."""
    if not rows:
        raise ScoreTableError("no tasks to score")
    methods = [BASELINE, *rows[0].scores]
    for row in rows:
        if [BASELINE, *row.scores] != methods:
            raise ScoreTableError(f"task {row.task!r} does not have the methods {methods[1:]}")
    ratios = {row.task: task_ratios(row, epsilon) for row in rows}
    tau_max = max(r for per_task in ratios.values() for r in per_task.values())
    aup = {m: sum(tau_max - ratios[row.task][m] for row in rows) / len(rows) for m in methods}
    return AupResult(tau_max=tau_max, epsilon=epsilon, methods=methods, ratios=ratios, aup=aup)


# -- score tables (CSV) -----------------------------------------------------------------------
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
