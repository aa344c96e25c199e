"""The `mlagent-train` app and what its commands share: output, errors, the store, lists."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

app = typer.Typer(
    help="mlagent-train: fine-tune the local model with RL from the sessions mlagent logged "
    "and from fresh rollouts in the sandbox.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
DbOpt = Annotated[
    Path | None,
    typer.Option("--db", help="The session database (default: the home's mlagent.db)."),
]
HomeOpt = Annotated[
    Path | None,
    typer.Option("--home", help="Home of database and workspaces (default ./sessions)."),
]


def fail(message: str, code: int = 1) -> None:
    """One line on stderr: the message's brackets are text and its control characters shown
    (it may name a task or a file a model made), then exit."""
    from rich.markup import escape

    from mlagent_tui.core.safe_text import visible

    err.print(f"[bold red]error:[/] {escape(visible(message))}", highlight=False)
    raise typer.Exit(code)


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, default=str) + "\n")


def open_store(db: Path | None, home: Path | None, must_exist: bool = False) -> Any:
    from mlagent_tui.core.home import Home
    from mlagent_tui.core.store import Store, StoreError

    path = db if db is not None else Home.at(home).db_path
    if must_exist and not Path(path).is_file():
        fail(f"no database at {path}")
    try:
        return Store(path)
    except StoreError as exc:
        fail(str(exc))


def _version(value: bool) -> None:
    """`--version`: the installed package's version, then exit (before any command runs)."""
    if value:
        from mlagent_tui.core.version import installed_version

        print(f"mlagent-train {installed_version()}")
        raise typer.Exit()


@app.callback()
def main_callback(
    _show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """mlagent-train: fine-tune the local model with RL from the sessions mlagent logged."""


def split_list(values: list[str] | None) -> list[str]:
    return [v.strip() for value in values or [] for v in value.split(",") if v.strip()]


def seed_list(values: list[str] | None, default: list[int], flag: str = "--seeds") -> list[int]:
    raw = split_list(values)
    try:
        return [int(v) for v in raw] if raw else default
    except ValueError:
        fail(f"{flag} takes whole numbers separated by commas, got {','.join(raw)!r}", 2)
        raise


def chosen_tasks(names: list[str], dirs: list[Path] | None, exclude: list[str]) -> list[Any]:
    """Tasks by name or folder (default: every bundled task), less the excluded names."""
    from mlagent_tui.core.tasks import TaskError, find_task, list_tasks

    try:
        tasks = [find_task(n) for n in names] + [find_task(task_dir=str(d)) for d in dirs or []]
        if not tasks:
            tasks = list_tasks()
    except TaskError as exc:
        fail(str(exc), 2)
    unknown = set(exclude) - {t.name for t in tasks} - {t.name for t in list_tasks()}
    if unknown:
        fail(f"--exclude-tasks names unknown task(s): {', '.join(sorted(unknown))}", 2)
    kept = [t for t in tasks if t.name not in exclude]
    if not kept:
        fail("no tasks left to record (every task was excluded)", 2)
    return kept


def main() -> None:
    app()
