"""Performance profiles and the AUP score (MLGym), from tables of per-task scores.

For task p and method m (the baseline counts as a method, named `baseline`):

- feasible(p, m): m has a score s > 0 that is not worse than the baseline's b (s >= b when
  higher is better, s <= b when lower is better). As in MLGym, a negative score is infeasible
  (a ratio of scores means nothing across a sign change): Blotto's baseline of -0.248 is. A
  score of 0 is infeasible too (it has no ratio). A missing score is infeasible.
- best_p: the best feasible score; ratio r(p, m) = best_p / s (higher is better) or
  s / best_p (lower is better), so r >= 1 and r = 1 for the best (ties share it).
- an infeasible method gets r(p, m) = (1 + EPSILON) * the task's worst feasible ratio,
  EPSILON = 0.05 (the baseline's own ratio whenever the baseline is feasible). A task where
  nothing is feasible gives every method r = inf: it counts, and is never solved.
- profile rho_m(tau) = share of tasks whose ratio is within tau on the axis of the definition.

Two definitions of AUP_m, the area under rho_m from the best (tau = 0, resp. 1) to tau_max:

- `mlgym` (default, comparable with MLGym's published numbers): tau is log10(ratio); rho_m is
  evaluated on a grid of GRID_POINTS evenly spaced points over [0, tau_max] and summed as left
  steps, which is (1/|P|) * sum_p (tau_max - g_p) with g_p the first grid point >= log10 r(p, m)
  (0 when that is past the grid's last step). tau_max is shared by every table of one
  comparison: each task proposes ceil((1 + EPSILON) * its worst feasible ratio), and tau_max
  is log10 of the largest proposal rounded up to one decimal. MLGym's paper (v1) rounded up to
  a whole number instead; give `tau_max` to reproduce such a table.
- `linear`: tau is the ratio itself and the integral over [1, tau_max] is exact,
  (1/|P|) * sum_p max(0, tau_max - r(p, m)), with tau_max the largest finite ratio of all tables.
"""

from __future__ import annotations

import bisect
import math
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, Field

from .score_table import TaskScores

EPSILON = 0.05
GRID_POINTS = 500
BASELINE = "baseline"
Definition = Literal["mlgym", "linear"]
DEFINITIONS: tuple[str, ...] = ("mlgym", "linear")
Reason = Literal["no score", "negative", "zero", "worse than the baseline"]


class AupError(ValueError):
    """Options that give no comparison (a bad tau_max, an unknown definition, no tables)."""


class Infeasible(BaseModel):
    """One method that has no usable score on one task, and why."""

    task: str
    method: str
    score: float | None
    reason: Reason


class AupResult(BaseModel):
    definition: Definition = "mlgym"
    tau_max: float = Field(description="on the axis of the definition: log10(ratio) or ratio")
    epsilon: float = EPSILON
    grid_points: int | None = Field(default=None, description="mlgym only")
    methods: list[str]
    ratios: dict[str, dict[str, float]] = Field(description="task -> method -> ratio")
    infeasible: list[Infeasible] = Field(default_factory=list)
    aup: dict[str, float]

    @property
    def start(self) -> float:
        """Where the profile's axis starts: the best method's ratio 1 on it."""
        return 0.0 if self.definition == "mlgym" else 1.0

    def axis(self, ratio: float) -> float:
        """A ratio's position on the axis the profile is drawn and integrated over."""
        if math.isinf(ratio):
            return math.inf
        return math.log10(ratio) if self.definition == "mlgym" else ratio

    def profile(self, method: str, taus: list[float]) -> list[float]:
        """rho_method(tau) at each tau (on the axis): the share of tasks within tau."""
        xs = [self.axis(row[method]) for row in self.ratios.values()]
        return [sum(1 for x in xs if x <= tau + 1e-12) / len(xs) for tau in taus]

    def summary(self) -> dict[str, Any]:
        """A JSON-safe view: a ratio of a task where nothing is feasible is null."""
        return {
            "aup": self.aup,
            "tasks": len(self.ratios),
            "ratios": {
                t: {m: None if math.isinf(r) else r for m, r in row.items()}
                for t, row in self.ratios.items()
            },
            "infeasible": [i.model_dump() for i in self.infeasible],
        }


def infeasibility(score: float | None, baseline: float, higher_is_better: bool) -> Reason | None:
    """Why `score` is infeasible on a task with this baseline (None: it is feasible)."""
    if score is None or not math.isfinite(score):
        return "no score"
    if score < 0:
        return "negative"
    if (score < baseline if higher_is_better else score > baseline) and not same_as_written(
        score, baseline
    ):
        return "worse than the baseline"
    return "zero" if score == 0 else None


def same_as_written(score: float, written: float) -> bool:
    """Whether `score` rounds to `written` at the precision `written` has (a task states its
    baseline to 4 places: the starter's own 0.87826 is the baseline 0.8783, not worse)."""
    exponent = Decimal(repr(written)).as_tuple().exponent
    if not isinstance(exponent, int):  # nan, inf
        return False
    return abs(score - written) <= 0.5 * 10.0**exponent + 1e-12


