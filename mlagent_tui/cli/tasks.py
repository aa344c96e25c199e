"""`mlagent tasks ...`: bundled tasks and task folders (list, show, prepare, grade, check, ...)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.text import Text

from ..core.safe_text import visible
from ..core.tasks import Task, TaskError, find_task, list_tasks, tasks_in
from .exits import USAGE
from .options import (
    HomeOpt,
    JsonOpt,
    SandboxOpt,
    TaskDirOpt,
    console,
    emit_json,
    err,
    fail,
    home,
    pick_task,
    resolve_task,
    store,
)

app = typer.Typer(help="Bundled tasks and task folders.", no_args_is_help=True)


def task_row(task: Task) -> dict[str, Any]:
    s = task.spec
    return {
        "name": s.name,
        "title": s.title,
        "modality": s.modality,
        "metric": s.metric.name,
        "higher_is_better": s.metric.higher_is_better,
        "baseline": s.baseline.score,
        "thresholds": s.thresholds.model_dump(),
    }


@app.command("list")
def tasks_list(
    task_dir: Annotated[
        Path | None,
        typer.Option(
            "--task-dir", help="A task folder, or a folder of task folders (e.g. a synth --out)."
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Name, modality, metric and direction, baseline score, thresholds."""
    try:
        rows = [task_row(t) for t in (tasks_in(task_dir) if task_dir else list_tasks())]
    except TaskError as exc:
        fail(str(exc))
    if json_out:
        emit_json({"tasks": rows})
        return
    for line in task_lines(rows):
        console.print(line, highlight=False)


THRESHOLDS = ("median", "bronze", "silver", "gold")


def task_lines(rows: list[dict[str, Any]]) -> list[Text]:
    """Two lines a task, readable at 80 columns: name, metric and scores in columns (never
    cut), then its modality and title, which wrap (the console's width) instead."""
    cells = [
        [
            visible(r["name"]),  # a synthesised task's name and title are a model's text
            f"{r['metric']} {'↑' if r['higher_is_better'] else '↓'}",
            f"{r['baseline']:.4g}",
            *(f"{r['thresholds'][k]:.4g}" for k in THRESHOLDS),
        ]
        for r in rows
    ]
    header = ["task", "metric", "baseline", *THRESHOLDS]
    widths = [max(len(c[i]) for c in [header, *cells]) for i in range(len(header))]

    def line(values: list[str], style: str = "") -> Text:
        left = [v.ljust(w) for v, w in zip(values[:2], widths, strict=False)]
        right = [v.rjust(w) for v, w in zip(values[2:], widths[2:], strict=True)]
        return Text("  ".join(left) + "  " + " ".join(right), style=style)

    lines = [line(header, "bold")]
    for r, c in zip(rows, cells, strict=True):
        lines += [line(c), Text(visible(f"  {r['modality']} · {r['title']}"), style="dim")]
    return lines


