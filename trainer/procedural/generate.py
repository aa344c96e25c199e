"""`mlagent-train procedural`: write N procedural task folders, measured like the bundled ones.

For each index a design is drawn, its code written to a staging folder and measured (seed 0:
the starter and the four references, graded by the task's own grade.py). The scores must
climb strictly, sample < median < starter < bronze < silver < gold, with headroom above the
starter; otherwise the next attempt redraws the hidden signal (after STRICT_ATTEMPTS the
starter may fall below the median reference). Each threshold lies halfway between its
reference's measured score and the level below (the starter's, for bronze: it earns no medal),
so a reference still reaches its level where another library version (Debian's, in the docker
sandbox) moves its score by less than half that gap; `[baseline] score` is the starter's own.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

from pydantic import BaseModel

from mlagent_tui.core.synth.checks import order_problem, round_threshold
from mlagent_tui.core.tasks import Task

from .design import TaskDesign, design_task, task_name
from .folder import LEVELS, description_md, task_toml, write_code
from .measure import MeasureError, Measurement, MeasureWorker

MAX_ATTEMPTS = 24
STRICT_ATTEMPTS = 12  # then the starter may fall below the median reference
LADDER = ("sample", "median", "baseline", "bronze", "silver", "gold")
LEVEL_LADDER = ("sample", "median", "bronze", "silver", "gold")
SLACK = 0.5  # a threshold sits this share of the gap below its reference's score
MIN_HEADROOM = 0.03  # gold over the starter: accuracy / ROC AUC points ...
MIN_ERROR_CUT = 0.08  # ... or the share of the starter's error gold removes


class ProceduralError(ValueError):
    """The command cannot do what was asked (bad count or folder, a task that will not order)."""


class GeneratedTask(BaseModel):
    name: str
    folder: str
    domain: str
    task_type: str
    metric: str
    higher_is_better: bool
    target: str
    rows: int
    features: int
    categorical: list[str]
    missing: list[str]
    baseline: float
    thresholds: dict[str, float]
    scores: dict[str, float | None]
    attempts: int
    seconds: float


def ladder_problem(design: TaskDesign, m: Measurement, strict: bool = True) -> str | None:
    """Why the measured scores do not make a good task, or None. `strict` also wants the
    starter above the median reference (as in every bundled task)."""
    absent = [k for k in LADDER if m.scores.get(k) is None]
    if absent:
        why = "; ".join(f"{k}: {m.errors.get(k, '?').strip().splitlines()[-1]}" for k in absent)
        return f"no valid score for {', '.join(absent)} ({why})"
    s = {k: float(m.scores[k]) for k in LADDER}  # type: ignore[arg-type]
    sign = 1.0 if design.higher_is_better else -1.0
    pairs = list(pairwise(LADDER)) if strict else [*pairwise(LEVEL_LADDER), ("baseline", "bronze")]
    for low, high in pairs:
        if sign * (s[high] - s[low]) <= 1e-9:
            return f"{high} {s[high]:.4g} does not beat {low} {s[low]:.4g}"
    if design.higher_is_better and s["gold"] - s["baseline"] < MIN_HEADROOM:
        return f"too little headroom: gold {s['gold']:.4g}, starter {s['baseline']:.4g}"
    if not design.higher_is_better and s["gold"] > (1 - MIN_ERROR_CUT) * s["baseline"]:
        return f"too little headroom: gold {s['gold']:.4g}, starter {s['baseline']:.4g}"
    return None


def thresholds_of(design: TaskDesign, scores: dict[str, float | None]) -> dict[str, float]:
    hib = design.higher_is_better
    s = {k: float(v) for k, v in scores.items() if v is not None}
    below = {"median": s["sample"], "silver": s["bronze"], "gold": s["silver"]}
    starter, median = s["baseline"], s["median"]
    below["bronze"] = max(starter, median) if hib else min(starter, median)  # no medal for it
    return {
        level: round_threshold(s[level] - SLACK * (s[level] - below[level]), hib)
        for level in LEVELS
    }


def _sample_text(design: TaskDesign) -> str:
    if design.task_type == "regression":
        return "a constant guess"
    if design.metric == "roc_auc":
        return "a constant 0.5"
    return "every row given the rarest class"


def _prepare_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ProceduralError(f"--out {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ProceduralError(
            f"--out {out} is not empty; pass --force to write into it (procedural task folders "
            "of the same names are replaced, nothing else is touched)"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = Path(tempfile.mkdtemp(prefix=".write-probe-", dir=out))
        probe.rmdir()
    except OSError as exc:
        raise ProceduralError(f"cannot write to --out {out}: {exc.strerror or exc}") from exc


def make_task(
    out: Path, seed: int, index: int, worker: MeasureWorker, scratch: Path
) -> GeneratedTask:
    """Draw, measure (retrying with new hidden signals) and write one task folder."""
    started = time.perf_counter()
    name = task_name(seed, index)
    problem = ""
    for attempt in range(MAX_ATTEMPTS):
        design = design_task(seed, index, attempt)
        stage = scratch / "stage" / name
        shutil.rmtree(stage, ignore_errors=True)
        write_code(design, stage)
        try:
            m = worker.measure(stage, scratch / "measure")
        except MeasureError as exc:
            raise ProceduralError(f"{name}: {exc}") from exc
        problem = ladder_problem(design, m, strict=attempt < STRICT_ATTEMPTS) or ""
        if not problem:
            thresholds = thresholds_of(design, m.scores)
            problem = order_problem(thresholds, design.higher_is_better) or ""
        if not problem:
            break
    else:
        raise ProceduralError(
            f"{name}: none of {MAX_ATTEMPTS} attempts gave cleanly ordered reference scores; "
            f"the last: {problem}"
        )
    baseline = float(m.scores["baseline"])  # type: ignore[arg-type]
    (stage / "task.toml").write_text(task_toml(design, baseline, thresholds), encoding="utf-8")
    description = description_md(design, m.test_rows, m.test_ids, _sample_text(design))
    (stage / "description.md").write_text(description, encoding="utf-8")
    Task(stage)  # the folder loads as a task
    final = out / name
    if final.exists() or final.is_symlink():
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        else:
            final.unlink()
    shutil.move(str(stage), str(final))
    return GeneratedTask(
        name=name,
        folder=str(final),
        domain=design.domain,
        task_type=design.task_type,
        metric=design.metric,
        higher_is_better=design.higher_is_better,
        target=design.target.name,
        rows=design.rows,
        features=len(design.order),
        categorical=[c.name for c in design.categorical],
        missing=[c.name for c in design.numeric if c.missing],
        baseline=round(baseline, 6),
        thresholds=thresholds,
        scores={k: None if v is None else round(v, 6) for k, v in m.scores.items()},
        attempts=attempt + 1,
        seconds=round(time.perf_counter() - started, 2),
    )


def generate_tasks(
    out: Path | str,
    count: int,
    seed: int = 0,
    *,
    force: bool = False,
    on_task: Callable[[GeneratedTask], object] | None = None,
) -> list[GeneratedTask]:
    """Write `count` task folders `proc-<seed>-<i>-<domain>` into `out` (same seed, same bytes)."""
    if count < 1:
        raise ProceduralError(f"--count must be at least 1, got {count}")
    if seed < 0:
        raise ProceduralError(f"--seed must be zero or more, got {seed}")
    out = Path(out)
    _prepare_out(out, force)
    made = []
    with (
        tempfile.TemporaryDirectory(prefix="mlagent-procedural-") as tmp,
        MeasureWorker() as worker,
    ):
        for index in range(count):
            task = make_task(out, seed, index, worker, Path(tmp))
            made.append(task)
            if on_task is not None:
                on_task(task)
    return made