def feasible(score: float | None, baseline: float, higher_is_better: bool) -> bool:
    return infeasibility(score, baseline, higher_is_better) is None


def _task(row: TaskScores, epsilon: float) -> tuple[dict[str, float], list[Infeasible], float]:
    """Ratios on one task, its infeasible methods, and its worst feasible ratio (inf: none)."""
    hib = row.higher_is_better
    scores = {BASELINE: row.baseline, **row.scores}
    out: list[Infeasible] = []
    ok: dict[str, float] = {}
    for m, s in scores.items():
        reason = infeasibility(s, row.baseline, hib)
        if reason is None and s is not None:
            ok[m] = s
        else:
            out.append(Infeasible(task=row.task, method=m, score=s, reason=reason or "no score"))
    if not ok:
        return {m: math.inf for m in scores}, out, math.inf
    best = max(ok.values()) if hib else min(ok.values())
    ratio = {m: best / s if hib else s / best for m, s in ok.items()}
    worst = max(ratio.values())
    return {m: ratio.get(m, (1 + epsilon) * worst) for m in scores}, out, worst


def task_ratios(row: TaskScores, epsilon: float = EPSILON) -> dict[str, float]:
    """Each method's performance ratio on one task (the baseline's as `baseline`)."""
    return _task(row, epsilon)[0]


def mlgym_tau_max(worst_ratios: list[float], epsilon: float = EPSILON) -> float:
    """MLGym's shared tau_max: each task proposes ceil((1 + eps) * its worst feasible ratio);
    log10 of the largest proposal, rounded up to one decimal."""
    proposals = [math.ceil((1 + epsilon) * w) for w in worst_ratios if math.isfinite(w)]
    return math.ceil(math.log10(max(proposals, default=2)) * 10) / 10


def _grid(tau_max: float, points: int) -> list[float]:
    """`points` evenly spaced values over [0, tau_max], both ends included (as numpy's linspace)."""
    step = tau_max / (points - 1)
    return [i * step for i in range(points - 1)] + [tau_max]


def _mlgym_area(x: float, grid: list[float]) -> float:
    """One task's share of the left-step sum: tau_max - (first grid point >= x), or 0."""
    k = bisect.bisect_left(grid, x)
    return grid[-1] - grid[k] if k < len(grid) - 1 else 0.0


def compute_aups(
    tables: dict[str, list[TaskScores]],
    *,
    definition: str = "mlgym",
    tau_max: float | None = None,
    epsilon: float = EPSILON,
    grid_points: int = GRID_POINTS,
) -> dict[str, AupResult]:
    """Profiles and AUP of several tables on one shared tau axis (see the module's doc)."""
    if definition not in DEFINITIONS:
        raise AupError(f"unknown AUP definition {definition!r}: use mlgym or linear")
    if not tables:
        raise AupError("no score tables")
    computed: dict[str, tuple[list[str], dict[str, dict[str, float]], list[Infeasible]]] = {}
    worst: list[float] = []
    for name, rows in tables.items():
        if not rows:
            raise AupError(f"{name}: no tasks to score")
        methods = [BASELINE, *rows[0].scores]
        ratios: dict[str, dict[str, float]] = {}
        infeasible: list[Infeasible] = []
        for row in rows:
            if [BASELINE, *row.scores] != methods:
                raise AupError(f"{name}: task {row.task!r} does not have the methods {methods[1:]}")
            ratios[row.task], bad, w = _task(row, epsilon)
            infeasible += bad
            worst.append(w)
        computed[name] = (methods, ratios, infeasible)
    if tau_max is None:
        if definition == "mlgym":
            tau_max = mlgym_tau_max(worst, epsilon)
        else:
            finite = [
                r
                for _, ratios, _ in computed.values()
                for row in ratios.values()
                for r in row.values()
                if math.isfinite(r)
            ]
            tau_max = max(finite, default=1.0)
    elif not math.isfinite(tau_max) or tau_max <= (0 if definition == "mlgym" else 1):
        floor = "0 (it is log10 of a ratio)" if definition == "mlgym" else "1 (it is a ratio)"
        raise AupError(f"tau_max must be a number above {floor}, not {tau_max}")
    grid = _grid(tau_max, grid_points) if definition == "mlgym" else []
    results = {}
    for name, (methods, ratios, infeasible) in computed.items():
        aup = {}
        for m in methods:
            if definition == "mlgym":
                areas = [_mlgym_area(math.log10(row[m]), grid) for row in ratios.values()]
            else:
                areas = [max(0.0, tau_max - row[m]) for row in ratios.values()]
            aup[m] = sum(areas) / len(areas)
        results[name] = AupResult(
            definition=definition,  # type: ignore[arg-type]
            tau_max=tau_max,
            epsilon=epsilon,
            grid_points=grid_points if definition == "mlgym" else None,
            methods=methods,
            ratios=ratios,
            infeasible=infeasible,
            aup=aup,
        )
    return results


def compute_aup(rows: list[TaskScores], **options: Any) -> AupResult:
    """Profiles and AUP of one table (its own tau_max unless given); options as compute_aups."""
    return compute_aups({"table": rows}, **options)["table"]
