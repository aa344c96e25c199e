"""`mlagent`: the command line. Every command has --help; --json prints one JSON object.

This module builds the typer app: the top-level options (no command: the app's home screen, or
straight into a session) and each command family's sub-app, from one module per family.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from ..core.tasks import DEFAULT_TASK
from . import bench, logs, run, sandbox, sessions, synth, tasks, tui
from .exits import USAGE
from .options import STATE, HomeOpt, SandboxOpt, TaskDirOpt, err
from .search_view import MaxNodesOpt, PolicyOpt, StarterOpt, WorkersOpt

app = typer.Typer(
    help="mlagent: an ML-engineering agent you watch and steer.",
    no_args_is_help=False,
    pretty_exceptions_enable=False,
)
# In the order --help lists them: commands first, then the groups.
app.add_typer(run.app)  # run, resume, fork
app.add_typer(tui.app)  # replay
app.add_typer(tasks.app, name="tasks")
tasks.app.add_typer(synth.app)  # tasks synth
app.add_typer(sandbox.app, name="sandbox")
app.add_typer(logs.app, name="logs")
app.add_typer(bench.app, name="bench")
app.add_typer(sessions.app, name="sessions")


def _version(value: bool) -> None:
    """`--version`: the installed package's version, then exit (before any command runs)."""
    if value:
        from ..core.version import installed_version

        print(f"mlagent {installed_version()}")
        raise typer.Exit()


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
        typer.Option(
            "--model",
            help="local | smollm2 (bare base) | local:PATH.gguf | replay:PATH.jsonl | litellm id",
        ),
    ] = "local",
    agent: Annotated[str, typer.Option("--agent", help="research | solve | search")] = "research",
    policy: PolicyOpt = "greedy",
    workers: WorkersOpt = 2,
    max_nodes: MaxNodesOpt = None,
    starter: StarterOpt = True,
    approval: Annotated[
        str, typer.Option("--approval", help="auto | confirm-exec | confirm-all")
    ] = "auto",
    sandbox: SandboxOpt = "local",
    _show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """With no command: the app's home screen; with --task/--task-dir: straight into a session."""
    STATE["home"] = home_dir
    if ctx.invoked_subcommand is None:
        if task is None and task_dir is None:
            tui.open_home()
            return
        tui.open_live(
            task=task,
            task_dir=task_dir,
            model=model,
            agent=agent,
            approval=approval,
            sandbox=sandbox,
            search={
                "policy": policy,
                "workers": workers,
                "max_nodes": max_nodes,
                "from_starter": starter,
                "solve_starter": starter,
            },
        )


def main() -> None:
    from .defaults import DefaultsError, default_map, read_defaults

    try:
        defaults = default_map(read_defaults())
    except DefaultsError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        sys.exit(USAGE)
    try:
        app(default_map=defaults)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
