"""`mlagent-train demos`: reference solutions recorded as sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import (
    DbOpt,
    HomeOpt,
    JsonOpt,
    app,
    chosen_tasks,
    console,
    emit_json,
    err,
    fail,
    open_store,
    seed_list,
    split_list,
)


@app.command("demos")
def demos_cmd(
    tasks: Annotated[
        list[str] | None,
        typer.Option(
            "--tasks",
            help="Bundled task names (default: the shipped model's six training tasks; with "
            "--task-dir, none).",
        ),
    ] = None,
    task_dir: Annotated[
        list[Path] | None, typer.Option("--task-dir", help="A task folder (repeatable).")
    ] = None,
    levels: Annotated[
        list[str] | None,
        typer.Option(
            "--levels", help="Reference levels: median,bronze,silver,gold (default silver)."
        ),
    ] = None,
    exclude_tasks: Annotated[
        list[str] | None, typer.Option("--exclude-tasks", help="Task names to leave out.")
    ] = None,
    seeds: Annotated[
        list[str] | None,
        typer.Option("--seeds", help="Task seeds (default: solve 0,1,2; research 0)."),
    ] = None,
    agents: Annotated[
        list[str] | None, typer.Option("--agents", help="solve,research (default both).")
    ] = None,
    workers: Annotated[int, typer.Option("--workers", help="Sessions at a time.")] = 2,
    drafts_only: Annotated[
        bool,
        typer.Option(
            "--drafts-only",
            help="Only the solve agent's Draft (the starter copied): parents for an RL run's "
            "improve prompts (--parents store), not sft data.",
        ),
    ] = False,
    db: DbOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record each task's reference solutions as real sessions (model `reference:<level>`) of
    the solve and the research agent, executed and graded like any session: the data
    `mlagent-train run --recipe sft` learns from."""
    from trainer.defaults import DEMO_LEVELS, DEMO_SEEDS, DEMO_TASKS
    from trainer.demos import AGENTS, DemoError, DemoResult, record_demos, summary
    from trainer.heldout import HELD_OUT_TASKS

    names = split_list(tasks) or ([] if task_dir else list(DEMO_TASKS))
    excluded = split_list(exclude_tasks) or list(HELD_OUT_TASKS)
    chosen = chosen_tasks(names, task_dir, [e for e in excluded if e not in names])
    store = open_store(db, home)
    from mlagent_tui.core.home import Home

    where = Home.at(home if db is None else (home or Path(db).parent))

    def progress(r: DemoResult) -> None:
        score = "no valid submission" if r.final_score is None else f"score {r.final_score:.4g}"
        mark = "beats baseline" if r.beats_baseline else ("valid" if r.valid else "invalid")
        err.print(
            f"{r.task} seed {r.seed} {r.level} {r.agent}: {score}, {mark} ({r.session_id}, "
            f"{r.seconds:.1f} s)",
            highlight=False,
        )

    wanted = split_list(agents) or (["solve"] if drafts_only else list(AGENTS))
    given = seed_list(seeds, [])
    results, notes = [], []
    try:
        for agent in wanted:  # one call per agent: each has its own default seeds
            got, said = record_demos(
                where,
                store,
                chosen,
                seeds=given or list(DEMO_SEEDS.get(agent, (0,))),
                levels=split_list(levels) or list(DEMO_LEVELS),
                agents=[agent],
                workers=workers,
                drafts_only=drafts_only,
                on_done=progress,
            )
            results += got
            notes += [n for n in said if n not in notes]
    except DemoError as exc:
        fail(str(exc), 2)
    for note in notes:
        err.print(note, highlight=False)
    out = {**summary(results), "db": str(store.path), "notes": notes}
    if as_json:
        emit_json({**out, "results": [r.model_dump() for r in results]})
        return
    console.print(
        f"recorded {out['sessions']} demonstration sessions in {store.path}: {out['valid']} valid, "
        f"{out['beats_baseline']} better than the baseline (what --recipe sft learns from)",
        highlight=False,
    )
