"""`mlagent tasks synth`: SandMLE synthetic micro-scale tasks grown from a seed task."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..core.safe_text import visible
from .options import JsonOpt, console, emit_json, err, fail, resolve_task

app = typer.Typer()


@app.command("synth")
def tasks_synth(
    seed_task: Annotated[
        str | None,
        typer.Option(
            "--seed-task",
            help="A bundled task to grow tasks from; with --task-dir, which task of that folder.",
        ),
    ] = None,
    task_dir: Annotated[
        Path | None,
        typer.Option(
            "--task-dir", help="A seed task folder, or a folder of task folders, anywhere on disk."
        ),
    ] = None,
    model: Annotated[
        str,
        typer.Option("--model", help="local | local:PATH.gguf | replay:PATH.jsonl | a litellm id"),
    ] = "local",
    n: Annotated[int, typer.Option("--n", help="Candidate tasks to try.", min=1)] = 1,
    out: Annotated[
        Path, typer.Option("--out", help="Where kept tasks land, one folder each.")
    ] = Path("synth-tasks"),
    exec_timeout: Annotated[
        float,
        typer.Option("--exec-timeout", help="Seconds each generated script may run.", min=1),
    ] = 60.0,
    sandbox: Annotated[str, typer.Option("--sandbox", help="local | docker")] = "local",
    leak_judge: Annotated[
        bool,
        typer.Option(
            "--leak-judge/--no-leak-judge",
            help="Also ask the model whether a description gives the hidden rule away "
            "(the number check always runs).",
        ),
    ] = True,
    json_out: JsonOpt = False,
) -> None:
    """Four model roles write candidate tasks; only those passing `tasks check` are kept."""
    from ..core.llm import ModelError, make_model
    from ..core.synth import SynthConfig, SynthError, synthesize
    from ..core.synth.seed import seed_targets

    if seed_task is None and task_dir is None:
        fail("name the seed: --seed-task NAME or --task-dir DIR (or both: NAME in DIR)")
    seed = resolve_task(seed_task, task_dir)
    try:
        seed_targets(seed)  # refuse a seed synth cannot use before loading a model
        chat = make_model(model)
    except (SynthError, ModelError, ValueError) as exc:
        fail(str(exc))
    config = SynthConfig(
        n=n, out=out, exec_timeout_s=exec_timeout, sandbox=sandbox, judge_leaks=leak_judge
    )
    log = (
        None
        if json_out
        else (lambda m: err.print(f"[dim]{escape(visible(m))}[/]", highlight=False, soft_wrap=True))
    )
    try:
        report = synthesize(seed, chat, config, log=log)
    except (SynthError, ValueError, OSError) as exc:
        fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug of ours is still one line, never a traceback
        fail(f"synth stopped on an internal error: {type(exc).__name__}: {exc}")
    if json_out:
        emit_json(report.as_json())
    else:
        console.print(visible(report.text()), markup=False, highlight=False, soft_wrap=True)
        kept = [c.folder for c in report.candidates if c.kept]
        if kept:
            console.print(f"list them: mlagent tasks list --task-dir {out}", highlight=False)
    if report.stopped and not any(c.kept for c in report.candidates):
        raise typer.Exit(1)