@app.command("show")
def tasks_show(
    name: Annotated[str | None, typer.Argument()] = None,
    task_dir: TaskDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The task's spec and description."""
    task = resolve_task(name, task_dir)
    if json_out:
        emit_json(
            {
                **task.spec.model_dump(by_alias=True),
                "folder": str(task.folder),
                "description": task.description,
            }
        )
        return
    console.print_json(task.spec.model_dump_json(by_alias=True))
    console.print(visible(task.description), markup=False, highlight=False)


@app.command("prepare")
def tasks_prepare(
    name: Annotated[str | None, typer.Argument()] = None,
    workspace: Annotated[Path, typer.Option("--workspace", help="Folder to prepare.")] = ...,
    task_dir: TaskDirOpt = None,
    seed: Annotated[int, typer.Option(help="Data seed.")] = 0,
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Prepare a workspace; the answers go to a private area beside the home, not in it."""
    task = resolve_task(name, task_dir)
    workspace = Path.cwd() / workspace  # relative to the caller, never to the task folder
    private = home(home_dir).root / "private" / f"manual-{workspace.resolve().name}"
    try:
        task.prepare(workspace, private, seed=seed)
    except TaskError as exc:
        fail(str(exc))
    out = {"task": task.name, "workspace": str(workspace.resolve()), "private": str(private)}
    emit_json(out) if json_out else console.print(f"prepared {task.name} in {workspace}")


@app.command("baseline")
def tasks_baseline(
    name: Annotated[str | None, typer.Argument()] = None,
    task_dir: TaskDirOpt = None,
    sandbox: SandboxOpt = "local",
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Prepare a fresh workspace, run the baseline in the sandbox, grade on the test split."""
    from ..core.sandbox import ImageError
    from ..core.tasks import run_baseline

    task = resolve_task(name, task_dir)
    echo = (
        None
        if json_out
        else (lambda line: console.print(f"  [dim]│[/] {escape(visible(line))}", highlight=False))
    )
    try:
        res = run_baseline(task, home(home_dir), store(), sandbox=sandbox, echo=echo)
    except (TaskError, ImageError, FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    if json_out:
        emit_json(res.model_dump())
        return
    verdict = (
        f"score {res.score:.4g}" if res.valid else f"[red]invalid: {escape(visible(res.error))}[/]"
    )
    console.print(
        f"{task.name}: {verdict}  medal={res.medal}  above_median={res.above_median}  "
        f"exec {res.exec_seconds:.2f}s  session {res.session_id}"
    )
    if not res.valid:
        raise typer.Exit(1)


@app.command("grade")
def tasks_grade(
    name: Annotated[str | None, typer.Argument()] = None,
    workspace: Annotated[Path, typer.Option("--workspace")] = ...,
    task_dir: TaskDirOpt = None,
    split: Annotated[str, typer.Option(help="validate | test")] = "validate",
    private: Annotated[
        Path | None, typer.Option(help="Answers folder (default: where `tasks prepare` put them).")
    ] = None,
    sandbox: Annotated[
        str, typer.Option("--sandbox", help="Where code tasks run the agent's code: local | docker")
    ] = "local",
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Grade the workspace's submission."""
    task = resolve_task(name, task_dir)
    workspace = Path.cwd() / workspace
    if not workspace.is_dir():
        fail(f"no workspace at {workspace}: prepare one with `mlagent tasks prepare`", USAGE)
    if split not in ("validate", "test"):
        fail("--split must be validate or test")
    if sandbox not in ("local", "docker"):
        fail("--sandbox must be local or docker")
    private = private or home(home_dir).root / "private" / f"manual-{workspace.resolve().name}"
    if not private.is_dir():
        fail(
            f"no answers at {private}: prepare the workspace with `mlagent tasks prepare` "
            "or pass --private"
        )
    g = task.grade(workspace, private, split, sandbox=sandbox)
    out = {
        **g.model_dump(),
        "medal": task.medal(g.score),
        "above_median": task.above_median(g.score),
    }
    if json_out:
        emit_json(out)
    else:
        console.print(out)
    if not g.valid:
        raise typer.Exit(1)


@app.command("check")
def tasks_check(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Tasks (default: all bundled ones, or all of --task-dir)."),
    ] = None,
    task_dir: TaskDirOpt = None,
    sandbox: SandboxOpt = "local",
    json_out: JsonOpt = False,
) -> None:
    """Determinism, baseline score, threshold order, references, sample, isolation."""
    from ..core.tasks import check_task

    try:
        if task_dir is not None and names:
            tasks = [pick_task(task_dir, n) for n in names]
        elif task_dir is not None:
            tasks = tasks_in(task_dir)
        elif names:
            tasks = [find_task(n) for n in names]
        else:
            tasks = list_tasks()
    except TaskError as exc:
        fail(str(exc))
    log = None if json_out else (lambda m: err.print(f"[dim]{escape(visible(m))}[/]"))
    reports = [check_task(t, sandbox=sandbox, log=log) for t in tasks]
    if json_out:
        emit_json({"ok": all(r.ok for r in reports), "tasks": [r.model_dump() for r in reports]})
    else:
        for r in reports:
            mark = "[green]ok[/]" if r.ok else "[red]FAIL[/]"
            console.print(f"{mark} {r.task} ({r.seconds}s)")
            for c in r.checks:
                sign = "[green]✓[/]" if c.ok else "[red]✗[/]"
                shown = escape(visible(c.detail))
                console.print(f"   {sign} {c.name} [dim]{shown}[/]", highlight=False)
    if not all(r.ok for r in reports):
        raise typer.Exit(1)
