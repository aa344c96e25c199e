"""A bench report's CSV tables: one row per task x model x agent, and one per run."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from .metrics import FAILURE_KINDS

if TYPE_CHECKING:
    from .metrics import RunOutcome, TaskModelResult

RESULT_COLUMNS = (
    "task",
    "model",
    "runs",
    "success_rate",
    "valid_rate",
    "mean_improvement_pct",
    "sem_improvement_pct",
    "above_median_rate",
    "bronze_rate",
    "silver_rate",
    "gold_rate",
    "any_medal_rate",
    "best_attempt",
    "best_submission",
    "mean_tokens",
    "mean_cost_usd",
    "mean_wall_seconds",
    "agent",  # last, so that the columns before keep their places
    "mean_selection_gap",
)


def results_csv(results: list[TaskModelResult]) -> str:
    """One row per task x model x agent: rates, best scores, means, failure counts."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*RESULT_COLUMNS, *(f"failures_{k}" for k in FAILURE_KINDS)])
    for r in results:
        d = r.model_dump()
        writer.writerow(
            [*("" if d[c] is None else d[c] for c in RESULT_COLUMNS)]
            + [r.failures[k] for k in FAILURE_KINDS]
        )
    return out.getvalue()


def runs_csv(runs: list[RunOutcome]) -> str:
    """One row per run: what its session logged, or why it crashed."""
    cols = (
        "task model run_index session_id status reason final_score valid medal"
        " improvement_pct success best_attempt steps parse_errors execution_errors timeouts"
        " tokens_in tokens_out cost_usd wall_seconds model_seconds exec_seconds action_seconds"
        " overhead_seconds error agent selection_gap"
    ).split()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(cols)
    for r in runs:
        d = r.model_dump()
        writer.writerow(["" if d[c] is None else d[c] for c in cols])
    return out.getvalue()
