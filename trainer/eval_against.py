"""`mlagent-train eval --against MODEL`: the same sessions (task, seed, sample) run with a second
model, compared pair by pair: how many sessions the evaluated model did better, worse or the
same (its reward), and the exact sign test's p-value of that split.

The second model is held to the same rule as the first where its training record is known
(a task or seed it trained on is refused). A model with no record (a bare base, an API model,
a GGUF without its `.training.json`) is still compared; the report says, in one line, that
whether the sessions are held out for it cannot be checked.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .evaluate import EvalError, EvalPlan, EvalReport
from .provenance import ProvenanceError, held_out, training_record
from .stats_tests import Paired, paired

DEFINITIONS = {
    "intervals": "each rate's 95% Wilson score interval [low, high] over the sessions",
    "against": "the same task/seed/sample sessions run with --against MODEL; better/worse/same "
    "count the sessions where this model's reward was higher/lower/equal; p_value is the exact "
    "two-sided sign test over better against worse (ties left out)",
}


class Against(BaseModel):
    model: str
    model_name: str
    valid_rate: float
    beats_baseline_rate: float
    beats_starter_rate: float | None = None
    medal_rate: float
    mean_reward: float
    intervals: dict[str, list[float]]
    paired: Paired
    held_out_note: str  # what is known of the second model's training data


def plan_against(plan: EvalPlan, model: str) -> tuple[EvalPlan, str]:
    """The second model's plan (same tasks, seeds, samples) and its held-out note; EvalError
    where its own record says it trained on what the evaluation runs."""
    from mlagent_tui.core.bench.runner import BenchError, check_model

    try:
        check_model(model)
    except BenchError as exc:
        raise EvalError(f"--against: {exc}") from None
    try:
        data, source = training_record(model)
    except ProvenanceError as exc:
        raise EvalError(f"--against {model}: {exc}") from None
    names = [t.name for t in plan.tasks]
    if data is None:
        note = (
            f"{model} has no training record: compared on the same sessions, but whether they "
            "are held out for it cannot be checked"
        )
        held = plan.held_out.model_copy(update={"training_data": None})
    else:
        try:
            held = held_out(names, set(names), plan.seeds, data, source)
        except ProvenanceError as exc:
            raise EvalError(f"--against {model}: {exc}") from None
        note = f"{model}: held out per {source}"
    return plan.model_copy(update={"model": model, "held_out": held}), note


def compare(mine: EvalReport, theirs: EvalReport, note: str) -> Against:
    """The second run's figures and the pairwise comparison of rewards."""

    def keyed(report: EvalReport) -> list[tuple[tuple[Any, ...], float]]:
        return [((r.task, r.seed, r.sample), r.reward) for r in report.sessions]

    return Against(
        model=theirs.model,
        model_name=theirs.model_name,
        valid_rate=theirs.valid_rate,
        beats_baseline_rate=theirs.beats_baseline_rate,
        beats_starter_rate=theirs.beats_starter_rate,
        medal_rate=theirs.medal_rate,
        mean_reward=theirs.mean_reward,
        intervals=theirs.intervals,
        paired=paired(keyed(mine), keyed(theirs)),
        held_out_note=note,
    )


def paired_line(model_name: str, a: Against) -> str:
    """One line for the text report."""
    p = a.paired
    diff = "-" if p.mean_difference is None else f"{p.mean_difference:+.3f}"
    return (
        f"against {a.model_name}: over {p.sessions} paired sessions {model_name} did better in "
        f"{p.better}, worse in {p.worse}, the same in {p.same} (mean reward difference {diff}; "
        f"sign test p = {p.p_value:.3g}). {a.held_out_note}."
    )
