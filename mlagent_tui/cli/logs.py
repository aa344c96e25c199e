"""`mlagent logs ...`: the session database (path, status, backup)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .options import HomeOpt, JsonOpt, console, emit_json, home, store

app = typer.Typer(help="The session database.", no_args_is_help=True)


@app.command("path")
def logs_path(home_dir: HomeOpt = None) -> None:
    """Where the database is."""
    console.print(str(home(home_dir).db_path), highlight=False)


@app.command("status")
def logs_status(json_out: JsonOpt = False, home_dir: HomeOpt = None) -> None:
    """Size, journal mode, migrations, row counts."""
    st = store(home_dir).status()
    emit_json(st) if json_out else console.print(st)


@app.command("backup")
def logs_backup(
    dest: Annotated[Path, typer.Argument(help="File or folder.")], home_dir: HomeOpt = None
) -> None:
    """A consistent copy of the database, safe while sessions are writing."""
    console.print(f"backed up to {store(home_dir).backup(dest)}", highlight=False)
