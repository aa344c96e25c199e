"""Per-run outcomes and their aggregates per task x model (MLAgentBench, MLE-bench, MLGym).

- success: the final submission improves on the baseline by >= 10% (MLAgentBench);
- improvement: mean and standard error over the runs with a valid final submission;
- medal rates: above median / bronze / silver / gold (exact medal) / any medal (MLE-bench),
  over all runs, a crashed run counting as a run without a medal;
- Best Attempt@N: the best validate score seen in any of the N runs; Best Submission@N: the best
  valid final submission of the N runs (MLGym);
- failures: parse_errors, execution_errors and timeouts count events over the runs;
  no_submission, budget_exhausted, model_errors and crashed count runs.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field

from ..session import SUCCESS_IMPROVEMENT_PCT, improvement_pct
from ..tasks import TaskSpec

FAILURE_KINDS = (
    "parse_errors",
    "execution_errors",
    "timeouts",
    "no_submission",
    "budget_exhausted",
    "model_errors",
    "crashed",
)
MEDAL_LEVELS = ("bronze", "silver", "gold")


class RunOutcome(BaseModel):
    """One run of a bench: what its session logged, or why it crashed."""

    task: str
    model: str
    run_index: int
    agent: str = "research"
    session_id: str | None = None
    status: str  # a session status (finished | budget | stopped | failed | running) or crashed
    reason: str = ""
    final_score: float | None = None
    valid: bool = False
    medal: str | None = None
    above_median: bool = False
    improvement_pct: float | None = None
    success: bool = False
    best_attempt: float | None = None
    validate_curve: list[tuple[int, float]] = Field(default_factory=list)
    steps: int = 0
    parse_errors: int = 0
    execution_errors: int = 0
    timeouts: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    wall_seconds: float = 0.0
    model_seconds: float = 0.0
    exec_seconds: float = 0.0
    action_seconds: float = 0.0
    # wall - model calls - actions: preparing the workspace, loading the model, the final
    # grading (auto-submit) and the harness itself
    overhead_seconds: float | None = None
    node: str | None = None  # the Ray node it ran on (`bench --ray`); None = this machine
    error: str | None = None
    # a search session: the chosen node's test score minus the one validation alone would
    # have chosen (signed so that > 0 is better); None for other agents or no hidden split
    selection_gap: float | None = None

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


class TaskModelResult(BaseModel):
    task: str
    model: str
    runs: int
    agent: str = "research"
    success_rate: float
    valid_rate: float
    mean_improvement_pct: float | None
    sem_improvement_pct: float | None
    above_median_rate: float
    bronze_rate: float
    silver_rate: float
    gold_rate: float
    any_medal_rate: float
    best_attempt: float | None
    best_submission: float | None
    failures: dict[str, int]
    mean_tokens: float
    mean_cost_usd: float
    mean_wall_seconds: float
    mean_selection_gap: float | None = None  # search sessions only (see RunOutcome)


def _better(a: float, b: float, higher_is_better: bool) -> bool:
    return a > b if higher_is_better else a < b


def best_of(values: list[float | None], higher_is_better: bool) -> float | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return max(present) if higher_is_better else min(present)


def outcome_from_facts(
    facts: dict[str, Any], spec: TaskSpec, *, model: str, run_index: int
) -> RunOutcome:
    """A run's outcome from `store.session_facts` (the session's rows and events)."""
    s = facts["session"]
    hib = spec.metric.higher_is_better
    validates = [
        (int(r["step"]), float(r["score"]))
        for r in facts["scores"]
        if r["split"] == "validate" and r["valid"] and r["score"] is not None
    ] + [  # a search's nodes are its attempts
        (int(n["node"]), float(n["score"]))
        for n in facts.get("nodes", [])
        if n["status"] == "valid" and n["score"] is not None
    ]
    submits = [r for r in facts["scores"] if r["split"] == "submit"]
    valid = bool(s["valid"]) and s["final_score"] is not None
    final = s["final_score"] if valid else None
    improvement = improvement_pct(final, spec)
    ended = s["ended_at"] or s["started_at"]
    return RunOutcome(
        task=spec.name,
        model=model,
        run_index=run_index,
        session_id=s["id"],
        status=s["status"],
        reason=s["end_reason"] or "",
        final_score=final,
        valid=valid,
        medal=s["medal"] if valid else None,
        above_median=bool(valid and submits and submits[-1]["above_median"]),
        improvement_pct=improvement,
        success=improvement is not None and improvement >= SUCCESS_IMPROVEMENT_PCT,
        best_attempt=best_of([v for _, v in validates], hib),
        validate_curve=validates,
        steps=facts["steps"],
        parse_errors=facts["parse_errors"],
        execution_errors=int(facts["executions"]["errors"]),
        timeouts=int(facts["executions"]["timeouts"]),
        tokens_in=int(facts["llm"]["tokens_in"]),
        tokens_out=int(facts["llm"]["tokens_out"]),
        cost_usd=round(float(facts["llm"]["cost_usd"]), 6),
        wall_seconds=round(max(0.0, ended - s["started_at"]), 3),
        model_seconds=round(float(facts["llm"]["latency_s"]), 3),
        exec_seconds=round(float(facts["executions"]["seconds"]), 3),
        action_seconds=round(float(facts["action_seconds"]), 3),
        selection_gap=selection_gap(facts.get("selection"), hib),
    )


def selection_gap(selection: dict[str, Any] | None, higher_is_better: bool) -> float | None:
    """Test score of the hidden pick minus validation's own pick's (> 0: the hidden one won)."""
    if not selection or not selection.get("hidden_split"):
        return None
    chosen, alone = selection.get("test_score"), selection.get("validation_test_score")
    if chosen is None or alone is None:
        return None
    return round((chosen - alone) * (1 if higher_is_better else -1), 6)


def crashed_outcome(
    task: str, model: str, run_index: int, error: str, session_id: str | None = None
) -> RunOutcome:
    return RunOutcome(
        task=task,
        model=model,
        run_index=run_index,
        session_id=session_id,
        status="crashed",
        reason="the run crashed",
        error=error,
    )


def failures(runs: list[RunOutcome]) -> dict[str, int]:
    return {
        "parse_errors": sum(r.parse_errors for r in runs),
        "execution_errors": sum(r.execution_errors for r in runs),
        "timeouts": sum(r.timeouts for r in runs),
        "no_submission": sum(1 for r in runs if r.status != "crashed" and not r.valid),
        "budget_exhausted": sum(1 for r in runs if r.status == "budget"),
        "model_errors": sum(
            1 for r in runs if r.status == "failed" and r.reason.startswith("model error")
        ),
        "crashed": sum(1 for r in runs if r.status == "crashed"),
    }


def mean_sem(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and standard error of the mean (sample standard deviation / sqrt n; None for n < 2)."""
    if not values:
        return None, None
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def _rate(runs: list[RunOutcome], pred: Any) -> float:
    return sum(1 for r in runs if pred(r)) / len(runs) if runs else 0.0


