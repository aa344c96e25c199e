"""`mlagent-train eval`: held-out evaluation of a model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from .app import (
    JsonOpt,
    app,
    console,
    emit_json,
    err,
    fail,
)

EVAL_HELP = (
    "Run N real sessions of an agent per task and seed with a model and report valid_rate, "
    "beats_baseline_rate, medal_rate and mean_reward, overall and per task (the JSON's "
    "`definitions` repeats these).\n\n"
    "valid: the session ended with a valid final submission (graded on the test split of its "
    "seed).\n\n"
    "beats_baseline: valid, and the final score strictly better than the task's \\[baseline] "
    "score in the metric's direction; that score is the starter script's on seed 0's test "
    "split, not re-measured for each evaluation seed.\n\n"
    "beats starter: valid, and the final score strictly better than the task's starter "
    "script's on the test split of the same seed (run once per task and seed).\n\n"
    "medal: the session has a medal (its final score reaches bronze or better).\n\n"
    "mean_reward: the mean of trainer.data.unit_score: 0 without a valid submission, 0.1 at or "
    "below the baseline score, 1 at gold.\n\n"
    "Held out: a task any training data came from (--trained-on, else the model's own record) "
    "is refused unless named in --tasks with --seeds all different from its training seeds. "
    "Sessions go to a temporary home, deleted afterwards, unless --home keeps them."
)


@app.command("eval", help=EVAL_HELP)
def eval_cmd(
    model: Annotated[
        str,
        typer.Option("--model", help="local | smollm2 | local:PATH.gguf | replay:PATH | API id."),
    ],
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Bundled task names: a,b (repeatable).")
    ] = None,
    task_dir: Annotated[
        list[Path] | None, typer.Option("--task-dir", help="A task folder (repeatable).")
    ] = None,
    seeds: Annotated[
        list[str] | None, typer.Option("--seeds", help="Task seeds to evaluate on: S1,S2.")
    ] = None,
    samples: Annotated[int, typer.Option("--samples", help="Sessions per task and seed.")] = 1,
    agent: Annotated[str, typer.Option("--agent", help="solve | research | search.")] = "solve",
    max_steps: Annotated[
        int | None,
        typer.Option("--max-steps", help="Steps per session (default 3 solve, 15 research)."),
    ] = None,
    trained_on: Annotated[
        Path | None,
        typer.Option(
            "--trained-on",
            help="The model's training record: a run folder, a checkpoint, a .json or a GGUF "
            "(its .training.json sidecar). Default: the model's own record.",
        ),
    ] = None,
    home: Annotated[
        Path | None,
        typer.Option("--home", help="Keep the sessions here (default: a temporary home, deleted)."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            help="Sessions at a time (default: 1 for a local model, which takes every core; "
            "cores for an API or replay model).",
        ),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option("--threads", help="A local model's decode threads (default: cores)."),
    ] = None,
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            help="Run the same sessions with this model too and compare them pair by pair "
            "(better, worse, same; an exact sign test).",
        ),
    ] = None,
    starter: Annotated[
        bool,
        typer.Option(
            "--starter/--no-starter",
            help="solve: the first step runs the task's starter script as given (no model "
            "call), as `mlagent run` does; the model's steps improve on it",
        ),
    ] = True,
    as_json: JsonOpt = False,
) -> None:
    from trainer.eval_against import DEFINITIONS, compare, paired_line, plan_against
    from trainer.evaluate import EvalError, EvalRequest, SessionFigure, plan_eval, run_eval
    from trainer.stats_tests import interval_text

    def progress(r: SessionFigure) -> None:
        score = "no score" if r.final_score is None else f"score {r.final_score:.4g}"
        mark = "beats baseline" if r.beats_baseline else ("valid" if r.valid else "invalid")
        why = f" - {r.why}" if r.why else ""
        err.print(
            f"{r.task} seed {r.seed} #{r.sample}: {mark}, {score} ({r.session_id}, "
            f"{r.seconds:.1f} s){why}",
            highlight=False,
            markup=False,
        )

    request = EvalRequest(
        model=model,
        tasks=tasks or [],
        task_dirs=task_dir or [],
        seeds=seeds or [],
        samples=samples,
        agent=agent,
        max_steps=max_steps,
        trained_on=trained_on,
        home=home,
        workers=workers,
        threads=threads,
        starter=starter,
    )
    try:
        plan = plan_eval(request)
        second = plan_against(plan, against) if against else None
        report = run_eval(plan, on_done=progress)
        if second is not None:
            other = run_eval(second[0], on_done=progress)
            report.against = compare(report, other, second[1]).model_dump()
            report.definitions.update(DEFINITIONS)
        else:
            report.definitions["intervals"] = DEFINITIONS["intervals"]
    except EvalError as exc:
        fail(str(exc), 2)
        raise
    if report.home:
        first = report.sessions[0].session_id
        err.print(
            f"sessions kept in {report.home}: mlagent replay {first} --home {report.home}",
            highlight=False,
            markup=False,
        )
    if as_json:
        emit_json(report.model_dump())
        return
    table = Table("task", "samples", "valid", "beats baseline", "medal", "mean reward")
    rows = [*report.tasks.items(), ("all", report)]
    for name, f in rows:
        n = f.samples
        table.add_row(
            name,
            str(n),
            interval_text(round(f.valid_rate * n), n),
            interval_text(round(f.beats_baseline_rate * n), n),
            interval_text(round(f.medal_rate * n), n),
            f"{f.mean_reward:.3f}",
        )
    held = report.held_out
    seeds_of = [f"{t} (trained on {h.trained_seeds})" for t, h in held.held_out_seeds.items()]
    console.print(
        f"{report.model_name}, {report.agent} agent, at most {report.max_steps} steps, seeds "
        f"{report.seeds}, {report.seconds:.0f} s. Held-out tasks: {', '.join(held.tasks) or '-'}; "
        f"held-out seeds of: {', '.join(seeds_of) or '-'}; training data: "
        f"{held.training_data or 'none known'}",
        highlight=False,
        markup=False,
    )
    console.print(table)
    console.print("rates: share of sessions [95% Wilson interval]", highlight=False)
    if report.beats_starter_rate is not None:
        m = report.starter_sessions
        console.print(
            "better than the starter at the same seed: "
            f"{interval_text(round(report.beats_starter_rate * m), m)} of {m} sessions",
            highlight=False,
            markup=False,
        )
    if report.repetition is not None:
        from trainer.repetition import Repetition

        line = Repetition.model_validate(report.repetition).line()
        console.print(line, highlight=False, markup=False)
    if report.against is not None:
        from trainer.eval_against import Against

        line = paired_line(report.model_name, Against.model_validate(report.against))
        console.print(line, highlight=False, markup=False)
