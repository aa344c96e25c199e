"""`mlagent-train procedural`: seeded synthetic training tasks with varied names and types."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from .app import JsonOpt, app, console, emit_json, err, fail


@app.command("procedural")
def procedural_cmd(
    count: Annotated[int, typer.Option("--count", help="How many tasks to write.")],
    out: Annotated[Path, typer.Option("--out", help="The folder to write the task folders into.")],
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same tasks, same bytes.")] = 0,
    force: Annotated[
        bool,
        typer.Option("--force", help="Write into a non-empty --out (same-named tasks replaced)."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write COUNT procedural tabular tasks (proc-<seed>-<i>-<domain>) into OUT: varied domains,
    column and target names, sizes and task types, so a model must read names from its prompt.
    Each task's thresholds and baseline score are measured by running its references; use
    them with --task-dir (demos, run, eval) like any task folder."""
    from trainer.procedural import GeneratedTask, ProceduralError, generate_tasks

    def progress(t: GeneratedTask) -> None:
        err.print(
            f"{t.name}: {t.task_type}, {t.metric}, {t.rows} rows, {t.features} columns, target "
            f"{t.target}; starter {t.baseline:.4g}, gold {t.thresholds['gold']:.4g} "
            f"({t.attempts} attempt{'s' if t.attempts > 1 else ''}, {t.seconds:.1f} s)",
            highlight=False,
        )

    started = time.perf_counter()
    try:
        made = generate_tasks(out, count, seed, force=force, on_task=progress)
    except ProceduralError as exc:
        fail(str(exc), 2)
        raise
    seconds = round(time.perf_counter() - started, 2)
    if as_json:
        emit_json(
            {
                "out": str(out),
                "seed": seed,
                "count": len(made),
                "seconds": seconds,
                "tasks": [t.model_dump() for t in made],
            }
        )
        return
    console.print(
        f"wrote {len(made)} procedural tasks into {out} in {seconds:.1f} s "
        f"(use them with --task-dir {out})",
        highlight=False,
    )
