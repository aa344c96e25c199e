"""`mlagent`: the command line. Every command has --help; --json prints one JSON object."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Column, Table

from .core.home import Home
from .core.tasks import DEFAULT_TASK, Task, TaskError, find_task, list_tasks, tasks_in

app = typer.Typer(
    help="mlagent: an ML-engineering agent you watch and steer.",
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    add_completion=False,
)
tasks_app = typer.Typer(help="Bundled tasks and task folders.", no_args_is_help=True)
sandbox_app = typer.Typer(help="Sandboxed execution.", no_args_is_help=True)
logs_app = typer.Typer(help="The session database.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(logs_app, name="logs")

console = Console()
err = Console(stderr=True)
STATE: dict[str, Any] = {"home": None}

HomeOpt = Annotated[
    Path | None,
    typer.Option(
        "--home",
        help="Home of the database and workspaces (default ./sessions or $MLAGENT_HOME).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
TaskDirOpt = Annotated[
    Path | None, typer.Option("--task-dir", help="A task folder anywhere on disk.")
]
SandboxOpt = Annotated[str, typer.Option("--sandbox", help="local | docker")]


def fail(message: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, default=str) + "\n")


def home(home_dir: Path | None = None) -> Home:
    """The home: a command's own --home, else the top-level one, else the default."""
    if home_dir is not None:
        STATE["home"] = home_dir
    try:
        return Home.at(STATE["home"])
    except OSError as exc:
        fail(f"cannot use home folder {STATE['home']}: {exc}")
        raise


def store(home_dir: Path | None = None):  # noqa: ANN201
    from .core.store import Store, StoreError

    try:
        return Store(home(home_dir).db_path)
    except StoreError as exc:
        fail(str(exc))


def resolve_task(name: str | None, task_dir: Path | None) -> Task:
    try:
        return find_task(name, task_dir)
    except TaskError as exc:
        fail(str(exc))
        raise  # unreachable


@app.callback(invoke_without_command=True)
def main_callback(
    ctx: typer.Context,
    home_dir: HomeOpt = None,
    task: Annotated[
        str | None,
        typer.Option("--task", help=f"Bundled task for the session (default {DEFAULT_TASK})."),
    ] = None,
    task_dir: TaskDirOpt = None,
    model: Annotated[
        str,
        typer.Option("--model", help="local | local:PATH.gguf | replay:PATH.jsonl | a litellm id"),
    ] = "local",
    agent: Annotated[str, typer.Option("--agent", help="research | solve")] = "research",
    approval: Annotated[
        str, typer.Option("--approval", help="auto | confirm-exec | confirm-all")
    ] = "auto",
    sandbox: SandboxOpt = "local",
) -> None:
    """With no command: the app's home screen; with --task/--task-dir: straight into a session."""
    STATE["home"] = home_dir
    if ctx.invoked_subcommand is None:
        from .cli_tui import open_home, open_live

        if task is None and task_dir is None:
            open_home()
            return
        open_live(
            task=task,
            task_dir=task_dir,
            model=model,
            agent=agent,
            approval=approval,
            sandbox=sandbox,
        )


# -- tasks ------------------------------------------------------------------------------
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


@tasks_app.command("list")
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
    table = Table("modality", "metric", "baseline", "median", "bronze", "silver", "gold")
    table.columns.insert(0, Column("name", no_wrap=True))
    for r in rows:
        arrow = "↑" if r["higher_is_better"] else "↓"
        t = r["thresholds"]
        table.add_row(
            r["name"],
            r["modality"],
            f"{r['metric']} {arrow}",
            f"{r['baseline']:.4g}",
            *(f"{t[k]:.4g}" for k in ("median", "bronze", "silver", "gold")),
        )
    console.print(table)


@tasks_app.command("show")
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
    console.print(task.description, markup=False, highlight=False)


@tasks_app.command("prepare")
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


@tasks_app.command("baseline")
def tasks_baseline(
    name: Annotated[str | None, typer.Argument()] = None,
    task_dir: TaskDirOpt = None,
    sandbox: SandboxOpt = "local",
    json_out: JsonOpt = False,
    home_dir: HomeOpt = None,
) -> None:
    """Prepare a fresh workspace, run the baseline in the sandbox, grade on the test split."""
    from .core.sandbox.image import ImageError
    from .core.tasks import run_baseline

    task = resolve_task(name, task_dir)
    echo = (
        None
        if json_out
        else (lambda line: console.print(f"  [dim]│[/] {line}", markup=True, highlight=False))
    )
    try:
        res = run_baseline(task, home(home_dir), store(), sandbox=sandbox, echo=echo)
    except (TaskError, ImageError, FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    if json_out:
        emit_json(res.model_dump())
        return
    verdict = f"score {res.score:.4g}" if res.valid else f"[red]invalid: {res.error}[/]"
    console.print(
        f"{task.name}: {verdict}  medal={res.medal}  above_median={res.above_median}  "
        f"exec {res.exec_seconds:.2f}s  session {res.session_id}"
    )
    if not res.valid:
        raise typer.Exit(1)


@tasks_app.command("grade")
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


@tasks_app.command("check")
def tasks_check(
    names: Annotated[list[str] | None, typer.Argument(help="Tasks (default: all).")] = None,
    task_dir: TaskDirOpt = None,
    sandbox: SandboxOpt = "local",
    json_out: JsonOpt = False,
) -> None:
    """Determinism, baseline score, threshold order, references, sample, isolation."""
    from .core.tasks import check_task

    try:
        if task_dir is not None:
            tasks = tasks_in(task_dir)
        elif names:
            tasks = [find_task(n) for n in names]
        else:
            tasks = list_tasks()
    except TaskError as exc:
        fail(str(exc))
    log = None if json_out else (lambda m: err.print(f"[dim]{m}[/]"))
    reports = [check_task(t, sandbox=sandbox, log=log) for t in tasks]
    if json_out:
        emit_json({"ok": all(r.ok for r in reports), "tasks": [r.model_dump() for r in reports]})
    else:
        for r in reports:
            mark = "[green]ok[/]" if r.ok else "[red]FAIL[/]"
            console.print(f"{mark} {r.task} ({r.seconds}s)")
            for c in r.checks:
                sign = "[green]✓[/]" if c.ok else "[red]✗[/]"
                console.print(f"   {sign} {c.name} [dim]{c.detail}[/]", highlight=False)
    if not all(r.ok for r in reports):
        raise typer.Exit(1)


def main() -> None:
    from . import (  # noqa: F401 - register their commands
        cli_bench,
        cli_run,
        cli_sandbox,
        cli_synth,
        cli_tui,
    )

    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
