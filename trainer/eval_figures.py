"""What `mlagent-train eval` reports of each session and of a set of them: the figures, their
95% intervals and what each figure means (kept apart from the evaluation's running)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from mlagent_tui.core.store import Store
from mlagent_tui.core.tasks import Task

from .data import unit_score
from .provenance import HELD_OUT_RULE
from .rollout import SessionOutcome
from .stats_tests import wilson

DEFINITIONS = {
    "valid": "the session ended with a valid final submission (its sessions row's `valid`: its "
    "own submission or the auto-submitted best validated one, graded on the test split of the "
    "session's seed)",
    "beats_baseline": "valid, and the final score strictly better than the task's [baseline] "
    "score in the metric's direction. Both are test-split scores, but [baseline] score is the "
    "starter script's on seed 0's test split (checked by `mlagent tasks check`, within the "
    "task's [baseline] tolerance, 5% by default), not re-measured on each evaluation seed",
    "beats_starter": "valid, and the final score strictly better than the task's starter "
    "script's (its [baseline] command) on the test split of the same seed, run and graded once "
    "per task and seed in the evaluation's home; null where the starter gave no valid score",
    "medal": "the session's medal is not null (the final score reaches bronze or better)",
    "mean_reward": "mean over sessions of trainer.data.unit_score(spec, final_score, valid): 0 "
    "without a valid submission, 0.1 at or below the baseline score, 1 at gold, linear between",
    "held_out": HELD_OUT_RULE,
}


class Figures(BaseModel):
    valid_rate: float
    beats_baseline_rate: float
    medal_rate: float
    mean_reward: float
    samples: int
    intervals: dict[str, list[float]] = Field(default_factory=dict)  # rate -> 95% Wilson [lo, hi]
    # over the sessions whose seed's starter has a valid test score (None: no such session)
    beats_starter_rate: float | None = None
    starter_sessions: int = 0


class TaskFigures(Figures):
    metric: str
    higher_is_better: bool
    baseline_score: float


class SessionFigure(BaseModel):
    """One measured session."""

    task: str
    seed: int
    sample: int
    session_id: str
    status: str
    end_reason: str
    valid: bool
    final_score: float | None
    beats_baseline: bool
    starter_score: float | None = None  # the starter's test score at this seed
    beats_starter: bool | None = None  # None: the starter gave no valid score to beat
    medal: str | None
    reward: float
    steps: int
    seconds: float
    why: str | None = None  # what went wrong, where no valid submission came of it


def figures(rows: list[SessionFigure]) -> dict[str, Any]:
    n = len(rows)

    def rate(values: list[bool] | list[float]) -> float:
        return round(sum(values) / n, 4) if n else 0.0

    hits = {
        "valid_rate": sum(r.valid for r in rows),
        "beats_baseline_rate": sum(r.beats_baseline for r in rows),
        "medal_rate": sum(r.medal is not None for r in rows),
    }
    judged = [r.beats_starter for r in rows if r.beats_starter is not None]
    intervals = {k: [round(x, 4) for x in wilson(v, n)] for k, v in hits.items()}
    if judged:
        intervals["beats_starter_rate"] = [round(x, 4) for x in wilson(sum(judged), len(judged))]
    return {
        "intervals": intervals,
        "beats_starter_rate": round(sum(judged) / len(judged), 4) if judged else None,
        "starter_sessions": len(judged),
        "valid_rate": rate([r.valid for r in rows]),
        "beats_baseline_rate": rate([r.beats_baseline for r in rows]),
        "medal_rate": rate([r.medal is not None for r in rows]),
        "mean_reward": rate([r.reward for r in rows]),
        "samples": n,
    }


def why_failed(store: Store, outcome: SessionOutcome) -> str:
    """One short line: the last execution's failure, the grader's complaint, how it ended."""
    parts: list[str] = []
    if not outcome.steps:
        parts.append("no step completed")
    elif not any(s.parsed for s in outcome.steps):
        parts.append("no response parsed")
    ran = [s for s in outcome.steps if s.exit_code is not None]
    if ran and ran[-1].exit_code != 0:
        tail = [ln for ln in ran[-1].output.splitlines() if ln.strip()]
        last = f": {tail[-1].strip()[:120]}" if tail else ""
        parts.append(f"step {ran[-1].step} exited {ran[-1].exit_code}{last}")
    submits = [
        e.payload
        for e in store.events(outcome.session_id, kinds=["score_recorded"])
        if e.payload.split == "submit"
    ]
    if submits and submits[-1].error:
        parts.append(f"submission: {' '.join(submits[-1].error.split())[:160]}")
    parts.append(f"ended {outcome.status}: {outcome.end_reason[:120]}")
    return "; ".join(parts)


def session_figure(
    store: Store,
    task: Task,
    seed: int,
    sample: int,
    outcome: SessionOutcome,
    starter: float | None = None,
) -> SessionFigure:
    spec, score = task.spec, outcome.final_score
    valid = outcome.valid
    beats = None
    if starter is not None:
        beats = bool(valid and score is not None and spec.better(score, starter))
    return SessionFigure(
        starter_score=starter,
        beats_starter=beats,
        task=task.name,
        seed=seed,
        sample=sample,
        session_id=outcome.session_id,
        status=outcome.status,
        end_reason=outcome.end_reason,
        valid=valid,
        final_score=score,
        beats_baseline=valid and score is not None and spec.better(score, spec.baseline.score),
        medal=outcome.medal,
        reward=unit_score(spec, score, valid),
        steps=len(outcome.steps),
        seconds=outcome.wall_seconds,
        why=None if valid else why_failed(store, outcome),
    )
