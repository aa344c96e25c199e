"""What every `mlagent` command shares: its options, the consoles, JSON output, home and store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..core.home import Home
from ..core.tasks import Task, TaskError, find_task

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
    from ..core.store import Store, StoreError

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


def errors() -> tuple[type[Exception], ...]:
    """What starting a session may raise that the person should read as one line."""
    from ..core.llm import ModelError
    from ..core.sandbox import ImageError
    from ..core.session import SessionError
    from ..core.tasks import TaskError
    from ..core.workspace import WorkspaceError

    return (
        SessionError,
        TaskError,
        ModelError,
        ImageError,
        WorkspaceError,
        ValueError,
        FileNotFoundError,
    )
