"""What every `mlagent` command shares: its options, the consoles, JSON output, home and store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from ..core.home import Home
from ..core.tasks import Task, TaskError, find_task, tasks_in
from .exits import USAGE

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
    Path | None,
    typer.Option("--task-dir", help="A task folder, or a folder of task folders (NAME picks one)."),
]
SandboxOpt = Annotated[str, typer.Option("--sandbox", help="local | docker")]


def fail(message: str, code: int = 1) -> None:
    """One line on stderr (never wrapped, the message's brackets are not markup, its control
    characters shown), then exit."""
    from rich.markup import escape

    from ..core.safe_text import visible

    err.print(f"[bold red]error:[/] {escape(visible(message))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def error_line(exc: Exception) -> str:
    """One line for a failure to start: a refused setting names its option and the choices
    (pydantic's own text is several lines with a documentation URL)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return str(exc)
    parts = []
    for e in exc.errors():
        option = "--" + "-".join(str(p) for p in e["loc"]).replace("_", "-")
        expected = (e.get("ctx") or {}).get("expected")
        if e["type"] == "literal_error" and expected:
            choices = expected.replace("'", "").replace(" or ", ", ")
            parts.append(f"{option} {e['input']!r} is not one of: {choices}")
        else:
            parts.append(f"{option}: {e['msg']}")
    return "; ".join(parts)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, default=str) + "\n")


def home(home_dir: Path | None = None) -> Home:
    """The home: a command's own --home, else the top-level one, else the default."""
    if home_dir is not None:
        STATE["home"] = home_dir
    try:
        return Home.at(STATE["home"])
    except OSError as exc:
        fail(f"cannot use home folder {STATE['home']}: {exc}", USAGE)
        raise


def store(home_dir: Path | None = None):  # noqa: ANN201
    """The store; sessions whose process is gone are recorded `interrupted` on opening it."""
    from ..core.session import end_orphans
    from ..core.store import Store, StoreError

    try:
        opened = Store(home(home_dir).db_path)
    except StoreError as exc:
        fail(str(exc))
        raise  # unreachable
    end_orphans(home(home_dir), opened)
    return opened


def resolve_task(name: str | None, task_dir: Path | None) -> Task:
    """NAME: a bundled task. --task-dir: a task folder, or a folder of task folders in which
    NAME picks one (needed only where it holds several)."""
    try:
        return find_task(name) if task_dir is None else pick_task(task_dir, name)
    except TaskError as exc:
        fail(str(exc))
        raise  # unreachable


def pick_task(task_dir: Path, name: str | None) -> Task:
    """The task NAME (folder or task name) of `task_dir`; without NAME, its only task."""
    if name is not None and (task_dir / name / "task.toml").is_file():
        return Task(task_dir / name)  # by folder name, without reading the siblings
    tasks = tasks_in(task_dir)
    if (task_dir / "task.toml").is_file():
        (task,) = tasks
        if name is not None and name not in (task.name, task_dir.name):
            raise TaskError(f"{task_dir} holds the task {task.name!r}, not {name!r}")
        return task
    if name is not None:
        found = [t for t in tasks if name in (t.name, t.folder.name)]
        if not found:
            names = ", ".join(t.name for t in tasks)
            raise TaskError(f"no task {name!r} in {task_dir} (it holds: {names})")
        return found[0]
    if len(tasks) > 1:
        names = ", ".join(t.name for t in tasks)
        raise TaskError(f"{task_dir} holds {len(tasks)} tasks ({names}): name one")
    return tasks[0]


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