def aggregate(runs: list[RunOutcome], higher_is_better: bool) -> TaskModelResult:
    """The row of one task x model x agent from its runs (all of the same three)."""
    if not runs:
        raise ValueError("no runs to aggregate")
    task, model, agent = runs[0].task, runs[0].model, runs[0].agent
    if any(r.task != task or r.model != model or r.agent != agent for r in runs):
        raise ValueError("aggregate() takes the runs of one task, one model and one agent")
    mean, sem = mean_sem([r.improvement_pct for r in runs if r.improvement_pct is not None])
    n = len(runs)
    gaps = [r.selection_gap for r in runs if r.selection_gap is not None]

    def rounded(v: float | None) -> float | None:
        return None if v is None else round(v, 4)

    return TaskModelResult(
        task=task,
        model=model,
        agent=agent,
        runs=n,
        success_rate=_rate(runs, lambda r: r.success),
        valid_rate=_rate(runs, lambda r: r.valid),
        mean_improvement_pct=rounded(mean),
        sem_improvement_pct=rounded(sem),
        above_median_rate=_rate(runs, lambda r: r.above_median),
        bronze_rate=_rate(runs, lambda r: r.medal == "bronze"),
        silver_rate=_rate(runs, lambda r: r.medal == "silver"),
        gold_rate=_rate(runs, lambda r: r.medal == "gold"),
        any_medal_rate=_rate(runs, lambda r: r.medal in MEDAL_LEVELS),
        best_attempt=best_of([r.best_attempt for r in runs], higher_is_better),
        best_submission=best_of([r.final_score for r in runs], higher_is_better),
        failures=failures(runs),
        mean_tokens=round(sum(r.tokens for r in runs) / n, 1),
        mean_cost_usd=round(sum(r.cost_usd for r in runs) / n, 6),
        mean_wall_seconds=round(sum(r.wall_seconds for r in runs) / n, 3),
        mean_selection_gap=rounded(mean_sem(gaps)[0]) if gaps else None,
    )


def best_so_far(curve: list[tuple[int, float]], steps: int, higher_is_better: bool) -> list[float]:
    """The best validate score reached by each step 1..steps (nan before the first one)."""
    out: list[float] = []
    best: float | None = None
    by_step: dict[int, list[float]] = {}
    for step, score in curve:
        by_step.setdefault(step, []).append(score)
    for step in range(1, steps + 1):
        for score in by_step.get(step, []):
            if best is None or _better(score, best, higher_is_better):
                best = score
        out.append(math.nan if best is None else best)
    return out
